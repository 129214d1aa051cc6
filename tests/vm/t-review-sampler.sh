#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# Review 2026-12-03, the sampler:
#   finding 1: sample_hz dropping to 0 between the sampler's idle check and
#     its division was a divide-by-zero in the kthread. Writers cycle every
#     GPU through 0/50/1000 as fast as they can (sysfs; GPU_SET sets the
#     same variable through the same function) while
#     readers read; the kernel log must stay clean (the runner checks it)
#     and every GPU must sample again afterwards.
#   finding 9: tempN_max_alarm (and the netlink ALARM) must not stay 1
#     once readings stop (decoding off, all-ones), and must come back with
#     the next valid reading without counting a new crossing.
set -u

sim_fixture_all gb202
nvs_load || { t_fail review-sampler-load "insmod failed"; exit 0; }
wait_for 5 '[[ $(read_err "$(sim_class 0)/status") == ok ]]'

# --- finding 1 ---------------------------------------------------------------
secs=${NVS_HZ_CYCLE_SECONDS:-8}
stop=/tmp/review-hz-stop
rm -f "$stop"
# One sysfs writer per two GPUs: 0 right after a non-zero rate is the
# case that divided by zero.
writers=()
for ((w = 0; w < 4; w++)); do
	(
		files=(/sys/class/nvsidecar/gpu*/sample_hz)
		n=0
		while [[ ! -e $stop ]]; do
			for f in "${files[@]}"; do
				echo $(((n % 3) == 0 ? 0 : (n % 3) == 1 ? 50 : 1000)) >"$f"
			done 2>/dev/null
			n=$((n + 1 + w))
		done
	) &
	writers+=($!)
done
(while [[ ! -e $stop ]]; do
	for f in /sys/class/hwmon/hwmon*/temp*_input /sys/class/nvsidecar/gpu*/status; do
		read -r _ <"$f"
	done 2>/dev/null
done) &
writers+=($!)
nvs_sleep "$secs"
: >"$stop"
wait "${writers[@]}" 2>/dev/null
echo 50 | tee /sys/class/nvsidecar/gpu*/sample_hz >/dev/null
bad=
for ((i = 0; i < NVS_GPUS; i++)); do
	c=$(sim_class "$i") || { bad+=" gpu$i:gone"; continue; }
	s0=$(read_err "$c/samples")
	nvs_sleep 0.3
	s1=$(read_err "$c/samples")
	((s1 > s0)) || bad+=" $(basename "$c"):$s0->$s1"
done
[[ -z $bad ]] && t_pass review-hz-cycle-still-sampling || t_fail review-hz-cycle-still-sampling "not sampling after the rate storm:$bad"
if grep -q "nvsidecar" <<<"$(dmesg | grep -E 'divide error|Oops|BUG:')"; then
	t_fail review-hz-cycle-no-oops "$(dmesg | grep -E -A3 'divide error' | head -n 4 | tr '\n' ' ')"
else
	t_pass review-hz-cycle-no-oops
fi

# --- finding 9 ---------------------------------------------------------------
c=$(sim_class 0) h=$(sim_hwmon 0)
idx=${c##*/gpu}
ch0=$(hw_temp "$h" ch0)
echo 85000 >"${ch0}_max"
wait_for 3 '[[ $(read_err "${ch0}_max_alarm") == 1 ]]'
t_eq review-alarm-set "$(read_err "${ch0}_max_alarm")" 1
x0=$(read_err "$c/threshold_crossings")
bdf=$(sim_bdf 0)
setpci -s "$bdf" COMMAND=0:2
wait_for 3 '[[ $(read_err "$c/status") == unavailable* ]]'
t_eq review-alarm-decoding-off-input "$(read_err "${ch0}_input")" "No data available"
t_eq review-alarm-decoding-off-alarm "$(read_err "${ch0}_max_alarm")" 0
got=$(genl get --gpu "$idx")
[[ $got =~ \ ch0=-?[0-9]+/0/0(\ |$) ]] && t_pass review-alarm-decoding-off-netlink || t_fail review-alarm-decoding-off-netlink "$got"
setpci -s "$bdf" COMMAND=2:2
wait_for 3 '[[ $(read_err "$c/status") == ok ]]'
t_eq review-alarm-back "$(read_err "${ch0}_max_alarm")" 1
t_eq review-alarm-no-new-crossing "$(read_err "$c/threshold_crossings")" "$x0"
sim 0 allones
wait_for 3 '[[ $(read_err "$c/status") == unavailable* ]]'
t_eq review-alarm-allones "$(read_err "${ch0}_max_alarm")" 0
sim 0 fixture gb202
wait_for 3 '[[ $(read_err "$c/status") == ok ]]'
nvs_unload
