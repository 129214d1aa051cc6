#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: own (tests/vm/lanes.tsv)
#
# Issue 2: an unprivileged user reads every hwmon and class file (a value
# or "No data available", never "Permission denied") and writes none; the
# attempt changes nothing. No file is writable by group or others.
set -u

sim_fixture_all gb202
nvs_load || { t_fail thermal-perms-load "insmod failed"; exit 1; }
c=$(sim_class 0) h=$(sim_hwmon 0)
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
echo 95000 >"$(hw_temp "$h" ch0)_max"

files=()
for f in "$h"/* "$c"/*; do
	[[ -f $f && ! -L $f ]] && files+=("$f")
done

modes='' rfiles=() wfiles=()
while read -r m f; do
	((0$m & 022)) && modes+=" ${f##*/}:$m"
	((0$m & 0444)) && rfiles+=("$f")
	((0$m & 0222)) && wfiles+=("$f")
done < <(stat -c '%a %n' "${files[@]}")
snap() {
	local f v
	for f in "${wfiles[@]}"; do
		v=$( { read -r v <"$f" && echo "$v"; } 2>&1)
		echo "${f##*/} $v"
	done
}
before=$(snap)
# One unprivileged shell reads (or writes) them all: a process per file is
# slow under emulation. Reads may say ENODATA, never anything else.
unread=$(as_user bash -c '
	for f; do
		# an empty file (uevent) fails read without an error message
		err=$( { read -r _ <"$f"; } 2>&1) || [[ -z $err || $err == *"No data available"* ]] ||
			echo -n " ${f##*/}:${err##*: }"
	done' _ "${rfiles[@]}")
wr=$(as_user bash -c '
	for f; do
		{ echo 1 >"$f"; } 2>/dev/null && echo -n " ${f##*/}"
	done' _ "${wfiles[@]}")
after=$(snap)
changed=$(diff <(echo "$before") <(echo "$after") | grep '^>' | tr '\n' ' ')
[[ -z $unread ]] && t_pass thermal-user-reads-all || t_fail thermal-user-reads-all "unreadable:$unread"
[[ -z $wr ]] && t_pass thermal-user-writes-none || t_fail thermal-user-writes-none "writable by nobody:$wr"
[[ -z $changed ]] && t_pass thermal-user-write-no-effect || t_fail thermal-user-write-no-effect "changed:$changed"
[[ -z $modes ]] && t_pass thermal-no-group-other-write || t_fail thermal-no-group-other-write "$modes"
((${#files[@]} > 20)) && t_pass thermal-perms-covered || t_fail thermal-perms-covered "only ${#files[@]} files found"

# Root writes to the class file are validated too.
for v in abc -1 1001 ""; do
	if echo "$v" >"$c/sample_hz" 2>/dev/null; then
		t_fail "thermal-sample-hz-refuses-'$v'" "accepted"
	else
		t_pass "thermal-sample-hz-refuses-'$v'"
	fi
done
echo 100 >"$c/sample_hz"
t_eq thermal-sample-hz-set "$(read_err "$c/sample_hz")" 100
# sample_hz 0: every read samples on demand.
echo 0 >"$c/sample_hz"
s0=$(read_err "$c/samples")
sim 0 temp ch0 88.5
t_eq thermal-on-demand-read "$(read_err "$(hw_temp "$h" ch0)_input")" 88500
s1=$(read_err "$c/samples")
sleep 0.5
t_eq thermal-on-demand-no-background "$(read_err "$c/samples")" "$s1"
((s1 > s0)) && t_pass thermal-on-demand-counts || t_fail thermal-on-demand-counts "samples $s0 -> $s1"
nvs_unload
