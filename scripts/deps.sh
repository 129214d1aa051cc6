#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# Installs what building and testing nvsidecar needs: the Debian packages
# in scripts/deps.list and, when ../shared/kernels is there, the debug
# kernel for the slow VM lane. Quiet and quick when everything is present.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)

sudo=
if ((EUID != 0)); then
	command -v sudo >/dev/null || { echo "deps: run as root (apt-get needs it) or install sudo" >&2; exit 1; }
	sudo=sudo
fi

mapfile -t want < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$top/scripts/deps.list")
missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]})); then
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	# What this machine lacked, for tests/fresh-machine.sh to take away.
	$sudo mkdir -p /var/lib/nvsidecar
	printf '%s\n' "${missing[@]}" | $sudo tee -a /var/lib/nvsidecar/deps-installed >/dev/null
fi

# The debug kernel (KASAN, lockdep, kmemleak): the packages in ../shared/kernels
# beside the project, else those scripts/debug-kernel.sh built from the
# recipe in the tree (build/debug-kernel). CI never builds it (hours).
found=0
for kdir in "${NVS_SHARED:-$top/../shared}/kernels" "$top/build/debug-kernel"; do
	[[ -d $kdir ]] || continue
	for deb in "$kdir"/linux-image-*nvsdebug*.deb "$kdir"/linux-headers-*nvsdebug*.deb; do
		[[ -f $deb ]] || continue
		found=1
		pkg=$(dpkg-deb -f "$deb" Package)
		ver=$(dpkg-deb -f "$deb" Version)
		if [[ $(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null) != "$ver" ]]; then
			(cd "$kdir" && sha256sum --quiet -c --ignore-missing SHA256SUMS) ||
				{ echo "deps: $kdir fails its SHA256SUMS" >&2; exit 1; }
			echo "deps: installing $(basename "$deb")"
			$sudo dpkg -i "$deb" >/dev/null
		fi
	done
	((found)) && break
done
if ((!found)) && ! dpkg-query -W -f='${Status}\n' 'linux-image-*nvsdebug*' 2>/dev/null | grep -q 'install ok installed'; then
	echo "deps: no debug kernel (../shared/kernels is not beside the clone): the VM suite's debug lane will skip." \
		"To run it, build the kernel with scripts/debug-kernel.sh (hours), then run scripts/deps.sh again."
fi
