#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dracut module: put nvsidecar.ko and its modprobe.d config into the image
# and load it early (rd.driver.pre, i.e. at the cmdline hook, before the
# real root is mounted). A no-op for a kernel with no nvsidecar module, so
# a missing DKMS build never makes dracut fail.

nvs_built() {
	modinfo -k "$kernel" -F filename nvsidecar >/dev/null 2>&1
}

check() {
	[[ -r /etc/default/nvsidecar ]] && . /etc/default/nvsidecar
	[[ ${NVSIDECAR_IN_INITRAMFS:-yes} == no ]] && return 255
	# Include by default, also in hostonly images: the GPU may be bound
	# later (or be the simulated one in tests), so there is nothing to
	# detect on the build host.
	return 0
}

# rd.driver.pre is handled by kernel-modules' cmdline hook.
depends() {
	echo kernel-modules
	return 0
}

installkernel() {
	nvs_built || return 0
	hostonly='' instmods nvsidecar
}

install() {
	nvs_built || return 0
	local conf
	for conf in /etc/modprobe.d/nvsidecar.conf /lib/modprobe.d/nvsidecar.conf \
		    /usr/lib/modprobe.d/nvsidecar.conf; do
		[[ -f $conf ]] && inst_simple "$conf"
	done
	mkdir -p "$initdir/etc/cmdline.d"
	echo "rd.driver.pre=nvsidecar" >"$initdir/etc/cmdline.d/90nvsidecar.conf"
}
