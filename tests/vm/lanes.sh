#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# The VM suite (run by tests/run): for each boot lane of
# scripts/kernels.sh (Debian 6.1, Debian 6.12, sid's newest stable kernel
# from the archive, and the debug kernel with KASAN, lockdep and kmemleak
# from ../shared/kernels or scripts/debug-kernel.sh), build the module and the test tools for it, boot
# the kernel once with 8 simulated GPUs, run the lane's tests/vm/t-*.sh
# inside (tests/vm/guest-run.sh) and append the results with a lane prefix
# ("6.12: thermal-fixture"). A lane that does not finish (crash, panic,
# hang past its timeout) is a failure that quotes the console tail. A lane
# whose kernel scripts/deps.sh or scripts/kernels.sh should have provided
# and did not is a failure that names what to install.
#
# Which files each lane runs, and why it leaves the others out, is the
# table tests/vm/lanes.tsv; each t-*.sh declares its class in a header
# line ("# class: kernel"), and a file without a class the table knows is
# a failure (vm-class-NAME).
#
# Environment: NVS_LANES="6.1 6.12 sid debug" chooses lanes; NVS_ONLY='glob
# ...' the files (matched against "t-x.sh", "t-x" and "x"; NVS_TESTS='t-x*'
# does the same with file globs); NVS_LANE_TIMEOUT (s) overrides the
# per-lane VM limit; NVS_LANE_SKIP_EXTRA="t-x.sh ..." leaves more files out
# (local runs); NVS_LANES_DRY=1 prints what each lane would run and why,
# and boots nothing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"
# shellcheck source=vmlib.sh
. "$here/vmlib.sh"

lanes=${NVS_LANES:-${KERN_BOOT_LANES[*]}}

# The files this run asks for (NVS_TESTS globs, then NVS_ONLY), in name
# order; every file's class is checked whether or not it runs.
read -ra globs <<<"${NVS_TESTS:-t-*.sh}"
shopt -s nullglob
files=()
bad=0
for f in "$here"/t-*.sh; do
	base=${f##*/}
	if ! why=$(lane_class_check "$f"); then
		t_fail "vm-class-${base%.sh}" "$why"
		bad=1
	fi
	for g in "${globs[@]}"; do
		# shellcheck disable=SC2053 # g is a glob
		[[ $base == $g ]] || continue
		b=${base%.sh}
		nvs_only "$base" "$b" "${b#t-}" vm && files+=("$base")
		break
	done
done
shopt -u nullglob
# The second part of a run that booted the other lanes beside the host
# suites (tests/run, NVS_VM_SECOND) checked the classes and the tools
# already: it reports only a failure.
((bad)) || [[ -n ${NVS_VM_SECOND:-} ]] || t_pass vm-classes
if ((${#files[@]} == 0)); then
	t_skip vm-lanes "no tests/vm/t-*.sh matches NVS_TESTS='${NVS_TESTS:-t-*.sh}' NVS_ONLY='${NVS_ONLY:-}'"
	exit 0
fi

if [[ -n ${NVS_LANES_DRY:-} ]]; then
	for lane in $lanes; do
		lane_knobs "$lane"
		echo "lane $lane limit=${NVS_LANE_TIMEOUT:-$LANE_LIMIT} ftimeout=$LANE_FTIMEOUT gpus=$LANE_GPUS env=${LANE_ENV[*]}"
		# NVS_LAST's files run last (guest-run.sh).
		last=" $(printf '%s\n' "${LANE_ENV[@]}" | sed -n 's/^NVS_LAST=//p' | tr '\n' ' ') "
		order=()
		for f in "${files[@]}"; do [[ $last == *" $f "* ]] || order+=("$f"); done
		for f in "${files[@]}"; do [[ $last == *" $f "* ]] && order+=("$f"); done
		for f in "${order[@]}"; do
			if lane_verdict "$lane" "$here/$f"; then
				echo "  $f run"
			else
				echo "  $f skip: $LANE_WHY"
			fi
		done
	done
	exit 0
fi

if ! command -v qemu-system-x86_64 >/dev/null; then
	t_fail vm-harness "qemu-system-x86_64 is missing (run scripts/deps.sh)"
	exit 0
fi
if vm_tools; then
	[[ -n ${NVS_VM_SECOND:-} ]] || t_pass vm-tools-build
else
	t_fail vm-tools-build "a tests/vm/tools/*.c or bench/*.c program does not build (see above)"
fi

mkdir -p "$NVS_BUILD/vm"
times=$NVS_BUILD/vm/lane-times
[[ -n ${NVS_VM_SECOND:-} ]] || : >"$times"
total=$SECONDS
for lane in $lanes; do
	t0=$SECONDS
	if ! vm_kernel "$lane" 2>"$NVS_BUILD/vm/kernel-$lane.err"; then
		why=$(<"$NVS_BUILD/vm/kernel-$lane.err")
		if [[ $lane == debug && ! -d $NVS_SHARED/kernels ]]; then
			t_skip "debug: vm-lane" "the debug lane needs ../shared/kernels beside the clone, or a kernel built by scripts/debug-kernel.sh: $why"
		else
			t_fail "$lane: vm-lane" "$why"
		fi
		continue
	fi
	kver=$VM_KREL
	tests="${files[*]}"
	lane_knobs "$lane"
	gpus=$LANE_GPUS ftimeout=$LANE_FTIMEOUT limit=$LANE_LIMIT
	# The guest reads the lane's skip rows itself (guest-run.sh).
	scale=(-e NVS_LANE_POLICY=1)
	for e in "${LANE_ENV[@]}"; do scale+=(-e "$e"); done
	[[ -n ${NVS_LANE_SKIP_EXTRA:-} ]] && scale+=(-e "NVS_LANE_SKIP_EXTRA=$NVS_LANE_SKIP_EXTRA")
	limit=${NVS_LANE_TIMEOUT:-$limit}
	echo "-- lane $lane ($kver)"
	if vm_module "$kver" "$VM_KDIR"; then
		t_pass "$lane: module-build"
	else
		t_fail "$lane: module-build" "make module KVER=$kver failed (log: $NVS_BUILD/kmod-$kver.log)"
	fi
	out=$NVS_BUILD/vm/lane-$lane
	"$here/run-vm" -k "$lane" -g "$gpus" -t "$tests" -o "$out" -T "$limit" \
		--file-timeout "$ftimeout" -q "${scale[@]}"
	rc=$?
	# A guest that died before the test runner started ($out/gpus is its
	# first write) never loaded the module: QEMU's TCG occasionally crashes
	# an early boot (an int3 in sched_clock_cpu under load). That is not a
	# test result, so boot once more, and say so; a second crash fails.
	if [[ ! -f $out/done && ! -s $out/gpus ]]; then
		echo "   lane $lane: the guest died before any test ran; booting it again. Console tail:"
		tail -n 8 "$out/console.log" 2>/dev/null | sed 's/^/   | /'
		mkdir -p "$NVS_BUILD/vm/boot-crashes"
		cp "$out/console.log" "$NVS_BUILD/vm/boot-crashes/$lane-$(date +%s).log" 2>/dev/null
		"$here/run-vm" -k "$lane" -g "$gpus" -t "$tests" -o "$out" -T "$limit" \
			--file-timeout "$ftimeout" -q "${scale[@]}"
		rc=$?
	fi
	# Lane prefix on every result the guest wrote, in the order written.
	while read -r verdict rest; do
		case $verdict in
		PASS | FAIL | SKIP) echo "$verdict $lane: $rest" >>"$NVS_RESULTS" ;;
		esac
	done <"$out/results.txt"
	sed -n 's/^\(PASS\|FAIL\|SKIP\) /  \1 /p' "$out/results.txt"
	if [[ -f $out/done ]]; then
		t_pass "$lane: vm-boot"
	elif [[ -s $out/console.log ]]; then
		why="did not finish (run-vm status $rc)"
		(($(cat "$out/seconds" 2>/dev/null || echo 0) >= limit)) && why="timed out after ${limit}s"
		t_fail "$lane: vm-boot" "$why; console tail: $(tail -n 12 "$out/console.log" | tr -s '\r\n\t ' ' ' | cut -c1-900)"
	else
		t_fail "$lane: vm-boot" "run-vm failed with status $rc before the guest printed anything"
	fi
	echo "$lane $kver $((SECONDS - t0))" >>"$times"
	echo "   lane $lane: $((SECONDS - t0)) s (VM $(cat "$out/seconds" 2>/dev/null) s), output in $out"
	if [[ -n ${NVS_TIMES:-} ]]; then echo "lane $lane $((SECONDS - t0))" >>"$NVS_TIMES"; fi
done
echo "   VM lanes: $((SECONDS - total)) s"
exit 0
