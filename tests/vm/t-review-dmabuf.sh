#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# Review 2026-12-03, the dma-buf probe:
#   finding 4: NVS_CMD_DMABUF_PROBE needs CAP_SYS_ADMIN, not only
#     CAP_NET_ADMIN, and refuses importers that no driver owns or that
#     vfio-pci owns (the simulated GPUs without ":owned" excepted);
#   review 2 finding 4: and those that pci-stub or uio_pci_generic own
#     (driver_managed_dma, or the name); the sampler does not read a GPU
#     they own;
#   finding 3: a probe holds no global lock: generic netlink family
#     lookups (nlctrl, what every libnl client does first) are not delayed
#     by probes running meanwhile. The probes here are slow because of
#     their size (64 MiB of 4 KiB udmabuf entries); a fence wait held the
#     same locks for up to 5 s.
set -u

probe=$NVS_TOOLS/dmabuf_probe
field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }

if [[ ! -c /dev/udmabuf ]]; then
	t_skip review-dmabuf "kernel $NVS_KVER has no /dev/udmabuf (CONFIG_UDMABUF, 6.12 lanes only)"
	exit 0
fi
sim_fixture_all gb202
nvs_load sample_hz=0 || { t_fail review-dmabuf-load "insmod failed"; exit 0; }
gpu0=$(sim_bdf 0)

# --- finding 4: capabilities ---------------------------------------------------
out=$("$probe" --gpu 0 udmabuf 4096 2>&1)
[[ $(field ret "$out") == 0 ]] && t_pass review-dmabuf-root || t_fail review-dmabuf-root "$out"
# root without CAP_SYS_ADMIN keeps CAP_NET_ADMIN, as a network agent would
out=$(setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin "$probe" --gpu 0 udmabuf 4096 2>&1)
if [[ $(field ret "$out") == -1 ]] && grep -q CAP_SYS_ADMIN <<<"$out"; then
	t_pass review-dmabuf-net-admin-only-refused
else
	t_fail review-dmabuf-net-admin-only-refused "expected -EPERM naming CAP_SYS_ADMIN: $out"
fi

# --- finding 4: importers ------------------------------------------------------
# a PCI device without a driver that is not one of the simulated GPUs
none=
for d in /sys/bus/pci/devices/*; do
	[[ -e $d/driver || $(<"$d/vendor"):$(<"$d/device") == 0x1af4:0x1110 ]] && continue
	none=${d##*/}
	break
done
if [[ -n $none ]]; then
	out=$("$probe" --gpu 0 --importer "$none" udmabuf 4096 2>&1)
	if [[ $(field ret "$out") == -1 ]] && grep -q 'no driver' <<<"$out"; then
		t_pass review-dmabuf-driverless-importer-refused
	else
		t_fail review-dmabuf-driverless-importer-refused "importer $none (no driver): $out"
	fi
else
	t_skip review-dmabuf-driverless-importer-refused "every PCI device of this guest has a driver"
fi
# a simulated GPU without ":owned" stands in for a NIC (t-dmabuf.sh)
if ((NVS_GPUS > 1)); then
	out=$("$probe" --gpu 0 --importer "$(sim_bdf 1)" udmabuf 4096 2>&1)
	[[ $(field ret "$out") == 0 ]] && t_pass review-dmabuf-free-sim-importer || t_fail review-dmabuf-free-sim-importer "$out"
fi
nvs_unload

# An owned simulated GPU follows the real rules: refused without a driver,
# accepted with one that keeps the device (nvsowner, the tests' stand-in for
# a NIC's or a GPU's own driver), refused under a driver that hands it to a
# guest or userspace: pci-stub and vfio-pci (driver_managed_dma on 5.19+),
# uio_pci_generic (by name). The sampler follows the same test: the GPU
# bound to pci-stub says so and is not read.
nvs_load sim=1af4:1110:2:gb202:owned sample_hz=0 || { t_fail review-dmabuf-owned-load "insmod failed"; exit 0; }
imp=$(sim_bdf 1 2>/dev/null || sim_bdf 0)
impn=$( ((NVS_GPUS > 1)) && echo 1 || echo 0)
out=$("$probe" --importer "$imp" udmabuf 4096 2>&1)
if [[ $(field ret "$out") == -1 ]] && grep -q 'no driver' <<<"$out"; then
	t_pass review-dmabuf-owned-unbound-refused
else
	t_fail review-dmabuf-owned-unbound-refused "$out"
fi
# shellcheck source=tools/nvsowner/owned.sh
. "$NVS_TOP/tests/vm/tools/nvsowner/owned.sh"
if own_load autosuspend_ms=-1 && own_bind "$impn"; then
	out=$("$probe" --importer "$imp" udmabuf 4096 2>&1)
	[[ $(field ret "$out") == 0 ]] && t_pass review-dmabuf-owned-bound-accepted || t_fail review-dmabuf-owned-bound-accepted "$out"
	own_unbind "$impn"
	echo >"/sys/bus/pci/devices/$imp/driver_override"
else
	t_fail review-dmabuf-owned-bound-accepted "nvsowner did not load or bind $imp"
fi
# shellcheck disable=SC2154 # _nvs_rmmod: guest-lib.sh
[[ -d /sys/module/nvsowner ]] && "${_nvs_rmmod[@]}" nvsowner
# user_driver_bind DRIVER: binds DRIVER to the importer; false when it does
# not bind (no module, or the device does not suit it)
user_driver_bind() {
	modprobe "$1" 2>/dev/null && [[ -d /sys/bus/pci/drivers/$1 ]] || return 1
	echo "$1" >"/sys/bus/pci/devices/$imp/driver_override"
	echo "$imp" >"/sys/bus/pci/drivers/$1/bind" 2>/dev/null && return 0
	echo >"/sys/bus/pci/devices/$imp/driver_override"
	return 1
}
user_driver_unbind() {
	echo "$imp" >"/sys/bus/pci/drivers/$1/unbind"
	echo >"/sys/bus/pci/devices/$imp/driver_override"
}
if user_driver_bind pci-stub; then
	out=$("$probe" --importer "$imp" udmabuf 4096 2>&1)
	if [[ $(field ret "$out") == -1 ]] && grep -q 'hands it to a guest' <<<"$out"; then
		t_pass review-dmabuf-pci-stub-importer-refused
	else
		t_fail review-dmabuf-pci-stub-importer-refused "$out"
	fi
	c=$(sim_class "$impn")
	r0=$(<"$c/mmio_reads")
	t_eq review-dmabuf-pci-stub-not-sampled "$(<"$c/status"), reads $(($(<"$c/mmio_reads") - r0))" \
		"no-driver: bound to pci-stub, reads 0"
	user_driver_unbind pci-stub
else
	t_skip review-dmabuf-pci-stub-importer-refused "pci-stub does not bind here ($NVS_KVER)"
fi
if user_driver_bind uio_pci_generic; then
	out=$("$probe" --importer "$imp" udmabuf 4096 2>&1)
	if [[ $(field ret "$out") == -1 ]] && grep -q 'hands it to a guest' <<<"$out"; then
		t_pass review-dmabuf-uio-importer-refused
	else
		t_fail review-dmabuf-uio-importer-refused "$out"
	fi
	user_driver_unbind uio_pci_generic
else
	t_skip review-dmabuf-uio-importer-refused "uio_pci_generic does not bind the simulated GPU here ($NVS_KVER: no module, or no INTx masking on ivshmem)"
fi
modprobe -r uio_pci_generic 2>/dev/null
# vfio-pci binds without an IOMMU only in its no-IOMMU mode
vfio=0
if modprobe vfio enable_unsafe_noiommu_mode=1 2>/dev/null && modprobe vfio-pci 2>/dev/null; then
	echo vfio-pci >"/sys/bus/pci/devices/$imp/driver_override"
	echo "$imp" >/sys/bus/pci/drivers/vfio-pci/bind 2>/dev/null && vfio=1
fi
if ((vfio)); then
	out=$("$probe" --importer "$imp" udmabuf 4096 2>&1)
	if [[ $(field ret "$out") == -1 ]] && grep -q 'vfio-pci' <<<"$out"; then
		t_pass review-dmabuf-vfio-importer-refused
	else
		t_fail review-dmabuf-vfio-importer-refused "$out"
	fi
	echo "$imp" >/sys/bus/pci/drivers/vfio-pci/unbind
else
	t_skip review-dmabuf-vfio-importer-refused "vfio-pci does not bind here (no IOMMU and no no-IOMMU mode on $NVS_KVER)"
fi
echo >"/sys/bus/pci/devices/$imp/driver_override"
modprobe -r vfio-pci vfio 2>/dev/null
nvs_unload

# --- finding 3: no global lock across a probe --------------------------------
nvs_load sample_hz=0 || { t_fail review-dmabuf-load2 "insmod failed"; exit 0; }
size=$((64 << 20))
limit=/sys/module/udmabuf/parameters/size_limit_mb
old_limit=$(cat $limit 2>/dev/null)
[[ -w $limit ]] && echo 64 >$limit
base=$(genl lookups --seconds 2)
"$probe" --gpu 0 --count 1000000 --seconds 60 udmabuf $size >/tmp/review-probes 2>&1 &
ppid=$!
# creating 64 MiB takes seconds under emulation: start measuring once the
# probes run (each one rewrites the GPU's dmabuf_last_probe)
c=$(sim_class 0)
wait_for 30 '[[ $(read_err "$c/dmabuf_last_probe") == *" ok "* ]]'
during=$(genl lookups --seconds 4)
kill "$ppid" 2>/dev/null
wait "$ppid" 2>/dev/null
[[ -n $old_limit && -w $limit ]] && echo "$old_limit" >$limit
echo "family lookups alone: $base; while probes ran: $during"
p90=$(field p90_ms "$during") p90=${p90%.*}
b90=$(field p90_ms "$base") b90=${b90%.*}
bound=$((4 * b90 > 10 ? 4 * b90 : 10))
# A lookup that has to wait for the probe in progress (genl_mutex, when
# the family is not parallel_ops) makes most lookups slow, not just the
# few the emulator descheduled: compare the 90th percentile, and how many
# lookups a second went through (the probes take one of the two vCPUs, so
# a quarter of the rate alone is the floor).
rate_alone=$(($(field n "$base") / 2)) rate_during=$(($(field n "$during") / 4))
if [[ -z $p90 ]]; then
	t_fail review-dmabuf-lookups-not-blocked "no lookup result: $during"
elif ((p90 <= bound && rate_during * 4 >= rate_alone)); then
	t_pass review-dmabuf-lookups-not-blocked
else
	t_fail review-dmabuf-lookups-not-blocked "while probes ran, 90% of family lookups took up to ${p90} ms (alone: ${b90} ms) and $rate_during went through a second (alone: $rate_alone): $during"
fi
nvs_unload
