#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# The driver-owned path, binding (issue 12 item 1): nvsidecar with
# sim=...:owned and the stand-in owner driver nvsowner
# (tests/vm/tools/nvsowner/), which never autosuspends here (a busy GPU;
# runtime PM is t-owned-pm.sh):
#   - attach when the owner binds (also when it was bound before the load),
#     detach before an unbind completes;
#   - the scan at load leaves alone a GPU whose owner is still in probe()
#     or already in remove() (nvsowner's probe_delay_ms, remove_delay_ms),
#     and attaches once the bind completes;
#   - no register read once an unbind has started: the owner's remove()
#     writes a trap value into ch0 and then takes 1.5 s, mmio_reads must not
#     move and the trap must never show as a reading; the same trap with the
#     fixture (non-owned) sim shows that it catches a reader that ignores
#     the unbind;
#   - bind/unbind/rebind storms on four GPUs sampled at 1000 Hz;
#   - rmmod and insmod of nvsidecar while those storms run;
#   - vfio-pci: never read.
# The debug lane runs fewer cycles (NVS_OWNED_CYCLES, NVS_OWNED_LOADS
# override them) and leaves out the control.
set -u
# shellcheck source=tools/nvsowner/owned.sh
. "$NVS_TOP/tests/vm/tools/nvsowner/owned.sh"
trap own_cleanup EXIT

if ((NVS_GPUS < 5)); then
	t_skip owned-bind "needs 5 simulated GPUs (run-vm -g 5 or more), has $NVS_GPUS"
	exit 0
fi
sim_fixture_all gb202
own_load autosuspend_ms=-1 || { t_fail owned-bind-owner-load "insmod nvsowner.ko failed"; exit 0; }
load_owned || { t_fail owned-bind-load "insmod sim=$NVS_OWNED_SIM failed"; exit 0; }

# --- attach when the owner binds --------------------------------------------
echo "[${SECONDS}s] attach when the owner binds"
t_eq owned-unbound-status "$(st 0)" "no-driver: no driver bound"
nvs_sleep 0.3
t_eq owned-unbound-no-reads "$(reads 0)" 0
own_bind 0 || t_fail owned-bind-0 "nvsowner did not bind $(sim_bdf 0)"
wait_for 5 '[[ $(st 0) == ok ]]'
t_eq owned-attach-on-bind "$(st 0)" ok
h=$(sim_hwmon 0 2>/dev/null)
t_eq owned-attach-reading "$(read_err "$(hw_temp "$h" ch0)_input" 2>&1)" "$OWN_CH0_MC"
r0=$(reads 0)
nvs_sleep 0.3
r1=$(reads 0)
((r1 > r0)) && t_pass owned-attach-reads || t_fail owned-attach-reads "mmio_reads $r0 -> $r1 while bound"

# A driver bound before the module loads is found by the scan at load.
nvs_unload
load_owned || { t_fail owned-bind-reload "insmod failed"; exit 0; }
wait_for 5 '[[ $(st 0) == ok ]]'
t_eq owned-attach-at-load "$(st 0) / $(st 1)" "ok / no-driver: no driver bound"

# --- the scan at load: an owner still in probe() or already in remove() ------
echo "[${SECONDS}s] load while the owner probes or unbinds"
# dev->driver is set before the driver's probe() runs and cleared only after
# its remove() returns: the scan at load must not take either for a bound
# driver. nvsowner's probe() (then its remove()) sleeps with the device
# enabled while nvsidecar loads: no register read and no "ok" until the
# bind completes; none at all through the unbind. Each window is checked to
# be still open when the status is read.
win_ms=$((OWN_DEBUG ? 6000 : 3000))
nvs_unload
own_set probe_delay_ms "$win_ms"
# shellcheck disable=SC2034 # ps is read by wait_for's expression
ps=$(<"$OWN_PARAMS/probes_started") pd=$(<"$OWN_PARAMS/probes")
d1=$(own_dev 1)
echo nvsowner >"$d1/driver_override"
echo "${d1##*/}" >/sys/bus/pci/drivers_probe &
bpid=$!
wait_for 5 '(($(<"$OWN_PARAMS/probes_started") > ps))'
load_owned || { t_fail owned-bind-reload "insmod failed"; exit 0; }
nvs_sleep 0.5
w_status=$(st 1) w_reads=$(reads 1) w_open=$(($(<"$OWN_PARAMS/probes") == pd))
wait "$bpid"
own_set probe_delay_ms 0
if ((w_open)); then
	t_eq owned-load-in-probe "$w_status, reads $w_reads" \
		"no-driver: driver probing or unbinding, reads 0"
else
	t_fail owned-load-in-probe "probe() returned before the check (window ${win_ms} ms too short for this lane)"
fi
wait_for 5 '[[ $(st 1) == ok ]]'
t_eq owned-load-in-probe-then-bound "$(st 1)" ok
nvs_unload
own_set remove_delay_ms "$win_ms"
rs=$(<"$OWN_PARAMS/removes_started") rd=$(<"$OWN_PARAMS/removes_done")
own_unbind 1 &
upid=$!
wait_for 5 '(($(<"$OWN_PARAMS/removes_started") > rs))'
load_owned || { t_fail owned-bind-reload "insmod failed"; exit 0; }
nvs_sleep 0.5
w_status=$(st 1) w_reads=$(reads 1) w_open=$(($(<"$OWN_PARAMS/removes_done") == rd))
wait "$upid"
own_set remove_delay_ms 0
if ((w_open)); then
	t_eq owned-load-in-remove "$w_status, reads $w_reads" \
		"no-driver: driver probing or unbinding, reads 0"
else
	t_fail owned-load-in-remove "remove() returned before the check (window ${win_ms} ms too short for this lane)"
fi
t_eq owned-load-in-remove-after "$(st 1), reads $(reads 1)" \
	"no-driver: no driver bound, reads 0"
echo >"$d1/driver_override"

# --- no read after an unbind has started --------------------------------------
echo "[${SECONDS}s] no read after an unbind"
# nvsowner's remove() writes 99 °C into ch0, then sleeps 1.5 s before it
# tears down. nvsidecar must have stopped at BUS_NOTIFY_UNBIND_DRIVER, before
# remove() began: mmio_reads stays put from the first moment remove() is
# seen running, and no sample ever reads 99 °C (the ch0 peak, kept across
# the unbind, stays at the fixture's value).
# slow_unbind N: sets u_status (status while remove() sleeps), u_a, u_b,
# u_c (mmio_reads when remove() is seen, 0.5 s later, after the unbind),
# u_peak and u_trap (what ch0 holds after the unbind).
slow_unbind() {
	local n=$1 c rs upid
	c=$(sim_class "$n")
	echo 1000 >"$c/sample_hz"
	wait_for 5 '[[ $(st '"$n"') == ok ]]'
	"$NVS_BIN" set "$(sim_bdf "$n")" reset-peaks >/dev/null
	own_trap "$n" && own_set remove_delay_ms 1500
	# shellcheck disable=SC2034 # read by wait_for's expression
	rs=$(<"$OWN_PARAMS/removes_started")
	own_unbind "$n" &
	upid=$!
	wait_for 5 '(($(<"$OWN_PARAMS/removes_started") > rs))'
	u_status=$(st "$n") u_a=$(reads "$n")
	nvs_sleep 0.5
	u_b=$(reads "$n")
	wait "$upid"
	u_c=$(reads "$n") u_peak=$(peak_ch0 "$n") u_trap=$(sim "$n" get ch0)
	own_set remove_delay_ms 0
	own_set trap_bar -1
	sim "$n" fixture gb202 >/dev/null
}
own_bind 1 || t_fail owned-bind-1 "nvsowner did not bind $(sim_bdf 1)"
slow_unbind 1
t_eq owned-unbind-stops-before-remove "$u_status" "no-driver: driver unbinding"
t_eq owned-unbind-no-read-in-remove "$u_a $u_b $u_c" "$u_a $u_a $u_a"
t_eq owned-unbind-trap-never-read "$u_peak" "$OWN_CH0_MC"
t_eq owned-unbind-after "$(st 1)" "no-driver: no driver bound"
if sim_hwmon 1 >/dev/null 2>&1; then
	t_fail owned-unbind-hwmon-gone "the hwmon chip outlived the driver"
else
	t_pass owned-unbind-hwmon-gone
fi
# The control: the fixture sim reads whatever is bound, so the same slow
# unbind must show the trap. This is what the check above would see if
# nvsidecar kept reading into remove(). (The other seven GPUs on demand:
# reading all eight at 1000 Hz would take most of the emulated CPU.)
if ((OWN_DEBUG)); then
	t_skip owned-unbind-trap-control "the control of the trap runs in the Debian lanes (time)"
else
	nvs_unload
	nvs_load sample_hz=0 || { t_fail owned-bind-reload "insmod failed"; exit 0; }
	own_bind 1
	slow_unbind 1
	trap_raw=$(own_trap_raw)
	if [[ $u_trap == "$trap_raw" && $u_peak == "$OWN_TRAP_MC" && $u_c -gt $u_a ]]; then
		t_pass owned-unbind-trap-control
	else
		t_fail owned-unbind-trap-control "with the non-owned sim: ch0 after remove $u_trap (trap $trap_raw), peak $u_peak (want $OWN_TRAP_MC), mmio_reads $u_a -> $u_c"
	fi
fi
nvs_unload
load_owned sample_hz=1000 || { t_fail owned-bind-reload "insmod failed"; exit 0; }

# --- bind/unbind/rebind storms at 1000 Hz -------------------------------------
echo "[${SECONDS}s] bind/unbind/rebind storms"
# Four GPUs, each its own loop of bind/unbind. After every unbind returns,
# the status must already say no driver; the counts of binds are checked
# against nvsowner's own.
storm=/tmp/owned-storm
rm -rf "$storm"
mkdir -p "$storm"
cycles=${NVS_OWNED_CYCLES:-$((OWN_DEBUG ? 6 : 25))}
# storm_loop N CYCLES [nocheck]: CYCLES 0 runs until $storm/stop exists;
# nocheck while nvsidecar comes and goes. Writes the cycles done to
# $storm/done-N, anything wrong to $storm/bad-N.
storm_loop() {
	local n=$1 k=$2 i s d b c=
	d=$(own_dev "$n") b=${d##*/}
	[[ ${3:-} == nocheck ]] || c=$(sim_class "$n")
	echo nvsowner >"$d/driver_override"
	for ((i = 0; k == 0 || i < k; i++)); do
		((k == 0)) && [[ -e $storm/stop ]] && break
		echo "$b" 2>>"$storm/bad-$n" >/sys/bus/pci/drivers_probe ||
			echo "gpu $n cycle $i: bind failed" >>"$storm/bad-$n"
		echo "$b" 2>>"$storm/bad-$n" >/sys/bus/pci/drivers/nvsowner/unbind ||
			echo "gpu $n cycle $i: unbind failed" >>"$storm/bad-$n"
		[[ -n $c ]] || continue
		IFS= read -r s <"$c/status"
		[[ $s == no-driver* ]] || echo "gpu $n cycle $i: status after unbind: $s" >>"$storm/bad-$n"
	done
	echo "$i" >"$storm/done-$n"
}
own_unbind 0
p0=$(<"$OWN_PARAMS/probes")
dmesg_mark "owned storms"
t0=$SECONDS
for n in 0 1 2 3; do storm_loop "$n" "$cycles" & done
wait
echo "storms: 4 x $cycles bind/unbind cycles in $((SECONDS - t0)) s"
bad=$(cat "$storm"/bad-* 2>/dev/null | head -n 3 | tr '\n' ' ')
[[ -z $bad ]] && t_pass owned-storm-detached || t_fail owned-storm-detached "$bad"
t_eq owned-storm-binds "$(($(<"$OWN_PARAMS/probes") - p0))" $((4 * cycles))
declare -A r=()
for n in 0 1 2 3; do r[$n]=$(reads "$n"); done
nvs_sleep 0.3
still=1
for n in 0 1 2 3; do
	[[ $(reads "$n") == "${r[$n]}" && $(st "$n") == "no-driver: no driver bound" ]] || still=0
done
((still)) && t_pass owned-storm-quiet-after || t_fail owned-storm-quiet-after "an unbound GPU was still read or not no-driver: $(for n in 0 1 2 3; do echo -n "$n:$(st "$n")/$(reads "$n") "; done)"
# back to 50 Hz for the checks: four GPUs at 1000 Hz slow emulation down
for n in 0 1 2 3; do echo 50 >"$(sim_class "$n")/sample_hz"; own_bind "$n"; done
ok=1
for n in 0 1 2 3; do
	wait_for 5 '[[ $(st '"$n"') == ok ]]' || ok=0
	[[ $(read_err "$(hw_temp "$(sim_hwmon "$n")" ch0)_input" 2>&1) == "$OWN_CH0_MC" ]] || ok=0
done
((ok)) && t_pass owned-storm-rebind || t_fail owned-storm-rebind "$(for n in 0 1 2 3; do echo -n "$n:$(st "$n") "; done)"
own_dmesg_check owned-storm-dmesg

# --- rmmod and insmod while the storms run -------------------------------------
echo "[${SECONDS}s] rmmod and insmod during storms"
dmesg_mark "owned rmmod storms"
nvs_unload
rm -f "$storm"/done-* "$storm"/bad-*
for n in 0 1 2 3; do storm_loop "$n" 0 nocheck & done
fails=''
t0=$SECONDS
for ((l = 0; l < ${NVS_OWNED_LOADS:-$((OWN_DEBUG ? 2 : 4))}; l++)); do
	load_owned sample_hz=1000 || fails+="insmod "
	nvs_sleep 0.2
	nvs_unload || fails+="rmmod "
done
: >"$storm/stop"
wait
echo "rmmod storms: $l load/unload cycles in $((SECONDS - t0)) s against $(cat "$storm"/done-* | tr '\n' ' ')bind/unbind cycles"
[[ -z $fails ]] && t_pass owned-rmmod-storm || t_fail owned-rmmod-storm "failures: $fails"
bad=$(cat "$storm"/bad-* 2>/dev/null | head -n 3 | tr '\n' ' ')
[[ -z $bad ]] && t_pass owned-rmmod-storm-binds || t_fail owned-rmmod-storm-binds "$bad"
own_bind 0 && own_bind 2
load_owned || { t_fail owned-bind-reload "insmod failed"; exit 0; }
wait_for 5 '[[ $(st 0) == ok && $(st 2) == ok ]]'
t_eq owned-rmmod-storm-after "$(state 0) $(state 1) $(state 2) $(state 3)" "ok no-driver ok no-driver"
own_dmesg_check owned-rmmod-storm-dmesg

# --- vfio-pci: never read --------------------------------------------------------
echo "[${SECONDS}s] vfio-pci: never read"
v=4 vd=$(own_dev 4)
if ! modprobe vfio-pci 2>/dev/null || [[ ! -d /sys/bus/pci/drivers/vfio-pci ]]; then
	t_skip owned-vfio "kernel $NVS_KVER has no vfio-pci module"
else
	# Owned by nvsowner first, then handed to vfio-pci, as an admin does
	# before passing a GPU to a VM.
	own_bind $v
	wait_for 5 '[[ $(st '$v') == ok ]]'
	own_unbind $v
	a=$(reads $v)
	echo vfio-pci >"$vd/driver_override"
	dmesg_mark "vfio-pci bind"
	echo "${vd##*/}" >/sys/bus/pci/drivers_probe
	nvs_sleep 0.3
	b=$(reads $v)
	if [[ $(readlink "$vd/driver" 2>/dev/null) == */vfio-pci ]]; then
		t_eq owned-vfio-status "$(st $v)" "no-driver: bound to vfio-pci"
		t_eq owned-vfio-no-reads "$b" "$a"
		sim_hwmon $v >/dev/null 2>&1 && t_fail owned-vfio-no-hwmon "an hwmon chip exists under vfio-pci" ||
			t_pass owned-vfio-no-hwmon
	else
		# Without an IOMMU group vfio-pci refuses the device after its
		# probe started: nvsidecar must not have attached meanwhile.
		why=$(dmesg_since_mark | grep -m1 'vfio' | sed 's/^\[[^]]*\] //')
		t_eq owned-vfio-refused-status "$(st $v)" "no-driver: no driver bound"
		t_eq owned-vfio-refused-no-reads "$b" "$a"
		t_skip owned-vfio-bound "vfio-pci did not bind ($why): the guest has no vIOMMU, so no IOMMU group, and $NVS_KVER has no CONFIG_VFIO_NOIOMMU"
	fi
	echo >"$vd/driver_override"
fi

own_dmesg_check owned-vfio-dmesg
own_cleanup
kmemleak_check owned-bind-kmemleak
