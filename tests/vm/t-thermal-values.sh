#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# Issue 2: exact hwmon values and labels for the GB202 and Ada fixtures of
# tests/vm/tools/nvsim.c at full 1/256 °C precision, the class files, and
# `sensors` listing the chip as nvsidecar-pci-XXXX.
set -u

# label -> m°C that the gb202 fixture implies (DIV_ROUND_CLOSEST(raw16 *
# 1000, 256) for the die, 2 * min(code, 80) - 40 °C for GDDR7).
declare -A want=(
	[hotspot]=92250 [average]=79301 [ch0]=90215 [ch1]=79500 [ch2]=75102
	[ch3]=76949 [mem]=120000 [mem0]=56000 [mem1]=58000 [mem2]=60000
	[mem3]=62000 [mem4]=64000 [mem5]=66000 [mem7]=70000 [mem8]=72000
	[mem9]=74000 [mem10]=76000 [mem11]=78000 [mem12]=80000 [mem13]=120000
	[mem14]=84000
)
order="hotspot average ch0 ch1 ch2 ch3 mem mem0 mem1 mem2 mem3 mem4 mem5 mem7 mem8 mem9 mem10 mem11 mem12 mem13 mem14"

sim_fixture_all gb202
if ! nvs_load; then
	t_fail thermal-load "insmod $NVS_KO failed"
	exit 1
fi
c=$(sim_class 0) && h=$(sim_hwmon 0) || { t_fail thermal-devices "no class or hwmon device for GPU0"; exit 1; }
wait_for 5 '(( $(read_err "$c/samples") >= 2 ))' || t_fail thermal-sampling "no samples after 5 s"

t_eq thermal-labels "$(sort "$h"/temp*_label | tr '\n' ' ')" \
	"$(tr ' ' '\n' <<<"$order" | sort | tr '\n' ' ')"
bad=
for l in $order; do
	p=$(hw_temp "$h" "$l" 2>/dev/null) || { bad+=" $l:missing"; continue; }
	v=$(read_err "${p}_input")
	[[ $v == "${want[$l]}" ]] || bad+=" $l:$v!=${want[$l]}"
done
[[ -z $bad ]] && t_pass thermal-fixture-values || t_fail thermal-fixture-values "$bad"

# Absent modules (0xBADFxxxx at load) have no channel at all.
t_run thermal-absent-modules-hidden bash -c "! grep -qxE 'mem6|mem15' $h/temp*_label"

# History starts at the first reading.
p=$(hw_temp "$h" ch0)
t_eq thermal-highest-initial "$(read_err "${p}_highest")" 90215
t_eq thermal-lowest-initial "$(read_err "${p}_lowest")" 90215

t_eq thermal-hwmon-name "$(read_err "$h/name")" nvsidecar
t_eq thermal-class-chip "$(read_err "$c/chip")" gb202
t_eq thermal-class-pci "$(read_err "$c/pci")" "$(sim_bdf 0)"
t_eq thermal-class-status "$(read_err "$c/status")" ok
t_eq thermal-class-sample-hz "$(read_err "$c/sample_hz")" 50
t_run thermal-class-name grep -q 'RTX 5090' "$c/name"
t_eq thermal-class-unavailable "$(read_err "$c/unavailable_reads")" 0
t_eq thermal-class-crossings "$(read_err "$c/threshold_crossings")" 0
# 50 Hz: the rate over the sampler's own timestamps must be about 50 a
# second (emulation is slow and jittery: allow 25..55).
s0=$(read_err "$c/samples") n0=$(read_err "$c/last_sample_ns")
sleep 2
s1=$(read_err "$c/samples") n1=$(read_err "$c/last_sample_ns")
rate=$(((s1 - s0) * 1000000000 / ((n1 - n0) ? (n1 - n0) : 1)))
if ((rate >= 25 && rate <= 55)); then
	t_pass thermal-sample-rate
else
	t_fail thermal-sample-rate "$((s1 - s0)) samples over $(((n1 - n0) / 1000000)) ms at 50 Hz ($rate/s)"
fi

# lm-sensors lists the chip by its PCI parent.
bus=$(sim_bdf 0)
chipname=nvsidecar-pci-${bus:5:2}${bus:8:2}
out=$(sensors "$chipname" 2>&1)
if grep -q "^$chipname" <<<"$out" && grep -qE '^ch0: +\+90\.2°C' <<<"$out"; then
	t_pass thermal-sensors-lists-chip
else
	t_fail thermal-sensors-lists-chip "sensors $chipname: $(head -n 5 <<<"$out" | tr '\n' ' ')"
fi
if grep -q ERROR <<<"$out"; then
	t_fail thermal-sensors-clean "sensors prints errors: $(grep -m1 ERROR <<<"$out")"
else
	t_pass thermal-sensors-clean
fi
nvs_unload || t_fail thermal-unload "rmmod failed"

# Ada/Ampere recipe: hotspot (raw >> 8) & 0xff, junction (raw & 0xfff) / 32.
sim_all zero
sim_fixture_all ada
if nvs_load sim=1af4:1110:2:ad102; then
	c=$(sim_class 0) h=$(sim_hwmon 0)
	wait_for 5 '(( $(read_err "$c/samples") >= 1 ))'
	t_eq thermal-ada-chip "$(read_err "$c/chip")" ad102
	t_eq thermal-ada-labels "$(cat "$h"/temp*_label | sort | tr '\n' ' ')" "hotspot mem "
	t_eq thermal-ada-hotspot "$(read_err "$(hw_temp "$h" hotspot)_input")" 75000
	t_eq thermal-ada-mem "$(read_err "$(hw_temp "$h" mem)_input")" 86406
	# 0x7f and above is the "invalid" marker of the hotspot register
	sim 0 set ada-hotspot 0x7f00
	wait_for 3 '! read_err $(hw_temp "$h" hotspot)_input >/dev/null'
	t_eq thermal-ada-hotspot-invalid "$(read_err "$(hw_temp "$h" hotspot)_input")" "No data available"
	nvs_unload
else
	t_fail thermal-ada-load "insmod with sim=1af4:1110:2:ad102 failed"
fi
