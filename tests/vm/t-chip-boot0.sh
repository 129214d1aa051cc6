#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: own (tests/vm/lanes.tsv)
#
# Issue 19 item 3: the chip from PMC_BOOT_0 (BAR0 + 0; kmod/chips.c, "The
# chip from PMC_BOOT_0"). Its chip id selects the recipe, the PCI id table
# only names the product. sim=...:auto stands in for a device id the table
# does not list: the recipe is the one of the chip boot0 names, and a chip
# without a recipe is not handled. A listed id (sim=...:gb202) whose boot0
# names another chip is refused before any sensor is read, with the reason
# in status. A boot0 with no chip id (0: later chips report through
# BOOT_42) keeps the table's recipe. nvsim's fixtures write their chip's
# boot0; `nvsim set boot0 CHIP|VALUE' changes it.
set -u

ls_class() { ls /sys/class/nvsidecar/ 2>/dev/null | tr '\n' ' '; }

# --- an unlisted id with a known chip: the recipe from boot0 ---------------
sim_fixture_all gb202
nvs_load sim=1af4:1110:2:auto || { t_fail chip-boot0-auto-load "insmod failed"; exit 0; }
c=$(sim_class 0) h=$(sim_hwmon 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
t_eq chip-boot0-auto-chip "$(read_err "$c/chip")" gb202
t_eq chip-boot0-auto-name "$(read_err "$c/name")" "Simulated NVIDIA 1af4:1110 (gb202)"
t_eq chip-boot0-auto-gb202-sensors \
	"$(read_err "$(hw_temp "$h" ch0)_input") $(read_err "$(hw_temp "$h" hotspot)_input") $(read_err "$(hw_temp "$h" mem0)_input")" \
	"90215 92250 56000"
nvs_unload

# the same device id, another chip: the recipe follows boot0
sim_all set boot0 ad104
nvs_load sim=1af4:1110:2:auto || { t_fail chip-boot0-auto-ad104-load "insmod failed"; exit 0; }
c=$(sim_class 0)
t_eq chip-boot0-auto-ad104 "$(read_err "$c/chip")" ad104gl
nvs_unload

# a chip without a recipe (GB206), and no chip id at all: not handled
for v in gb206 0; do
	sim_all set boot0 "$v"
	dmesg_mark "boot0 $v"
	nvs_load sim=1af4:1110:2:auto || { t_fail "chip-boot0-auto-$v-load" "insmod failed"; continue; }
	t_eq "chip-boot0-auto-$v-not-handled" "$(ls_class)" ""
	if [[ $v == 0 ]]; then want="no chip id"; else want="no recipe for its chip"; fi
	if dmesg_since_mark | grep -q "PMC_BOOT_0 0x[0-9a-f]*: $want, not handled"; then
		t_pass "chip-boot0-auto-$v-logged"
	else
		t_fail "chip-boot0-auto-$v-logged" "no \"$want, not handled\" in the kernel log"
	fi
	nvs_unload
done

# --- a listed id whose boot0 names another chip: refused, nothing read ------
sim_fixture_all gb202
sim_all set boot0 ad102
nvs_load || { t_fail chip-boot0-contradiction-load "insmod failed"; exit 0; }
c=$(sim_class 0)
want="unavailable: PMC_BOOT_0 chip 0x192 (ad102) contradicts sim= gb202"
wait_for 3 '[[ $(read_err "$c/status") == "$want" ]]'
t_eq chip-boot0-contradiction-status "$(read_err "$c/status")" "$want"
# the one read is boot0's at attach; no sampler pass, no module probe
r0=$(read_err "$c/mmio_reads")
nvs_sleep 1
t_eq chip-boot0-contradiction-no-reads "$r0 $(read_err "$c/mmio_reads") $(read_err "$c/samples")" "1 1 0"
if sim_hwmon 0 >/dev/null 2>&1; then
	t_fail chip-boot0-contradiction-no-hwmon "a refused GPU has an hwmon chip"
else
	t_pass chip-boot0-contradiction-no-hwmon
fi
nvs_unload

# --- boot0 without a chip id on a listed id: the table's recipe -------------
sim_fixture_all gb202
sim_all set boot0 0
dmesg_mark "boot0 0 listed"
nvs_load || { t_fail chip-boot0-none-load "insmod failed"; exit 0; }
c=$(sim_class 0) h=$(sim_hwmon 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
t_eq chip-boot0-none-table "$(read_err "$c/status") $(read_err "$c/chip") $(read_err "$(hw_temp "$h" ch0)_input")" \
	"ok gb202 90215"
if dmesg_since_mark | grep -q "PMC_BOOT_0 reads 0x00000000, no chip id"; then
	t_pass chip-boot0-none-logged
else
	t_fail chip-boot0-none-logged "no \"PMC_BOOT_0 reads 0x00000000, no chip id\" in the kernel log"
fi
nvs_unload

# --- a professional variant shares its GeForce chip's id -------------------
sim_fixture_all ada
nvs_load sim=1af4:1110:2:ad102gl || { t_fail chip-boot0-gl-load "insmod failed"; exit 0; }
c=$(sim_class 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
t_eq chip-boot0-gl-same-chip "$(read_err "$c/status") $(read_err "$c/chip")" "ok ad102gl"
nvs_unload

sim_fixture_all gb202
