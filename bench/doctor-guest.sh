#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# Guest side of the "doctor --quick" benchmark (bench/doctor-run): 8
# simulated GPUs, the module loaded. Times, interleaved, N runs each:
#   doctor   nvsidecar doctor --quick --brief --expect-gpus 8 (a whole process)
#   cat      one cat of every hwmon temp*_input (168 files): the cheapest
#            program that reads every sensor
#   sensors  lm-sensors' sensors, what an admin runs
# Wall time from bash's EPOCHREALTIME (no fork to time), and doctor's own
# figure from its --brief line. key=value lines to $NVS_OUT/doctor-bench.txt.
set -u
res=$NVS_OUT/doctor-bench.txt
n=${NVS_BENCH_RUNS:-30}
: >"$res"

sim_fixture_all gb202
nvs_load || { t_fail bench-doctor-load "insmod failed"; exit 1; }
wait_for 5 '[[ $(read_err "$(sim_class 0)/status") == ok ]]'
mkdir -p /run/nvs-bench-root
export NVS_DOCTOR_ROOT=/run/nvs-bench-root
files=(/sys/class/hwmon/hwmon*/temp*_input)

us() { # us START END: microseconds between two EPOCHREALTIME values
	local a=${1/./} b=${2/./}
	echo $((10#$b - 10#$a))
}
: >/run/doctor.us
: >/run/cat.us
: >/run/sensors.us
: >/run/inproc.s
# one warm-up each: the first exec of a program reads it over 9p
"$NVS_BIN" doctor --quick --brief --expect-gpus 8 >/dev/null
cat "${files[@]}" >/dev/null 2>&1
sensors >/dev/null 2>&1
for ((i = 0; i < n; i++)); do
	t0=$EPOCHREALTIME
	line=$("$NVS_BIN" doctor --quick --brief --expect-gpus 8)
	t1=$EPOCHREALTIME
	cat "${files[@]}" >/dev/null 2>&1
	t2=$EPOCHREALTIME
	sensors >/dev/null 2>&1
	t3=$EPOCHREALTIME
	us "$t0" "$t1" >>/run/doctor.us
	us "$t1" "$t2" >>/run/cat.us
	us "$t2" "$t3" >>/run/sensors.us
	s=${line##*mode, }
	echo "${s%% s)*}" >>/run/inproc.s
done
[[ $line == OK:* ]] || t_fail bench-doctor-verdict "doctor --quick was not healthy: $line"
med() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
p90() { sort -n "$1" | awk '{ v[NR] = $1 } END { i = int(NR * 0.9 + 0.5); if (i < 1) i = 1; print v[i] }'; }
{
	echo "kernel=$NVS_KVER"
	echo "runs=$n"
	echo "files=${#files[@]}"
	echo "last_line=$line"
	for k in doctor cat sensors; do
		echo "${k}_us_median=$(med /run/$k.us)"
		echo "${k}_us_p90=$(p90 /run/$k.us)"
	done
	echo "doctor_inprocess_s_median=$(med /run/inproc.s)"
	echo "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$res"
cat "$res"
t_pass bench-doctor
