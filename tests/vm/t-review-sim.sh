#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# The sim= parameter and the ownership rules (review 2026-12-03 findings 5
# and 10, issue 12 item 1):
#   - sim= takes only QEMU's ivshmem (1af4:1110) and an optional 5th field
#     "owned"; anything else is refused at load with a message;
#   - an owned simulated GPU is not read while no driver is bound (status
#     no-driver, mmio_reads does not move, no hwmon chip), is read while
#     one is (nvsowner, the stand-in owner driver), and stops being read
#     when the driver unbinds;
#   - a pass never runs while a PCI reset holds the device's config access
#     lock: during `echo 1 > reset` the status says so.
# The driver-owned path in depth (runtime PM, D3hot, vfio-pci, storms) is
# in t-owned-*.sh, with a stand-in owner driver.
set -u

sim_fixture_all gb202

# --- finding 10: sim= names ivshmem only -------------------------------------
for bad in 8086:1234:0:gb202 1af4:1111:2:gb202 1af4:1110:2:gb202:free \
	1af4:1110:2:gb202:owned:x 1af4:1110:2:gb202: 1af4:1110:2:nochip; do
	dmesg_mark "sim=$bad"
	if nvs_load "sim=$bad" 2>/dev/null; then
		nvs_unload
		t_fail "review-sim-refuses-$bad" "insmod accepted it"
	elif dmesg_since_mark | grep -q 'nvsidecar: sim: '; then
		t_pass "review-sim-refuses-$bad"
	else
		t_fail "review-sim-refuses-$bad" "refused without a sim: message in the kernel log"
	fi
done
dmesg_mark "sim=8086 message"
nvs_load sim=8086:1234:0:gb202 2>/dev/null && nvs_unload
if dmesg_since_mark | grep -q "other than QEMU's ivshmem (1af4:1110)"; then
	t_pass review-sim-foreign-device-message
else
	t_fail review-sim-foreign-device-message "no message naming ivshmem: $(dmesg_since_mark | grep nvsidecar | tail -n 2)"
fi

# --- owned: read only while a driver is bound --------------------------------
nvs_load sim=1af4:1110:2:gb202:owned || { t_fail review-owned-load "insmod sim=...:owned failed"; exit 0; }
b=$(sim_bdf 0)
c=$(sim_class 0)
t_eq review-owned-unbound-status "$(read_err "$c/status")" "no-driver: no driver bound"
t_eq review-owned-unbound-no-reads "$(read_err "$c/mmio_reads")" 0
t_eq review-owned-simulated "$(read_err "$c/simulated")" 1
if hwmon_of "/sys/bus/pci/devices/$b" >/dev/null 2>&1; then
	t_fail review-owned-unbound-no-hwmon "an nvsidecar hwmon chip exists without a driver"
else
	t_pass review-owned-unbound-no-hwmon
fi
nvs_sleep 0.3
t_eq review-owned-unbound-still-no-reads "$(read_err "$c/mmio_reads")" 0

# The owner is nvsowner, the tests' stand-in for a GPU driver: pci-stub
# (used here before) hands the device to nobody and, like vfio-pci, sets
# driver_managed_dma, so it no longer counts as an owner (review 2,
# finding 4; t-review-dmabuf checks that a GPU under pci-stub is not read).
# shellcheck source=tools/nvsowner/owned.sh
. "$NVS_TOP/tests/vm/tools/nvsowner/owned.sh"
if ! own_load autosuspend_ms=-1; then
	t_fail review-owned-bind "nvsowner.ko did not load"
elif ! own_bind 0; then
	t_fail review-owned-bind "nvsowner did not bind $b"
else
	wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
	t_eq review-owned-bound-status "$(read_err "$c/status")" ok
	h=$(sim_hwmon 0)
	t_eq review-owned-bound-reads "$(read_err "$(hw_temp "$h" ch0)_input")" 90215
	r0=$(read_err "$c/mmio_reads")
	nvs_sleep 0.3
	r1=$(read_err "$c/mmio_reads")
	((r1 > r0)) && t_pass review-owned-bound-counts || t_fail review-owned-bound-counts "mmio_reads $r0 -> $r1 while bound"

	own_unbind 0
	t_eq review-owned-unbind-status "$(read_err "$c/status")" "no-driver: no driver bound"
	r2=$(read_err "$c/mmio_reads")
	nvs_sleep 0.3
	t_eq review-owned-unbind-no-reads "$(read_err "$c/mmio_reads")" "$r2"
	if hwmon_of "/sys/bus/pci/devices/$b" >/dev/null 2>&1; then
		t_fail review-owned-unbind-hwmon-gone "the hwmon chip outlived the driver"
	else
		t_pass review-owned-unbind-hwmon-gone
	fi
	echo >"/sys/bus/pci/devices/$b/driver_override"
fi
# shellcheck disable=SC2154 # _nvs_rmmod: guest-lib.sh
[[ -d /sys/module/nvsowner ]] && "${_nvs_rmmod[@]}" nvsowner
nvs_unload

# --- finding 5: no pass while a reset holds the config access lock -----------
# GPU2 sits alone behind a root port, so it has a bus reset; in emulation
# the reset takes a few hundred ms, during which the 1000 Hz sampler tries
# hundreds of passes. Without the lock they would see "memory decoding
# disabled" (the reset turned decoding off) or read the device mid-reset.
if ((NVS_GPUS < 3)); then
	t_skip review-reset-excluded "needs simulated GPU 2 (run-vm -g 3 or more)"
	exit 0
fi
nvs_load sample_hz=1000 || { t_fail review-reset-load "insmod failed"; exit 0; }
b=$(sim_bdf 2)
c=$(sim_class 2)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
if [[ ! -e /sys/bus/pci/devices/$b/reset ]]; then
	t_skip review-reset-excluded "$b has no reset method on $NVS_KVER"
	nvs_unload
	exit 0
fi
seen=/tmp/review-reset-status stop=/tmp/review-reset-stop
rm -f "$stop"
# builtins only: the poller must see states that last a few ms
(while [[ ! -e $stop ]]; do IFS= read -r s <"$c/status" && echo "$s"; done) >"$seen" &
poller=$!
nvs_sleep 0.2
u0=$(read_err "$c/unavailable_reads")
for _ in 1 2 3; do
	echo 1 >"/sys/bus/pci/devices/$b/reset" || t_fail review-reset-write "echo 1 > reset failed"
done
u1=$(read_err "$c/unavailable_reads")
nvs_sleep 0.2
: >"$stop"
wait "$poller"
summary=$(sort "$seen" | uniq -c | tr -s ' \n' ' ')
echo "statuses seen around the resets: $summary"
if grep -q 'unavailable: reset or config access in progress' "$seen"; then
	t_pass review-reset-excluded
else
	t_fail review-reset-excluded "the sampler never saw the reset's config lock: $summary"
fi
if grep -q 'memory decoding disabled\|all-ones' "$seen"; then
	t_fail review-reset-no-read-mid-reset "a pass ran inside the reset: $summary"
else
	t_pass review-reset-no-read-mid-reset
fi
((u1 > u0)) && t_pass review-reset-counted || t_fail review-reset-counted "unavailable_reads $u0 -> $u1"
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
t_eq review-reset-recovers "$(read_err "$c/status") $(read_err "$(hw_temp "$(sim_hwmon 2)" ch0)_input")" "ok 90215"
nvs_unload
