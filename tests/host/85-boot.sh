#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# vm: before -- tests/run boots no VM lane while this runs: it
#   installs nvsidecar-dkms into the host root, which the guests see.
#
# Boot proof for the 6.12 kernel: install the nvsidecar-dkms package, build
# real initramfs images with mkinitramfs and with dracut (into temp files,
# not /boot), check what is inside, and boot each under QEMU with a
# simulated GPU. A script in the image, run before the real root is mounted
# (initramfs-tools init-premount, dracut cmdline hook), prints lsmod, the
# module's sim parameter, the hwmon chips and the mount table to the
# console and powers off. nvsidecar must have been loaded by the image's own
# mechanism (conf/modules, rd.driver.pre), never by the proof script. One
# more boot without a GPU shows that the module loads quietly.
#
#        host                               guest (TCG, q35)
#   dpkg -i nvsidecar-dkms ──► DKMS ──► /lib/modules/$kver/updates/dkms
#   mkinitramfs / dracut  ──► $work/*.img ──► -initrd
#   $work/gpu.bar (16 MiB) ──► ivshmem-plain (1af4:1110, BAR2 = the file)
#
# The simulated GPU needs `options nvsidecar sim=1af4:1110:2:gb202`: it is
# written to /etc/modprobe.d/nvsidecar.conf inside a private mount namespace
# (a bind mount over /etc/modprobe.d), so the hooks copy it into the images
# exactly as they would copy an admin's file, and the host never sees it.
set -u
. "$(dirname "$0")/../lib.sh"

name=boot
# shellcheck source=../../scripts/kernels.sh
. "$NVS_TOP/scripts/kernels.sh"
# Debian's 6.12, found at run time (scripts/deps.sh installs it).
kern_resolve 6.12 || { t_fail "$name: kernel 6.12" "$KERR"; exit 0; }
kver=$KREL

need() {
	local what
	for what in "$@"; do
		command -v "$what" >/dev/null && continue
		t_skip "$name" "\`$what' is not installed (scripts/deps.sh installs it)"
		exit 0
	done
}
((EUID == 0)) || { t_skip "$name" "needs root (dpkg -i, dkms, mount namespaces)"; exit 0; }
need dpkg-buildpackage dkms mkinitramfs lsinitramfs dracut lsinitrd qemu-system-x86_64 unshare flock

# DKMS state is global: one nvsidecar DKMS test at a time on this host.
exec 9>/run/lock/nvsidecar-dkms.lock
flock -w 1800 9 || { t_skip "$name" "another nvsidecar DKMS test held /run/lock/nvsidecar-dkms.lock for 30 min"; exit 0; }
if [[ -n $(dkms status -m nvsidecar 2>/dev/null) ]] || dpkg-query -W nvsidecar-dkms >/dev/null 2>&1; then
	t_skip "$name" "nvsidecar is already installed or in DKMS here; not touching the admin's install"
	exit 0
fi

work=$(mktemp -d /var/tmp/nvs-boot.XXXXXX)
log=$NVS_BUILD/boot.log
: >"$log"
mok_before=$(ls /var/lib/dkms/mok.key 2>/dev/null)
cleanup() {
	dpkg --purge nvsidecar-dkms >>"$log" 2>&1
	# A postinst stopped halfway must not leave DKMS entries behind.
	[[ -n $(dkms status -m nvsidecar 2>/dev/null) ]] &&
		dkms remove -m nvsidecar --all >>"$log" 2>&1
	[[ -z $mok_before ]] && rm -f /var/lib/dkms/mok.key /var/lib/dkms/mok.pub
	rm -rf "$work"
}
trap cleanup EXIT

# --- package ---------------------------------------------------------------
if ! make -C "$NVS_TOP" --no-print-directory deb DEBBUILDFLAGS=-A BUILD="$work/b" >>"$log" 2>&1; then
	t_fail "$name: make deb" "$(tail -n 3 "$log" | tr '\n' ' ') (log: $log)"
	exit 0
fi
deb=$(ls "$work"/b/deb/nvsidecar-dkms_*_all.deb)
# The host's own image for $kver, made before this install, holds no
# nvsidecar.ko: the real postinst must name it and the command (item 8).
host_img=/boot/initrd.img-$kver
host_lacks=
[[ -e $host_img ]] && ! lsinitramfs "$host_img" 2>/dev/null | grep -q '/nvsidecar\.ko' && host_lacks=1
t0=$SECONDS
if NVSIDECAR_DKMS_KERNELS=$kver dpkg -i "$deb" >>"$log" 2>&1 &&
	[[ $(modinfo -k "$kver" -F filename nvsidecar 2>/dev/null) == */updates/dkms/nvsidecar.ko* ]]; then
	t_pass "$name: nvsidecar-dkms installs for $kver ($((SECONDS - t0)) s)"
else
	t_fail "$name: nvsidecar-dkms installs for $kver" "$(tail -n 5 "$log" | tr '\n' ' ') (log: $log)"
	exit 0
fi
if [[ -z $host_lacks ]]; then
	t_skip "$name: first install names the image without the module" "$host_img is absent or already holds nvsidecar.ko"
elif grep -q "the initramfs of $kver holds no nvsidecar.ko" "$log" && grep -qx "  update-initramfs -u -k $kver" "$log"; then
	t_pass "$name: first install names $host_img, which lacks the module, and the command"
else
	t_fail "$name: first install names the image without the module" "no message for $host_img in $log"
fi

# --- images ----------------------------------------------------------------
mkdir -p "$work/modprobe.d" "$work/it/scripts/init-premount" "$work/dracut"
cp -a /etc/modprobe.d/. "$work/modprobe.d/"
echo "options nvsidecar sim=1af4:1110:2:gb202" >"$work/modprobe.d/nvsidecar.conf"

# initramfs-tools: a private config dir (fewer modules, fast compression)
# plus the proof as an init-premount script; hooks and modprobe.d are the
# system's, i.e. the installed package's hook.
cp -a /etc/initramfs-tools/. "$work/it/"
sed -i -e 's/^MODULES=.*/MODULES=list/' -e 's/^COMPRESS=.*/COMPRESS=gzip/' "$work/it/initramfs.conf"
# The proof (tests/host/premount-proof, shared with 86-image) prints what
# is loaded before the real root is mounted, and powers off.
nvs_proof_hook initramfs-tools poweroff >"$work/it/scripts/init-premount/nvs-proof"
chmod +x "$work/it/scripts/init-premount/nvs-proof"
# dracut: the hook is sourced by dracut's init at the end of the cmdline
# hooks: after kernel-modules' parse-kernel.sh has loaded rd.driver.pre
# modules, before udev starts, before root= is even interpreted.
nvs_proof_hook dracut poweroff >"$work/dracut/99-nvs-proof.sh"

t0=$SECONDS
if unshare -m --propagation private bash -c '
	set -e
	mount --bind "$1/modprobe.d" /etc/modprobe.d
	mkinitramfs -d "$1/it" -o "$1/it.img" "$2"
' _ "$work" "$kver" >>"$log" 2>&1; then
	t_pass "$name: mkinitramfs for $kver ($((SECONDS - t0)) s, $(($(stat -c %s "$work/it.img") / 1024)) KiB)"
else
	t_fail "$name: mkinitramfs for $kver" "$(tail -n 3 "$log" | tr '\n' ' ') (log: $log)"
fi
t0=$SECONDS
if unshare -m --propagation private bash -c '
	set -e
	mount --bind "$1/modprobe.d" /etc/modprobe.d
	dracut --no-hostonly --force --quiet --gzip -m "base kernel-modules nvsidecar" \
		--include "$1/dracut/99-nvs-proof.sh" /lib/dracut/hooks/cmdline/99-nvs-proof.sh \
		"$1/dracut.img" "$2"
' _ "$work" "$kver" >>"$log" 2>&1; then
	t_pass "$name: dracut for $kver ($((SECONDS - t0)) s, $(($(stat -c %s "$work/dracut.img") / 1024)) KiB)"
else
	t_fail "$name: dracut for $kver" "$(tail -n 3 "$log" | tr '\n' ' ') (log: $log)"
fi

# --- contents --------------------------------------------------------------
if [[ -f $work/it.img ]]; then
	list=$(lsinitramfs "$work/it.img" 2>>"$log")
	mkdir -p "$work/it-x"
	unmkinitramfs "$work/it.img" "$work/it-x" 2>>"$log"
	root=$work/it-x; [[ -d $work/it-x/main ]] && root=$work/it-x/main
	if grep -q "lib/modules/$kver/updates/dkms/nvsidecar.ko" <<<"$list" &&
		grep -qx nvsidecar "$root/conf/modules" &&
		grep -q 'sim=1af4:1110:2:gb202' "$root/etc/modprobe.d/nvsidecar.conf"; then
		t_pass "$name: initramfs-tools image has nvsidecar.ko, its config and conf/modules entry"
	else
		t_fail "$name: initramfs-tools image contents" "want updates/dkms/nvsidecar.ko, conf/modules and etc/modprobe.d/nvsidecar.conf: $(grep nvsidecar <<<"$list" | tr '\n' ' ')"
	fi
fi
if [[ -f $work/dracut.img ]]; then
	list=$(lsinitrd "$work/dracut.img" 2>>"$log")
	pre=$(lsinitrd -f etc/cmdline.d/90nvsidecar.conf "$work/dracut.img" 2>>"$log")
	conf=$(lsinitrd -f etc/modprobe.d/nvsidecar.conf "$work/dracut.img" 2>>"$log")
	if grep -q "lib/modules/$kver/updates/dkms/nvsidecar.ko" <<<"$list" &&
		[[ $pre == *rd.driver.pre=nvsidecar* && $conf == *sim=1af4:1110:2:gb202* ]]; then
		t_pass "$name: dracut image has nvsidecar.ko, its config and rd.driver.pre"
	else
		t_fail "$name: dracut image contents" "module: $(grep -c 'nvsidecar.ko' <<<"$list"), cmdline.d: \`$pre', modprobe.d: \`$conf'"
	fi
fi

# --- boots -----------------------------------------------------------------
# boot NAME IMAGE GPU(0|1): console in $work/NAME.log
boot() {
	local con=$work/$1.log dev=() t0=$SECONDS
	if (($3)); then
		truncate -s 16M "$work/gpu.bar"
		dev=(-object "memory-backend-file,id=gpumem,share=on,mem-path=$work/gpu.bar,size=16M"
			-device pcie-root-port,id=rp0,bus=pcie.0,addr=0x10,chassis=1,slot=1
			-device ivshmem-plain,id=gpu0,memdev=gpumem,bus=rp0,addr=0x0)
	fi
	# loglevel=5: warnings and worse reach the console, so a quiet module
	# shows no line at all. panic=-1 + -no-reboot ends a crashed run at once.
	timeout -k 5 120 qemu-system-x86_64 -M q35 -accel tcg -cpu max -smp 1 -m 1G \
		-nodefaults -no-reboot -display none -monitor none \
		-chardev "file,id=con,path=$con" -serial chardev:con \
		-kernel "/boot/vmlinuz-$kver" -initrd "$2" \
		-append "console=ttyS0 panic=-1 loglevel=5 no_timer_check root=/dev/nvs-none rd.shell=0 rd.retry=1" \
		"${dev[@]}" </dev/null >>"$log" 2>&1
	# A TCG guest on a loaded host sometimes fails the early IO-APIC timer
	# check before userspace; that is the emulator, not the image: retry once.
	if grep -q 'IO-APIC + timer doesn' "$con" && [[ ${4:-} != retry ]]; then
		boot "$1" "$2" "$3" retry
		return
	fi
	echo "$((SECONDS - t0))"
}

# check NAME GPU(0|1) SECONDS: judge a console log
check() {
	local con=$work/$1.log want=$2 s=$3 bad
	# The serial console ends lines with \r\n.
	tr -d '\r' <"$con" >"$NVS_BUILD/boot-$1.log"
	con=$NVS_BUILD/boot-$1.log
	if ! grep -q '^NVS-PROOF end' "$con"; then
		t_fail "$name: $1" "the proof script did not run (${s} s; console: $NVS_BUILD/boot-$1.log)"
		return
	fi
	# Every out-of-tree module gets the kernel's one taint notice; anything
	# else from nvsidecar at warning level or worse reaches this console.
	bad=$(grep -E 'WARNING:|Call Trace|BUG:|Oops|nvsidecar' "$con" | grep -v '^NVS-PROOF' |
		grep -v 'nvsidecar: loading out-of-tree module taints kernel' | head -n 3)
	if ! grep -qx 'NVS-PROOF lsmod nvsidecar' "$con"; then
		t_fail "$name: $1" "nvsidecar is not loaded before the root mount (console: $NVS_BUILD/boot-$1.log)"
	elif ! grep -qx 'NVS-PROOF root not-mounted' "$con"; then
		t_fail "$name: $1" "the real root was already mounted"
	elif ((want)) && ! grep -q '^NVS-PROOF hwmon nvsidecar ' "$con"; then
		t_fail "$name: $1" "no nvsidecar hwmon chip: $(grep -E 'hwmon|class' "$con" | tr '\n' ' ')"
	elif ((want)) && ! grep -qx 'NVS-PROOF sim 1af4:1110:2:gb202' "$con"; then
		t_fail "$name: $1" "the image's modprobe.d option did not reach the module"
	elif ((!want)) && grep -q '^NVS-PROOF hwmon nvsidecar' "$con"; then
		t_fail "$name: $1" "an nvsidecar hwmon chip without a GPU"
	elif [[ -n $bad ]]; then
		t_fail "$name: $1" "warnings on the console: $(tr '\n' ' ' <<<"$bad")"
	else
		t_pass "$name: $1 (${s} s)"
	fi
}

if [[ -f $work/it.img ]]; then
	s=$(boot initramfs-tools-gpu "$work/it.img" 1)
	check initramfs-tools-gpu 1 "$s"
	s=$(boot initramfs-tools-nogpu "$work/it.img" 0)
	check initramfs-tools-nogpu 0 "$s"
fi
if [[ -f $work/dracut.img ]]; then
	s=$(boot dracut-gpu "$work/dracut.img" 1)
	check dracut-gpu 1 "$s"
fi

cleanup
trap - EXIT
if [[ -z $(dkms status -m nvsidecar 2>/dev/null) && -z $(find /lib/modules -name 'nvsidecar.ko*') ]] &&
	! dpkg-query -W nvsidecar-dkms >/dev/null 2>&1; then
	t_pass "$name: package removed, no nvsidecar module or DKMS entry left"
else
	t_fail "$name: cleanup" "left behind: $(dkms status -m nvsidecar 2>&1) $(find /lib/modules -name 'nvsidecar.ko*')"
fi
