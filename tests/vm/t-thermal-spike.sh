#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: own (tests/vm/lanes.tsv)
#
# Issue 2: a 60 ms spike written while the module samples at 50 Hz shows up
# in _highest (the point of the kernel sampler: NVML and 1 s pollers miss
# these), _lowest keeps the floor, and reset_history starts over.
set -u

sim_fixture_all gb202
nvs_load || { t_fail thermal-spike-load "insmod failed"; exit 1; }
c=$(sim_class 0) h=$(sim_hwmon 0)
ch0=$(hw_temp "$h" ch0) hot=$(hw_temp "$h" hotspot)
wait_for 5 '(( $(read_err "$c/samples") >= 2 ))'

s0=$(read_err "$c/samples")
sim 0 spike --ms 60 --value 105.5 >"$NVS_OUT/spike.log"
s1=$(read_err "$c/samples")
t_eq thermal-spike-highest "$(read_err "${ch0}_highest")" 105500
t_eq thermal-spike-hotspot-highest "$(read_err "${hot}_highest")" 105500
t_eq thermal-spike-lowest "$(read_err "${ch0}_lowest")" 90215
wait_for 2 '[[ $(read_err "${ch0}_input") == 90215 ]]'
t_eq thermal-spike-back "$(read_err "${ch0}_input")" 90215
echo "samples during the spike call: $((s1 - s0))"

# Reset one channel, then all.
echo 1 >"${ch0}_reset_history"
wait_for 2 '[[ $(read_err "${ch0}_highest") == 90215 ]]'
t_eq thermal-reset-history-channel "$(read_err "${ch0}_highest")" 90215
t_eq thermal-reset-history-other-kept "$(read_err "${hot}_highest")" 105500
echo 1 >"$h/temp_reset_history"
wait_for 2 '[[ $(read_err "${hot}_highest") == 92250 ]]'
t_eq thermal-reset-history-all "$(read_err "${hot}_highest")" 92250

# A ramp moves input, highest and lowest together.
sim 0 ramp --from 60 --to 99.5 --seconds 1 --hz 50 >/dev/null
wait_for 2 '[[ $(read_err "${ch0}_input") == 99500 ]]'
t_eq thermal-ramp-input "$(read_err "${ch0}_input")" 99500
t_eq thermal-ramp-highest "$(read_err "${ch0}_highest")" 99500
low=$(read_err "${ch0}_lowest")
if ((low >= 60000 && low <= 62000)); then
	t_pass thermal-ramp-lowest
else
	t_fail thermal-ramp-lowest "lowest $low after a ramp from 60 °C"
fi
nvs_unload
