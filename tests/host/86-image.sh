#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# Image proof (issue 23 items 7 and 8): a Debian bookworm node image built
# the way cluster image builders build one, with OpenRC as init instead of
# systemd, booted under QEMU from a read-only root.
#
#  1. mmdebstrap makes the base (kernel, headers, dkms, initramfs-tools,
#     sysvinit-core + openrc, cron, and what our .debs depend on), cached
#     as a tarball under ${NVS_CACHE:-/var/cache/nvsidecar}/image/, keyed by
#     the package list, the hook below and the Depends of the .debs just
#     built, with its sha256 beside it (a tarball that does not match it, or
#     does not extract, is made again). Each run extracts it and installs
#     the two freshly built .debs with `apt-get install ./...' in a chroot
#     (in a 0700 folder under $NVS_BUILD, its mounts in a private
#     namespace), where `uname -r' is the host's kernel and not the
#     image's: DKMS must build for the image's kernel, the install must
#     name the image's initramfs, which lacks the module, with the command
#     that fixes it; that command is run in the chroot and the image must
#     then hold nvsidecar.ko. make -j and QEMU -smp follow NVS_HOST_JOBS
#     (default 2); builds and boots run in sessions of their own that an
#     interrupt or exit of the suite ends.
#  2. The tree becomes an ext4 disk (mkfs.ext4 -d), attached read-only on
#     virtio-blk and mounted ro as a shared NFS root would be; the image's
#     own vmlinuz and initrd boot it (TCG) with a simulated GPU (as in
#     85-boot). An init-premount script in the image prints whether
#     nvsidecar is loaded before the root is mounted.
#  3. The boot goes on into OpenRC. The only writable per-node place is a
#     tmpfs (/srv/node, mounted by a local.d script), and
#     /etc/default/nvsidecar points every path docs/cluster.md section 7
#     lists at it (the doctor's initramfs cache stays in /run/nvsidecar: no
#     setting moves it). NVML is the fake of 47-idle-fix, as the image has
#     no NVIDIA driver. An OpenRC local.d script
#     stops the cron daemon (so that its own minute runs cannot race the
#     test's for the jobs' locks) and runs each command line of
#     /etc/cron.d/nvsidecar the way cron runs it: `/bin/sh -c LINE' with
#     cron's environment only (HOME, LOGNAME, SHELL and PATH from the file),
#     without waiting for the minute. It prints what the jobs left (the
#     doctor's verdict, the metrics textfile, idle-fix's state), every file
#     or directory changed after the runs began, and the same after the
#     lines run again with /run/systemd/system present (they must do
#     nothing), then powers off. The console carries NVS-* markers only.
set -u
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"

name=image
((EUID == 0)) || { t_skip "$name" "needs root (mmdebstrap, chroot, mount namespaces)"; exit 0; }
for what in mmdebstrap dpkg-buildpackage dpkg-deb qemu-system-x86_64 mkfs.ext4 unshare setsid flock; do
	command -v "$what" >/dev/null && continue
	t_skip "$name" "\`$what' is not installed (scripts/deps.sh installs it)"
	exit 0
done

suite_t0=$SECONDS
phase_t0=$SECONDS
# phase WHAT: prints how long the phase since the last call took
phase() {
	echo "  time: $1 $((SECONDS - phase_t0)) s"
	phase_t0=$SECONDS
}
# make -j and QEMU -smp: one beside a VM lane (tests/run sets NVS_HOST_JOBS=1)
jobs=${NVS_HOST_JOBS:-2}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || jobs=2

# The work folder holds the image's root with the chroot's mounts: not in
# /var/tmp or /tmp, which every VM lane's guest sees (the host root over
# 9p), but in a 0700 folder under $NVS_BUILD; every mount (mmdebstrap's,
# the chroot's) is made in a private mount namespace, and cleanup checks
# /proc/mounts before it removes anything.
priv=$NVS_BUILD/private
if ! mkdir -p "$priv" || ! chmod 0700 "$priv"; then
	t_fail "$name: work folder" "cannot make $priv"
	exit 0
fi
work=$(mktemp -d "$priv/image.XXXXXX") || { t_fail "$name: work folder" "mktemp in $priv"; exit 0; }
log=$NVS_BUILD/image.log
: >"$log"
cache=${NVS_CACHE:-/var/cache/nvsidecar}/image
newbase=
# The sessions in_session started that still run (their ids).
kids=()
# in_session CMD...: runs CMD in a session of its own and waits for it; an
# interrupt or exit of this suite kills the session (kill_kids), children
# included. (A background job of this non-interactive shell is no
# process-group leader: setsid does not fork, and the job's id is the
# session's and its process group's.)
in_session() {
	local p rc
	setsid "$@" &
	p=$!
	kids+=("$p")
	wait "$p"
	rc=$?
	kids=("${kids[@]/#$p/}")
	return "$rc"
}
# kill_kids: TERM to every session in_session started (its process group,
# and what left the group, e.g. timeout's own), KILL to what is left 5 s on.
kill_kids() {
	local p i
	for p in ${kids[@]+"${kids[@]}"}; do
		[[ -n $p ]] || continue
		kill -TERM -- "-$p" 2>/dev/null
		pkill -TERM -s "$p" 2>/dev/null
	done
	for p in ${kids[@]+"${kids[@]}"}; do
		[[ -n $p ]] || continue
		for ((i = 0; i < 50; i++)); do
			pgrep -s "$p" >/dev/null || break
			sleep 0.1
		done
		pkill -KILL -s "$p" 2>/dev/null
	done
	kids=()
}
# mounts_under DIR: the mount points under DIR in this namespace, deepest first
mounts_under() {
	awk -v d="$1/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r
}
cleanup() {
	local m left
	kill_kids
	[[ -n $newbase ]] && rm -f "$newbase" "$newbase.sha256"
	for m in $(mounts_under "$work"); do
		umount -l "$m" 2>/dev/null
	done
	left=$(mounts_under "$work")
	if [[ -n $left ]]; then
		# never remove a tree with a mount in it (a bind of /dev, /sys)
		t_fail "$name: cleanup" "mounts left under $work, not removed: $(tr '\n' ' ' <<<"$left")"
		return
	fi
	rm -rf --one-file-system "$work"
}
# (no INT or TERM trap: a trapped signal waits for a foreground command;
# untrapped, it ends this shell at once and runs the EXIT trap, and so does
# SIGINT while the shell waits in \`wait')
trap cleanup EXIT

# --- 1. our packages, then the base image (cached) --------------------------
# both packages (-b), the helper built with $jobs jobs, no dbgsym package
DEB_BUILD_OPTIONS=noddebs in_session make -C "$NVS_TOP" --no-print-directory deb DEBBUILDFLAGS="-b -j$jobs" \
	BUILD="$work/b" >"$work/deb.log" 2>&1
rc=$?
cat "$work/deb.log" >>"$log"
debs=("$work"/b/deb/nvsidecar-dkms_*_all.deb "$work"/b/deb/nvsidecar_*_amd64.deb)
if ((rc)) || [[ ! -f ${debs[0]} || ! -f ${debs[1]} ]]; then
	t_fail "$name: make deb" "exit $rc: $(tail -n 3 "$work/deb.log" | tr '\n' ' ') (log: $log)"
	exit 0
fi
phase "make deb -j$jobs"

# The image's packages. nvsidecar's run-time libraries are in the base so
# that installing our .debs needs no download: what the built .debs depend
# on (their Depends, the first of each set of alternatives) joins the list
# below; the apt lists are kept so that what the base lacks still installs
# (from the mirror).
pkgs=(linux-image-amd64 linux-headers-amd64 dkms initramfs-tools
	sysvinit-core openrc cron util-linux kmod procps busybox
	libcapstone4 libelf1 libibverbs1 libnl-3-200 libnl-genl-3-200 libpci3
	librdmacm1 libunicorn2)
depends=
for d in "${debs[@]}"; do
	depends+="$(dpkg-deb -f "$d" Package): $(dpkg-deb -f "$d" Depends)"$'\n'
	while read -r dep; do
		[[ -z $dep || $dep == nvsidecar* || " ${pkgs[*]} " == *" $dep "* ]] || pkgs+=("$dep")
	done < <(dpkg-deb -f "$d" Depends | tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/:any//' -e 's/[[:space:]]//g')
done
# A lean initramfs, as an image builder configures one: only the root's
# drivers (and what hooks add), gzip. Written before the kernel's postinst
# makes the first image.
# shellcheck disable=SC2016 # expanded by mmdebstrap's hook shell
essential_hook='mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/usr/share/initramfs-tools/modules.d" &&
printf "MODULES=list\nCOMPRESS=gzip\n" >"$1/etc/initramfs-tools/conf.d/nvs-image.conf" &&
printf "virtio_pci\nvirtio_blk\next4\n" >"$1/usr/share/initramfs-tools/modules.d/nvs-image.conf"'
mirror=http://deb.debian.org/debian
# The key: the list, the hook, and our packages' Depends as built (a change
# of either package's Depends makes a new base).
key=$(printf '%s\n' bookworm "$mirror" "${pkgs[@]}" "$essential_hook" nodoc "$depends" | sha256sum | cut -c1-16)
base=$cache/bookworm-openrc-$key.tar
printf 'base image key %s; the Depends of our packages:\n%s' "$key" "$depends" >>"$log"

# base_ok: the cached tarball is complete: the sha256 written beside it
# when it was made matches
base_ok() {
	[[ -f $base && -f $base.sha256 ]] &&
		[[ $(sha256sum <"$base" | cut -d' ' -f1) == "$(<"$base.sha256")" ]]
}
# make_base: mmdebstrap, in a private mount namespace with its temporary
# root in $work, into a temporary file in the cache that is renamed into
# place after its checksum: a file named $base is complete.
make_base() {
	local inc old t0=$SECONDS
	echo "mmdebstrap -> $base" >>"$log"
	inc=$(IFS=,; echo "${pkgs[*]}")
	# unsafe-io and no documentation: a third less to write, the same image
	# for what a node runs.
	if ! TMPDIR=$work in_session unshare -m --propagation private mmdebstrap --variant=apt --mode=root \
		--format=tar --skip=cleanup/apt/lists \
		--dpkgopt=force-unsafe-io --dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--include="$inc" --essential-hook="$essential_hook" \
		bookworm "$work/base.tar" "$mirror" >"$work/mm.log" 2>&1; then
		cat "$work/mm.log" >>"$log"
		t_fail "$name: mmdebstrap" "$(grep -E '^(E|W): ' "$work/mm.log" | head -n 3 | tr '\n' ' ')$(tail -n 2 "$work/mm.log" | tr '\n' ' ') (log: $log)"
		return 1
	fi
	newbase=$(mktemp "$cache/.new-base.XXXXXX") || return 1
	if ! mv "$work/base.tar" "$newbase" || ! sha256sum <"$newbase" | cut -d' ' -f1 >"$newbase.sha256" ||
		! mv -f "$newbase.sha256" "$base.sha256" || ! mv -f "$newbase" "$base"; then
		t_fail "$name: cache the base" "cannot write $base"
		return 1
	fi
	newbase=
	for old in "$cache"/bookworm-openrc-*.tar; do
		[[ $old == "$base" ]] || rm -f "$old" "$old.sha256"
	done
	t_pass "$name: mmdebstrap bookworm base with OpenRC ($((SECONDS - t0)) s, cached as $base)"
}

root=$work/root
mkdir -p "$cache"
exec 8>"$cache/.lock"
flock -w 900 8 || { t_skip "$name" "another run held $cache/.lock for 15 min"; exit 0; }
# (under the lock) what a run stopped while it wrote the cache left
rm -f "$cache"/.new-base.*
# A cached base that is not complete (its checksum does not match) or that
# does not extract is removed and made again, once.
for try in 1 2; do
	cached=
	if base_ok; then
		cached=1
	else
		[[ -e $base ]] && echo "  $base: its checksum does not match; removed, making it again"
		rm -f "$base" "$base.sha256"
		make_base || exit 0
		phase base
	fi
	rm -rf --one-file-system "$root"
	mkdir -p "$root"
	if tar -C "$root" -xpf "$base" 2>"$work/tar.err"; then
		[[ -n $cached ]] && t_pass "$name: base image from the cache ($base, checksum verified)"
		break
	fi
	if ((try == 2)); then
		t_fail "$name: extract $base" "$(head -n 2 "$work/tar.err" | tr '\n' ' ')"
		exit 0
	fi
	echo "  $base does not extract ($(head -n 1 "$work/tar.err")); removed, making it again"
	rm -f "$base" "$base.sha256"
done
exec 8>&-
phase "extract"
kvers=$(ls "$root/lib/modules")
ikver=${kvers%%$'\n'*}
if [[ -z $ikver || $kvers == *$'\n'* || ! -e $root/boot/initrd.img-$ikver ]]; then
	t_fail "$name: the image's kernel" "want one kernel with an initramfs, have: $(echo "$kvers" | tr '\n' ' ') $(ls "$root/boot")"
	exit 0
fi
if lsinitramfs "$root/boot/initrd.img-$ikver" 2>/dev/null | grep -q '/nvsidecar\.ko'; then
	t_fail "$name: base image" "its initramfs already holds nvsidecar.ko"
	exit 0
fi
cp "${debs[@]}" "$root/tmp/"

# inchroot CMD...: CMD in the image, in a private mount namespace with the
# host's /dev, /proc and /sys (gone with its last process), in a session of
# its own (in_session); uname -r stays the host's.
inchroot() {
	# shellcheck disable=SC2016 # the inner shell's arguments
	in_session unshare -m --propagation private bash -c '
		r=$1; shift
		mount --rbind /dev "$r/dev" && mount -t proc proc "$r/proc" && mount --rbind /sys "$r/sys" &&
			mount -t tmpfs tmpfs "$r/run" || exit 1
		exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"
	' _ "$root" "$@"
}

inchroot sh -c 'cd /tmp && apt-get install -y ./nvsidecar-dkms_*.deb ./nvsidecar_*.deb' >"$work/install.raw" 2>&1
rc=$?
# apt runs dpkg on a pty: its lines end with \r\n
tr -d '\r' <"$work/install.raw" >"$work/install.log"
cat "$work/install.log" >>"$log"
rm -f "$root"/tmp/*.deb
ko=$(inchroot modinfo -k "$ikver" -F filename nvsidecar 2>/dev/null)
if ((rc == 0)) && [[ $ko == */updates/dkms/nvsidecar.ko* ]]; then
	t_pass "$name: apt-get install ./nvsidecar-dkms ./nvsidecar in the chroot (host $(uname -r)) builds nvsidecar.ko for the image's $ikver"
else
	t_fail "$name: install in the chroot" "apt-get exit $rc, module \`$ko': $(grep -E '^(E: |nvsidecar)' "$work/install.log" | tail -n 4 | tr '\n' ' ') (log: $log)"
	exit 0
fi
phase "install our packages in the chroot"
fixcmd=$(grep -x "  update-initramfs -u -k $ikver" "$work/install.log" | sed 's/^ *//')
if grep -q "the initramfs of $ikver holds no nvsidecar.ko" "$work/install.log" && [[ -n $fixcmd ]]; then
	t_pass "$name: the install names the image's /boot/initrd.img-$ikver, which lacks the module, and \`$fixcmd'"
else
	t_fail "$name: the install names the image without the module" "no message for $ikver, or no \`update-initramfs -u -k $ikver' line: $(grep '^nvsidecar' "$work/install.log" | tr '\n' ' ')"
	fixcmd="update-initramfs -u -k $ikver"
fi

# --- the node's configuration, as an admin writes it -----------------------
# The simulated GPU (85-boot): the hook copies this file into the image.
echo "options nvsidecar sim=1af4:1110:2:gb202" >"$root/etc/modprobe.d/nvsidecar.conf"
# The proof that runs before the root is mounted (tests/host/premount-proof,
# shared with 85-boot; here it lets the boot go on).
mkdir -p "$root/etc/initramfs-tools/scripts/init-premount"
nvs_proof_hook initramfs-tools >"$root/etc/initramfs-tools/scripts/init-premount/nvs-proof"
chmod +x "$root/etc/initramfs-tools/scripts/init-premount/nvs-proof"

# A shared read-only root: / is ro, the node's own writable place is a
# tmpfs, and /etc/default/nvsidecar points every path of docs/cluster.md
# section 7 at it. Debian's openrc package has no `local' service: its
# default runlevel runs the LSB /etc/init.d/rc.local, i.e. /etc/rc.local,
# which here runs /etc/local.d/*.start as OpenRC's local service would.
# (The tmpfs is mounted there, not from fstab: on a read-only root Debian's
# checkroot-bootclean.sh fails on /tmp, and mountall.sh needs it.)
echo "/dev/vda	/	ext4	ro	0	0" >"$root/etc/fstab"
mkdir -p "$root/srv/node"
cat >>"$root/etc/default/nvsidecar" <<'EOF'

# This node boots from a shared read-only root; /srv/node is its tmpfs.
NVSIDECAR_DOCTOR_ARGS=--full
NVSIDECAR_STATE_DIR=/srv/node/nvsidecar
NVSIDECAR_TEXTFILE_DIR=/srv/node/textfile
NVSIDECAR_IDLE_FIX_ARGS="--state /srv/node/nvsidecar/idle-fix.state"
NVSIDECAR_CRON_LOCKDIR=/srv/node/cron
NVSIDECAR_HEALTHCHECK_DIR=/srv/node/healthcheck
EOF
cat >"$root/etc/rc.local" <<'EOF'
#!/bin/sh
for s in /etc/local.d/*.start; do
	[ -x "$s" ] && "$s"
done
exit 0
EOF
chmod +x "$root/etc/rc.local"
mkdir -p "$root/etc/local.d"
cat >"$root/etc/local.d/00-node.start" <<'EOF'
#!/bin/sh
# the node's own writable place, and the directories nvsidecar's settings name
mount -t tmpfs -o mode=0755,size=16m node /srv/node
mkdir -p /srv/node/nvsidecar /srv/node/textfile
EOF
cp "$NVS_TOP/tests/host/86-image.guest" "$root/etc/local.d/99-nvs-proof.start"
# The image has no NVIDIA driver: idle-fix needs NVML, so the fakes of
# 47-idle-fix stand in for the driver's libnvidia-ml.so.1 and libcuda.so.1,
# where the driver puts them, set (cron passes no environment) to one GPU,
# the simulated one, at 100 % without processes: idle-fix counts it stuck
# 1/3 and keeps the count in its state file.
printf '%s\n' '#include <stdlib.h>' \
	'__attribute__((constructor)) static void nvs_env(void) {' \
	'	setenv("FAKE_NVML_STATE", "/etc/nvs-fake-gpus", 0);' \
	'	setenv("FAKE_CUDA_DEVICES", "1", 0);' \
	'	setenv("FAKE_CUDA_BUSIDS", "0000:01:00.0", 0); }' >"$work/fakeenv.c"
echo "0000:01:00.0 100 0 61 310" >"$root/etc/nvs-fake-gpus"
lib=$root/usr/lib/x86_64-linux-gnu
if ! gcc -shared -fPIC -O2 -o "$lib/libnvidia-ml.so.1" "$NVS_TOP/tests/nvml/fakenvml.c" "$work/fakeenv.c" 2>>"$log" ||
	! gcc -shared -fPIC -O2 -o "$lib/libcuda.so.1" "$NVS_TOP/tests/p2p/fakecuda.c" "$work/fakeenv.c" 2>>"$log"; then
	t_fail "$name: the fake NVIDIA libraries" "$(tail -n 3 "$log" | tr '\n' ' ')"
	exit 0
fi
inchroot ldconfig >>"$log" 2>&1
chmod +x "$root"/etc/local.d/*.start
echo nvs-node >"$root/etc/hostname"

# the command the install printed, in the chroot
inchroot sh -c "$fixcmd" >"$work/fix.log" 2>&1
rc=$?
cat "$work/fix.log" >>"$log"
list=$(lsinitramfs "$root/boot/initrd.img-$ikver" 2>>"$log")
if ((rc == 0)) && grep -q "lib/modules/$ikver/updates/dkms/nvsidecar.ko" <<<"$list" &&
	grep -q 'scripts/init-premount/nvs-proof' <<<"$list"; then
	t_pass "$name: \`$fixcmd' in the chroot; lsinitramfs shows nvsidecar.ko"
else
	t_fail "$name: \`$fixcmd' in the chroot" "exit $rc; nvsidecar in the image: $(grep nvsidecar <<<"$list" | tr '\n' ' ') (log: $log)"
	exit 0
fi
phase "configure + update-initramfs"

# --- 2. the disk -----------------------------------------------------------
cp "$root/boot/vmlinuz-$ikver" "$root/boot/initrd.img-$ikver" "$work/"
mb=$(($(du -sm "$root" | cut -f1) * 5 / 4 + 64))
if ! mkfs.ext4 -q -F -L nvs-root -d "$root" "$work/root.img" "${mb}M" >>"$log" 2>&1; then
	t_fail "$name: mkfs.ext4 -d" "$(tail -n 2 "$log" | tr '\n' ' ')"
	exit 0
fi
rm -rf "$root"
phase "mkfs.ext4 -d (${mb} MiB)"

# --- boot ------------------------------------------------------------------
con=$work/console.log
truncate -s 16M "$work/gpu.bar"
# one vCPU beside a VM lane: the boot may take longer
boot_limit=$((jobs > 1 ? 300 : 420))
boot() {
	in_session timeout -k 5 "$boot_limit" qemu-system-x86_64 -M q35 -accel tcg -cpu max -smp "$jobs" -m 1G \
		-nodefaults -no-reboot -display none -monitor none \
		-chardev "file,id=con,path=$con" -serial chardev:con \
		-kernel "$work/vmlinuz-$ikver" -initrd "$work/initrd.img-$ikver" \
		-append "console=ttyS0 root=/dev/vda ro rootfstype=ext4 panic=-1 loglevel=5 no_timer_check" \
		-drive "file=$work/root.img,format=raw,if=virtio,readonly=on" \
		-object "memory-backend-file,id=gpumem,share=on,mem-path=$work/gpu.bar,size=16M" \
		-device pcie-root-port,id=rp0,bus=pcie.0,addr=0x10,chassis=1,slot=1 \
		-device ivshmem-plain,id=gpu0,memdev=gpumem,bus=rp0,addr=0x0 \
		</dev/null >>"$log" 2>&1
}
boot
# A TCG guest on a loaded host sometimes fails the early IO-APIC timer
# check before userspace; that is the emulator, not the image: retry once.
grep -q 'IO-APIC + timer doesn' "$con" && boot
tr -d '\r' <"$con" >"$NVS_BUILD/image-console.log"
con=$NVS_BUILD/image-console.log
phase "boot (-smp $jobs)"

# --- judge the console -----------------------------------------------------
# mark NAME: the value of the console line "NVS-OS NAME VALUE"
mark() { sed -n "s/^NVS-OS $1 //p" "$con" | head -n 1; }
if ! grep -q '^NVS-PROOF end' "$con"; then
	t_fail "$name: init-premount" "the proof script did not run (console: $con)"
elif ! grep -qx 'NVS-PROOF lsmod nvsidecar' "$con"; then
	t_fail "$name: init-premount" "nvsidecar is not loaded before the root mount (console: $con)"
elif ! grep -qx 'NVS-PROOF root not-mounted' "$con"; then
	t_fail "$name: init-premount" "the real root was already mounted"
elif ! grep -q '^NVS-PROOF hwmon nvsidecar ' "$con" || ! grep -qx 'NVS-PROOF sim 1af4:1110:2:gb202' "$con"; then
	t_fail "$name: init-premount" "no nvsidecar hwmon chip, or the image's option did not reach the module: $(grep -E 'NVS-PROOF (hwmon|sim)' "$con" | tr '\n' ' ')"
else
	t_pass "$name: the image's initramfs loaded nvsidecar (simulated GB202) before the root was mounted"
fi

if ! grep -q '^NVS-OS end' "$con"; then
	t_fail "$name: OpenRC" "the local.d proof did not finish (console: $con): $(grep '^NVS-OS' "$con" | tail -n 3 | tr '\n' ' ')"
	exit 0
fi
if [[ $(mark init) == openrc && $(mark root) == ro* && $(mark node) == tmpfs* ]]; then
	t_pass "$name: OpenRC booted the node, / read-only, /srv/node a tmpfs ($(mark cron))"
else
	t_fail "$name: OpenRC boot" "init \`$(mark init)', root \`$(mark root)', /srv/node \`$(mark node)'"
fi
for job in doctor metrics idle-fix; do
	r=$(mark "run-$job")
	# doctor: 1 is a verdict (this node has no NVIDIA driver), as the
	# metrics job's SuccessExitStatus=1
	if [[ $r == "rc=0 "* || ($job == doctor && $r == "rc=1 "*) ]]; then
		t_pass "$name: cron line \`$job' ran as cron runs it (${r%% *}, ${r#* })"
	else
		t_fail "$name: cron line $job" "\`$r': $(sed -n "s/^NVS-OS err-$job //p" "$con" | head -n 5 | tr '\n' ' ')"
	fi
done
v=$(mark verdict) p=$(mark prom) s=$(mark idle-state)
if [[ $v == yes* ]]; then
	t_pass "$name: doctor --full stored its verdict in NVSIDECAR_STATE_DIR (${v#yes })"
else
	t_fail "$name: doctor verdict" "no /srv/node/nvsidecar/verdict: \`$v'"
fi
if [[ $p == yes* ]]; then
	t_pass "$name: metrics wrote NVSIDECAR_TEXTFILE_DIR/nvsidecar.prom (${p#yes })"
else
	t_fail "$name: metrics textfile" "\`$p'"
fi
if [[ $s == yes* ]]; then
	t_pass "$name: idle-fix kept its state in the --state file of NVSIDECAR_IDLE_FIX_ARGS"
else
	t_fail "$name: idle-fix state" "\`$s'"
fi
# /srv/node, and /run/nvsidecar: the doctor's initramfs cache, which no
# setting moves (docs/cluster.md: /run is a tmpfs on every init system)
bad=$(sed -n 's/^NVS-OS wrote //p' "$con" | grep -v -e '^/srv/node\(/\|$\)' -e '^/run/nvsidecar\(/\|$\)')
if [[ -z $bad ]] && grep -q '^NVS-OS wrote /srv/node/' "$con"; then
	t_pass "$name: the jobs wrote only under /srv/node and /run/nvsidecar: $(sed -n 's/^NVS-OS wrote //p' "$con" | tr '\n' ' ')"
else
	t_fail "$name: writes outside the node's writable paths" "$(tr '\n' ' ' <<<"$bad")"
fi
inert=$(sed -n 's/^NVS-OS inert //p' "$con")
if [[ $inert == ok ]]; then
	t_pass "$name: with /run/systemd/system present the same lines did nothing"
else
	t_fail "$name: cron lines inert under systemd" "$inert"
fi
phase judge
echo "  time: total $((SECONDS - suite_t0)) s"
