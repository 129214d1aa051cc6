#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# The driver-owned path, removal by QEMU itself (issue 12 item 1): owned
# simulated GPUs bound to the stand-in owner driver nvsowner
# (tests/vm/tools/nvsowner/) and sampled at 200 Hz are deleted with QMP
# device_del (sim_unplug):
#   - during netlink dumps (thermal --dump, status --json in loops): every
#     run ends cleanly, the GPU leaves the dump, and nvsidecar stops reading
#     before the owner's remove() (slowed to 3 s) begins;
#   - during dma-buf probes naming the removed GPU as importer, and the
#     removed GPU as the one compared: each probe completes or fails with
#     -ENODEV, or -EPERM while the importer is between unbind and deletion;
#   - put back (device_add), the GPU is found again, unowned until bound.
set -u
# shellcheck source=tools/nvsowner/owned.sh
. "$NVS_TOP/tests/vm/tools/nvsowner/owned.sh"
trap own_cleanup EXIT

if ((NVS_GPUS < 6)); then
	t_skip owned-unplug "needs 6 simulated GPUs (run-vm -g 6 or more), has $NVS_GPUS"
	exit 0
fi
# QEMU 7.2 offers ACPI hotplug on q35's root ports; a kernel without
# CONFIG_HOTPLUG_PCI_ACPI (the debug lane's) registers no slot for them and
# never answers device_del, which then leaves QEMU's device half-deleted.
for n in 2 3 4; do
	own_hotplug_slot $n && continue
	if [[ -d /sys/module/acpiphp ]]; then
		why="slots: $(echo /sys/bus/pci/slots/*)"
	else
		why="$NVS_KVER has no ACPI PCI hotplug driver (acpiphp, CONFIG_HOTPLUG_PCI_ACPI), which QEMU 7.2's q35 root ports use"
	fi
	t_skip owned-unplug "no hotplug driver manages the slot of GPU $n ($(sim_bdf $n)), so QEMU's device_del cannot complete: $why"
	exit 0
done
work=$(mktemp -d /tmp/owned-unplug.XXXXXX)
sim_fixture_all gb202
own_load autosuspend_ms=-1 || { t_fail owned-unplug-owner-load "insmod nvsowner.ko failed"; exit 0; }
load_owned sample_hz=$((OWN_DEBUG ? 50 : 200)) || { t_fail owned-unplug-load "insmod sim=$NVS_OWNED_SIM failed"; exit 0; }
for n in 2 3 4; do own_bind $n || t_fail owned-unplug-bind "nvsowner did not bind $(sim_bdf $n)"; done
wait_for 5 '[[ $(st 2) == ok && $(st 3) == ok && $(st 4) == ok ]]'

# --- during netlink dumps -------------------------------------------------------
echo "[${SECONDS}s] unplug during dumps"
g=2 b=$(sim_bdf 2)
: >"$work/rc"
(while [[ ! -e $work/stop ]]; do
	"$NVS_BIN" thermal --dump >/dev/null 2>>"$work/err"
	echo $? >>"$work/rc"
	"$NVS_BIN" status --json >/dev/null 2>>"$work/err"
	echo $? >>"$work/rc"
done) &
lpid=$!
own_trap $g
# remove() is held long enough for the reads below to land inside it: 3 s,
# 12 s under KASAN, where a dump and two sysfs reads can take seconds and
# a remove() that finished early made the check read a removed device.
own_set remove_delay_ms $((OWN_DEBUG ? 12000 : 3000))
rs=$(<"$OWN_PARAMS/removes_started")
sim_unplug $g >"$work/unplug" 2>&1 &
upid=$!
# The device is still there when remove() starts (the hotplug controller
# powers the slot off after the driver has gone): it must not be read from
# then on.
if wait_for 20 '(($(<"$OWN_PARAMS/removes_started") > rs))'; then
	s=$(st $g 2>&1) a=$(reads $g 2>&1)
	nvs_sleep 0.5
	t_eq owned-unplug-stopped-before-remove "$s $(reads $g 2>&1) $(($(<"$OWN_PARAMS/removes_done") > rs))" \
		"no-driver: driver unbinding $a 0"
else
	t_fail owned-unplug-stopped-before-remove "the owner's remove() never started"
fi
wait $upid && t_pass owned-unplug-deleted || t_fail owned-unplug-deleted "no DEVICE_DELETED: $(tr '\n' ' ' <"$work/unplug")"
own_set remove_delay_ms 0
own_set trap_bar -1
wait_for 10 '[[ ! -e /sys/bus/pci/devices/$b ]]'
: >"$work/stop"
wait $lpid
odd=$(grep -vx '[01]' "$work/rc" | sort -u | tr '\n' ' ')
msgs=$(grep -v '^Unable to read the sensors: ' "$work/err" | head -n 3 | tr '\n' ' ')
echo "$(wc -l <"$work/rc") dump runs during the removal"
if [[ -z $odd && -z $msgs ]] && (($(wc -l <"$work/rc") >= 4)); then
	t_pass owned-unplug-dumps-clean
else
	t_fail owned-unplug-dumps-clean "exit codes: ${odd:-0/1}; messages: ${msgs:-none}; runs: $(wc -l <"$work/rc")"
fi
if "$NVS_BIN" thermal --dump | grep -q "$b"; then
	t_fail owned-unplug-gone-from-dump "$b is still in thermal --dump"
else
	t_pass owned-unplug-gone-from-dump
fi
t_eq owned-unplug-others-unaffected "$(st 3) $(st 4)" "ok ok"
own_dmesg_check owned-unplug-dump-dmesg

# Back in its slot: a new pci_dev without a driver, found again, unowned
# (the trap that remove() wrote is cleared first).
sim_replug $g || t_fail owned-replug "device_add of GPU $g failed"
sim $g fixture gb202 >/dev/null
setpci -s "$b" COMMAND=2:2
wait_for 10 'sim_class '$g' >/dev/null 2>&1'
t_eq owned-replug-unowned "$(st $g 2>&1)" "no-driver: no driver bound"
own_bind $g
wait_for 5 '[[ $(st '$g') == ok ]]'
t_eq owned-replug-bound "$(st $g) $(read_err "$(hw_temp "$(sim_hwmon $g)" ch0)_input" 2>&1)" "ok $OWN_CH0_MC"

# --- during dma-buf probes ------------------------------------------------------
echo "[${SECONDS}s] unplug during dma-buf probes"
if [[ ! -c /dev/udmabuf ]]; then
	t_skip owned-unplug-dmabuf "kernel $NVS_KVER has no /dev/udmabuf (CONFIG_UDMABUF, 6.12 and later): no dma-buf to probe"
else
	probe=$NVS_TOOLS/dmabuf_probe
	imp=3 cmp=4
	bi=$(sim_bdf $imp)
	ci=$(sim_class $cmp) ci=${ci##*/gpu}
	out=$("$probe" --gpu "$ci" --importer "$bi" udmabuf 65536 2>&1)
	t_eq owned-dmabuf-before "$(sed -n 's/.*\bret=\([^ ]*\).*/\1/p' <<<"$out")" 0
	rm -f "$work/stop"
	# the importer goes first, then the GPU the buffer is compared with;
	# the probes run in 2 s rounds, each ending with its tally. A probe
	# completes, or finds the importer gone (-ENODEV) or, in the moment
	# between its driver's unbind and its deletion, driverless (-EPERM:
	# nvsidecar maps a buffer only for a device its own driver holds).
	(while [[ ! -e $work/stop ]]; do
		"$probe" --gpu "$ci" --importer "$bi" --count 1000000 --seconds 2 udmabuf 65536 2>&1 | tail -n 1
	done) >"$work/probe" &
	ppid=$!
	nvs_sleep 1
	sim_unplug $imp >/dev/null 2>&1 && t_pass owned-dmabuf-unplug-importer ||
		t_fail owned-dmabuf-unplug-importer "no DEVICE_DELETED for GPU $imp"
	sim_unplug $cmp >/dev/null 2>&1 && t_pass owned-dmabuf-unplug-gpu ||
		t_fail owned-dmabuf-unplug-gpu "no DEVICE_DELETED for GPU $cmp"
	nvs_sleep 1
	: >"$work/stop"
	if wait_until 20 bash -c "! kill -0 $ppid 2>/dev/null"; then
		echo "probe rounds: $(tr '\n' '|' <"$work/probe")"
		bad=$(grep -v ' einval=0 other=0$' "$work/probe" | head -n 2 | tr '\n' ' ')
		if [[ -z $bad ]] && grep -q 'done=[1-9]' "$work/probe" && grep -q 'enodev=[1-9]' "$work/probe"; then
			t_pass owned-dmabuf-probes-clean
		else
			t_fail owned-dmabuf-probes-clean "${bad:-no round both completed probes and saw -ENODEV: $(tr '\n' ' ' <"$work/probe" | cut -c1-300)}"
		fi
	else
		kill -KILL -- -$ppid $ppid 2>/dev/null
		t_fail owned-dmabuf-probes-clean "the probe loop hung after its devices were removed: $(tail -c 300 "$work/probe")"
	fi
	out=$("$probe" --importer "$bi" udmabuf 65536 2>&1)
	t_eq owned-dmabuf-importer-gone "$(sed -n 's/.*\bret=\([^ ]*\).*/\1/p' <<<"$out")" -19
	own_dmesg_check owned-unplug-dmabuf-dmesg
	for n in $imp $cmp; do sim_replug $n || t_fail owned-dmabuf-replug "device_add of GPU $n failed"; done
	setpci -d 1af4:1110 COMMAND=2:2
	for n in $imp $cmp; do sim $n fixture gb202 >/dev/null; own_bind $n; done
	wait_for 10 '[[ $(st '$imp' 2>/dev/null) == ok && $(st '$cmp' 2>/dev/null) == ok ]]'
	ci=$(sim_class $cmp) ci=${ci##*/gpu}
	out=$("$probe" --gpu "$ci" --importer "$bi" udmabuf 65536 2>&1)
	t_eq owned-dmabuf-after-replug "$(sed -n 's/.*\bret=\([^ ]*\).*/\1/p' <<<"$out")" 0
fi

# (kmemleak: t-owned-bind.sh, and the scan at the end of the debug boot)
rm -rf "$work"
own_cleanup
