#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# Review 2026-12-03 finding 6: rmmod tore the GPUs down one by one after
# unregistering the PCI notifier, so a driver unbinding a GPU meanwhile
# went unnoticed and that GPU was read through the driver's teardown. Now
# the notifier outlives the GPUs: an unbind during rmmod is either handled
# (reads stop first) or waits until the GPU is gone.
#
# Each round: owned simulated GPUs under pci-stub, sampling at 1000 Hz;
# the last GPU (the last one torn down) is unbound and bound again in a
# loop while rmmod runs. Whenever an unbind has returned, the GPU must not
# be "ok" (being read) any more: its status says no-driver, or it is gone.
set -u

if ! modprobe pci-stub 2>/dev/null || [[ ! -d /sys/bus/pci/drivers/pci-stub ]]; then
	t_skip review-unload-unbind "kernel $NVS_KVER has no pci-stub module to stand in for a driver"
	exit 0
fi
if ((NVS_GPUS < 4)); then
	t_skip review-unload-unbind "needs 4 or more simulated GPUs (run-vm -g 4)"
	exit 0
fi
sim_fixture_all gb202
last=$((NVS_GPUS - 1))
bdfs=()
for ((i = 0; i < NVS_GPUS; i++)); do
	bdfs+=("$(sim_bdf "$i")")
	echo pci-stub >"/sys/bus/pci/devices/${bdfs[i]}/driver_override"
done
b=${bdfs[last]}
drv=/sys/bus/pci/drivers/pci-stub
viol=/tmp/review-unload-violations
: >"$viol"
rounds=${NVS_UNLOAD_ROUNDS:-4} cycles=0
for ((r = 1; r <= rounds; r++)); do
	for x in "${bdfs[@]}"; do echo "$x" >"$drv/bind"; done 2>/dev/null
	nvs_load sim=1af4:1110:2:gb202:owned sample_hz=1000 || { echo "round $r: insmod failed" >>"$viol"; break; }
	c=$(sim_class "$last")
	wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
	# builtins only, so that the loop turns many times during the rmmod
	(
		n=0
		while nvs_loaded; do
			echo "$b" >"$drv/unbind" 2>/dev/null || continue
			n=$((n + 1))
			if IFS= read -r st <"$c/status" 2>/dev/null && [[ $st == ok ]]; then
				echo "round $r, cycle $n: status \`ok' after the unbind returned" >>"$viol"
			fi
			echo "$b" >"$drv/bind" 2>/dev/null
		done
		echo "$n" >/tmp/review-unload-cycles
	) &
	loop=$!
	nvs_sleep 0.5
	"${_nvs_rmmod[@]}" nvsidecar || echo "round $r: rmmod failed" >>"$viol"
	wait "$loop"
	cycles=$((cycles + $(cat /tmp/review-unload-cycles)))
	for x in "${bdfs[@]}"; do echo "$x" >"$drv/unbind"; done 2>/dev/null
done
for x in "${bdfs[@]}"; do echo >"/sys/bus/pci/devices/$x/driver_override"; done
echo "$cycles unbind/bind cycles of GPU$last over $rounds load/unload rounds"
if [[ -s $viol ]]; then
	t_fail review-unload-unbind "$(head -n 3 "$viol" | tr '\n' ' ')($(wc -l <"$viol") in all)"
else
	t_pass review-unload-unbind
fi
