# SPDX-License-Identifier: GPL-2.0 OR MIT
# shellcheck shell=bash
# Host-side helpers shared by tests/vm/run-vm, lanes.sh, demo.sh and
# bench/run: finding a lane's kernel (scripts/kernels.sh), building the
# module, the test-only modules and the test tools for it. Source after tests/lib.sh (NVS_TOP, NVS_BUILD).

# shellcheck source=../../scripts/kernels.sh
. "$NVS_TOP/scripts/kernels.sh"

# vm_kernel LANE|RELEASE: resolves a lane (6.1, 6.12, sid, debug; see
# scripts/kernels.sh) or a release that has a /boot/vmlinuz-RELEASE and
# headers, and sets VM_KREL, VM_KDIR, VM_KIMG, VM_KMODROOT and VM_LANE. On
# failure prints why (what to install) to stderr and returns 1.
vm_kernel() {
	local l
	VM_KREL= VM_KDIR= VM_KIMG= VM_KMODROOT= VM_LANE=
	for l in "${KERN_LANES[@]}"; do
		[[ $l == "$1" ]] || continue
		if ! kern_resolve "$l" || [[ -z $KIMG ]]; then
			echo "${KERR:-the $l lane is build-only: it has no kernel image to boot}" >&2
			return 1
		fi
		VM_KREL=$KREL VM_KDIR=$KDIR VM_KIMG=$KIMG VM_KMODROOT=$KMODROOT VM_LANE=$l
		return 0
	done
	# A release: an installed kernel, or one of the lanes' releases.
	for l in "${KERN_LANES[@]}"; do
		kern_resolve "$l" 2>/dev/null || continue
		[[ $KREL == "$1" && -n $KIMG ]] || continue
		VM_KREL=$KREL VM_KDIR=$KDIR VM_KIMG=$KIMG VM_KMODROOT=$KMODROOT VM_LANE=$l
		return 0
	done
	if [[ -r /boot/vmlinuz-$1 ]]; then
		VM_KREL=$1 VM_KDIR=/lib/modules/$1/build VM_KIMG=/boot/vmlinuz-$1 VM_KMODROOT=/ VM_LANE=$1
		return 0
	fi
	echo "no kernel for \`$1' (lanes: ${KERN_BOOT_LANES[*]}, or a release in /boot)" >&2
	return 1
}

# vm_module KVER [KDIR]: makes sure $NVS_BUILD/kmod-KVER/nvsidecar.ko exists
# and is not older than the sources, builds the self-test variant
# ($NVS_BUILD/kmod-selftest-KVER, NVS_SELFTEST=1) and the test-only modules (every
# tests/vm/tools/<name>/ with a Kbuild, e.g. the stand-in owner driver) into
# $NVS_BUILD/kmod-KVER/testmods/<name>.ko; prints the build log tail on
# failure. KDIR defaults to /lib/modules/KVER/build.
vm_module() {
	local kver=$1 kdir=${2:-/lib/modules/$1/build} dir=$NVS_BUILD/kmod-$1 log t name rc=0
	local ko=$dir/nvsidecar.ko
	log=$NVS_BUILD/kmod-$kver.log
	mkdir -p "$NVS_BUILD"
	if [[ ! -f $ko ]] || [[ -n $(find "$NVS_TOP/kmod" "$NVS_TOP/Kbuild" -newer "$ko" -type f -print -quit 2>/dev/null) ]]; then
		if ! make -C "$NVS_TOP" -s module KVER="$kver" KDIR="$kdir" MODDIR="$dir" >"$log" 2>&1; then
			echo "module build for $kver failed (log: $log):" >&2
			tail -n 15 "$log" >&2
			return 1
		fi
		[[ -f $ko ]] || return 1
	fi
	# The self-test build (kmod/selftest/, run at load by t-selftest.sh).
	local st=$NVS_BUILD/kmod-selftest-$kver
	if [[ ! -f $st/nvsidecar.ko ]] || [[ -n $(find "$NVS_TOP/kmod" "$NVS_TOP/Kbuild" -newer "$st/nvsidecar.ko" -type f -print -quit 2>/dev/null) ]]; then
		if ! make -C "$NVS_TOP" -s module KVER="$kver" KDIR="$kdir" MODDIR="$st" NVS_SELFTEST=1 >"$st.log" 2>&1; then
			echo "self-test module build for $kver failed (log: $st.log):" >&2
			tail -n 15 "$st.log" >&2
			rc=1
		fi
	fi
	for t in "$NVS_TOP"/tests/vm/tools/*/Kbuild; do
		[[ -f $t ]] || continue
		t=${t%/Kbuild}
		name=${t##*/}
		[[ -f $dir/testmods/$name.ko ]] &&
			[[ -z $(find "$t" -newer "$dir/testmods/$name.ko" -type f -print -quit) ]] && continue
		rm -rf "$dir/testmods/$name"
		mkdir -p "$dir/testmods"
		cp -r "$t" "$dir/testmods/$name"
		if ! make -C "$kdir" M="$dir/testmods/$name" modules >"$dir/testmods/$name.log" 2>&1; then
			echo "test module $name for $kver failed to build (log: $dir/testmods/$name.log):" >&2
			tail -n 15 "$dir/testmods/$name.log" >&2
			rc=1
			continue
		fi
		cp "$dir/testmods/$name/$name.ko" "$dir/testmods/$name.ko"
	done
	return $rc
}

# vm_tools: compiles every tests/vm/tools/*.c (and bench/*.c) into
# $NVS_BUILD/vmtools/, one program per file (guests run the host's root, so
# the host's shared libraries are there). Rebuilds only what changed.
vm_tools() {
	local out=$NVS_BUILD/vmtools src bin rc=0
	mkdir -p "$out"
	for src in "$NVS_TOP"/tests/vm/tools/*.c "$NVS_TOP"/bench/*.c; do
		[[ -f $src ]] || continue
		bin=$out/$(basename "$src" .c)
		[[ $bin -nt $src ]] && continue
		if ! ${CC:-gcc} -std=gnu11 -O2 -g -Wall -Wextra -Werror -I"$NVS_TOP/kmod/uapi" \
			-o "$bin.tmp" "$src" -lm -lpthread 2>"$out/$(basename "$src" .c).log"; then
			echo "cannot build $src:" >&2
			tail -n 20 "$out/$(basename "$src" .c).log" >&2
			rm -f "$bin.tmp"
			rc=1
			continue
		fi
		mv "$bin.tmp" "$bin"
	done
	return $rc
}
