#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# vm: before -- tests/run boots no VM lane while this runs: it
#   installs into /lib/modules and /usr/src, which the guests see.
#
# A real DKMS round trip for Debian's oldest kernel (6.1, found at run
# time, scripts/kernels.sh): `dkms add` of a
# copy of the module sources, `dkms build` and `dkms install` per kernel,
# `dkms status` and `modinfo -k` of what got installed, then `dkms remove`,
# leaving the host as it was found. Refuses to touch an nvsidecar the admin
# already has in DKMS.
set -u
. "$(dirname "$0")/../lib.sh"

pkg=nvsidecar
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$NVS_TOP/dkms.conf")
name=dkms
# shellcheck source=../../scripts/kernels.sh
. "$NVS_TOP/scripts/kernels.sh"
debian_kernels "$name"
# The oldest one: the package path (80-packaging) builds through DKMS for
# every Debian kernel with the same dkms.conf; this suite proves the
# source install (make install-dkms, dkms add) on one (CI time).
((${#kernels[@]})) && kernels=("${kernels[0]}")

if ! command -v dkms >/dev/null; then
	t_skip "dkms" "dkms is not installed (scripts/deps.sh installs it)"
	exit 0
fi
if ((EUID != 0)); then
	t_skip "dkms" "needs root to install into /lib/modules and /usr/src"
	exit 0
fi
if [[ -n $(dkms status -m "$pkg" 2>/dev/null) || -e /usr/src/$pkg-$ver ]]; then
	t_skip "dkms" "$pkg is already in DKMS or /usr/src/$pkg-$ver exists; not touching the admin's install"
	exit 0
fi

work=$(mktemp -d /tmp/nvs-dkms.XXXXXX)
src=$work/$pkg-$ver
log=$NVS_BUILD/dkms.log
: >"$log"
cleanup() {
	dkms remove -m "$pkg" -v "$ver" --all >>"$log" 2>&1
	rm -rf "/usr/src/$pkg-$ver" "$work"
}
trap cleanup EXIT

# The files a DKMS source tree needs, as `make install-dkms` ships them.
mkdir -p "$src"
(cd "$NVS_TOP" && cp -p --parents Makefile Kbuild dkms.conf kmod/*.c kmod/*.h \
	kmod/*.sh kmod/uapi/*.h "$src"/) || { t_fail "dkms add" "could not copy the sources"; exit 0; }

if ! dkms add "$src" >>"$log" 2>&1; then
	t_fail "dkms add" "$(tail -n 3 "$log" | tr -s ' \n' ' ') (log: $log)"
	exit 0
fi
t_pass "dkms add"

for kver in "${kernels[@]}"; do
	if ! dkms build -m "$pkg" -v "$ver" -k "$kver" >>"$log" 2>&1; then
		for mlog in /var/lib/dkms/$pkg/$ver/build/make.log \
			/var/lib/dkms/$pkg/$ver/$kver/x86_64/log/make.log; do
			[[ -f $mlog ]] && cp "$mlog" "$NVS_BUILD/dkms-make-$kver.log"
		done
		t_fail "dkms build $kver" "$(tail -n 3 "$log" | tr -s ' \n' ' ') (logs: $log, $NVS_BUILD/dkms-make-$kver.log)"
		continue
	fi
	t_pass "dkms build $kver"
	if ! dkms install -m "$pkg" -v "$ver" -k "$kver" >>"$log" 2>&1; then
		t_fail "dkms install $kver" "$(tail -n 3 "$log" | tr -s ' \n' ' ') (log: $log)"
		continue
	fi
	st=$(dkms status -m "$pkg" -v "$ver" -k "$kver" 2>&1)
	if [[ $st == *": installed"* ]]; then
		t_pass "dkms install $kver"
	else
		t_fail "dkms install $kver" "dkms status says \`$st'"
		continue
	fi
	# depmod ran for that kernel, so modinfo -k finds what DKMS installed
	path=$(modinfo -k "$kver" -F filename "$pkg" 2>&1)
	got=$(modinfo -k "$kver" -F version "$pkg" 2>&1)
	magic=$(modinfo -k "$kver" -F vermagic "$pkg" 2>&1)
	if [[ $path == */updates/dkms/* && $got == "$ver" && $magic == "$kver "* ]]; then
		t_pass "dkms modinfo $kver"
	else
		t_fail "dkms modinfo $kver" "file \`$path', version \`$got' (want $ver), vermagic \`$magic'"
	fi
done

cleanup
trap - EXIT
left=$(dkms status -m "$pkg" 2>&1)
gone=1
for kver in "${kernels[@]}"; do
	[[ -n $(find "/lib/modules/$kver" -name "$pkg.ko*" 2>/dev/null) ]] && gone=0
done
if [[ -z $left && ! -e /usr/src/$pkg-$ver && $gone == 1 ]]; then
	t_pass "dkms remove"
else
	t_fail "dkms remove" "left behind: status \`$left', /usr/src/$pkg-$ver or a $pkg.ko under /lib/modules"
fi
