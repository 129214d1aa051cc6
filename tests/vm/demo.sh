#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# `make demo`: boots Debian's 6.12 kernel under QEMU (software emulation, no
# GPU needed) with one simulated RTX 5090 whose sensor registers follow a
# changing load, loads nvsidecar.ko, and shows what an admin would see:
# `sensors`, the hwmon peaks and the sysfs state. Takes about a minute.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
export NVS_TOP=$top
# shellcheck source=../lib.sh
. "$top/tests/lib.sh"
# shellcheck source=vmlib.sh
. "$top/tests/vm/vmlib.sh"

vm_kernel 6.12 || { echo "demo: cannot boot the Debian 6.12 lane (see above; scripts/deps.sh installs it)" >&2; exit 1; }
kver=$VM_KREL
echo "demo: building nvsidecar.ko for $kver and the GPU simulator..."
vm_module "$kver" "$VM_KDIR" || exit 1
vm_tools || exit 1
out=$NVS_BUILD/demo
echo "demo: booting a QEMU guest with one simulated RTX 5090 (console: $out/console.log)"
echo
"$top/tests/vm/run-vm" -k "$kver" -g 1 -a quiet -e NVS_CONSOLE_LEVEL=1 \
	-s "$top/tests/vm/demo-guest.sh" -o "$out" -T 300 -q &
vm=$!
# Show the guest's own output only (the demo script prints to the console).
tail -n +1 -F --pid=$vm "$out/console.log" 2>/dev/null |
	sed -u -n '/^=== nvsidecar demo/,/^=== end of demo/p'
wait $vm
rc=$?
echo
if ((rc == 0)); then
	echo "demo: done. Run the tests with: make test"
else
	echo "demo: the guest did not finish cleanly (status $rc); see $out/console.log" >&2
fi
exit $rc
