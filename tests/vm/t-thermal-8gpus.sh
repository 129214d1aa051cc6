#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: own (tests/vm/lanes.tsv)
#
# Issue 2: 8 simulated GPUs at once, each showing its own registers (a
# different ch0 per GPU catches any mix-up between BARs, hwmon chips and
# class devices), all listed by `sensors`.
set -u

if ((NVS_GPUS < 8)); then
	t_skip thermal-8gpus "this boot has $NVS_GPUS simulated GPUs (run-vm -g 8)"
	exit 0
fi
for ((i = 0; i < 8; i++)); do
	sim "$i" fixture gb202
	sim "$i" temp ch0 "$((40 + i)).5"
done
nvs_load || { t_fail thermal-8gpus-load "insmod failed"; exit 1; }
t_eq thermal-8gpus-class "$(ls -d /sys/class/nvsidecar/gpu* | wc -l)" 8
bad=
for ((i = 0; i < 8; i++)); do
	c=$(sim_class "$i") h=$(sim_hwmon "$i") || { bad+=" gpu$i:missing"; continue; }
	wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
	v=$(read_err "$(hw_temp "$h" ch0)_input")
	[[ $v == "$((40 + i))500" && $(read_err "$c/pci") == "$(sim_bdf "$i")" ]] || bad+=" sim$i:$v@$(read_err "$c/pci")"
done
[[ -z $bad ]] && t_pass thermal-8gpus-values || t_fail thermal-8gpus-values "$bad"
t_eq thermal-8gpus-sensors "$(sensors 2>/dev/null | grep -c '^nvsidecar-pci-')" 8
# All 8 samplers run at their rate.
s0=$(cat /sys/class/nvsidecar/gpu*/samples | paste -sd+ | bc)
sleep 1
s1=$(cat /sys/class/nvsidecar/gpu*/samples | paste -sd+ | bc)
if ((s1 - s0 >= 8 * 20)); then
	t_pass thermal-8gpus-sampling
else
	t_fail thermal-8gpus-sampling "$((s1 - s0)) samples in 1 s over 8 GPUs at 50 Hz"
fi
nvs_unload
