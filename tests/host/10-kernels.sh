#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# vm: before -- tests/run boots no VM lane while this runs: it
#   prepares the kernels the lanes boot.
#
# The kernels every later suite builds and boots against (scripts/kernels.sh):
# checks that each lane scripts/deps.sh installs is complete (image and
# headers), and prepares the archive lanes (bullseye: the floor; sid: the
# newest stable kernel, with its packaged image for the boot lane;
# experimental: the newest release candidate) from Debian's archive, cached
# under $NVS_CACHE. A missing kernel is a failure that names the package or
# the command that provides it, never a skip.
set -u
. "$(dirname "$0")/../lib.sh"
# shellcheck source=../../scripts/kernels.sh
. "$NVS_TOP/scripts/kernels.sh"

mkdir -p "$NVS_BUILD"
times=$NVS_BUILD/kernel-times
: >"$times"
# The archive lanes are prepared two at a time: each is mostly one
# single-threaded xz stream and a download, so a new machine pays for the
# slowest pair instead of the sum (their apt state and trees are separate).
for lane in "${KERN_LANES[@]}"; do
	_kern_suite "$lane" >/dev/null || continue
	while (($(jobs -rp | wc -l) >= 2)); do wait -n; done
	(
		t0=$SECONDS
		kern_prepare "$lane" 2>"$NVS_BUILD/kernel-$lane.err"
		rc=$?
		echo "$rc $((SECONDS - t0))" >"$NVS_BUILD/kernel-$lane.rc"
	) &
done
wait
for lane in "${KERN_LANES[@]}"; do
	t0=$SECONDS
	if _kern_suite "$lane" >/dev/null; then
		read -r rc secs <"$NVS_BUILD/kernel-$lane.rc" 2>/dev/null || rc=1 secs=0
		if ((rc != 0)); then
			t_fail "kernel $lane" "$(tr '\n' ' ' <"$NVS_BUILD/kernel-$lane.err")"
			continue
		fi
		sed 's/^/  /' "$NVS_BUILD/kernel-$lane.err"
		((t0 -= secs))
	fi
	kern_resolve "$lane"
	rc=$?
	if ((rc == 2)); then
		# Only the debug kernel can be absent by design: it lives beside
		# the clone, not in an archive.
		t_skip "kernel $lane" "$KERR"
		continue
	elif ((rc != 0)); then
		t_fail "kernel $lane" "$KERR"
		continue
	fi
	if [[ $lane == sid && -z $KIMG ]]; then
		t_fail "kernel $lane" "the sid tree is prepared but its packaged image is not (scripts/kernels.sh prepare sid)"
		continue
	fi
	t_pass "kernel $lane"
	echo "$lane $KREL $KVERSION $((SECONDS - t0))" >>"$times"
	echo "   $lane: $KREL ($KVERSION) $((SECONDS - t0)) s"
done
