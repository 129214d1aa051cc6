#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: stress (tests/vm/lanes.tsv)
#
# Issue 2: 200 load/unload cycles (NVS_CYCLES overrides) with concurrent
# readers of every hwmon and class file of every GPU; then the module must
# still load and read right. The runner checks the kernel log afterwards;
# the debug lane adds KASAN, lockdep and kmemleak.
set -u

cycles=${NVS_CYCLES:-200}
sim_fixture_all gb202
# Two GPUs (one switch) keep 200 cycles affordable under emulation; the
# others are hot-removed for the duration and rescanned at the end.
removed=()
for ((i = 2; i < NVS_GPUS; i++)); do
	b=$(sim_bdf "$i")
	echo 1 >"/sys/bus/pci/devices/$b/remove" && removed+=("$b")
done
# Readers use bash's own redirections (no fork per file) so that they
# keep every file busy without starving insmod of the 2 emulated CPUs.
readers=()
for _ in 1 2; do
	(while :; do
		for f in /sys/class/nvsidecar/gpu*/* /sys/class/hwmon/hwmon*/temp*; do
			read -r _ <"$f"
		done 2>/dev/null
	done) &
	readers+=($!)
done
# One writer too: thresholds and rates change while devices come and go.
(while :; do
	for f in /sys/class/hwmon/hwmon*/temp3_max; do echo 95000 >"$f"; done 2>/dev/null
	for f in /sys/class/nvsidecar/gpu*/sample_hz; do echo $((RANDOM % 200)) >"$f"; done 2>/dev/null
	nvs_sleep 0.05
done) &
readers+=($!)

t0=$SECONDS fail=
for ((n = 1; n <= cycles; n++)); do
	nvs_load || { fail="insmod failed at cycle $n"; break; }
	((n % 3)) && nvs_sleep 0.0$((RANDOM % 10))
	nvs_unload || { fail="rmmod failed at cycle $n"; break; }
	((n % 20)) || echo "  $n cycles, $((SECONDS - t0)) s"
done
kill "${readers[@]}" 2>/dev/null
wait "${readers[@]}" 2>/dev/null
echo "$((n - 1)) cycles in $((SECONDS - t0)) s"
[[ -z $fail ]] && t_pass thermal-load-unload-cycles || t_fail thermal-load-unload-cycles "$fail"

nvs_load
# shellcheck disable=SC2034 # c is used in wait_for's expression
c=$(sim_class 0) h=$(sim_hwmon 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
t_eq thermal-after-cycles "$(read_err "$(hw_temp "$h" ch0)_input")" 90215
nvs_unload
nvs_restore_gpus || t_fail thermal-cycles-rescan "removed GPUs did not come back: ${removed[*]}"
