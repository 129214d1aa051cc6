# SPDX-License-Identifier: GPL-2.0 OR MIT
# shellcheck shell=bash
# Host-side helpers shared by tests/vm/run-vm, lanes.sh, demo.sh and
# bench/run: finding a lane's kernel, building the module and the test
# tools for it. Source after tests/lib.sh (NVS_TOP, NVS_BUILD).

# vm_kver LANE|RELEASE: prints the kernel release of a lane (6.1, 6.12,
# debug) or echoes a release that has a /boot/vmlinuz-RELEASE; fails if none.
vm_kver() {
	local f k=
	case $1 in
	6.1) for f in /boot/vmlinuz-6.1.*-amd64; do [[ -f $f ]] && k=${f#/boot/vmlinuz-}; done ;;
	6.12)
		for f in /boot/vmlinuz-6.12.*-amd64; do
			[[ -f $f && $f != *nvsdebug* ]] && k=${f#/boot/vmlinuz-}
		done
		;;
	debug) for f in /boot/vmlinuz-*-nvsdebug; do [[ -f $f ]] && k=${f#/boot/vmlinuz-}; done ;;
	*) [[ -f /boot/vmlinuz-$1 ]] && k=$1 ;;
	esac
	[[ -n $k ]] || return 1
	echo "$k"
}

# vm_lane RELEASE: the lane name a release belongs to.
vm_lane() {
	case $1 in
	*nvsdebug*) echo debug ;;
	6.1.*) echo 6.1 ;;
	6.12.*) echo 6.12 ;;
	*) echo "$1" ;;
	esac
}

# vm_module KVER: makes sure $NVS_BUILD/kmod-KVER/nvsidecar.ko exists and is
# not older than the sources; prints the build log tail on failure.
vm_module() {
	local kver=$1 dir=$NVS_BUILD/kmod-$1 log
	local ko=$dir/nvsidecar.ko
	if [[ -f $ko ]] && [[ -z $(find "$NVS_TOP/kmod" "$NVS_TOP/Kbuild" -newer "$ko" -type f -print -quit 2>/dev/null) ]]; then
		return 0
	fi
	log=$NVS_BUILD/kmod-$kver.log
	mkdir -p "$NVS_BUILD"
	if ! make -C "$NVS_TOP" -s module KVER="$kver" MODDIR="$dir" >"$log" 2>&1; then
		echo "module build for $kver failed (log: $log):" >&2
		tail -n 15 "$log" >&2
		return 1
	fi
	[[ -f $ko ]]
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
