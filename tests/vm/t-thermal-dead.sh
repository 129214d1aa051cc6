#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# Issue 19 item 4 (review N2): a GPU fallen off the bus stays bound and
# reads all-ones everywhere (open-gpu-kernel-modules nv.c: nvidia.ko keeps
# it while nvidia-persistenced holds it), and each read may stall. The
# first all-ones die register ends a pass (one read a pass, where the old
# sampler read all six die words), passes back off exponentially to one
# every 4 s (NVS_DEAD_PROBE_MAX_MS), status says why, and the readings
# come back by themselves when the registers answer again. mmio_reads is
# the witness.
set -u

sim_fixture_all gb202
nvs_load || { t_fail thermal-dead-load "insmod failed"; exit 0; }
c=$(sim_class 0) h=$(sim_hwmon 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
want="unavailable: all-ones (fallen off the bus or in reset)"

sim 0 allones
wait_for 3 '[[ $(read_err "$c/status") == "$want" ]]'
t_eq thermal-dead-status "$(read_err "$c/status")" "$want"
t_eq thermal-dead-enodata "$(read_err "$(hw_temp "$h" ch0)_input")" "No data available"

# After 2 s of backoff the passes are at least 1.28 s apart (20 ms doubled
# 6 times): over the next 6 s at most 6 tries, one read each. Without the
# backoff: 50 passes a second of 6 reads, 1800.
# Both counters from one moment: a try landing between the two reads would
# make them differ by one, so read until mmio_reads holds still around them.
counters() {
	local r a u
	for _ in 1 2 3 4 5; do
		r=$(read_err "$c/mmio_reads") u=$(read_err "$c/unavailable_reads") a=$(read_err "$c/mmio_reads")
		[[ $r == "$a" ]] && break
	done
	echo "$r $u"
}
nvs_sleep 2
read -r r0 u0 < <(counters)
nvs_sleep 6
read -r r1 u1 < <(counters)
echo "dead GPU over 6 s: $((r1 - r0)) reads, $((u1 - u0)) unavailable passes"
if ((r1 - r0 >= 1 && r1 - r0 <= 6)); then
	t_pass thermal-dead-backoff
else
	t_fail thermal-dead-backoff "$((r1 - r0)) reads in 6 s (want 1..6: a slow probe, one read a try)"
fi
t_eq thermal-dead-one-read-a-pass "$((r1 - r0))" "$((u1 - u0))"

# The GPU answers again: readings return within the 4 s ceiling.
sim 0 fixture gb202
wait_for 8 '[[ $(read_err "$c/status") == ok ]]'
t_eq thermal-dead-recovers "$(read_err "$c/status") $(read_err "$(hw_temp "$h" ch0)_input")" "ok 90215"
# and the backoff is over: a full rate again
r0=$(read_err "$c/mmio_reads")
nvs_sleep 1
r1=$(read_err "$c/mmio_reads")
if ((r1 - r0 >= 100)); then
	t_pass thermal-dead-full-rate-again
else
	t_fail thermal-dead-full-rate-again "$((r1 - r0)) reads in 1 s after recovery (want >= 100: 50 passes of 6)"
fi

# Review finding 1: a GPU whose link is gone answers config reads with
# all-ones too, so a pass ends at PCI_COMMAND before any BAR read and
# mmio_reads cannot see it; each try is one config read, counted in
# unavailable_reads. The ivshmem device's config space always answers, so
# its sibling exit stands in: decoding off takes the same backoff path
# (kmod/sampler.c nvs_access_begin(), *dead). Without the backoff: 50
# tries a second, 150 in 3 s.
bdf=$(sim_bdf 0)
cmd=$(setpci -s "$bdf" COMMAND)
setpci -s "$bdf" COMMAND=0:2
wait_for 3 '[[ $(read_err "$c/status") == "unavailable: memory decoding disabled" ]]'
nvs_sleep 1.5
read -r r0 u0 < <(counters)
nvs_sleep 3
read -r r1 u1 < <(counters)
echo "decoding off over 3 s: $((r1 - r0)) reads, $((u1 - u0)) unavailable passes"
if ((u1 - u0 >= 1 && u1 - u0 <= 4)); then
	t_pass thermal-dead-cfg-backoff
else
	t_fail thermal-dead-cfg-backoff "$((u1 - u0)) tries in 3 s with decoding off (want 1..4: the dead-GPU backoff)"
fi
t_eq thermal-dead-cfg-no-bar-read "$((r1 - r0))" 0
setpci -s "$bdf" COMMAND="$cmd"
wait_for 6 '[[ $(read_err "$c/status") == ok ]]'
t_eq thermal-dead-cfg-recovers "$(read_err "$c/status") $(read_err "$(hw_temp "$h" ch0)_input")" "ok 90215"
nvs_unload
