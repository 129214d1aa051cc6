#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# Issue 3: PCI hot-remove and rescan of a simulated GPU while the CLI dumps
# GPUs in a loop (each run exits 0 or with a clean error, never a crash)
# and while it records (the GPU is reported gone, then recorded again
# under its new index); the GPU comes back in the dump.
set -u

B=$NVS_BIN
work=$(mktemp -d /tmp/nvs-netlink-hp.XXXXXX)

sim_fixture_all gb202
nvs_load || { t_fail netlink-hotplug-load "insmod failed"; exit 1; }
wait_for 5 '[[ $(read_err "$(sim_class 0)/status" 2>/dev/null) == ok ]]'

# --- hotplug during dumps and during a recording ---------------------------
hp=$((NVS_GPUS > 1 ? 1 : 0))
bdf=$(sim_bdf $hp)
replug() {
	echo 1 >"/sys/bus/pci/devices/$bdf/remove"
	sleep "$1"
	echo 1 >/sys/bus/pci/rescan
	wait_until 10 test -d "/sys/bus/pci/devices/$bdf" || return 1
	# Linux leaves a driverless device's memory decoding off after a rescan.
	setpci -s "$bdf" COMMAND=2:2
	sim $hp fixture gb202
	wait_until 10 sim_class $hp >/dev/null 2>&1
}

: >"$work/hp.rc"
(for i in $(seq 20); do
	"$B" thermal --dump >/dev/null 2>>"$work/hp.err"
	echo $? >>"$work/hp.rc"
done) &
lpid=$!
sleep 1
replug 1 || t_fail netlink-hotplug-dump-back "$bdf did not come back"
wait $lpid
odd=$(grep -vx '[01]' "$work/hp.rc" | sort -u | tr '\n' ' ')
msgs=$(grep -v '^Unable to read the sensors: ' "$work/hp.err" | head -n 3)
if [[ -z $odd && -z $msgs ]] && (($(wc -l <"$work/hp.rc") == 20)); then
	t_pass netlink-hotplug-dump
else
	t_fail netlink-hotplug-dump "exit codes: $odd; messages: $msgs"
fi
wait_until 5 bash -c "'$B' thermal --dump | grep -q '$bdf'" &&
	t_pass netlink-hotplug-dump-back || t_fail netlink-hotplug-dump-back "$bdf is not in thermal --dump"

"$B" thermal --record "$work/hp.csv" --duration 12 2>"$work/hprec.err" &
rpid=$!
sleep 2
replug 2
wait $rpid
rc=$?
newidx=$(sed -n 's/^gpu\([0-9]*\) ([^)]*) is back.*/\1/p' "$work/hprec.err")
if ((rc == 0)) && grep -q "($bdf) went away" "$work/hprec.err" && [[ -n $newidx ]] &&
	(($(awk -F, -v g="$newidx" '$1 == g' "$work/hp.csv" | wc -l) > 0)); then
	t_pass netlink-hotplug-record
else
	t_fail netlink-hotplug-record "exit $rc: $(tail -n 4 "$work/hprec.err" | tr '\n' ' ')"
fi

rm -rf "$work"
