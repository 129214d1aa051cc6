#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# Shows that the install steps are complete: takes this machine back to
# what a fresh Debian 12 image has, then runs CI (.ci/run) from a fresh
# clone of the committed tree, exactly as a new CI machine would.
#
# It purges what scripts/deps.sh installs that a fresh image lacks: every
# kernel image, header and kbuild package (Debian's and the debug kernel),
# dkms, QEMU, the packages deps.sh recorded in
# /var/lib/nvsidecar/deps-installed, and the prepared-tree and download
# caches in /var/cache/nvsidecar. Destructive, so it wants --yes and root.
#
# Usage: tests/fresh-machine.sh --yes [-o LOG]
#        tests/fresh-machine.sh --no-purge [-o LOG]
#   The clone goes to a new /root/nvs-fresh.XXXXXX, a folder only root may
#   enter (0700, in root's home, 0700 too): the tests must pass from a
#   checkout that the users they run programs as cannot reach. Not under
#   /tmp or /var/tmp: the VM guest puts a clone there back on folders of its
#   own (tests/vm/init), which would hide the case.
#   ../shared is beside it (a link to this checkout's ../shared, as CI has
#   it); the CI output goes to LOG (default: that folder's ci.log).
#   --no-purge skips the purge: a fresh clone in a 0700 folder on this
#   machine as it is. Exit status: .ci/run's.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
yes=0 purge=1 log=
while (($#)); do
	case $1 in
	--yes) yes=1 ;;
	--no-purge) purge=0 ;;
	-o) log=$2; shift ;;
	-h | --help) sed -n '3,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "fresh-machine: unknown option \`$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
((EUID == 0)) || { echo "fresh-machine: run as root (it purges packages, and CI installs them)" >&2; exit 2; }
((yes || !purge)) || { echo "fresh-machine: this purges kernels, dkms and QEMU from this machine; pass --yes (or --no-purge to keep them)" >&2; exit 2; }

# --- 1. purge ---------------------------------------------------------------
purge() {
	pkgs=()
	mapfile -t pkgs < <(
		{
			[[ -f /var/lib/nvsidecar/deps-installed ]] && cat /var/lib/nvsidecar/deps-installed
			dpkg-query -W -f='${Package} ${Status}\n' 'linux-image-*' 'linux-headers-*' \
				'linux-kbuild-*' 'linux-compiler-*' dkms 'qemu-system-*' qemu-utils 2>/dev/null |
				awk '$NF == "installed" { print $1 }'
		} | sort -u)
	installed=()
	for p in "${pkgs[@]}"; do
		[[ -n $p ]] && dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' &&
			installed+=("$p")
	done
	echo "fresh-machine: purging ${#installed[@]} packages: ${installed[*]}"
	export DEBIAN_FRONTEND=noninteractive
	if ((${#installed[@]})); then
		apt-get purge -y -qq "${installed[@]}" >/dev/null || { echo "fresh-machine: apt-get purge failed" >&2; exit 1; }
	fi
	apt-get autoremove --purge -y -qq >/dev/null
	rm -rf /var/cache/nvsidecar /var/lib/nvsidecar /var/lib/dkms/nvsidecar /usr/src/nvsidecar-*
	left=$(ls /boot/vmlinuz-* 2>/dev/null; find /lib/modules -name '*.ko*' 2>/dev/null | head -n 3
		command -v dkms qemu-system-x86_64)
	if [[ -n $left ]]; then
		echo "fresh-machine: still here after the purge: $(tr '\n' ' ' <<<"$left")" >&2
		exit 1
	fi
	echo "fresh-machine: no kernel, no dkms, no QEMU, no cache left"
}
if ((purge)); then
	purge || exit 1
else
	echo "fresh-machine: --no-purge: keeping what this machine has installed"
fi

# --- 2. CI from a fresh clone ------------------------------------------------
work=$(mktemp -d /root/nvs-fresh.XXXXXX)
# mktemp makes it 0700 already; said here because the run depends on it.
chmod 700 "$work"
git clone -q "$top" "$work/nvsidecar" || { echo "fresh-machine: git clone failed" >&2; exit 1; }
[[ -d $top/../shared ]] && ln -s "$(cd "$top/../shared" && pwd)" "$work/shared"
log=${log:-$work/ci.log}
echo "fresh-machine: running .ci/run in $work/nvsidecar (commit $(git -C "$work/nvsidecar" rev-parse --short HEAD)); output: $log"
t0=$SECONDS
(cd "$work/nvsidecar" && bash .ci/run) >"$log" 2>&1
rc=$?
echo "fresh-machine: .ci/run exited $rc after $((SECONDS - t0)) s"
grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1
grep -A200 '^Failures:' "$log" | sed -n '1,40p'
exit $rc
