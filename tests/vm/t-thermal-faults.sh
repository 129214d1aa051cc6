#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: own (tests/vm/lanes.tsv)
#
# Issue 2: fault patterns never show up as temperatures. All-ones (device
# gone or resetting), 0xBADFxxxx poison and GDDR7 validity bits off give
# -ENODATA ("No data available") and the right status, and the GPU comes
# back when the registers do.
set -u

sim_fixture_all gb202
nvs_load || { t_fail thermal-faults-load "insmod failed"; exit 1; }
c=$(sim_class 0) h=$(sim_hwmon 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'

# all_nodata PATTERN: every tempN_input of GPU0 fails with ENODATA
all_nodata() {
	local f bad=
	for f in "$h"/temp*_input; do
		[[ $(read_err "$f") == "No data available" ]] || bad+=" $(cat "${f%_input}_label")=$(read_err "$f")"
	done
	[[ -z $bad ]] || { echo "$bad"; return 1; }
}

fault() {
	local name=$1 status=$2 u0
	shift 2
	u0=$(read_err "$c/unavailable_reads")
	sim 0 "$@"
	if wait_until 3 all_nodata >/dev/null; then
		t_pass "thermal-$name-enodata"
	else
		t_fail "thermal-$name-enodata" "still readable:$(all_nodata)"
	fi
	t_eq "thermal-$name-status" "$(read_err "$c/status")" "$status"
	if (($(read_err "$c/unavailable_reads") > u0)); then
		t_pass "thermal-$name-counted"
	else
		t_fail "thermal-$name-counted" "unavailable_reads stayed at $u0"
	fi
	# history must not have absorbed the bogus values
	t_eq "thermal-$name-highest-untouched" "$(read_err "$(hw_temp "$h" ch0)_highest")" 90215
	sim 0 fixture gb202
	# all-ones backs passes off up to 4 s (NVS_DEAD_PROBE_MAX_MS)
	wait_for 6 '[[ $(read_err "$c/status") == ok ]]'
	t_eq "thermal-$name-recovers" "$(read_err "$(hw_temp "$h" ch0)_input")/$(read_err "$c/status")" "90215/ok"
}

fault allones "unavailable: all-ones (fallen off the bus or in reset)" allones
fault poison "unavailable: no valid sensor reading" poison

# Validity bits off: the modules read ENODATA, the die keeps working.
sim 0 validity-off
wait_for 3 '! read_err $(hw_temp "$h" mem3)_input >/dev/null'
bad=
for l in mem0 mem1 mem2 mem3 mem4 mem5 mem7 mem8 mem9 mem10 mem11 mem12 mem13 mem14; do
	v=$(read_err "$(hw_temp "$h" "$l")_input")
	[[ $v == "No data available" ]] || bad+=" $l=$v"
done
[[ -z $bad ]] && t_pass thermal-validity-off-enodata || t_fail thermal-validity-off-enodata "still readable:$bad"
t_eq thermal-validity-off-die-ok "$(read_err "$(hw_temp "$h" ch0)_input")" 90215
t_eq thermal-validity-off-status "$(read_err "$c/status")" ok
# One module only: only that one goes.
sim 0 fixture gb202
sim 0 validity-off 3
# mem3 is still off from above: wait for a memory pass (mem_hz, once a
# second by default) after both commands, which brings mem4 back
wait_for 4 '[[ $(read_err $(hw_temp "$h" mem4)_input) == 64000 && $(read_err $(hw_temp "$h" mem3)_input) == "No data available" ]]'
t_eq thermal-validity-one-module "$(read_err "$(hw_temp "$h" mem3)_input") $(read_err "$(hw_temp "$h" mem4)_input")" "No data available 64000"

# A single poisoned die channel: that channel only.
sim 0 fixture gb202
sim 0 set ch2 0xbadf0001
wait_for 3 '! read_err $(hw_temp "$h" ch2)_input >/dev/null'
t_eq thermal-poison-one-channel "$(read_err "$(hw_temp "$h" ch2)_input") $(read_err "$(hw_temp "$h" ch1)_input") $(read_err "$c/status")" "No data available 79500 ok"
# Implausible die values (0, above 150 °C) are not temperatures either.
sim 0 set ch2 0
sim 0 temp ch1 151
wait_for 3 '! read_err $(hw_temp "$h" ch1)_input >/dev/null'
t_eq thermal-implausible "$(read_err "$(hw_temp "$h" ch2)_input") $(read_err "$(hw_temp "$h" ch1)_input")" "No data available No data available"

# Memory decoding off: nothing is read from the BAR at all.
sim 0 fixture gb202
bdf=$(sim_bdf 0)
cmd=$(setpci -s "$bdf" COMMAND)
setpci -s "$bdf" COMMAND=0:2
wait_for 3 '[[ $(read_err "$c/status") == unavailable* ]]'
t_eq thermal-decoding-off-status "$(read_err "$c/status")" "unavailable: memory decoding disabled"
t_eq thermal-decoding-off-enodata "$(read_err "$(hw_temp "$h" ch0)_input")" "No data available"
setpci -s "$bdf" COMMAND="$cmd"
wait_for 3 '[[ $(read_err "$c/status") == ok ]]'
t_eq thermal-decoding-on-again "$(read_err "$c/status")" ok
nvs_unload
