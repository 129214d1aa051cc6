#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# Builds the debug lane's kernel (KASAN, lockdep, kmemleak and what the VM
# tests need; scripts/nvsdebug.config-fragment) from Debian's
# linux-source-6.12, the way ../shared/kernels was made (its README.md):
# `make defconfig', `make kvm_guest.config', the fragment merged with the
# kernel's scripts/kconfig/merge_config.sh, then `make bindeb-pkg'. The
# result is the same pair of packages, linux-image-RELEASE and
# linux-headers-RELEASE (RELEASE = the source's version + "-nvsdebug"),
# with a SHA256SUMS, in OUT; scripts/deps.sh installs them from there.
#
# Usage: scripts/debug-kernel.sh [-o OUT] [-j JOBS] [--configure-only]
#   -o OUT            where the .debs go (default: build/debug-kernel in
#                     this checkout); the tree is unpacked in OUT/src
#   -j JOBS           parallel jobs (default: the number of CPUs)
#   --configure-only  stop after the configuration, once every option of
#                     the fragment is checked to be set as it says (a
#                     minute; the whole build takes hours, CI never runs it)
#
# Needs root once, to install the build's Debian packages if missing.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
frag=$top/scripts/nvsdebug.config-fragment
out=$top/build/debug-kernel jobs=$(nproc) only=0
while (($#)); do
	case $1 in
	-o) out=$2; shift ;;
	-j) jobs=$2; shift ;;
	--configure-only) only=1 ;;
	-h | --help) sed -n '3,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "debug-kernel: unknown option \`$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done

# What `make bindeb-pkg' of a 6.12 tree runs, besides the compiler:
# flex/bison (kconfig), bc, libelf (objtool), libssl (certificate tools),
# dpkg-dev (dpkg-buildpackage), rsync (headers_install), kmod and cpio.
want=(linux-source-6.12 build-essential bc bison flex libelf-dev libssl-dev dpkg-dev rsync kmod cpio xz-utils)
missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
	((EUID == 0)) || { echo "debug-kernel: install ${missing[*]} (as root: apt-get install ${missing[*]})" >&2; exit 1; }
	echo "debug-kernel: installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The package ships the tree as one tarball; its version is the Makefile's.
tarball=$(ls /usr/src/linux-source-6.12.tar.* 2>/dev/null | head -n 1)
[[ -n $tarball ]] || { echo "debug-kernel: linux-source-6.12 has no tarball in /usr/src" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$out/src
rm -rf "$src"
mkdir -p "$src"
echo "debug-kernel: unpacking $tarball into $src"
tar -xf "$tarball" -C "$src" --strip-components=1
ver=$(make -s -C "$src" kernelversion)

cd "$src"
make -s defconfig >/dev/null
make -s kvm_guest.config >/dev/null
# -m merges without running kconfig; olddefconfig then settles every
# option the fragment's choices imply.
scripts/kconfig/merge_config.sh -m .config "$frag" >/dev/null
make -s olddefconfig >/dev/null

# Every option of the fragment must have survived: kconfig drops a value
# whose dependencies are not met, silently.
bad=()
while IFS= read -r line; do
	[[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]] || continue
	opt=${BASH_REMATCH[1]} val=${BASH_REMATCH[2]}
	if [[ $val == n ]]; then
		grep -qx "$opt=[ym]" .config && bad+=("$opt=n (is $(grep "^$opt=" .config))")
	else
		grep -qxF "$line" .config || bad+=("$line (is $(grep "^$opt=" .config || echo 'not set'))")
	fi
done <"$frag"
if ((${#bad[@]})); then
	echo "debug-kernel: the configuration lost options of $frag:" >&2
	printf '  %s\n' "${bad[@]}" >&2
	exit 1
fi
# The release bindeb-pkg will name the packages after: the version and
# CONFIG_LOCALVERSION (`make kernelrelease' knows it only after a build
# has started; an unpacked tarball is no git tree, so no "+" is added).
rel=$ver$(sed -n 's/^CONFIG_LOCALVERSION="\(.*\)"$/\1/p' .config)
echo "debug-kernel: $rel configured; every option of ${frag##*/} is set as it says"
((only)) && exit 0

# Debian revision 1, as ../shared/kernels has it (VERSION-1).
echo "debug-kernel: building $rel with $jobs jobs (hours on a few CPUs; log: $out/build.log)"
make -j"$jobs" bindeb-pkg KDEB_PKGVERSION="$ver-1" >"$out/build.log" 2>&1 ||
	{ tail -n 20 "$out/build.log" >&2; echo "debug-kernel: the build failed (log: $out/build.log)" >&2; exit 1; }
# bindeb-pkg writes the packages beside the tree, that is into OUT.
cd "$out"
ls linux-image-"$rel"_*.deb linux-headers-"$rel"_*.deb >/dev/null ||
	{ echo "debug-kernel: bindeb-pkg made no linux-image/linux-headers .deb for $rel" >&2; exit 1; }
sha256sum linux-image-"$rel"_*.deb linux-headers-"$rel"_*.deb >SHA256SUMS
echo "debug-kernel: $out has $(ls linux-*-"$rel"_*.deb | tr '\n' ' ')"
echo "debug-kernel: install them with scripts/deps.sh (or dpkg -i as root)"
