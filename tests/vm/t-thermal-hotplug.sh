#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# Issue 2: PCI hot-remove and rescan of a simulated GPU in the middle of
# sampling, with readers of every hwmon and class file running; the other
# GPUs keep working, the GPU comes back with a new index after the rescan.
set -u

sim_fixture_all gb202
nvs_load || { t_fail thermal-hotplug-load "insmod failed"; exit 1; }
bdf=$(sim_bdf 0)
c=$(sim_class 0) h=$(sim_hwmon 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
old=${c##*/gpu}

# Readers hammer GPU0's files (errors expected once they vanish).
readers=()
for _ in 1 2 3; do
	(while :; do cat "$c"/* "$h"/* >/dev/null 2>&1; done) &
	readers+=($!)
done
sim 0 ramp --from 70 --to 90 --seconds 3 --hz 50 >/dev/null &
ramp=$!
sleep 0.5

echo 1 >"/sys/bus/pci/devices/$bdf/remove"
sleep 0.5
t_run thermal-hotplug-class-gone bash -c "! ls -d /sys/class/nvsidecar/gpu$old 2>/dev/null"
t_eq thermal-hotplug-hwmon-gone "$(grep -lx nvsidecar /sys/class/hwmon/hwmon*/name | wc -l)" $((NVS_GPUS - 1))
if ((NVS_GPUS > 1)); then
	c1=$(sim_class 1)
	s0=$(read_err "$c1/samples")
	sleep 0.3
	if [[ $(read_err "$c1/status") == ok ]] && (($(read_err "$c1/samples") > s0)); then
		t_pass thermal-hotplug-others-unaffected
	else
		t_fail thermal-hotplug-others-unaffected "GPU1: $(read_err "$c1/status"), samples $s0 -> $(read_err "$c1/samples")"
	fi
fi
kill "${readers[@]}" 2>/dev/null
wait "${readers[@]}" 2>/dev/null
# Let the 3 s ramp end by itself: killing $ramp (the subshell running
# sim) would leave its nvsim child writing ramp values over the fixture
# written below (seen: ch0 90000 instead of 90215).
wait "$ramp" 2>/dev/null

echo 1 >/sys/bus/pci/rescan
# The device directory appears before its resource files.
if wait_until 10 test -e "/sys/bus/pci/devices/$bdf/resource2"; then
	t_pass thermal-hotplug-rescan-device
else
	t_fail thermal-hotplug-rescan-device "$bdf did not come back"
	exit 1
fi
# Linux does not enable a driverless device on rescan: with decoding off
# the module must say so, and resume once it is on.
if ! (($(setpci -s "$bdf" COMMAND.w) & 2)); then
	wait_until 5 sim_class 0 >/dev/null 2>&1
	c=$(sim_class 0)
	wait_for 3 '[[ $(read_err "$c/status") == unavailable* ]]'
	t_eq thermal-hotplug-decoding-off "$(read_err "$c/status")" "unavailable: memory decoding disabled"
	setpci -s "$bdf" COMMAND=2:2
fi
sim 0 fixture gb202
if wait_until 10 sim_class 0 >/dev/null 2>&1; then
	c=$(sim_class 0) h=$(sim_hwmon 0)
	new=${c##*/gpu}
	wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
	t_eq thermal-hotplug-back "$(read_err "$c/status") $(read_err "$(hw_temp "$h" ch0)_input")" "ok 90215"
	if ((new != old)); then
		t_pass thermal-hotplug-new-index
	else
		t_fail thermal-hotplug-new-index "gpu$old came back as gpu$new (indexes must not be reused)"
	fi
else
	t_fail thermal-hotplug-back "no nvsidecar device for $bdf after the rescan"
fi
# Remove again with the sampler and readers running, then unload.
(while :; do cat "$c"/* "$h"/* >/dev/null 2>&1; done) &
r=$!
echo 1 >"/sys/bus/pci/devices/$bdf/remove"
kill $r; wait $r 2>/dev/null
t_run thermal-hotplug-unload-after-remove nvs_unload
nvs_restore_gpus
