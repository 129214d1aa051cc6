#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# Review 2026-12-03 finding 11: DKMS runs kmod/conftest.sh as root, so its
# scratch files must not live at a name another user can predict and plant
# a symlink at. A symlink named like the old scratch file
# ($TMPDIR/nvs-conftest.PID.c) must be left alone, its target untouched,
# and the private directory removed afterwards. CC is `true` here: every
# probe "compiles", which is enough to exercise the file handling fast.
set -u

# conftest.sh runs on the build host, not in the kernel under test: one
# lane is enough
if [[ $NVS_LANE != 6.12 ]]; then
	t_skip review-conftest "kmod/conftest.sh does not depend on the kernel booted; the 6.12 lane runs it"
	exit 0
fi
d=$(mktemp -d /tmp/review-conftest.XXXXXX)
echo precious >"$d/victim"
chmod 0644 "$d/victim"
# The shell plants the link for its own pid, then becomes conftest.sh
# (exec keeps the pid), exactly what an attacker guessing the pid does.
TMPDIR=$d sh -c 'ln -s "$1/victim" "$1/nvs-conftest.$$.c"; exec sh "$2" true ""' \
	_ "$d" "$NVS_TOP/kmod/conftest.sh" >"$d/out" 2>"$d/err"
rc=$?
t_eq review-conftest-runs "$rc" 0
if grep -q '^#define COMPAT_' "$d/out"; then
	t_pass review-conftest-output
else
	t_fail review-conftest-output "no probe result: $(head -c 300 "$d/out") $(head -c 300 "$d/err")"
fi
t_eq review-conftest-symlink-target-untouched "$(cat "$d/victim")" precious
left=$(find "$d" -mindepth 1 -name 'nvs-conftest.*' ! -type l -printf '%f ')
[[ -z $left ]] && t_pass review-conftest-cleans-up || t_fail review-conftest-cleans-up "left behind: $left"
rm -rf "$d"
