#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# Guest side of bench/netlink-run (8 simulated GPUs, one VM run):
#  1. snapshot latency of every sensor of every GPU: one netlink dump vs
#     hwmon sysfs reads (bench/netlink-bench.c), same run, alternating;
#  2. the highest sample rate that all 8 GPUs sustain with zero loss:
#     for each rate, every GPU is set to it and `nvsidecar thermal --record'
#     runs for 10 s; the rate passes when the recording lost nothing and
#     every GPU delivered at least 95% of the rate (the sampler kept up).
# Results go to $NVS_OUT/netlink-bench.txt.
set -u
B=$NVS_BIN
out=$NVS_OUT/netlink-bench.txt
: >"$out"
sim_fixture_all gb202
nvs_load || { echo "insmod failed" >>"$out"; exit 1; }
wait_for 5 '[[ $(read_err "$(sim_class 0)/status" 2>/dev/null) == ok ]]'
echo "kernel $(uname -r), $(nproc) vCPUs (QEMU TCG), $NVS_GPUS simulated GPUs" >>"$out"

"$NVS_TOOLS/netlink-bench" -n "${NVS_BENCH_ITER:-300}" >>"$out" 2>&1 || echo "netlink-bench failed" >>"$out"

gpus=(/sys/class/nvsidecar/gpu*)
best=0
for hz in ${NVS_BENCH_RATES:-50 100 200 400 700 1000}; do
	for c in "${gpus[@]}"; do
		"$B" set "${c##*/gpu}" sample-hz "$hz"
	done
	sleep 1
	"$B" thermal --record /tmp/rate.csv --duration "${NVS_BENCH_SECONDS:-10}" --allow-loss 2>/tmp/rate.err
	lost=$(sed -n 's/.*, lost \([0-9]*\)$/\1/p' /tmp/rate.err)
	secs=$(sed -n 's/.* in \([0-9.]*\) s, lost.*/\1/p' /tmp/rate.err)
	# samples per second of the slowest GPU
	min=$(awk -F, -v s="$secs" 'NR > 1 { n[$1]++ } END { m = -1; for (g in n) if (m < 0 || n[g] < m) m = n[g]; printf "%.1f", m / s }' /tmp/rate.csv)
	ok=no
	if [[ $lost == 0 ]] && awk -v m="$min" -v hz="$hz" 'BEGIN { exit !(m >= 0.95 * hz) }'; then
		ok=yes
		best=$hz
	fi
	echo "rate hz=$hz gpus=${#gpus[@]} lost=$lost slowest_gpu_samples_per_s=$min sustained=$ok" >>"$out"
done
echo "max_sustained_hz=$best" >>"$out"
cat "$out"
