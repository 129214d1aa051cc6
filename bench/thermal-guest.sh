#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# Guest side of the "Thermal reads" benchmark (bench/run boots it with
# iomem=relaxed and one simulated GPU). Writes key=value lines to
# $NVS_OUT/thermal-bench.txt.
set -u
res=$NVS_OUT/thermal-bench.txt
: >"$res"

sim 0 fixture gb202
nvs_load || { t_fail bench-thermal-load "insmod failed"; exit 1; }
c=$(sim_class 0) h=$(sim_hwmon 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
idx=${c##*/gpu}
pid=$(pgrep -x "nvsidecar/$idx")
[[ -n $pid ]] || { t_fail bench-thermal-kthread "no nvsidecar/$idx kthread"; exit 1; }

# sampler_cost HZ SECONDS: CPU time of the sampler kthread (schedstat: ns
# on CPU) per second and per sampling pass, at HZ.
sampler_cost() {
	local hz=$1 secs=$2 c0 c1 s0 s1
	echo "$hz" >"$c/sample_hz"
	sleep 1
	read -r c0 _ <"/proc/$pid/schedstat"
	s0=$(read_err "$c/samples")
	sleep "$secs"
	read -r c1 _ <"/proc/$pid/schedstat"
	s1=$(read_err "$c/samples")
	echo "sampler_${hz}hz_passes_per_s=$(((s1 - s0) / secs))"
	echo "sampler_${hz}hz_cpu_us_per_s=$(((c1 - c0) / secs / 1000))"
	echo "sampler_${hz}hz_cpu_us_per_pass=$(((c1 - c0) / ((s1 - s0) ? (s1 - s0) : 1) / 1000))"
}

{
	echo "kernel=$NVS_KVER"
	echo "cmdline=$(cat /run/nvs-cmdline)"
	echo "# sample_hz 50 (default): hwmon reads return the sampler's values"
	"$NVS_TOOLS/thermal-read" -b "$(sim_bdf 0)" -H "$h" -n 15 -i 20
	sampler_cost 50 10
	sampler_cost 1000 5
	echo "# sample_hz 0: every hwmon read takes a fresh sample"
	echo 0 >"$c/sample_hz"
	"$NVS_TOOLS/thermal-read" -b "$(sim_bdf 0)" -H "$h" -n 7 -i 10 | sed 's/^/ondemand_/'
} >>"$res" 2>&1
rc=$?
cat "$res"
grep -q '^ratio_devmem_over_hwmon=' "$res" && t_pass bench-thermal || t_fail bench-thermal "no result (rc $rc)"
nvs_unload
