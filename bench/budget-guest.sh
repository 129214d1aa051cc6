#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# Guest side of the "Register-read budget" benchmark (bench/budget-run):
# one simulated RTX 5090 with all 16 memory modules present (nvsim
# fixture gb202-full); mmio_reads counts every register read. Writes
# key=value lines to $NVS_OUT/budget-bench.txt.
set -u
res=$NVS_OUT/budget-bench.txt
: >"$res"

sim 0 fixture gb202-full
nvs_load || { t_fail bench-budget-load "insmod failed"; exit 1; }
c=$(sim_class 0) h=$(sim_hwmon 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'

# measure NAME SECONDS: register reads and passes per second of GPU0
measure() {
	local r0 s0 t0 r1 s1 t1
	nvs_sleep 1
	r0=$(read_err "$c/mmio_reads") s0=$(read_err "$c/samples") t0=${EPOCHREALTIME/./}
	nvs_sleep "$2"
	r1=$(read_err "$c/mmio_reads") s1=$(read_err "$c/samples") t1=${EPOCHREALTIME/./}
	echo "$1_reads_per_s=$(((r1 - r0) * 1000000 / (t1 - t0)))"
	echo "$1_passes_per_s=$(((s1 - s0) * 1000000 / (t1 - t0)))"
}

{
	echo "kernel=$NVS_KVER"
	echo "modules=$(cat "$h"/temp*_label | grep -c '^mem[0-9]')"
	measure default 20
	# the schedule before the budget: memory every pass at up to 10 Hz
	echo 10 >"$c/mem_hz"
	measure mem10 10
	echo 1 >"$c/mem_hz"
	echo 1000 >"$c/sample_hz"
	measure hz1000 10
	# sample_hz 0 and three unprivileged readers as fast as they go
	echo 0 >"$c/sample_hz"
	stop=/tmp/bench-budget-stop
	rm -f "$stop"
	for _ in 1 2 3; do
		as_user bash -c "while [[ ! -e $stop ]]; do for f in $h/temp*_input $c/status; do read -r _ <\$f; done; done" 2>/dev/null &
	done
	measure ondemand 10
	: >"$stop"
	wait
} >>"$res" 2>&1
cat "$res"
grep -q '^ondemand_reads_per_s=' "$res" && t_pass bench-budget || t_fail bench-budget "no result"
nvs_unload
