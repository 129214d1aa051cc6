#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# Builds nvsidecar.ko from scratch for each kernel the project targets here,
# with W=1 (extra warnings) and C=2 (sparse on every file), into
# $NVS_BUILD/kmod-<release>/ where the VM lanes load it from. A build passes
# only with no compiler or sparse diagnostic at all; modinfo must then show
# the package version and the kernel's vermagic.
set -u
. "$(dirname "$0")/../lib.sh"

version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$NVS_TOP/dkms.conf")
kernels=(6.1.0-57-amd64 6.12.117+deb12-amd64 6.12.118-nvsdebug)

for kver in "${kernels[@]}"; do
	name="kbuild $kver"
	if [[ ! -d /lib/modules/$kver/build ]]; then
		t_skip "$name" "no headers for $kver (scripts/deps.sh installs them)"
		continue
	fi
	if ! command -v sparse >/dev/null; then
		t_skip "$name" "sparse is not installed (scripts/deps.sh installs it)"
		continue
	fi
	dir=$NVS_BUILD/kmod-$kver
	log=$NVS_BUILD/kbuild-$kver.log
	# From scratch: an up-to-date object would hide its warnings.
	rm -rf "$dir"
	if ! make -C "$NVS_TOP" --no-print-directory -j2 module KVER="$kver" \
		MODDIR="$dir" W=1 C=2 >"$log" 2>&1; then
		t_fail "$name" "build failed: $(grep -m3 -E 'error|Error' "$log" | tr -s ' \n' ' ') (log: $log)"
		continue
	fi
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
	if [[ ! -f $dir/nvsidecar.ko ]]; then
		t_fail "$name" "no $dir/nvsidecar.ko after a successful build"
		continue
	fi
	t_pass "$name"

	got=$(modinfo -F version "$dir/nvsidecar.ko")
	magic=$(modinfo -F vermagic "$dir/nvsidecar.ko")
	if [[ $got == "$version" && $magic == "$kver "* ]]; then
		t_pass "modinfo $kver"
	else
		t_fail "modinfo $kver" "version \`$got' (want $version), vermagic \`$magic' (want $kver ...)"
	fi
	if [[ $(modinfo -F alias "$dir/nvsidecar.ko") == *net-pf-16-proto-16-family-nvsidecar* ]]; then
		t_pass "modinfo $kver genl alias"
	else
		t_fail "modinfo $kver genl alias" "no net-pf-16-proto-16-family-nvsidecar alias: modprobe would not autoload it"
	fi
done
