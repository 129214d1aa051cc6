#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# vm: before -- tests/run boots no VM lane while this runs: it
#   builds the module that each lane loads (tests/vm/vmlib.sh reuses it).
#
# Builds nvsidecar.ko from scratch for every kernel lane (scripts/kernels.sh:
# the bullseye floor, Debian 6.1 and 6.12, the debug kernel, sid's newest
# stable kernel and experimental's release candidate) with W=1 (extra
# warnings) and C=2 (sparse on every file), into $NVS_BUILD/kmod-<release>/
# where the VM lanes load it from. A build passes only with no compiler or
# sparse diagnostic at all. The compile-probe results (conftest.h) are
# printed per kernel. modinfo must then show the package version and the
# vermagic of the kernel's own packaged modules, where the lane has them.
set -u
. "$(dirname "$0")/../lib.sh"
# shellcheck source=../../scripts/kernels.sh
. "$NVS_TOP/scripts/kernels.sh"

version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$NVS_TOP/dkms.conf")
if ! command -v sparse >/dev/null; then
	t_fail "kbuild" "sparse is not installed (scripts/deps.sh installs it)"
	exit 0
fi
times=$NVS_BUILD/kbuild-times
: >"$times"

# packaged_vermagic MODROOT RELEASE: the vermagic of one of the kernel's own
# modules (empty when the lane has no packaged modules here).
packaged_vermagic() {
	local m
	[[ -n $1 ]] || return 0
	m=$(find "$1/lib/modules/$2/kernel/drivers/net" -name '*.ko*' -print -quit 2>/dev/null)
	[[ -n $m ]] && modinfo -F vermagic "$m"
}

for lane in "${KERN_LANES[@]}"; do
	kern_resolve "$lane"
	rc=$?
	if ((rc == 2)); then
		t_skip "kbuild $lane" "$KERR"
		continue
	elif ((rc != 0)); then
		t_fail "kbuild $lane" "$KERR"
		continue
	fi
	kver=$KREL
	name="kbuild $lane ($kver)"
	if ! check=$(kern_sparse "$KDIR" 2>"$NVS_BUILD/sparse-$lane.err"); then
		t_fail "$name" "no usable sparse: $(<"$NVS_BUILD/sparse-$lane.err")"
		continue
	fi
	dir=$NVS_BUILD/kmod-$kver
	log=$NVS_BUILD/kbuild-$kver.log
	t0=$SECONDS
	# From scratch: an up-to-date object would hide its warnings.
	rm -rf "$dir"
	if ! make -C "$NVS_TOP" --no-print-directory -j2 module KVER="$kver" KDIR="$KDIR" \
		MODDIR="$dir" W=1 C=2 CHECK="$check" >"$log" 2>&1; then
		t_fail "$name" "build failed: $(grep -m3 -E 'error|Error' "$log" | tr -s ' \n' ' ') (log: $log)"
		continue
	fi
	echo "$lane $kver $((SECONDS - t0))" >>"$times"
	echo "   $lane $kver: $((SECONDS - t0)) s; sparse: $check; conftest: $(sed -n 's/^#define COMPAT_\([A-Z0-9_]*\) 1$/\1/p' "$dir/conftest.h" | tr '\n' ' ')"
	# gcc and sparse both say "warning:" or "error:"; sparse also prints
	# bare "file:line:col: " continuation lines under them.
	diag=$(grep -E 'warning:|error:|^[^ ]+\.[ch]:[0-9]+:[0-9]+: ' "$log")
	if [[ -n $diag ]]; then
		t_fail "$name" "$(wc -l <<<"$diag") diagnostic(s): $(head -n 2 <<<"$diag" | tr -s ' \n' ' ') (log: $log)"
		continue
	fi
	if ! grep -q ' CHECK ' "$log"; then
		t_fail "$name" "sparse did not run (no CHECK lines in $log)"
		continue
	fi
	if [[ ! -f $dir/nvsidecar.ko || ! -f $dir/conftest.h ]]; then
		t_fail "$name" "no $dir/nvsidecar.ko or conftest.h after a successful build"
		continue
	fi
	t_pass "$name"

	got=$(modinfo -F version "$dir/nvsidecar.ko")
	magic=$(modinfo -F vermagic "$dir/nvsidecar.ko")
	want=$(packaged_vermagic "$KMODROOT" "$kver")
	if [[ $got != "$version" || $magic != "$kver "* ]]; then
		t_fail "modinfo $lane" "version \`$got' (want $version), vermagic \`$magic' (want $kver ...)"
	elif [[ -n $want && $magic != "$want" ]]; then
		t_fail "modinfo $lane" "vermagic \`$magic' differs from the packaged kernel's modules (\`$want'): the kernel would refuse it"
	else
		t_pass "modinfo $lane"
	fi
	if [[ $(modinfo -F alias "$dir/nvsidecar.ko") == *net-pf-16-proto-16-family-nvsidecar* ]]; then
		t_pass "modinfo $lane genl alias"
	else
		t_fail "modinfo $lane genl alias" "no net-pf-16-proto-16-family-nvsidecar alias: modprobe would not autoload it"
	fi
done
