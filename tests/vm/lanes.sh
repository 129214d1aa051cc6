#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# The VM suite (run by tests/run): for each boot lane of
# scripts/kernels.sh (Debian 6.1, Debian 6.12, sid's newest stable kernel
# from the archive, and the debug kernel with KASAN, lockdep and kmemleak
# from ../shared/kernels), build the module and the test tools for it, boot
# the kernel once with 8 simulated GPUs, run the lane's tests/vm/t-*.sh
# inside (tests/vm/guest-run.sh) and append the results with a lane prefix
# ("6.12: thermal-fixture"). A lane that does not finish (crash, panic,
# hang past its timeout) is a failure that quotes the console tail. A lane
# whose kernel scripts/deps.sh or scripts/kernels.sh should have provided
# and did not is a failure that names what to install.
#
# Environment: NVS_LANES="6.1 6.12 sid debug" chooses lanes, NVS_TESTS='t-x*'
# the files (every lane), NVS_LANE_TIMEOUT (s) overrides the per-lane VM
# limit.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"
# shellcheck source=vmlib.sh
. "$here/vmlib.sh"

lanes=${NVS_LANES:-${KERN_BOOT_LANES[*]}}

if ! command -v qemu-system-x86_64 >/dev/null; then
	t_fail vm-harness "qemu-system-x86_64 is missing (run scripts/deps.sh)"
	exit 0
fi
if vm_tools; then
	t_pass vm-tools-build
else
	t_fail vm-tools-build "a tests/vm/tools/*.c or bench/*.c program does not build (see above)"
fi

mkdir -p "$NVS_BUILD/vm"
times=$NVS_BUILD/vm/lane-times
: >"$times"
total=$SECONDS
for lane in $lanes; do
	t0=$SECONDS
	if ! vm_kernel "$lane" 2>"$NVS_BUILD/vm/kernel-$lane.err"; then
		why=$(<"$NVS_BUILD/vm/kernel-$lane.err")
		if [[ $lane == debug && ! -d $NVS_SHARED/kernels ]]; then
			t_skip "debug: vm-lane" "the debug lane needs ../shared/kernels beside the clone: $why"
		else
			t_fail "$lane: vm-lane" "$why"
		fi
		continue
	fi
	kver=$VM_KREL
	tests=${NVS_TESTS:-t-*.sh}
	scale=() skip= gpus=8
	# Files that test userspace against the module's interfaces, not the
	# module on a new kernel: they run in the 6.12 lane, the reference.
	userspace="t-topo.sh t-rdma.sh t-doctor.sh t-slurm.sh t-prometheus.sh"
	userspace_why="userspace on the module's interfaces, which the 6.12 lane runs"
	# The stress loops (load/unload cycles, the netlink fuzzer) repeat
	# what one pass of the other files already drives on a kernel; they
	# find races and leaks, which the 6.12 lane (the reference) and the
	# debug lane (KASAN, lockdep, kmemleak) are for.
	stress="t-thermal-cycles.sh t-netlink-fuzz.sh"
	stress_why="a stress loop: the 6.12 lane runs it, and the debug lane the fuzzer (CI time)"
	# Files about values and rules of our own code (fan-out to 8 GPUs,
	# file modes, the 60 ms spike, fault patterns, alarms): the same on
	# every kernel, so the reference lane runs them.
	own="t-thermal-8gpus.sh t-thermal-perms.sh t-thermal-spike.sh t-thermal-faults.sh t-thermal-max.sh"
	own_why="values and rules of our own code, the same on every kernel: the 6.12 lane runs it (CI time)"
	case $lane in
	6.12) limit=1500 ftimeout=400 ;;
	6.1)
		limit=1500 ftimeout=400
		skip="$userspace|$userspace_why;$stress|$stress_why;$own|$own_why"
		;;
	sid)
		# The newest stable kernel: every file that drives the module's
		# kernel interfaces (hwmon, sysfs, netlink, PCI hotplug and
		# ownership, dma-buf), which is what a new kernel breaks.
		limit=1500 ftimeout=400
		skip="$userspace|$userspace_why;$stress|$stress_why;$own|$own_why"
		# dma-buf buffers up to 64 MiB: the same import path as 6.12's
		# 512 MiB, at a fraction of the time under emulation.
		scale=(-e NVS_DMABUF_MAX_MB=64)
		;;
	debug)
		# KASAN, lockdep and TCG make every file 2-4 times slower; the
		# stress loops are scaled down so that the CI run stays within
		# its budget. t-budget-reads measures read rates against wall-clock
		# time; under KASAN it measures the checkers instead (464 s).
		limit=2400 ftimeout=900
		# Buffers stop at 32 MiB: KASAN poisons and checks every page of
		# a 512 MiB udmabuf for minutes under TCG, and the larger sizes
		# take the same code path (the Debian lanes probe them).
		# kmemleak finds a leaked attachment after any number of probes;
		# 300 is enough for it to be reported by the scan at the end.
		scale=(-e NVS_FUZZ_COUNT=4000 -e NVS_DMABUF_CYCLES=300 -e NVS_DMABUF_MAX_MB=32
			-e NVS_DMABUF_CLI=0 -e NVS_DMABUF_FEW_INPUTS=1 -e NVS_OWNED_CYCLES=3 -e NVS_OWNED_LOADS=1
			-e NVS_LAST=t-owned-unplug.sh)
		# t-owned-unplug runs last: its surprise removal makes pciehp's
		# own lockdep report (guest-lib.sh, _dmesg_not_ours), after
		# which lockdep is off for the rest of the boot.
		# Six simulated GPUs, the most any file kept here uses
		# (t-owned-unplug): every idle GPU's sampler is KASAN-checked
		# work at 50 Hz that slows the whole guest.
		gpus=6
		skip="$userspace|$userspace_why;t-budget-reads.sh|rates against wall-clock time measure KASAN here, not the module (the Debian and sid lanes run it)"
		# Files whose kernel paths the files kept here already drive
		# (hwmon and sysfs reads, genetlink ops, load and unload), and
		# whose own matter is userspace or timing: the recorder and ring
		# semantics of t-netlink (the fuzzer and t-netlink-hotplug drive
		# every genetlink op here), 8-GPU fan-out, file modes, the 60 ms
		# spike.
		skip+=";t-netlink.sh t-thermal-8gpus.sh t-thermal-perms.sh t-thermal-spike.sh|covered in this lane by the fuzzer, t-netlink-hotplug and the thermal files, and userspace or timing under KASAN (the 6.1, 6.12 and sid lanes run it)"
		# Decoding, alarms, fault patterns and module-parameter checks:
		# values and rules of our own code, the same on every kernel,
		# with no lifetime or lock of their own.
		skip+=";t-thermal-values.sh t-thermal-faults.sh t-thermal-max.sh t-review-modules.sh|values and rules of our own code with no lifetime or lock to check under KASAN (the 6.1, 6.12 and sid lanes run it)"
		# Paths the files kept here drive already, under the same
		# checkers: hot removal with readers (t-netlink-hotplug,
		# t-owned-unplug), load and unload with readers and streams
		# (t-review-unload), resets at 1000 Hz and sample_hz changes
		# (t-owned-pm, t-owned-bind).
		skip+=";t-thermal-hotplug.sh t-thermal-cycles.sh t-review-sampler.sh t-review-sim.sh|its paths are driven in this lane by t-netlink-hotplug, t-owned-*, t-review-unload (the 6.1, 6.12 and sid lanes run it)"
		;;
	*) limit=1500 ftimeout=400 ;;
	esac
	# A reason never holds ";", which separates the groups (guest-run.sh).
	# NVS_LANE_SKIP_EXTRA="t-x.sh ..." leaves more files out (local runs).
	[[ -n ${NVS_LANE_SKIP_EXTRA:-} ]] && skip="${skip:+$skip;}$NVS_LANE_SKIP_EXTRA|left out by NVS_LANE_SKIP_EXTRA"
	[[ -n $skip ]] && scale+=(-e "NVS_LANE_SKIP=$skip")
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
done
echo "   VM lanes: $((SECONDS - total)) s"
exit 0
