#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# Issue 19's done-when, on every Debian lane: a GB202 with 8 partitions
# (some slots valid, some invalid, one poisoned, one status word poisoned:
# nvsim fixture gb202-layout) and a GA102 clamshell board (fixture
# ga102-clam) show exactly the chips the layout rules give (kmod/chips.c,
# "Per-chip memory temperatures"), with and without the strap's clamshell
# bit. The rest of the layout rules, which no kernel changes (validity
# bits, read counts, re-probe backoff, the strap read late):
# t-thermal-layout.sh, on the reference lane.
set -u

# check NAME HWMON: the labels and values of the assoc array "want"
# ("-": shown, ENODATA); every other memN label must be absent
check() {
	local name=$1 h=$2 l p v w bad=
	t_eq "$name-labels" "$(sort "$h"/temp*_label | tr '\n' ' ')" \
		"$(printf '%s\n' "${!want[@]}" | sort | tr '\n' ' ')"
	for l in "${!want[@]}"; do
		p=$(hw_temp "$h" "$l" 2>/dev/null) || { bad+=" $l:missing"; continue; }
		v=$(read_err "${p}_input")
		[[ ${want[$l]} == - ]] && w="No data available" || w=${want[$l]}
		[[ $v == "$w" ]] || bad+=" $l=$v!=$w"
	done
	[[ -z $bad ]] && t_pass "$name-values" || t_fail "$name-values" "$bad"
}

# --- GB202: 8 partitions, one rule each (nvsim fixture gb202-layout) -------
sim_fixture_all gb202
sim 0 fixture gb202-layout
declare -A want=(
	[hotspot]=92250 [average]=79301 [ch0]=90215 [ch1]=79500 [ch2]=75102
	[ch3]=76949 [mem]=120000
	[mem0]=64000 [mem1]=60000 [mem2]=72000 [mem3]=- [mem4]=76000 [mem5]=-
	[mem10]=120000 [mem11]=- [mem12]=50000 [mem13]=2000 [mem14]=- [mem15]=90000
)
nvs_load || { t_fail layout-gb202-load "insmod failed"; exit 0; }
c=$(sim_class 0) h=$(sim_hwmon 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
wait_for 3 '[[ $(read_err "$(hw_temp "$h" mem0)_input") == 64000 ]]'
check layout-gb202 "$h"
nvs_unload

# --- GA102 clamshell: the back side in bits 31:24 (fixture ga102-clam) -----
sim 0 fixture ga102-clam
declare -A want=(
	[hotspot]=75000 [mem]=86406
	[mem0]=64000 [mem0b]=84000 [mem1]=62000 [mem1b]=60000
	[mem2]=72000 [mem2b]=88000 [mem3]=- [mem3b]=-
	[mem4]=68000 [mem4b]=- [mem5]=76000 [mem5b]=120000
	[mem8]=46000 [mem8b]=44000 [mem9]=54000 [mem9b]=56000
)
nvs_load sim=1af4:1110:2:ga102 || { t_fail layout-ga102-load "insmod failed"; exit 0; }
c=$(sim_class 0) h=$(sim_hwmon 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
wait_for 3 '[[ $(read_err "$(hw_temp "$h" mem0b)_input" 2>/dev/null) == 84000 ]]'
check layout-ga102-clamshell "$h"
nvs_unload

# The same words without the strap bit: front chips only, same values.
sim 0 set strap 0x13
declare -A want=(
	[hotspot]=75000 [mem]=86406
	[mem0]=64000 [mem1]=62000 [mem2]=72000 [mem3]=- [mem4]=68000
	[mem5]=76000 [mem8]=46000 [mem9]=54000
)
nvs_load sim=1af4:1110:2:ga102 || { t_fail layout-ga102-front-load "insmod failed"; exit 0; }
c=$(sim_class 0) h=$(sim_hwmon 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
wait_for 3 '[[ $(read_err "$(hw_temp "$h" mem0)_input") == 64000 ]]'
check layout-ga102-no-strap "$h"
nvs_unload
sim_fixture_all gb202
