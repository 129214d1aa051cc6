#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: own (tests/vm/lanes.tsv)
#
# Issue 2: the root-writable _max threshold, _max_alarm and the crossing
# counters; malformed writes are refused and change nothing.
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

# Malformed or out-of-range values: refused, the threshold stays.
for v in abc "" 95000x -41000 200001 99999999999999999999; do
	if echo "$v" >"${p}_max" 2>/dev/null; then
		t_fail "thermal-max-refuses-'$v'" "the write succeeded"
	else
		t_pass "thermal-max-refuses-'$v'"
	fi
done
t_eq thermal-max-unchanged "$(read_err "${p}_max")" 95000
# The limits themselves are accepted.
echo -40000 >"${p}_max" && echo 200000 >"${p}_max"
t_eq thermal-max-limits "$(read_err "${p}_max")" 200000
nvs_unload
