#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# Issue 12 item 4: per-module memory temperatures on Ampere/Ada GDDR6X
# recipes (ad102, ad103, ad104, ga102) and the validity rule of
# kmod/chips.c ("Per-module memory temperatures"), one fixture partition
# per case (nvsim fixture ada-g6x): a real module is never dropped (word
# 0's own validity bit is enough), an absent or poisoned one never shows a
# number. Also: the GDDR6 professional variants have no module rows, and
# absent partitions beyond a smaller chip are never mapped.
set -u

# label -> expected tempN_input ("-" = ENODATA); mem7, mem8 are hidden
declare -A want=(
	[hotspot]=75000 [mem]=86406
	[mem0]=88000 [mem1]=72000 [mem2]=- [mem3]=- [mem4]=- [mem5]=-
	[mem6]=120000 [mem9]=2000 [mem10]=50000 [mem11]=62000
)
why=(
	[1]="validity 0x01000000: word 0 sampled, the four-bit rule would drop it"
	[2]="validity bits 25-27 without word 0's"
	[3]="poisoned validity word 0xbadf1234 (bit 24 set)"
	[4]="all-ones validity word"
	[5]="code 0x14, below 21"
	[6]="code 0x5a clamped at 80"
	[9]="code 0x15, the lowest valid"
	[11]="words 0 and 1 sampled"
)

sim_fixture_all ada-g6x
# ga102 shares ad102's recipe (g6x12): one load covers both
for chip in ad102; do
	nvs_load "sim=1af4:1110:2:$chip" || { t_fail "modules-$chip-load" "insmod failed"; continue; }
	c=$(sim_class 0) h=$(sim_hwmon 0)
	wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
	t_eq "modules-$chip-labels" "$(sort "$h"/temp*_label | tr '\n' ' ')" \
		"$(printf '%s\n' "${!want[@]}" | sort | tr '\n' ' ')"
	bad=
	for l in "${!want[@]}"; do
		p=$(hw_temp "$h" "$l" 2>/dev/null) || { bad+=" $l:missing"; continue; }
		v=$(read_err "${p}_input")
		[[ ${want[$l]} == - ]] && w="No data available" || w=${want[$l]}
		if [[ $v != "$w" ]]; then
			n=${l#mem}
			bad+=" $l=$v!=$w(${why[$n]:-})"
		fi
	done
	[[ -z $bad ]] && t_pass "modules-$chip-values" || t_fail "modules-$chip-values" "$bad"
	t_run "modules-$chip-absent-hidden" bash -c "! grep -qxE 'mem7|mem8|mem1[2-5]' $h/temp*_label"
	nvs_unload
done

# A smaller chip maps fewer partitions: ad104 (6), so mem6 (clamped
# 120 °C in the fixture) and beyond do not exist for it. The fixture is an
# AD102's: PMC_BOOT_0 must name the chip sim= says (t-chip-boot0.sh).
sim_all set boot0 ad104
nvs_load sim=1af4:1110:2:ad104 || t_fail modules-ad104-load "insmod failed"
if nvs_loaded; then
	c=$(sim_class 0) h=$(sim_hwmon 0)
	wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
	t_eq modules-ad104-labels "$(sort "$h"/temp*_label | tr '\n' ' ')" \
		"$(printf '%s\n' hotspot mem mem0 mem1 mem2 mem3 mem4 mem5 | sort | tr '\n' ' ')"
	nvs_unload
fi
# The professional GDDR6 variants keep hotspot and junction only.
sim_all set boot0 ad102
nvs_load sim=1af4:1110:2:ad102gl || t_fail modules-ad102gl-load "insmod failed"
if nvs_loaded; then
	h=$(sim_hwmon 0)
	t_eq modules-ad102gl-labels "$(sort "$h"/temp*_label | tr '\n' ' ')" "hotspot mem "
	nvs_unload
fi

# Poison everywhere after attach: every module goes ENODATA, none shows a
# number, the die and junction keep theirs.
nvs_load sim=1af4:1110:2:ad102 || { t_fail modules-poison-load "insmod failed"; exit 0; }
c=$(sim_class 0) h=$(sim_hwmon 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
for p in 0 1 6 9 10 11; do
	sim 0 set "mem$p" "0xbadf00$((10 + p))"
done
# the last one poisoned: a memory pass may fall between two sets
wait_for 4 '[[ $(read_err "$(hw_temp "$h" mem11)_input") == "No data available" ]]'
bad=
for l in mem0 mem1 mem6 mem9 mem10 mem11; do
	v=$(read_err "$(hw_temp "$h" "$l")_input")
	[[ $v == "No data available" ]] || bad+=" $l=$v"
done
[[ -z $bad ]] && t_pass modules-poisoned-no-number || t_fail modules-poisoned-no-number "$bad"
t_eq modules-poisoned-die-ok "$(read_err "$(hw_temp "$h" hotspot)_input") $(read_err "$(hw_temp "$h" mem)_input")" "75000 86406"
nvs_unload
