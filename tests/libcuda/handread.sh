#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# tests/libcuda/handread.sh LIBCUDA [FIELD]: the objdump commands behind the
# hand-read table in docs/libcuda.md, for a reviewer to redo the reading.
# It only prints binutils' own output (objdump, readelf, nm, od), step by
# step; it decides nothing. The verdicts and rewrites in the table were read
# from this output by a person, not computed by nvsidecar.
#
#   1  the export cuDeviceGetAttribute and the slot it jumps through
#   2  the R_X86_64_RELATIVE relocation of that slot (the implementation)
#   3  the calls out of the implementation (the dispatcher is among them)
#   4  the dispatcher's bound check and jump-table base
#   5  (with FIELD) every instruction with a displacement of FIELD, and every
#      write with a displacement up to 7 below it (wider stores)
#   6  (with FIELD) the code before every write to +FIELD (30 instructions)
#   7  (with FIELD) memset/memcpy/memmove calls and rep stos/movs whose
#      length is a constant (mov $N to %edx / %ecx just before) larger than
#      FIELD, with the 12 instructions before each
#
# Jump-table entries: jt LIB TABLE ATTR prints TABLE + (int32 at TABLE+4*ATTR).
set -eu
lib=${1:?usage: handread.sh LIBCUDA [FIELD]}
field=${2:-}
dis=$(mktemp)
trap 'rm -f "$dis"' EXIT

step() { printf '\n==== %s\n' "$*"; }
jt() { printf '%d -> 0x%x\n' "$3" $(($2 + $(od -An -t d4 -j $(($2 + 4 * $3)) -N4 "$1"))); }

objdump -d -w "$lib" >"$dis"
step "1 export"
nm -D --defined-only "$lib" | grep -E ' cuDeviceGetAttribute$'
api=0x$(nm -D --defined-only "$lib" | awk '$3 == "cuDeviceGetAttribute" { print $1 }')
objdump -d -w --start-address=$((api)) --stop-address=$((api + 0x20)) "$lib" | tail -n +7
slot=$(objdump -d -w --start-address=$((api)) --stop-address=$((api + 0x20)) "$lib" |
	sed -n 's/.*jmp \+\*0x[0-9a-f]*(%rip) \+# \([0-9a-f]*\).*/\1/p' | head -1)
step "2 slot 0x$slot"
impl=
if [[ -n $slot ]]; then
	readelf -rW "$lib" | awk -v s="$slot" '{ a = $1; sub(/^0+/, "", a) } a == s'
	impl=$(readelf -rW "$lib" | awk -v s="$slot" '{ a = $1; sub(/^0+/, "", a) } a == s { print $4 }')
fi
impl=${impl:-${api#0x}}
step "3 calls out of the implementation 0x$impl"
objdump -d -w --start-address=$((0x$impl)) --stop-address=$((0x$impl + 0x600)) "$lib" |
	grep -E '\s(call|jmp) ' | head -40
step "4 jump tables (bound check, lea of the table, indirect jmp) in the callees"
for f in $(objdump -d -w --start-address=$((0x$impl)) --stop-address=$((0x$impl + 0x600)) "$lib" |
	   sed -n 's/.*\scall \+\([0-9a-f]*\) .*/\1/p' | sort -u); do
	objdump -d -w --start-address=$((0x$f)) --stop-address=$((0x$f + 0x80)) "$lib" |
		grep -E 'cmp +\$0x[0-9a-f]+,%e?si|ja |lea .*\(%rip\)|movslq|jmp +\*%' | sed "s/^/[$f] /"
done
[[ -n $field ]] || exit 0
f=$((field))
step "5 displacement $field (all uses), and writes at $(printf '0x%x..0x%x' $((f - 7)) $((f - 1)))"
grep -E "[^0-9a-fx]$(printf '0x%x' $f)\(%" "$dis" | cut -f1,3
for ((d = f - 7; d < f; d++)); do
	grep -E "[^0-9a-fx]$(printf '0x%x' $d)\(%" "$dis" | cut -f1,3 |
		grep -vE '\s(test|cmp|movz|movs|lea|bt)[a-z]* ' | grep -E ',[^,]*\(%[a-z0-9]+\)$' || true
done
step "6 code before each write to +$field"
grep -E "[^0-9a-fx]$(printf '0x%x' $f)\(%" "$dis" | cut -f1,3 |
	grep -vE '\s(test|cmp|movz|movs|lea|bt)[a-z]* ' | grep -E ",$(printf '0x%x' $f)\(%" |
	while read -r a _; do
		a=${a%:}
		n=$(grep -n -E "^ +$a:" "$dis" | cut -d: -f1)
		echo "-- $a"
		sed -n "$((n > 30 ? n - 30 : 1)),$((n + 2))p" "$dis" | cut -f1,2,3
	done
step "7 constant-length bulk writes longer than $field"
python3 - "$dis" "$f" <<'PY'
import re, sys
lines = [l for l in open(sys.argv[1]) if re.match(r'\s+[0-9a-f]+:\t', l)]
field = int(sys.argv[2])
for i, l in enumerate(lines):
    t = l.split('\t')[-1]
    if re.search(r'call +\w+ <(memset|memcpy|memmove)@plt>', t):
        reg, unit = ('edx', 'rdx'), 1
    elif re.match(r'rep stos|rep movs', t):
        reg, unit = ('ecx', 'rcx'), 8 if re.search(r'stos %rax|movsq|stosq', t) else 4
    else:
        continue
    for b in reversed(lines[max(0, i - 12):i]):
        m = re.search(r'mov +\$0x([0-9a-f]+),%(\w+)$', b.strip())
        if m and m.group(2) in reg:
            if int(m.group(1), 16) * unit > field:
                print('--', l.strip())
                print(''.join(lines[max(0, i - 12):i + 1]), end='')
            break
        if re.search(r'(call|ret|jmp) ', b):
            break
PY
