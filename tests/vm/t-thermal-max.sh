#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: own (tests/vm/lanes.tsv)
#
# Issue 2: the root-writable _max threshold, _max_alarm and the crossing
# counters; malformed writes are refused and change nothing.
# Issue 19 item 5 (hwmon's rules, Documentation/hwmon/sysfs-interface.rst):
# a number out of range is clamped into it rather than refused.
set -u

sim_fixture_all gb202
nvs_load || { t_fail thermal-max-load "insmod failed"; exit 1; }
c=$(sim_class 0) h=$(sim_hwmon 0)
p=$(hw_temp "$h" ch0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'

# No threshold: _max reads the top of the range (kmod/hwmon.c), no alarm.
t_eq thermal-max-unset "$(read_err "${p}_max")/$(read_err "${p}_max_alarm")" "200000/0"
echo 95000 >"${p}_max"
t_eq thermal-max-set "$(read_err "${p}_max")" 95000
t_eq thermal-max-alarm-below "$(read_err "${p}_max_alarm")" 0

for _ in 1 2 3; do
	sim 0 temp ch0 100.25
	wait_for 3 '[[ $(read_err "${p}_max_alarm") == 1 ]]'
	a=$(read_err "${p}_max_alarm")
	sim 0 temp ch0 90
	wait_for 3 '[[ $(read_err "${p}_max_alarm") == 0 ]]'
	a+=$(read_err "${p}_max_alarm")
	[[ $a == 10 ]] || break
done
t_eq thermal-max-alarm-follows "$a" 10
t_eq thermal-max-crossings "$(read_err "$c/threshold_crossings")" 3
# Staying above is one crossing, not one per sample.
sim 0 temp ch0 101
wait_for 3 '[[ $(read_err "${p}_max_alarm") == 1 ]]'
sleep 0.3
t_eq thermal-max-one-crossing-per-excursion "$(read_err "$c/threshold_crossings")" 4
sim 0 temp ch0 90

# Malformed values (not a number, or one kstrtol cannot hold): refused by
# the hwmon core, the threshold stays.
for v in abc "" 95000x 99999999999999999999; do
	if echo "$v" >"${p}_max" 2>/dev/null; then
		t_fail "thermal-max-refuses-'$v'" "the write succeeded"
	else
		t_pass "thermal-max-refuses-'$v'"
	fi
done
t_eq thermal-max-unchanged "$(read_err "${p}_max")" 95000
# Numbers out of range are clamped to NVS_THRESH_MIN_MC..MAX_MC; the limits
# themselves are kept as written.
for v in -41000:-40000 200001:200000 -40000:-40000 200000:200000 \
	 -9999999:-40000 9999999:200000; do
	if echo "${v%%:*}" >"${p}_max" 2>/dev/null; then
		t_eq "thermal-max-clamps-'${v%%:*}'" "$(read_err "${p}_max")" "${v#*:}"
	else
		t_fail "thermal-max-clamps-'${v%%:*}'" "the write was refused"
	fi
done
# A clamped threshold still alarms: ch0 at 90 °C is above -40 °C.
echo -41000 >"${p}_max"
wait_for 3 '[[ $(read_err "${p}_max_alarm") == 1 ]]'
t_eq thermal-max-clamped-alarms "$(read_err "${p}_max_alarm")" 1
# Only netlink removes a threshold; afterwards _max reads the top of the
# range again and the alarm is gone.
"$NVS_BIN" set "${c##*/gpu}" threshold ch0 clear >/dev/null 2>&1 ||
	t_fail thermal-max-clear "nvsidecar set ... threshold ch0 clear failed"
t_eq thermal-max-cleared "$(read_err "${p}_max")/$(read_err "${p}_max_alarm")" "200000/0"
nvs_unload
