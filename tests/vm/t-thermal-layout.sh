#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: own (tests/vm/lanes.tsv)
#
# Issue 19 item 1: every DRAM chip as the cards lay them out (kmod/chips.c,
# "Per-chip memory temperatures"): two chips per partition, each the
# hottest valid slot of its pair, GB202's 8 partitions, the clamshell back
# side from the strap, invalid chips shown without a number, absent ones
# hidden (those two fixtures: t-thermal-chips.sh, which every Debian lane
# runs); and the reads a memory pass costs, with mmio_reads as witness.
# Item 2: a GB20x die word needs bit 30; "mem" uses no summary register
# without a validity word of its own. Kernel review findings 5, 6 (as K3
# revised it) and 8: the strap read when it can be, an all-ones status
# word while the die answers is a partition gone, no back-side row before
# the strap is read.
set -u

# --- GB202: 8 partitions (nvsim fixture gb202-layout); which chips show
# and their values: t-thermal-chips.sh, on every Debian lane -------------
sim_fixture_all gb202
sim 0 fixture gb202-layout
nvs_load || { t_fail layout-gb202-load "insmod failed"; exit 0; }
c=$(sim_class 0) h=$(sim_hwmon 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
wait_for 3 '[[ $(read_err "$(hw_temp "$h" mem0)_input") == 64000 ]]'
# A memory pass reads each partition's status word once, then only the
# sampled slots of its shown, valid chips: p0 5, p1 3, p2 3, p3 0 and p4 0
# (absent), p5 3, p6 5, p7 3 = 22. Die: 6 a pass. sample_hz = mem_hz = 10
# makes every pass a memory pass, so a pass costs exactly 28 reads.
echo 10 >"$c/sample_hz"
echo 10 >"$c/mem_hz"
nvs_sleep 0.5
read -r r p _ < <(genl window --gpu "${c##*/gpu}" --seconds 2)
if ((p > 0 && r == p * 28)); then
	t_pass layout-gb202-reads-a-pass
else
	t_fail layout-gb202-reads-a-pass "$r reads in $p passes (want 28 a pass: 6 die + 22 memory)"
fi

# --- item 2: validity as the public readers agree ---------------------------
# A GB20x die word without bit 30 holds no sample: that channel only goes.
sim 0 set ch2 0x00004b1a
wait_for 3 '[[ $(read_err "$(hw_temp "$h" ch2)_input") == "No data available" ]]'
t_eq layout-die-needs-bit30 "$(read_err "$(hw_temp "$h" ch2)_input") $(read_err "$(hw_temp "$h" ch0)_input")" \
	"No data available 90215"
# No chip with a reading: "mem" has no number; the broadcast register
# (0x9a24c0, no validity word of its own; 56 °C here) is not used.
sim 0 validity-off
wait_for 3 '[[ $(read_err "$(hw_temp "$h" mem0)_input") == "No data available" ]]'
t_eq layout-mem-no-summary-without-validity "$(read_err "$(hw_temp "$h" mem)_input")" "No data available"
nvs_unload

# --- an absent chip is re-probed with a backoff ----------------------------
# gb202: chips 6 and 15 absent. mem_reprobe_s 1: re-probes 1, 2, 4, 8 s...
# apart, each 6 reads (two status words, two slots each). Every pass a
# memory pass (sample_hz = mem_hz = 10): 6 die + 36 memory reads (14 valid
# chips: 5 x 6 partitions + 3 + 3), so what is left is re-probes. In 7.5 s
# a fixed 1 s interval makes 7 (42 reads); the backoff at most 3.
sim 0 fixture gb202
nvs_load mem_reprobe_s=1 || { t_fail layout-reprobe-load "insmod failed"; exit 0; }
c=$(sim_class 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
echo 10 >"$c/sample_hz"
echo 10 >"$c/mem_hz"
nvs_sleep 0.3
read -r r p _ < <(genl window --gpu "${c##*/gpu}" --seconds 7.5)
extra=$((r - p * 42))
echo "reprobe backoff: $r reads in $p passes, $extra re-probe reads"
if ((p > 0 && extra >= 0 && extra <= 3 * 6 && extra % 6 == 0)); then
	t_pass layout-absent-reprobe-backoff
else
	t_fail layout-absent-reprobe-backoff "$extra reads beyond the passes in 7.5 s (want 0..18 in steps of 6: at most 3 re-probes)"
fi

# --- review finding 6, as kernel review K3 revised it ----------------------
# p0's status word reads ~0 while the die answers: the die is asked again,
# and as it answers, p0 is a partition that does not answer, not a dead
# GPU: its chips go (hidden, dormant), status stays ok, no backoff. (Before
# K3 the pass ended as dead: "unavailable" and passes backing off at
# mem_hz. A die that reads ~0 too still ends it: t-review-k.sh
# review-k3-dead-still-dead, and t-thermal-dead.sh.)
sim 0 set p0-status 0xffffffff
p0_gone() { ! grep -qxE 'mem[01]' "$(sim_hwmon 0)"/temp*_label 2>/dev/null; }
wait_for 4 p0_gone	# two memory passes in a row (review M3)
t_eq layout-status-allones-partition-gone "$(read_err "$c/status") $(p0_gone && echo gone)" "ok gone"
nvs_unload
sim 0 fixture gb202

# --- review finding 8: no back-side row before the strap is read ----------
# A GA102 no driver owns is never mapped, so its strap is unread: netlink
# lists its front chips and no memNb.
sim 0 fixture ga102-clam
nvs_load sim=1af4:1110:2:ga102:owned || { t_fail layout-no-phantom-load "insmod failed"; exit 0; }
c=$(sim_class 0)
got=$(genl get --gpu "${c##*/gpu}")
if [[ $got == *" mem0="* && $got != *" mem0b="* ]]; then
	t_pass layout-no-phantom-back-rows
else
	t_fail layout-no-phantom-back-rows "unmapped GA102 lists: $got"
fi
nvs_unload

# --- review finding 5: the strap is read when it can be --------------------
# Loaded while every register (the strap too) reads all-ones: the strap
# is no value then. Once the GPU answers, a memory pass reads it and the
# back side appears; a single read at attach would hide it for good.
sim 0 allones
nvs_load sim=1af4:1110:2:ga102 || { t_fail layout-strap-late-load "insmod failed"; exit 0; }
c=$(sim_class 0)
wait_for 3 '[[ $(read_err "$c/status") == unavailable* ]]'
sim 0 fixture ga102-clam
wait_for 8 '[[ $(read_err "$(hw_temp "$(sim_hwmon 0)" mem0b 2>/dev/null)_input" 2>/dev/null) == 84000 ]]'
t_eq layout-strap-read-late "$(read_err "$(hw_temp "$(sim_hwmon 0)" mem0b)_input" 2>&1)" 84000
nvs_unload
