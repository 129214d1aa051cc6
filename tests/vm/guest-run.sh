#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# In-guest runner. With --init it is PID 1 after tests/vm/init's
# switch_root: it finishes the mounts, runs the job, writes the sentinel
# $NVS_OUT/done and powers off. Without --init (inside a guest shell) it
# only runs the job.
#
# The job is $NVS_JOB if set (one bash script, guest-lib.sh sourced first),
# otherwise every tests/vm/t-*.sh matching the globs in $NVS_TESTS, in name order, each
# as its own bash process with guest-lib.sh sourced, $NVS_FILE_TIMEOUT
# seconds at most. After each file the runner unloads a module left loaded,
# kills what the file left running, and checks the new kernel log lines
# for splats (a "<name>-dmesg" result). In the debug lane a kmemleak scan
# at the end must find nothing.
set -u

init=0
[[ ${1:-} == --init ]] && init=1

if ((init)); then
	export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	export HOME=/tmp LANG=C.UTF-8 TERM=dumb
	mkdir -p /dev/pts /dev/shm
	# What udev would add: process substitution and friends need /dev/fd.
	ln -sfn /proc/self/fd /dev/fd
	ln -sfn /proc/self/fd/0 /dev/stdin
	ln -sfn /proc/self/fd/1 /dev/stdout
	ln -sfn /proc/self/fd/2 /dev/stderr
	mount -t devpts devpts /dev/pts
	mount -t tmpfs -o mode=1777 tmpfs /dev/shm
	mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	# shellcheck disable=SC1091
	. /run/nvs-out/env
	echo "nvs-$NVS_LANE" >/proc/sys/kernel/hostname
	ip link set lo up 2>/dev/null
	# The kernel log goes to the console only from warnings up; the full
	# log is saved to $NVS_OUT/dmesg at the end.
	dmesg -n "${NVS_CONSOLE_LEVEL:-5}"
fi

: "${NVS_OUT:=/run/nvs-out}" "${NVS_RESULTS:=$NVS_OUT/results.txt}"
: "${NVS_TESTS:=t-*.sh}" "${NVS_FILE_TIMEOUT:=300}" "${NVS_JOB:=}"
lib=$NVS_TOP/tests/vm/guest-lib.sh
# shellcheck source=guest-lib.sh
. "$lib"

nvs_write_gpu_map >"$NVS_OUT/gpus"

# run_one NAME FILE: one file in its own process group, time-limited.
run_one() {
	local name=$1 file=$2 rc pid t0=$SECONDS
	# The lane's skip rows in tests/vm/lanes.tsv (lanes.sh sets
	# NVS_LANE_POLICY; a run-vm of your own runs what you name).
	if [[ -n ${NVS_LANE_POLICY:-} ]] && ! lane_verdict "$NVS_LANE" "$file"; then
		t_skip "$name" "$LANE_WHY"
		return
	fi
	dmesg_mark "begin $name"
	echo "== $name"
	# BASH_ENV sources guest-lib.sh into the file (and any bash it starts).
	BASH_ENV=$lib timeout -k 10 "$NVS_FILE_TIMEOUT" bash "$file" </dev/null &
	pid=$!
	wait $pid
	rc=$?
	# timeout made its own process group: take down what the file left.
	kill -KILL -- "-$pid" 2>/dev/null
	if ((rc == 124 || rc == 137)); then
		# What was stuck: blocked tasks (sysrq w) go to the kernel log.
		{
			ps -eo pid,stat,wchan:32,args
			echo w >/proc/sysrq-trigger
			sleep 1
			dmesg_since_mark | tail -n 200
		} >"$NVS_OUT/timeout-$name.txt" 2>&1
		t_fail "$name" "timed out after ${NVS_FILE_TIMEOUT}s (state: timeout-$name.txt)"
	elif ((rc != 0)); then
		t_fail "$name" "exited with status $rc"
	fi
	if nvs_loaded; then
		rmmod nvsidecar 2>/dev/null || t_fail "$name-unload" "the module stayed loaded and rmmod failed"
	fi
	nvs_restore_gpus || t_fail "$name-restore" "a simulated GPU did not come back after a PCI rescan"
	dmesg_check "$name-dmesg"
	echo "   ($((SECONDS - t0)) s)"
}

start=$SECONDS
if [[ -e /sys/kernel/debug/kmemleak ]]; then
	# Only leaks made from here on count.
	echo clear >/sys/kernel/debug/kmemleak
fi
if [[ -n $NVS_JOB ]]; then
	run_one "$(basename "$NVS_JOB" .sh)" "$NVS_JOB"
else
	shopt -s nullglob
	# NVS_TESTS: one or more globs ("t-rdma.sh t-topo*"), in name order.
	files=()
	read -ra globs <<<"$NVS_TESTS"
	for g in "${globs[@]}"; do
		# shellcheck disable=SC2206 # g is a glob
		files+=("$NVS_TOP"/tests/vm/$g)
	done
	((${#files[@]})) && mapfile -t files < <(printf '%s\n' "${files[@]}" | sort -u)
	((${#files[@]})) || t_fail "vm-suite" "no test files match tests/vm/$NVS_TESTS"
	# NVS_LAST="t-x.sh ...": these run after every other file (the debug
	# lane: a file whose kernel report, not ours, turns lockdep off).
	if [[ -n ${NVS_LAST:-} ]]; then
		first=() last=()
		for f in "${files[@]}"; do
			if [[ " $NVS_LAST " == *" ${f##*/} "* ]]; then last+=("$f"); else first+=("$f"); fi
		done
		files=("${first[@]}" "${last[@]}")
	fi
	for f in "${files[@]}"; do
		[[ $(basename "$f") == t-*.sh ]] || continue
		n=$(basename "$f" .sh)
		run_one "${n#t-}" "$f"
	done
fi
if [[ $NVS_LANE == debug ]]; then
	kmemleak_check kmemleak-scan
fi
echo "guest: $((SECONDS - start)) s of tests"

rc=0
grep -q '^FAIL ' "$NVS_RESULTS" && rc=1
if ((init)); then
	dmesg >"$NVS_OUT/dmesg" 2>/dev/null
	echo "rc=$rc" >"$NVS_OUT/done"
	sync
	# PID 1 must outlive the power-off, or the kernel panics first. It
	# waits in a builtin: once the power-off begins, 9p (and with it every
	# program on the host root) is gone.
	exec {hold}<> <(:)
	echo o >/proc/sysrq-trigger
	while :; do read -r -t 3600 -u "$hold" _; done
fi
exit $rc
