#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# Issue 19 item 4 (review N17): `status' says ok only once a pass has read
# something, not when the owner binds and the registers are mapped. The
# stand-in owner (nvsowner) binds a GPU whose registers all read all-ones:
# the status events from bind on must never say ok (the old attach set ok
# before any pass, then the first pass said unavailable); once the
# registers answer, ok follows a pass that read (mmio_reads moved).
set -u
# shellcheck source=tools/nvsowner/owned.sh
. "$NVS_TOP/tests/vm/tools/nvsowner/owned.sh"
trap own_cleanup EXIT

sim_fixture_all gb202
own_load autosuspend_ms=-1 || { t_fail first-pass-owner-load "insmod nvsowner.ko failed"; exit 0; }
load_owned || { t_fail first-pass-load "insmod sim=$NVS_OWNED_SIM failed"; exit 0; }
t_eq first-pass-unbound "$(st 0)" "no-driver: no driver bound"

work=$(mktemp -d)
c=$(sim_class 0) && g0=${c##*/gpu}
sim 0 allones
"$NVS_BIN" events --json --gpu "$g0" --timeout 12 >"$work/ev" 2>"$work/ev.err" &
evpid=$!
wait_until 10 grep -q 'Listening for events' "$work/ev.err" ||
	t_fail first-pass-listen "no listener: $(tr '\n' ' ' <"$work/ev.err")"
own_bind 0 || t_fail first-pass-bind "nvsowner did not bind $(sim_bdf 0)"
want="unavailable: all-ones (fallen off the bus or in reset)"
wait_for 5 '[[ $(st 0) == "$want" ]]'
t_eq first-pass-dead-status "$(st 0)" "$want"

# The registers answer again: ok, after a pass that read them.
sim 0 fixture gb202
wait_for 8 '[[ $(st 0) == ok ]]'
t_eq first-pass-ok-after-reading "$(st 0)/$(read_err "$(hw_temp "$(sim_hwmon 0)" ch0)_input")" "ok/$OWN_CH0_MC"
wait "$evpid"
# status per event, in order; ok only as the last one (after the reading)
seq=$(jq -r 'select(.type == "status-changed") | .status + ":" + (.reason // "")' "$work/ev" 2>/dev/null | tr '\n' ' ')
echo "status events: $seq"
case $seq in
"")	t_fail first-pass-events "no status event: $(head -c 300 "$work/ev")" ;;
*"ok: "*"ok: "*|*"ok: "*unavailable*)
	t_fail first-pass-events "ok before any pass read something: $seq" ;;
*"unavailable:no reading yet "*"unavailable:all-ones"*"ok:"*)
	t_pass first-pass-events ;;
*)	t_fail first-pass-events "want no-reading-yet, all-ones, then ok: $seq" ;;
esac
own_unbind 0
own_dmesg_check first-pass-dmesg
rm -rf "$work"
nvs_unload
