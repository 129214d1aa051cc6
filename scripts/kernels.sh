#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# The kernels nvsidecar is built and booted against, found at run time:
# nothing here (or in any test) names a kernel ABI, because Debian moves
# them with every point release.
#
#   lane          where it comes from                          used for
#   bullseye      Debian 11's linux-source + distro config     build (the floor)
#   6.1           linux-image-amd64 (Debian 12), installed     build, DKMS, boot
#   6.12          linux-image-6.12-amd64 (bookworm), installed build, DKMS, boot
#   debug         ../shared/kernels or scripts/debug-kernel.sh (KASAN,
#                 lockdep, kmemleak) build, boot
#   sid           Debian unstable's newest stable kernel       build, boot
#   experimental  Debian experimental's release candidate      build
#
# The installed lanes come from the metapackages scripts/deps.sh installs;
# their ABI is read from the metapackage's dependency. The archive lanes
# (bullseye, sid, experimental) are prepared trees: the matching
# linux-source, with the .config, Module.symvers and kernel.release of the
# distro's own header package, made ready for external modules with this
# machine's compiler (`make olddefconfig modules_prepare`). The sid lane also
# gets the real kernel image and modules from the archive (dpkg -x), so that
# the module built against the prepared tree is loaded into the packaged
# kernel. Versions are picked from the archive's package lists each time;
# prepared trees are cached in $NVS_CACHE (default /var/cache/nvsidecar),
# keyed by release and package version, so only a new machine (or a new
# upload) pays for them.
#
# Usage (as a command):
#   scripts/kernels.sh list              one line per lane:
#                                        LANE RELEASE KDIR IMAGE MODROOT
#                                        ("-" where a lane has none)
#   scripts/kernels.sh prepare [LANE..]  fetch and prepare archive lanes
#   scripts/kernels.sh lanes             the lane names, in order
# As a library (`. scripts/kernels.sh`): kern_lanes, kern_resolve LANE,
# kern_prepare LANE; see each function.

NVS_CACHE=${NVS_CACHE:-/var/cache/nvsidecar}
: "${NVS_TOP:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${NVS_SHARED:=$NVS_TOP/../shared}"

KERN_LANES=(bullseye 6.1 6.12 debug sid experimental)
# Lanes booted by the VM suite, in the order tests/vm/lanes.sh runs them.
KERN_BOOT_LANES=(6.1 6.12 sid debug)

kern_lanes() { printf '%s\n' "${KERN_LANES[@]}"; }

# Archive lanes: suite and whether the lane boots the packaged image.
_kern_suite() {
	case $1 in
	bullseye) echo bullseye ;;
	sid) echo sid ;;
	experimental) echo experimental ;;
	*) return 1 ;;
	esac
}

# Installed lanes: the metapackage pair scripts/deps.list names.
_kern_meta() {
	case $1 in
	6.1) echo "linux-image-amd64 linux-headers-amd64" ;;
	6.12) echo "linux-image-6.12-amd64 linux-headers-6.12-amd64" ;;
	*) return 1 ;;
	esac
}

# kern_resolve LANE: sets KREL (release), KDIR (build tree), KIMG (vmlinuz,
# or empty for build-only lanes), KMODROOT (the root whose lib/modules/KREL
# holds the kernel's modules; "/" for installed kernels, empty for
# build-only) and KVERSION (package version). On failure returns 1 with
# KERR set to a sentence that names what to install or run.
kern_resolve() {
	local lane=$1 meta img hdr deb pkg dir
	KREL= KDIR= KIMG= KMODROOT= KVERSION= KERR=
	if meta=$(_kern_meta "$lane"); then
		read -r img hdr <<<"$meta"
		if ! dpkg-query -W -f='${Status}' "$img" 2>/dev/null | grep -q 'install ok installed'; then
			KERR="$img is not installed (scripts/deps.sh installs it)"
			return 1
		fi
		pkg=$(dpkg-query -W -f='${Depends}' "$img" | tr ',|' '\n\n' |
			sed -n 's/^ *\(linux-image-[0-9][^ ]*\).*/\1/p' | head -n 1)
		KREL=${pkg#linux-image-}
		KREL=${KREL%-unsigned}
		KVERSION=$(dpkg-query -W -f='${Version}' "$img")
		if [[ -z $KREL ]]; then
			KERR="cannot read the kernel ABI from $img's dependencies"
			return 1
		fi
		KIMG=/boot/vmlinuz-$KREL
		KDIR=/lib/modules/$KREL/build
		KMODROOT=/
		if [[ ! -r $KIMG || ! -d /lib/modules/$KREL/kernel ]]; then
			KERR="no kernel image $KIMG: install linux-image-$KREL (scripts/deps.sh installs $img)"
			return 1
		fi
		if [[ ! -e $KDIR/Makefile ]]; then
			KERR="no headers for $KREL at $KDIR: install linux-headers-$KREL (scripts/deps.sh installs $hdr)"
			return 1
		fi
		return 0
	fi
	if [[ $lane == debug ]]; then
		deb=
		for deb in "$NVS_SHARED"/kernels/linux-image-*nvsdebug*.deb; do
			[[ -f $deb ]] && break
		done
		if [[ -f $deb ]]; then
			pkg=$(dpkg-deb -f "$deb" Package)
			KVERSION=$(dpkg-deb -f "$deb" Version)
		else
			# One built from the recipe in the tree and installed.
			pkg=$(dpkg-query -W -f='${Package} ${Status}\n' 'linux-image-*nvsdebug*' 2>/dev/null |
				awk '/install ok installed/ { print $1; exit }')
			if [[ -z $pkg ]]; then
				KERR="no debug kernel in $NVS_SHARED/kernels (it lives beside the clone) and none installed: build it with scripts/debug-kernel.sh, then run scripts/deps.sh"
				return 2
			fi
			KVERSION=$(dpkg-query -W -f='${Version}' "$pkg")
		fi
		KREL=${pkg#linux-image-}
		KIMG=/boot/vmlinuz-$KREL
		KDIR=/lib/modules/$KREL/build
		KMODROOT=/
		if [[ ! -r $KIMG || ! -e $KDIR/Makefile ]]; then
			KERR="the debug kernel $KREL is not installed (scripts/deps.sh installs it from $NVS_SHARED/kernels or from what scripts/debug-kernel.sh built)"
			return 1
		fi
		return 0
	fi
	if _kern_suite "$lane" >/dev/null; then
		dir=$NVS_CACHE/ktree/$lane
		if [[ ! -f $dir/ready ]]; then
			KERR="the $lane tree is not prepared: run scripts/kernels.sh prepare $lane"
			return 1
		fi
		KREL=$(<"$dir/kernel.release")
		KVERSION=$(<"$dir/version")
		KDIR=$dir/tree
		if [[ -f $dir/image/ready ]]; then
			KIMG=$(<"$dir/image/vmlinuz")
			KMODROOT=$dir/image
		fi
		return 0
	fi
	KERR="unknown lane \`$lane' (lanes: ${KERN_LANES[*]})"
	return 1
}

# Private apt state per suite: it never touches the system's apt
# configuration.
_kern_apt() {
	local suite=$1 dir=$NVS_CACHE/apt/$1
	shift
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
	if [[ ! -f $dir/sources.list ]]; then
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" \
			>"$dir/sources.list"
	fi
	apt-get -q -o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" \
		-o Dir::State::status=/dev/null -o Debug::NoLocking=1 "$@"
}

_kern_apt_cache() {
	local dir=$NVS_CACHE/apt/$1
	shift
	apt-cache -o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" \
		-o Dir::State::status=/dev/null "$@"
}

# kern_prepare LANE: makes $NVS_CACHE/ktree/LANE ready (a no-op when the
# cached tree matches what the archive has now). Progress and errors go to
# stderr; the build log stays in $NVS_CACHE/ktree/LANE/prepare.log.
kern_prepare() {
	local lane=$1 suite dir hpkg hver series src work rel boot=0 log t0=$SECONDS
	suite=$(_kern_suite "$lane") || { echo "kernels: $lane is not an archive lane" >&2; return 1; }
	[[ $lane == sid ]] && boot=1
	dir=$NVS_CACHE/ktree/$lane
	mkdir -p "$dir"
	log=$dir/prepare.log
	if ! _kern_apt "$suite" update >"$dir/apt.log" 2>&1; then
		if [[ -f $dir/ready ]]; then
			echo "kernels: the archive is unreachable; using the cached $lane tree ($(<"$dir/kernel.release"))" >&2
			return 0
		fi
		echo "kernels: apt-get update for $suite failed: $(tail -n 2 "$dir/apt.log" | tr '\n' ' ')" >&2
		return 1
	fi
	# linux-headers-amd64 depends on the ABI package of the suite's newest
	# kernel; its version names the source package that built it.
	hpkg=$(_kern_apt_cache "$suite" show linux-headers-amd64 2>/dev/null |
		sed -n 's/^Depends: //p' | head -n 1 | tr ',' '\n' |
		sed -n 's/^ *\(linux-headers-[0-9][^ ]*\).*/\1/p' | head -n 1)
	hver=$(_kern_apt_cache "$suite" show "$hpkg" 2>/dev/null | sed -n 's/^Version: //p' | head -n 1)
	if [[ -z $hpkg || -z $hver ]]; then
		echo "kernels: cannot find linux-headers-amd64's ABI package in $suite" >&2
		return 1
	fi
	series=$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$hver")
	src=linux-source-$series
	if [[ -f $dir/ready && $(<"$dir/version") == "$hver" && $(<"$dir/headers") == "$hpkg" ]] &&
		{ ((!boot)) || [[ -f $dir/image/ready ]]; }; then
		return 0
	fi
	echo "kernels: preparing $lane ($hpkg $hver, $src)" >&2
	rm -rf "$dir/tree" "$dir/image" "$dir/ready" "$dir/dl"
	mkdir -p "$dir/dl"
	work=$dir/dl
	: >"$log"
	# shellcheck disable=SC2015
	(cd "$work" && _kern_apt "$suite" download "$hpkg=$hver" "$src=$hver") >>"$log" 2>&1 || {
		echo "kernels: cannot download $hpkg and $src $hver from $suite (log: $log)" >&2
		return 1
	}
	mkdir -p "$work/h" "$dir/tree"
	dpkg-deb -x "$work/${hpkg}_"*.deb "$work/h" || return 1
	# The release is UTS_RELEASE of the distro's build (Debian's
	# kernel.release file can hold the upstream version instead).
	rel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' \
		"$work/h/usr/src/$hpkg/include/generated/utsrelease.h" 2>/dev/null)
	if [[ -z $rel ]]; then
		echo "kernels: $hpkg has no include/generated/utsrelease.h" >&2
		return 1
	fi
	# What modules_prepare never reads is left in the tarball: the sources
	# of other architectures, selftests, and the C files of drivers, file
	# systems, networking and sound. Every Kconfig and Makefile stays:
	# olddefconfig reads them all (7.x's crypto/Kconfig sources every
	# architecture's).
	local excl=(--exclude='*/tools/testing'
		--exclude='*/drivers/*.c' --exclude='*/fs/*.c' --exclude='*/net/*.c' --exclude='*/sound/*.c')
	local a
	for a in alpha arc arm arm64 csky hexagon ia64 loongarch m68k microblaze mips nios2 \
		openrisc parisc powerpc riscv s390 sh sparc um xtensa h8300 c6x nds32; do
		excl+=(--exclude="*/arch/$a/*.[chS]" --exclude="*/arch/$a/boot/dts")
	done
	# Only the source tarball is needed from linux-source; stream it out of
	# the package instead of unpacking the .deb to disk first.
	if ! dpkg-deb --fsys-tarfile "$work/${src}_"*.deb |
		tar -xO --wildcards "./usr/src/$src.tar.*" |
		tar -xJ -C "$dir/tree" --strip-components=1 \
			"${excl[@]}" >>"$log" 2>&1; then
		echo "kernels: cannot unpack $src (log: $log)" >&2
		return 1
	fi
	cp "$work/h/usr/src/$hpkg/.config" "$dir/tree/.config"
	cp "$work/h/usr/src/$hpkg/Module.symvers" "$dir/tree/Module.symvers"
	if ! make -C "$dir/tree" -j"$(nproc)" olddefconfig modules_prepare >>"$log" 2>&1; then
		echo "kernels: make olddefconfig modules_prepare failed for $lane (log: $log)" >&2
		return 1
	fi
	# The release strings the distro built with, so that vermagic matches
	# the packaged kernel (external module builds read them from here).
	cp "$work/h/usr/src/$hpkg/include/config/kernel.release" "$dir/tree/include/config/kernel.release"
	cp "$work/h/usr/src/$hpkg/include/generated/utsrelease.h" "$dir/tree/include/generated/utsrelease.h"
	echo "$rel" >"$dir/kernel.release"
	echo "$hver" >"$dir/version"
	echo "$hpkg" >"$dir/headers"
	if ((boot)); then
		kern_fetch_image "$lane" "$suite" "$rel" "$hver" "$dir" || return 1
	fi
	rm -rf "$work"
	echo "$((SECONDS - t0))" >"$dir/prepare-seconds"
	touch "$dir/ready"
	echo "kernels: $lane ready: $rel in $((SECONDS - t0)) s" >&2
}

# kern_fetch_image LANE SUITE RELEASE VERSION DIR: the packaged kernel image
# and modules, unpacked under DIR/image (never installed into /boot).
kern_fetch_image() {
	local lane=$1 suite=$2 rel=$3 ver=$4 dir=$5 img=$5/image p pkgs=() f
	mkdir -p "$img/dl"
	# 7.x splits the image into linux-binary-* and linux-modules-*;
	# older kernels ship one linux-image-* package.
	for p in "linux-binary-$rel" "linux-modules-$rel"; do
		_kern_apt_cache "$suite" show "$p=$ver" >/dev/null 2>&1 && pkgs+=("$p=$ver")
	done
	((${#pkgs[@]})) || pkgs=("linux-image-$rel=$ver")
	(cd "$img/dl" && _kern_apt "$suite" download "${pkgs[@]}") >>"$dir/prepare.log" 2>&1 || {
		echo "kernels: cannot download the $lane image (${pkgs[*]}; log: $dir/prepare.log)" >&2
		return 1
	}
	for f in "$img"/dl/*.deb; do
		dpkg-deb -x "$f" "$img" || return 1
	done
	rm -rf "$img/dl"
	# Debian's image packages ship no modules.dep; the postinst makes it.
	if [[ ! -d $img/lib/modules/$rel && -d $img/usr/lib/modules/$rel ]]; then
		mkdir -p "$img/lib"
		ln -sfn ../usr/lib/modules "$img/lib/modules"
	fi
	depmod -b "$img" "$rel" >>"$dir/prepare.log" 2>&1 || {
		echo "kernels: depmod failed for the $lane image (log: $dir/prepare.log)" >&2
		return 1
	}
	# 7.x packages put the image beside the modules.
	for f in "$img/boot/vmlinuz-$rel" "$img/lib/modules/$rel/vmlinuz"; do
		[[ -r $f ]] && break
	done
	[[ -r $f ]] || {
		echo "kernels: the $lane image has neither boot/vmlinuz-$rel nor lib/modules/$rel/vmlinuz" >&2
		return 1
	}
	echo "$f" >"$img/vmlinuz"
	touch "$img/ready"
}

# kern_sparse KDIR: prints the sparse to run as CHECK for the tree at KDIR.
# Kernels from 6.14 on refuse a sparse without __typeof_unqual__
# (scripts/checker-valid.sh), which Debian 12's sparse lacks; for them the
# newest sparse source in Debian (sid) is built once, with this machine's
# compiler, into $NVS_CACHE/sparse/VERSION.
kern_sparse() {
	local kdir=$1 sys dir ver work
	sys=$(command -v sparse) || { echo "kernels: sparse is not installed (scripts/deps.sh installs it)" >&2; return 1; }
	if [[ ! -f $kdir/scripts/checker-valid.sh ]] ||
		[[ $(sh "$kdir/scripts/checker-valid.sh" "$sys" --arch=x86 -mlittle-endian -m64 2>/dev/null) == 1 ]]; then
		echo "$sys"
		return 0
	fi
	dir=$NVS_CACHE/apt/sid-src
	mkdir -p "$dir"
	[[ -f $dir/sources.list ]] ||
		echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main" \
			>"$dir/sources.list"
	_kern_apt sid-src update >"$dir/update.log" 2>&1
	ver=$(_kern_apt_cache sid-src showsrc sparse 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -n 1)
	if [[ -z $ver ]]; then
		# The archive is unreachable: any sparse built before will do.
		ver=$(ls "$NVS_CACHE/sparse" 2>/dev/null | sort -V | tail -n 1)
		[[ -n $ver && -x $NVS_CACHE/sparse/$ver/sparse ]] ||
			{ echo "kernels: no sparse source in sid (log: $dir/update.log)" >&2; return 1; }
	fi
	if [[ ! -x $NVS_CACHE/sparse/$ver/sparse ]]; then
		work=$NVS_CACHE/sparse/$ver.build
		rm -rf "$work"
		mkdir -p "$work"
		if ! (cd "$work" && _kern_apt sid-src source --download-only "sparse=$ver" &&
			dpkg-source -x ./*.dsc src && make -C src -j"$(nproc)" CC=gcc sparse) >"$work.log" 2>&1; then
			echo "kernels: building sparse $ver from sid's source failed (log: $work.log)" >&2
			return 1
		fi
		mkdir -p "$NVS_CACHE/sparse/$ver"
		cp "$work/src/sparse" "$NVS_CACHE/sparse/$ver/sparse"
		rm -rf "$work"
	fi
	if [[ $(sh "$kdir/scripts/checker-valid.sh" "$NVS_CACHE/sparse/$ver/sparse" --arch=x86 -mlittle-endian -m64 2>/dev/null) != 1 ]]; then
		echo "kernels: neither Debian's sparse nor sid's $ver passes $kdir/scripts/checker-valid.sh" >&2
		return 1
	fi
	echo "$NVS_CACHE/sparse/$ver/sparse"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -u
	case ${1:-list} in
	lanes) kern_lanes ;;
	list)
		for l in "${KERN_LANES[@]}"; do
			if kern_resolve "$l"; then
				echo "$l $KREL $KDIR ${KIMG:--} ${KMODROOT:--}"
			else
				echo "$l - - - - # $KERR"
			fi
		done
		;;
	prepare)
		shift
		(($#)) || set -- bullseye sid experimental
		rc=0
		for l in "$@"; do kern_prepare "$l" || rc=1; done
		exit $rc
		;;
	*)
		sed -n '25,34p' "$0" | sed 's/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
fi
