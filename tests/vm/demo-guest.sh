#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# Guest side of `make demo` (tests/vm/demo.sh). Not a test file: it shows.
set -u
echo "=== nvsidecar demo: $(uname -r), simulated RTX 5090 at $(sim_bdf 0)"
sim 0 fixture gb202
sim 0 load --hz 20 &
load=$!
trap 'kill $load 2>/dev/null' EXIT
sleep 0.5

echo
echo "\$ insmod nvsidecar.ko sim=$NVS_SIM   # sim=: treat the ivshmem device as a GB202"
nvs_load || { echo "insmod failed"; exit 1; }
c=$(sim_class 0) h=$(sim_hwmon 0)
bus=$(sim_bdf 0)
chip=nvsidecar-pci-${bus:5:2}${bus:8:2}
echo "The die heats and cools on a 12 s cycle, with 50 ms spikes on ch0 every 2 s."
for i in 1 2 3; do
	sleep 3
	echo
	echo "\$ sensors $chip        # after $((i * 3)) s"
	sensors "$chip" 2>/dev/null | grep -E '^(hotspot|average|ch[0-3]|mem[0-9]*):' |
		sed -E 's/ +\(high.*//'
done

p=$(hw_temp "$h" ch0)
echo
echo "Peaks the sampler caught (50 Hz in the kernel; a 1 s poller misses 50 ms spikes):"
printf '  ch0:     now %6.2f °C   highest %6.2f °C   lowest %6.2f °C\n' \
	"$(bc -l <<<"$(read_err "${p}_input") / 1000")" "$(bc -l <<<"$(read_err "${p}_highest") / 1000")" \
	"$(bc -l <<<"$(read_err "${p}_lowest") / 1000")"
echo
echo "\$ grep . $c/{chip,name,pci,status,sample_hz,samples,unavailable_reads,last_sample_ns}"
for f in chip name pci status sample_hz samples unavailable_reads last_sample_ns; do
	printf '  %-18s %s\n' "$f" "$(cat "$c/$f")"
done
echo
echo "Unprivileged users read everything (no root, no /dev/mem, no iomem=relaxed):"
echo "  \$ setpriv --reuid=nobody cat ${p}_input  ->  $(as_user cat "${p}_input")"
if [[ -x $NVS_BIN ]]; then
	echo
	echo "\$ nvsidecar status"
	"$NVS_BIN" status 2>&1 | head -n 20
fi
kill $load 2>/dev/null
wait $load 2>/dev/null
nvs_unload
echo "=== end of demo"
