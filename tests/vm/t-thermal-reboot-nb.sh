#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# Issue 19 item 4 (review N11): the reboot/kexec notifier that stops every
# read before the owners' ->shutdown() (kmod/core.c nvs_reboot_notify) is
# registered at load and gone at unload. A notifier left behind points
# into the freed module: the next insmod's register_reboot_notifier()
# walks the chain through it and oopses. So: load, unload and load again,
# three times, sampling each time; the kernel log stays clean.
# Running the notifier itself needs a reboot, halt or kexec of the guest,
# which ends the test run: there is no safe trigger here (and a debug-only
# one would not test the release module).
set -u

sim_fixture_all gb202
dmesg_mark "reboot-nb start"
for i in 1 2 3; do
	nvs_load || { t_fail "reboot-nb-load-$i" "insmod failed"; exit 0; }
	c=$(sim_class 0)
	wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
	r0=$(read_err "$c/mmio_reads")
	nvs_sleep 0.3
	r1=$(read_err "$c/mmio_reads")
	if ((r1 > r0)); then
		t_pass "reboot-nb-reads-$i"
	else
		t_fail "reboot-nb-reads-$i" "mmio_reads $r0 -> $r1 after load $i"
	fi
	nvs_unload
done
dmesg_check reboot-nb-dmesg
