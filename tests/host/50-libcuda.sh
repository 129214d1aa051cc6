#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# nvsidecar libcuda: the gate locator, patcher, verifier and stale-copy check.
#
#   real    Debian's non-free libcuda1 535.261.03 (bookworm) and 535.216.03
#           (bookworm-backports), fetched at test time through a private apt
#           configuration (the system's is not touched), cached under
#           $NVS_BUILD/libcuda-debs, never committed
#   shapes  fake libcudas built from tests/libcuda/fake_gate.S: 590, 615 (three
#           inlined copies), computed bit, decoy, ambiguous, unprovable
#   bad     malformed input, read-only and full output, SIGKILL mid-write
#           (under AddressSanitizer)
. "$(dirname "$0")/../lib.sh"
set -u

top=$NVS_TOP
bin=$NVS_BIN
work=$(mktemp -d /tmp/nvs-libcuda.XXXXXX)
mounts=()
cleanup() {
	local m
	for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT
# No real driver may leak into the stale check; tests set their own.
export NVS_NVIDIA_VERSION_FILE=$work/no-driver
export NVS_LIBCUDA_STATE=$work/state
unset LD_LIBRARY_PATH

sha() { sha256sum "$1" | cut -d' ' -f1; }
field() { awk -F'\t' -v k="$1" '$1 == k { print $2; exit }'; }
jfield() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get(sys.argv[1]))' "$1"; }

[[ -x $bin ]] || { t_fail libcuda-binary "no helper at $bin (run make user)"; exit 0; }

# ---- fixtures -------------------------------------------------------------
fx=$work/fx
build() {	# build NAME VERSION CPPFLAGS...
	local name=$1 ver=$2
	shift 2
	mkdir -p "$fx/$name"
	gcc -shared -fPIC -O2 -Wall -Werror "$@" -DNVS_FAKE_VERSION="\"$ver\"" -Wl,-soname,libcuda.so.1 \
		-o "$fx/$name/libcuda.so.$ver" "$top/tests/libcuda/fake_gate.S" \
		"$top/tests/libcuda/fake_driver.c"
}
ok=1
build 590 590.48.01 -DSHAPE_590 || ok=0
build 615 615.71.09 -DSHAPE_615 -DINIT_COPY=2 || ok=0
build computed 555.42.02 -DSHAPE_COMPUTED || ok=0
build decoy 555.42.03 -DSHAPE_DECOY || ok=0
build ambiguous 555.42.04 -DSHAPE_AMBIGUOUS || ok=0
build unprovable 555.42.05 -DSHAPE_UNPROVABLE || ok=0
build big 590.48.01 -DSHAPE_590 -DPAD_MB=8 || ok=0
build 615b 615.71.09 -DSHAPE_615 -DINIT_COPY=1 || ok=0
build rmw 555.42.11 -DSHAPE_RMW || ok=0
build noinit 555.42.12 -DSHAPE_NOINIT || ok=0
build btr 555.42.13 -DSHAPE_BTR || ok=0
build wide 555.42.14 -DSHAPE_WIDE || ok=0
build memset 555.42.15 -DSHAPE_MEMSET || ok=0
build repstos 555.42.16 -DSHAPE_REPSTOS || ok=0
build nearptr 555.42.17 -DSHAPE_NEARPTR || ok=0
build memfd 590.48.01 -DSHAPE_590 -DEXPORT_MEMFD || ok=0
((ok)) && t_pass libcuda-fixtures-build || { t_fail libcuda-fixtures-build "gcc/as could not build the fake libcudas"; exit 0; }

# status --dump of a library: sets $dump and $rc
status() { dump=$("$bin" libcuda status --dump --lib "$@" 2>"$work/err"); rc=$?; }
verdict() { field verdict <<<"$dump"; }
attr() {	# attr JSON NUM -> value
	python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["attributes"][sys.argv[1]]["value"])' "$2" <<<"$1"
}

# ---- synthetic shapes: locate, plan, patch, verify flips -------------------
shape() {	# shape NAME FIELD NSITES
	local name=$1 f=$2 n=$3 lib out v0 v1 rc0 rc1
	lib=$(echo "$fx/$name"/libcuda.so.*)
	status "$lib"
	[[ $rc == 0 && $(verdict) == unpatched && $(field field <<<"$dump") == "$f" &&
	   $(field mask <<<"$dump") == 0x20 && $(grep -c '^rewrite' <<<"$dump") == "$n" ]] ||
		{ t_fail "libcuda-$name-status" "rc $rc, verdict $(verdict), field $(field field <<<"$dump"), $(grep -c '^rewrite' <<<"$dump") rewrites (want $f, $n): $(head -c 300 "$work/err")"; return; }
	t_pass "libcuda-$name-status"
	out=$work/out-$name
	mkdir -p "$out"
	v0=$("$bin" libcuda verify --json --lib "$lib"); rc0=$?
	"$bin" libcuda patch --lib "$lib" --out "$out" >/dev/null 2>"$work/err" ||
		{ t_fail "libcuda-$name-patch" "$(cat "$work/err")"; return; }
	v1=$("$bin" libcuda verify --json --lib "$out" 2>"$work/err"); rc1=$?
	local a b=""
	for a in 110 116 124; do
		b="$b $a:$(attr "$v0" $a)->$(attr "$v1" $a)"
	done
	# the fake exports a dma-buf only where /dev/udmabuf works, else a memfd,
	# which verify fails (exit 1, review T3-16)
	local want=1
	grep -q '"fd_is_dma_buf": *true' <<<"$v1" && want=0
	if [[ $rc0 == 6 && $rc1 == "$want" && $b == " 110:0->1 116:0->1 124:0->1" ]] &&
	   grep -q '"dma_buf_export": *true' <<<"$v1" && grep -q '"export_result": *801' <<<"$v0"; then
		t_pass "libcuda-$name-verify-flips"
	else
		t_fail "libcuda-$name-verify-flips" "verify rc $rc0 -> $rc1, attributes$b"
	fi
	status "$out/libcuda.so.1"
	[[ $rc == 0 && $(verdict) == patched && -z $(grep '^rewrite' <<<"$dump") ]] &&
		t_pass "libcuda-$name-copy-is-patched" ||
		t_fail "libcuda-$name-copy-is-patched" "rc $rc, verdict $(verdict)"
}
shape 590 0x5f14 1
shape 615 0x8f1c 6
shape computed 0x3684 3
shape decoy 0x3684 3
shape rmw 0x3684 2
shape btr 0x3684 3

# 525's initialiser: orb $0x40 to memory at the start of its routine -> orb $0x60
rj=$("$bin" libcuda status --json --lib "$fx/rmw/libcuda.so.555.42.11")
python3 -c 'import json,sys; r=json.load(sys.stdin)["rewrites"]
sys.exit(not any(w["old"] == "808f8436000040" and w["new"] == "808f8436000060" for w in r))' <<<"$rj" &&
	t_pass libcuda-rmw-initialiser || t_fail libcuda-rmw-initialiser "no orb \$0x40 -> orb \$0x60 rewrite: $(head -c 400 <<<"$rj")"
# btr of the bit becomes bts (0f ba /6 -> /5)
bj=$("$bin" libcuda status --json --lib "$fx/btr/libcuda.so.555.42.13")
python3 -c 'import json,sys; r=json.load(sys.stdin)["rewrites"]
sys.exit(not any(w["old"] == "0fbab78436000005" and w["new"] == "0fbaaf8436000005" for w in r))' <<<"$bj" &&
	t_pass libcuda-btr-to-bts || t_fail libcuda-btr-to-bts "no btr -> bts rewrite: $(head -c 400 <<<"$bj")"

# The decoy's look-alike byte (+0x3690) is never touched, the guard of another bit is kept.
status "$fx/decoy/libcuda.so.555.42.03"
if ! grep -q '0x3690' <<<"$dump" && grep -qP '^store\t\S+\tpreserves\tpreserves\tor byte ptr \[rdi \+ 0x3684\], 0x10' <<<"$dump"; then
	t_pass libcuda-decoy-untouched
else
	t_fail libcuda-decoy-untouched "the decoy byte or the other-bit store was mishandled"
fi
# 615: the computed clear-then-or is rewritten into or-set, bytes 83 e0 df -> 83 c8 20
cj=$("$bin" libcuda status --json --lib "$fx/computed/libcuda.so.555.42.02")
grep -q '"old": *"83e0df"' <<<"$cj" && grep -q '"new": *"83c820"' <<<"$cj" &&
	t_pass libcuda-computed-or-set || t_fail libcuda-computed-or-set "no 83e0df -> 83c820 rewrite"
# 615: three copies in EDX, ECX, R8D, each with its or $0xc0 alternate
status "$fx/615/libcuda.so.615.71.09"
want="or edx, 0x40|or eax, 0xffffffc0|or ecx, 0x40|or r9d, 0xffffffc0|or r8d, 0x40|or r10d, 0xffffffc0"
got=$(grep '^rewrite' <<<"$dump" | cut -f3 | paste -sd'|')
[[ $got == "$want" ]] && t_pass libcuda-615-six-sites || t_fail libcuda-615-six-sites "got $got"

# Refusals, with the reason
status "$fx/ambiguous/libcuda.so.555.42.04"
[[ $rc == 2 && $(verdict) == unsupported-layout && $(field reason <<<"$dump") == *Ambiguous* ]] &&
	t_pass libcuda-ambiguous-refused || t_fail libcuda-ambiguous-refused "rc $rc: $(field reason <<<"$dump")"
status "$fx/unprovable/libcuda.so.555.42.05"
[[ $rc == 2 && $(verdict) == unsupported-layout && $(field reason <<<"$dump") == *"no proven same-length rewrite"* ]] &&
	t_pass libcuda-unprovable-refused || t_fail libcuda-unprovable-refused "rc $rc: $(field reason <<<"$dump")"
refused() {	# refused NAME LIB PATTERN: exit 2, unsupported-layout, the reason says PATTERN, no plan
	status "$2"
	[[ $rc == 2 && $(verdict) == unsupported-layout && $(field reason <<<"$dump") == *"$3"* ]] &&
		! grep -q '^rewrite' <<<"$dump" && t_pass "libcuda-$1-refused" ||
		t_fail "libcuda-$1-refused" "rc $rc, verdict $(verdict): $(field reason <<<"$dump")"
}
# only the computed store could set the bit: not shown to run at init
refused noinit "$fx/noinit/libcuda.so.555.42.12" "No initialiser"
refused wide "$fx/wide/libcuda.so.555.42.14" "writes a computed value"
refused memset "$fx/memset/libcuda.so.555.42.15" "memset at 0x"
refused repstos "$fx/repstos/libcuda.so.555.42.16" "of the device structure"
refused nearptr "$fx/nearptr/libcuda.so.555.42.17" "below the capability byte"
before=$(sha "$fx/unprovable/libcuda.so.555.42.05")
"$bin" libcuda patch --lib "$fx/unprovable/libcuda.so.555.42.05" --out "$work" >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 2 && ! -e $work/libcuda.so.555.42.05 && $(sha "$fx/unprovable/libcuda.so.555.42.05") == "$before" ]] &&
	grep -q 'Refusing to patch' "$work/err" &&
	t_pass libcuda-unprovable-patch-refused || t_fail libcuda-unprovable-patch-refused "rc $rc: $(cat "$work/err")"

# ---- idempotence, partial patches, stale copies, in place ------------------
out=$work/out-615
m1=$(sha "$out/nvsidecar-libcuda.manifest")
"$bin" libcuda patch --lib "$fx/615/libcuda.so.615.71.09" --out "$out" >"$work/log" 2>&1
[[ $? == 0 && $(sha "$out/nvsidecar-libcuda.manifest") == "$m1" ]] && grep -q '^Up to date' "$work/log" &&
	t_pass libcuda-patch-idempotent || t_fail libcuda-patch-idempotent "$(cat "$work/log")"

# An older tool patched one of the six sites: still closed, reported partial, then completed.
part=$work/partial
mkdir -p "$part"
cp "$fx/615/libcuda.so.615.71.09" "$part/"
read -r off new < <(awk -F'\t' '$1 == "site" { print $2, $4; exit }' "$out/nvsidecar-libcuda.manifest")
printf "$(sed 's/../\\x&/g' <<<"$new")" | dd of="$part/libcuda.so.615.71.09" bs=1 seek=$((off)) conv=notrunc status=none
ln -sf libcuda.so.615.71.09 "$part/libcuda.so.1"
v=$("$bin" libcuda verify --json --lib "$part")
status "$part/libcuda.so.615.71.09"
[[ $(verdict) == partially-patched && $(attr "$v" 124) == 0 ]] &&
	t_pass libcuda-partial-detected || t_fail libcuda-partial-detected "verdict $(verdict), attr124 $(attr "$v" 124)"
mkdir -p "$work/upgraded"
"$bin" libcuda patch --lib "$part/libcuda.so.615.71.09" --out "$work/upgraded" >/dev/null 2>"$work/err"
v=$("$bin" libcuda verify --json --lib "$work/upgraded")
n=$(grep -c '^site' "$work/upgraded/nvsidecar-libcuda.manifest")
[[ $(attr "$v" 124) == 1 && $n == 5 && $(sha "$work/upgraded/libcuda.so.615.71.09") == $(sha "$out/libcuda.so.615.71.09") ]] &&
	t_pass libcuda-partial-upgraded || t_fail libcuda-partial-upgraded "attr124 $(attr "$v" 124), $n sites: $(cat "$work/err")"

# Stale: the running driver or the installed library moved on.
echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  615.71.09  Thu Jan  1 00:00:00 UTC 2026" >"$work/version"
NVS_NVIDIA_VERSION_FILE=$work/version status "$out/libcuda.so.1"
[[ $rc == 0 && $(verdict) == patched ]] && grep -qP '^manifest\t.*\tcurrent' <<<"$dump" &&
	t_pass libcuda-copy-current || t_fail libcuda-copy-current "rc $rc: $dump"
echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  620.10.02  Thu Jan  1 00:00:00 UTC 2026" >"$work/version"
NVS_NVIDIA_VERSION_FILE=$work/version "$bin" libcuda status --lib "$out/libcuda.so.1" >"$work/log" 2>&1
rc=$?
[[ $rc == 9 ]] && grep -q 'STALE PATCHED COPY.*620.10.02.*615.71.09' "$work/log" &&
	t_pass libcuda-stale-driver || t_fail libcuda-stale-driver "rc $rc: $(tail -3 "$work/log")"
# The open kernel module (the default for RTX 50) writes "Open Kernel Module
# for <arch>" before the version (NVIDIA's README, "Open Linux Kernel
# Modules"; open-gpu-kernel-modules' utils.mk): the stale rule must read it too.
echo "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  620.10.02  Release Build  (builder@host)  Thu Jan  1 00:00:00 UTC 2026" >"$work/open-version"
NVS_NVIDIA_VERSION_FILE=$work/open-version "$bin" libcuda status --lib "$out/libcuda.so.1" >"$work/log" 2>&1
rc=$?
[[ $rc == 9 ]] && grep -q 'STALE PATCHED COPY.*620.10.02.*615.71.09' "$work/log" &&
	t_pass libcuda-stale-driver-open-module || t_fail libcuda-stale-driver-open-module "rc $rc: $(tail -3 "$work/log")"
sed -i 's/620\.10\.02/615.71.09/' "$work/open-version"
NVS_NVIDIA_VERSION_FILE=$work/open-version status "$out/libcuda.so.1"
[[ $rc == 0 && $(verdict) == patched ]] && grep -qP '^manifest\t.*\tcurrent' <<<"$dump" &&
	t_pass libcuda-copy-current-open-module || t_fail libcuda-copy-current-open-module "rc $rc: $dump"
NVS_NVIDIA_VERSION_FILE=$work/version "$bin" libcuda env --out "$out" >/dev/null 2>"$work/err"
[[ $? == 9 ]] && grep -q STALE "$work/err" && t_pass libcuda-env-refuses-stale ||
	t_fail libcuda-env-refuses-stale "$(cat "$work/err")"
cp "$fx/615/libcuda.so.615.71.09" "$work/615.orig"
cp "$fx/615b/libcuda.so.615.71.09" "$fx/615/libcuda.so.615.71.09"	# "driver upgrade", same version
"$bin" libcuda status --lib "$out/libcuda.so.1" >"$work/log" 2>&1
rc=$?
[[ $rc == 9 ]] && grep -q 'no longer matches' "$work/log" && t_pass libcuda-stale-source ||
	t_fail libcuda-stale-source "rc $rc: $(tail -3 "$work/log")"
cp "$work/615.orig" "$fx/615/libcuda.so.615.71.09"
e=$("$bin" libcuda env --out "$out")
[[ $e == "export LD_LIBRARY_PATH='$out'\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" ]] &&
	t_pass libcuda-env || t_fail libcuda-env "$e"

# In place, explicitly, with a hash-named backup; restore checks hashes.
ip=$work/inplace
mkdir -p "$ip"
cp "$fx/590/libcuda.so.590.48.01" "$ip/"
orig=$(sha "$ip/libcuda.so.590.48.01")
"$bin" libcuda patch --in-place --lib "$ip/libcuda.so.590.48.01" >/dev/null 2>"$work/err"
v=$("$bin" libcuda verify --json --lib "$ip/libcuda.so.590.48.01")
[[ -f $NVS_LIBCUDA_STATE/backup-$orig.so && $(sha "$NVS_LIBCUDA_STATE/backup-$orig.so") == "$orig" &&
   $(attr "$v" 116) == 1 ]] && t_pass libcuda-in-place || t_fail libcuda-in-place "$(cat "$work/err")"
"$bin" libcuda restore --lib "$ip/libcuda.so.590.48.01" >/dev/null 2>"$work/err"
[[ $? == 0 && $(sha "$ip/libcuda.so.590.48.01") == "$orig" ]] && t_pass libcuda-restore ||
	t_fail libcuda-restore "$(cat "$work/err")"
# the backup goes once the original is back (review T3-16: it stayed for good)
[[ ! -e $NVS_LIBCUDA_STATE/backup-$orig.so ]] && t_pass libcuda-restore-removes-backup ||
	t_fail libcuda-restore-removes-backup "$(ls -A "$NVS_LIBCUDA_STATE")"
# two libraries with the same original share one backup: the first restore keeps it
mkdir -p "$work/inplace2"
cp "$fx/590/libcuda.so.590.48.01" "$work/inplace2/"
"$bin" libcuda patch --in-place --lib "$ip/libcuda.so.590.48.01" >/dev/null 2>"$work/err"
"$bin" libcuda patch --in-place --lib "$work/inplace2/libcuda.so.590.48.01" >/dev/null 2>>"$work/err"
"$bin" libcuda restore --lib "$ip/libcuda.so.590.48.01" >"$work/out" 2>>"$work/err"
rc=$?
[[ $rc == 0 && -f $NVS_LIBCUDA_STATE/backup-$orig.so ]] && grep -q '^Kept the backup' "$work/out" &&
	t_pass libcuda-restore-keeps-shared-backup ||
	t_fail libcuda-restore-keeps-shared-backup "rc $rc: $(cat "$work/out" "$work/err")"
# ...and says which record keeps it, and what to run to have it go (admin review, small items c)
l2=$work/inplace2/libcuda.so.590.48.01
grep -q "the in-place record $NVS_LIBCUDA_STATE/inplace-[^ ]*\.manifest still names it, for $l2 (the same original)" "$work/out" &&
	grep -qF "restore --lib $l2 --state-dir $NVS_LIBCUDA_STATE'" "$work/out" && t_pass libcuda-restore-kept-says-which ||
	t_fail libcuda-restore-kept-says-which "$(tr '\n' ' ' <"$work/out")"
js=$("$bin" libcuda restore --json --lib "$work/inplace2/libcuda.so.590.48.01" 2>"$work/err")
rc=$?
[[ $rc == 0 && ! -e $NVS_LIBCUDA_STATE/backup-$orig.so && $(jfield backup_removed <<<"$js") == True &&
   $(jfield backup_kept_by <<<"$js") == None &&
   $(sha "$work/inplace2/libcuda.so.590.48.01") == "$orig" ]] && t_pass libcuda-restore-last-removes-backup ||
	t_fail libcuda-restore-last-removes-backup "rc $rc: $js $(cat "$work/err") $(ls -A "$NVS_LIBCUDA_STATE")"
# The undo a patch or restore prints is a command to paste: with the
# --state-dir that was given (without it, restore looks in the default
# directory, finds no record, and calls the patched library unrecorded),
# each path one shell word (admin review of the CLI, item 1).
sd="$work/state dir's"
hl=$work/inplace3/libcuda.so.590.48.01 hl2=$work/inplace4/libcuda.so.590.48.01
mkdir -p "$work/inplace3" "$work/inplace4"
cp "$fx/590/libcuda.so.590.48.01" "$work/inplace3/"
cp "$fx/590/libcuda.so.590.48.01" "$work/inplace4/"
hint() { sed -n "s/.*$1 \`\(.*\)'.*/\1/p" "$work/out" | head -n 1; }
want="$bin libcuda restore --lib $hl --state-dir '$work/state dir'\\''s'"
"$bin" libcuda patch --in-place --lib "$hl" --state-dir "$sd" >"$work/out" 2>"$work/err"
h1=$(hint 'undo with')
"$bin" libcuda patch --in-place --lib "$hl" --state-dir "$sd" >"$work/out" 2>>"$work/err"
h2=$(hint 'Undo with')
"$bin" libcuda patch --in-place --lib "$hl2" --state-dir "$sd" >/dev/null 2>>"$work/err"
eval "$h1" >"$work/out" 2>>"$work/err"
rc=$?
h3=$(hint 'restored too:')
[[ $h1 == "$want" && $h2 == "$want" && $rc == 0 && $(sha "$hl") == "$orig" &&
   $h3 == "$bin libcuda restore --lib $hl2 --state-dir '$work/state dir'\\''s'" ]] &&
	eval "$h3" >/dev/null 2>>"$work/err" && [[ $(sha "$hl2") == "$orig" && ! -e $sd/backup-$orig.so ]] &&
	t_pass libcuda-undo-hint-state-dir ||
	t_fail libcuda-undo-hint-state-dir "rc $rc: [$h1] [$h2] [$h3] $(tr '\n' ' ' <"$work/err")"
# The hint names the state directory used, however it was chosen (review
# of the CLI, L1): from NVS_LIBCUDA_STATE (a shell the hint is pasted into
# need not have it: pasted without it, restore must still find the record)
"$bin" libcuda patch --in-place --lib "$hl" >"$work/out" 2>"$work/err"
h1=$(hint 'undo with')
[[ $h1 == "$bin libcuda restore --lib $hl --state-dir $NVS_LIBCUDA_STATE" ]] &&
	(unset NVS_LIBCUDA_STATE && eval "$h1") >/dev/null 2>>"$work/err" &&
	[[ $(sha "$hl") == "$orig" ]] && t_pass libcuda-undo-hint-env-state ||
	t_fail libcuda-undo-hint-env-state "[$h1] $(cat "$work/err")"
# ...and a relative --state-dir as the absolute directory it named, for a
# hint pasted in another directory
mkdir -p "$work/cwd"
(cd "$work/cwd" && "$bin" libcuda patch --in-place --lib "$hl" --state-dir ./rel/state) >"$work/out" 2>"$work/err"
h1=$(hint 'undo with')
abs=$(cd "$work/cwd" && pwd -P)/rel/state
[[ $h1 == "$bin libcuda restore --lib $hl --state-dir $abs" && -d $abs ]] &&
	(cd / && unset NVS_LIBCUDA_STATE && eval "$h1") >/dev/null 2>>"$work/err" &&
	[[ $(sha "$hl") == "$orig" ]] && t_pass libcuda-undo-hint-relative-state ||
	t_fail libcuda-undo-hint-relative-state "[$h1] $(cat "$work/err")"
# the --help of verify and restore says what they do now (admin review,
# small items d): a non-dma-buf export fails; restore removes its backup,
# or keeps one that is shared
h=$("$bin" libcuda verify --help)
grep -q 'passes only when the fd is a dma-buf' <<<"$h" && grep -q 'fails, exit 1' <<<"$h" &&
	t_pass libcuda-verify-help || t_fail libcuda-verify-help "$h"
h=$("$bin" libcuda restore --help | tr '\n' ' ')
grep -q 'removes the backup and its record' <<<"$h" && grep -q 'still names (a second library with the same original) is kept' <<<"$h" &&
	t_pass libcuda-restore-help || t_fail libcuda-restore-help "$h"
# restore is idempotent (T3-16): a second one finds the original, says so, exits 0, changes nothing
"$bin" libcuda restore --lib "$ip/libcuda.so.590.48.01" >"$work/out" 2>"$work/err"
rc=$?
[[ $rc == 0 ]] && grep -q '^Nothing to restore: .*libcuda.so.590.48.01 is not patched' "$work/out" &&
	[[ $(sha "$ip/libcuda.so.590.48.01") == "$orig" ]] && t_pass libcuda-restore-twice ||
	t_fail libcuda-restore-twice "rc $rc: $(cat "$work/out" "$work/err")"
js=$("$bin" libcuda restore --json --lib "$ip/libcuda.so.590.48.01" 2>"$work/err")
[[ $(jfield result <<<"$js") == nothing-to-restore ]] && t_pass libcuda-restore-twice-json ||
	t_fail libcuda-restore-twice-json "$js $(cat "$work/err")"
# a patched library with no in-place record has no backup: that is still a failure
"$bin" libcuda restore --lib "$work/out-615/libcuda.so.615.71.09" >"$work/out" 2>"$work/err"
rc=$?
[[ $rc == 1 ]] && grep -q 'is patched, but the state directory .* holds no in-place record of it: .*no backup' "$work/err" &&
	t_pass libcuda-restore-unrecorded-patch || t_fail libcuda-restore-unrecorded-patch "rc $rc: $(cat "$work/err")"
# A restore that looks in another state directory than the patch used
# says which one it searched and to pass the patch's one; a state
# directory that does not exist is called out (admin review M3: both
# got "patched without nvsidecar's in-place record ... reinstall").
m3=$work/m3
mkdir -p "$m3/cwd"
cp "$fx/590/libcuda.so.590.48.01" "$m3/"
(cd "$m3/cwd" && "$bin" libcuda patch --in-place --lib "$m3/libcuda.so.590.48.01" --state-dir rel/st) >/dev/null 2>"$work/err"
(cd / && "$bin" libcuda restore --lib "$m3/libcuda.so.590.48.01") >"$work/out" 2>"$work/err"
rc=$?
[[ $rc == 1 ]] && grep -qF "the state directory \`$NVS_LIBCUDA_STATE' (NVS_LIBCUDA_STATE) holds no in-place record of it: if you patched it with --state-dir or NVS_LIBCUDA_STATE, pass the same directory here with --state-dir" "$work/err" &&
	t_pass libcuda-restore-other-state-dir || t_fail libcuda-restore-other-state-dir "rc $rc: $(cat "$work/out" "$work/err")"
"$bin" libcuda restore --lib "$m3/libcuda.so.590.48.01" --state-dir "$m3/nonexist/x" >"$work/out" 2>"$work/err"
rc=$?
[[ $rc == 1 ]] && grep -qF "the state directory \`$m3/nonexist/x' (--state-dir) does not exist, so it holds no in-place record" "$work/err" &&
	"$bin" libcuda restore --lib "$m3/libcuda.so.590.48.01" --state-dir "$m3/cwd/rel/st" >/dev/null 2>>"$work/err" &&
	[[ $(sha "$m3/libcuda.so.590.48.01") == "$orig" ]] &&
	t_pass libcuda-restore-missing-state-dir || t_fail libcuda-restore-missing-state-dir "rc $rc: $(cat "$work/out" "$work/err")"
"$bin" libcuda patch --lib "$ip/libcuda.so.590.48.01" >/dev/null 2>"$work/err"
[[ $? == 2 ]] && grep -q 'exactly one of --out' "$work/err" && t_pass libcuda-patch-needs-out ||
	t_fail libcuda-patch-needs-out "$(cat "$work/err")"

# ---- the driver version, from the library itself ---------------------------
# A 590 library renamed to .555: the embedded version wins, the mismatch is
# reported and recorded in the manifest.
ren=$work/renamed
mkdir -p "$ren" "$ren/out"
cp "$fx/590/libcuda.so.590.48.01" "$ren/libcuda.so.555.99.01"
vj=$("$bin" libcuda status --json --lib "$ren/libcuda.so.555.99.01" 2>/dev/null)
python3 -c 'import json,sys; d=json.load(sys.stdin)
sys.exit(not (d["driver_version"] == "590.48.01" and d["name_version"] == "555.99.01" and d["version_mismatch"]))' <<<"$vj" &&
	t_pass libcuda-version-embedded || t_fail libcuda-version-embedded "$(head -c 300 <<<"$vj")"
"$bin" libcuda patch --lib "$ren/libcuda.so.555.99.01" --out "$ren/out" >/dev/null 2>"$work/err"
[[ $? == 0 && -f $ren/out/libcuda.so.590.48.01 && ! -e $ren/out/libcuda.so.555.99.01 ]] &&
	grep -qP '^driver_version\t590.48.01$' "$ren/out/nvsidecar-libcuda.manifest" &&
	grep -qP '^name_version\t555.99.01$' "$ren/out/nvsidecar-libcuda.manifest" &&
	grep -q '^version_mismatch' "$ren/out/nvsidecar-libcuda.manifest" && grep -q '555.99.01.*590.48.01' "$work/err" &&
	t_pass libcuda-version-mismatch-recorded ||
	t_fail libcuda-version-mismatch-recorded "$(ls "$ren/out") $(cat "$work/err")"
status "$fx/590/libcuda.so.590.48.01"
[[ $(field version <<<"$dump") == 590.48.01 && -z $(field version_mismatch <<<"$dump") ]] &&
	t_pass libcuda-version-agrees || t_fail libcuda-version-agrees "$dump"

# ---- smaller points ----------------------------------------------------------
# status on a FIFO (and a FIFO planted as a manifest) returns instead of hanging
ff=$work/fifo
mkdir -p "$ff"
mkfifo "$ff/libcuda.so.1"
timeout 20 "$bin" libcuda status --lib "$ff/libcuda.so.1" >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 2 ]] && grep -q 'regular file' "$work/err" && t_pass libcuda-status-fifo ||
	t_fail libcuda-status-fifo "rc $rc (124: hung): $(cat "$work/err")"
cp "$fx/590/libcuda.so.590.48.01" "$ff/"
mkfifo "$ff/nvsidecar-libcuda.manifest"
timeout 20 "$bin" libcuda status --lib "$ff/libcuda.so.590.48.01" >/dev/null 2>&1
rc=$?
[[ $rc != 124 ]] && t_pass libcuda-status-fifo-manifest || t_fail libcuda-status-fifo-manifest "hung"

# "N initialiser(s)": both initialisers of the 535 shape set by hand, the computed store not
hp=$work/handpatched
mkdir -p "$hp"
cp "$fx/computed/libcuda.so.555.42.02" "$hp/"
python3 -c 'import json, sys
f = open(sys.argv[1], "r+b")
for r in json.load(sys.stdin)["rewrites"]:
    if r["from"].startswith("or "):
        f.seek(int(r["offset"], 16))
        f.write(bytes.fromhex(r["new"]))' "$hp/libcuda.so.555.42.02" <<<"$cj"
status "$hp/libcuda.so.555.42.02"
[[ $(verdict) == partially-patched && $(field reason <<<"$dump") == "2 initialiser(s) already set"* ]] &&
	t_pass libcuda-initialiser-count || t_fail libcuda-initialiser-count "$(verdict): $(field reason <<<"$dump")"

# re-patching into an output folder that holds another driver's copy replaces it
sf=$work/stale-folder
mkdir -p "$sf"
"$bin" libcuda patch --lib "$fx/590/libcuda.so.590.48.01" --out "$sf" >/dev/null 2>&1
"$bin" libcuda patch --lib "$fx/615/libcuda.so.615.71.09" --out "$sf" >/dev/null 2>"$work/err"
[[ $? == 0 && $(ls "$sf") == $'libcuda.so\nlibcuda.so.1\nlibcuda.so.615.71.09\nnvsidecar-libcuda.manifest' ]] &&
	t_pass libcuda-repatch-stale-folder || t_fail libcuda-repatch-stale-folder "left: $(ls "$sf" | tr '\n' ' ') $(cat "$work/err")"

# a second --in-place patch says it is already done, and where the backup is
ip2=$work/inplace2
mkdir -p "$ip2"
cp "$fx/590/libcuda.so.590.48.01" "$ip2/"
"$bin" libcuda patch --in-place --lib "$ip2/libcuda.so.590.48.01" >/dev/null 2>&1
"$bin" libcuda patch --in-place --lib "$ip2/libcuda.so.590.48.01" >"$work/log" 2>&1
rc=$?
[[ $rc == 0 ]] && grep -q 'already patched in place' "$work/log" && grep -q "backup-" "$work/log" &&
	t_pass libcuda-in-place-twice || t_fail libcuda-in-place-twice "rc $rc: $(cat "$work/log")"

# status --state-dir finds an in-place manifest kept elsewhere than the default,
# and only the one about this path (other tests patched files of the same name)
sd=$work/state-elsewhere
ip3=$work/inplace3
mkdir -p "$ip3"
cp "$fx/590/libcuda.so.590.48.01" "$ip3/"
"$bin" libcuda patch --in-place --lib "$ip3/libcuda.so.590.48.01" --state-dir "$sd" >/dev/null 2>&1
d1=$("$bin" libcuda status --dump --lib "$ip3/libcuda.so.590.48.01" --state-dir "$sd" 2>/dev/null)
d2=$("$bin" libcuda status --dump --lib "$ip3/libcuda.so.590.48.01" 2>/dev/null)
grep -qP "^manifest\t$sd/inplace-libcuda.so.590.48.01-[0-9a-f]{12}.manifest\tcurrent" <<<"$d1" && ! grep -q '^manifest' <<<"$d2" &&
	t_pass libcuda-status-state-dir || t_fail libcuda-status-state-dir "with: $(grep manifest <<<"$d1") without: $(grep manifest <<<"$d2")"

# ---- --out is the admin's directory (review 2: M1-M4) ----------------------
# M1: a libcuda.so.1 / libcuda.so that nvsidecar did not make is never replaced
adm=$work/admin-files
mkdir -p "$adm"
echo "the admin's own file" >"$adm/libcuda.so"
cp "$fx/615/libcuda.so.615.71.09" "$adm/libcuda.so.1"
ln -s /elsewhere/libcuda.so.1 "$adm/libcuda.so.2"
a1=$(sha "$adm/libcuda.so") a2=$(sha "$adm/libcuda.so.1")
"$bin" libcuda patch --lib "$fx/590/libcuda.so.590.48.01" --out "$adm" >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 2 && -f $adm/libcuda.so && ! -L $adm/libcuda.so && ! -L $adm/libcuda.so.1 &&
   $(sha "$adm/libcuda.so") == "$a1" && $(sha "$adm/libcuda.so.1") == "$a2" && ! -e $adm/libcuda.so.590.48.01 ]] &&
	grep -q "Refusing to replace .*libcuda.so.1.*Move it away" "$work/err" &&
	t_pass libcuda-out-keeps-admin-files || t_fail libcuda-out-keeps-admin-files "rc $rc: $(ls -l "$adm") $(cat "$work/err")"
rm "$adm/libcuda.so.1"
ln -s libcuda.so.615.71.09 "$adm/libcuda.so.1"	# a foreign link, no manifest names it
"$bin" libcuda patch --lib "$fx/590/libcuda.so.590.48.01" --out "$adm" >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 2 && $(readlink "$adm/libcuda.so.1") == libcuda.so.615.71.09 && $(sha "$adm/libcuda.so") == "$a1" ]] &&
	t_pass libcuda-out-keeps-admin-link || t_fail libcuda-out-keeps-admin-link "rc $rc: $(ls -l "$adm") $(cat "$work/err")"
# M1: the driver's own folder, with a file name that names another version
drv=$work/driver-dir
mkdir -p "$drv"
cp "$fx/590/libcuda.so.590.48.01" "$drv/libcuda.so.590.48.02"
ln -s libcuda.so.590.48.02 "$drv/libcuda.so.1"
ln -s libcuda.so.1 "$drv/libcuda.so"
"$bin" libcuda patch --lib "$drv/libcuda.so.1" --out "$drv/" >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 2 && $(readlink "$drv/libcuda.so.1") == libcuda.so.590.48.02 && ! -e $drv/libcuda.so.590.48.01 &&
   ! -e $drv/nvsidecar-libcuda.manifest ]] && grep -q "is the directory of the source library" "$work/err" &&
	t_pass libcuda-out-source-dir-refused || t_fail libcuda-out-source-dir-refused "rc $rc: $(ls -l "$drv") $(cat "$work/err")"
# M3: a missing --out is created (mkdir -p, 0755); one under a file is exit 2
"$bin" libcuda patch --lib "$fx/590/libcuda.so.590.48.01" --out "$work/new/a/b" >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 0 && -f $work/new/a/b/libcuda.so.590.48.01 && $(stat -c %a "$work/new/a") == 755 ]] &&
	t_pass libcuda-out-created || t_fail libcuda-out-created "rc $rc: $(cat "$work/err")"
touch "$work/plainfile"
"$bin" libcuda patch --lib "$fx/590/libcuda.so.590.48.01" --out "$work/plainfile/x" >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 2 ]] && grep -q "Unable to create the output directory .*Not a directory" "$work/err" &&
	t_pass libcuda-out-under-file || t_fail libcuda-out-under-file "rc $rc: $(cat "$work/err")"
# M3, m2: EACCES on a parent is exit 4 (for --out and for the state directory), with the real errno
if command -v setpriv >/dev/null && ((EUID == 0)); then
	pub=$(mktemp -d /tmp/nvs-libcuda-pub.XXXXXX)
	chmod 755 "$pub"
	mkdir -m 555 "$pub/locked"
	cp "$fx/590/libcuda.so.590.48.01" "$pub/"
	chmod 644 "$pub/libcuda.so.590.48.01"
	nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
	nvs_world_copy "$bin"
	nobody "$NVS_WORLD_COPY" libcuda patch --lib "$pub/libcuda.so.590.48.01" --out "$pub/locked/new" >/dev/null 2>"$work/err"
	rc=$?
	[[ $rc == 4 && ! -e $pub/locked/new ]] && grep -q "Permission denied" "$work/err" &&
		t_pass libcuda-out-eacces || t_fail libcuda-out-eacces "rc $rc: $(cat "$work/err")"
	nobody "$NVS_WORLD_COPY" libcuda patch --in-place --lib "$pub/libcuda.so.590.48.01" --state-dir "$pub/locked/a/b" \
		>/dev/null 2>"$work/err"
	rc=$?
	[[ $rc == 4 ]] && grep -q "state directory .*(at \`$pub/locked/a').*Permission denied" "$work/err" &&
		t_pass libcuda-state-dir-eacces || t_fail libcuda-state-dir-eacces "rc $rc: $(cat "$work/err")"
	rm -rf "$pub"
else
	t_skip libcuda-out-eacces "needs root and setpriv to try as an unprivileged user"
	t_skip libcuda-state-dir-eacces "needs root and setpriv to try as an unprivileged user"
fi
# M2: env and patch quote the folder for the shell; eval runs nothing from its name
q="$work/q'\$(echo INJECTED >&2)'"
mkdir -p "$q"
"$bin" libcuda patch --lib "$fx/590/libcuda.so.590.48.01" --out "$q" >"$work/log" 2>&1
line=$(grep '^  export LD_LIBRARY_PATH=' "$work/log")
got=$(bash -c 'eval "$("$0" libcuda env --out "$1")" && printf %s "$LD_LIBRARY_PATH"' "$bin" "$q" 2>"$work/err")
got2=$(bash -c 'eval "$1" && printf %s "$LD_LIBRARY_PATH"' _ "$line" 2>>"$work/err")
[[ $got == "$q" && $got2 == "$q" && ! -s $work/err ]] && t_pass libcuda-env-quoted ||
	t_fail libcuda-env-quoted "env gave '$got', patch's line gave '$got2': $(cat "$work/err" "$work/log")"
nl=$work/$'new\nline'
"$bin" libcuda patch --lib "$fx/590/libcuda.so.590.48.01" --out "$nl" >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 2 && ! -e $nl ]] && grep -q "control character" "$work/err" && t_pass libcuda-out-newline-refused ||
	t_fail libcuda-out-newline-refused "rc $rc: $(cat "$work/err")"
# An export that is not a dma-buf is a failure, not a pass (review T3-16: the
# fd was described as "not a dma-buf" and verify exited 0)
mkdir -p "$work/out-memfd"
"$bin" libcuda patch --lib "$fx/memfd/libcuda.so.590.48.01" --out "$work/out-memfd" >/dev/null 2>"$work/err"
"$bin" libcuda verify --lib "$work/out-memfd" >"$work/log" 2>"$work/err"
rc=$?
[[ $rc == 1 ]] && grep -q 'did not produce a dma-buf (fd [0-9]* is not a dma-buf: /memfd:' "$work/err" &&
	grep -q "Check that .* is NVIDIA's libcuda" "$work/err" && t_pass libcuda-verify-not-dmabuf ||
	t_fail libcuda-verify-not-dmabuf "rc $rc: $(cat "$work/log" "$work/err")"
v=$("$bin" libcuda verify --json --lib "$work/out-memfd" 2>/dev/null)
rc=$?
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(not (d["ok"] is False and d["exit"] == 1 and
	d["dma_buf_export"] is True and d["fd_is_dma_buf"] is False and "did not produce a dma-buf" in d["error"]))' "$v" &&
	[[ $rc == 1 ]] && t_pass libcuda-verify-not-dmabuf-json || t_fail libcuda-verify-not-dmabuf-json "rc $rc: $v"

# M4: verify refuses a stale copy as env does (exit 9), by folder or by file
st4=$work/stale-verify
mkdir -p "$st4/src" "$st4/copy"
cp "$fx/590/libcuda.so.590.48.01" "$st4/src/"
"$bin" libcuda patch --lib "$st4/src/libcuda.so.590.48.01" --out "$st4/copy" >/dev/null 2>&1
"$bin" libcuda verify --json --lib "$st4/copy" >"$work/v0" 2>/dev/null
rc0=$?
# before the upgrade it runs: 0, or 1 where the fake's export is a memfd (no udmabuf)
grep -q '"fd_is_dma_buf": *false' "$work/v0" && ((rc0 == 1)) && rc0=0
printf 'x' >>"$st4/src/libcuda.so.590.48.01"	# the "driver upgrade"
"$bin" libcuda verify --lib "$st4/copy" >/dev/null 2>"$work/err"
rc1=$?
"$bin" libcuda verify --json --lib "$st4/copy/libcuda.so.1" >"$work/log" 2>/dev/null
rc2=$?
[[ $rc0 == 0 && $rc1 == 9 && $rc2 == 9 && $(jfield exit <"$work/log") == 9 ]] && grep -q STALE "$work/err" &&
	t_pass libcuda-verify-stale || t_fail libcuda-verify-stale "rc $rc0 -> $rc1, $rc2: $(cat "$work/err" "$work/log")"
# m1: a --lib that is not there or not a library is exit 2, about the path
for p in "$work/nonexistent.so" /etc/passwd "$work/plainfile"; do
	"$bin" libcuda verify --lib "$p" >"$work/log" 2>"$work/err"
	rc=$?
	[[ $rc == 2 && ! -s $work/log ]] && grep -q "$p" "$work/err" && ! grep -q "driver installed" "$work/err" &&
		t_pass "libcuda-verify-bad-lib-${p##*/}" ||
		t_fail "libcuda-verify-bad-lib-${p##*/}" "rc $rc: $(cat "$work/log" "$work/err")"
done
# m16: a closed gate says what to do next
"$bin" libcuda verify --lib "$fx/590/libcuda.so.590.48.01" >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 6 ]] && grep -q "libcuda patch --out DIR" "$work/err" && grep -q "verify --lib DIR" "$work/err" &&
	t_pass libcuda-verify-closed-hint || t_fail libcuda-verify-closed-hint "rc $rc: $(cat "$work/err")"

# ---- bad input, under AddressSanitizer ------------------------------------
asan=$NVS_ASAN
if why=$(nvs_asan_build); then
	abin=$asan/nvsidecar
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=98
else
	t_fail libcuda-asan-build "$why"
	abin=$bin
fi
bad() {	# bad NAME WANT_RC PATTERN CMD... : clear message, exit code, no sanitizer report
	local name=$1 want=$2 pat=$3 rc
	shift 3
	"$@" >"$work/bad.out" 2>"$work/bad.err"
	rc=$?
	if [[ $rc == "$want" ]] && grep -q -- "$pat" "$work/bad.err" && ! grep -q 'Sanitizer' "$work/bad.err"; then
		t_pass "libcuda-bad-$name"
	else
		t_fail "libcuda-bad-$name" "rc $rc (want $want): $(head -c 400 "$work/bad.err")"
	fi
}
# lc_health_check(), the call `doctor' uses, built against the sanitized engine
hbin=$work/health-test
if [[ -f $asan/libcuda/health.o ]] &&
   gcc -fsanitize=address,undefined -I"$top/user" -o "$hbin" "$top/tests/libcuda/health-test.c" \
	"$asan"/libcuda/{health,report,gate,paths,bulk,emu,elf,sha256,manifest,known}.o "$asan/sys/nvdriver.o" "$asan"/lib/{io,env,parse}.o \
	$(pkg-config --libs capstone unicorn libelf) -lm -lpthread 2>"$work/err"; then
	health() { "$hbin" "$@" 2>"$work/herr"; }
	hfield() { cut -f"$1" <<<"$2"; }
	h1=$(health "$fx/590/libcuda.so.590.48.01")
	h2=$(health "$work/out-590")
	h3=$(NVS_NVIDIA_VERSION_FILE=$work/version health "$work/out-615")
	h4=$(health "$fx/ambiguous/libcuda.so.555.42.04")
	h5=$(health "$work/nonexistent.so")
	got="$(hfield 2 "$h1") $(hfield 2 "$h2") $(hfield 2 "$h3")/$(hfield 7 "$h3") $(hfield 2 "$h4") $(hfield 2 "$h5")"
	[[ $got == "closed open stale/1 refused error" && $(hfield 4 "$h1") == 590.48.01 ]] &&
		! grep -q Sanitizer "$work/herr" && t_pass libcuda-health-api ||
		t_fail libcuda-health-api "got '$got' (want 'closed open stale/1 refused error'): $h3 $(head -c 300 "$work/herr")"
else
	t_fail libcuda-health-api "could not build tests/libcuda/health-test.c: $(tail -3 "$work/err")"
fi
printf 'This is not an ELF file at all, just text longer than an ELF header would be.\n' >"$work/text.so"
bad non-elf 2 "Not an ELF file" "$abin" libcuda status --lib "$work/text.so"
head -c 3000 "$fx/590/libcuda.so.590.48.01" >"$work/trunc.so"
bad truncated 2 "truncated" "$abin" libcuda status --lib "$work/trunc.so"
head -c 10 "$fx/590/libcuda.so.590.48.01" >"$work/tiny.so"
bad tiny 2 "Too short" "$abin" libcuda status --lib "$work/tiny.so"
printf '.globl f\nf: ret\n' >"$work/f32.s"
if as --32 -o "$work/f32.o" "$work/f32.s" && ld -m elf_i386 -shared -o "$work/f32.so" "$work/f32.o"; then
	bad 32-bit 2 "Not a 64-bit ELF" "$abin" libcuda status --lib "$work/f32.so"
else
	t_fail libcuda-bad-32-bit "binutils could not build a 32-bit ELF"
fi
bad missing 2 "Unable to find" "$abin" libcuda status --lib "$work/nonexistent.so"
gcc -shared -fPIC -o "$work/nocuda.so" -x c - <<<'int cuInit(unsigned f) { return f; }'
bad no-export 2 "is not a libcuda: cuDeviceGetAttribute is not exported" "$abin" libcuda status --lib "$work/nocuda.so"
# a program is not an unsupported layout to report (T3-23)
bad not-libcuda 2 "/ls' is not a libcuda: cuDeviceGetAttribute is not exported" "$abin" libcuda status --lib /bin/ls
# Section headers are optional for the loader and for us: analysis must not change.
cp "$fx/590/libcuda.so.590.48.01" "$work/nosect.so"
printf '\0\0\0\0\0\0\0\0' | dd of="$work/nosect.so" bs=1 seek=40 conv=notrunc status=none
printf '\0\0\0\0' | dd of="$work/nosect.so" bs=1 seek=60 conv=notrunc status=none
if ! readelf -S "$work/nosect.so" 2>&1 | grep -q '\.text'; then
	d1=$("$abin" libcuda status --dump --lib "$fx/590/libcuda.so.590.48.01" 2>&1 | grep -E '^(field|store|rewrite|verdict)')
	d2=$("$abin" libcuda status --dump --lib "$work/nosect.so" 2>&1 | grep -E '^(field|store|rewrite|verdict)')
	[[ -n $d1 && $d1 == "$d2" ]] && t_pass libcuda-bad-stripped-sections ||
		t_fail libcuda-bad-stripped-sections "analysis differs without section headers"
else
	t_fail libcuda-bad-stripped-sections "could not strip the section headers"
fi
# The gate is already open: nothing to do (exit 0), nothing written, the original named.
ap=$work/already
mkdir -p "$ap"
"$abin" libcuda patch --lib "$work/out-590/libcuda.so.590.48.01" --out "$ap" >"$work/log" 2>&1
rc=$?
[[ $rc == 0 && -z $(ls -A "$ap") ]] && grep -q "^Nothing to do: .* is already patched (.*); no copy written to $ap" "$work/log" &&
	grep -q "patch the original library $fx/590/libcuda.so.590.48.01 " "$work/log" && ! grep -q Sanitizer "$work/log" &&
	t_pass libcuda-already-patched-copy || t_fail libcuda-already-patched-copy "rc $rc: $(head -c 400 "$work/log")"
js=$("$abin" libcuda patch --json --lib "$work/out-590/libcuda.so.590.48.01" --out "$ap" 2>"$work/err")
rc=$?
[[ $rc == 0 && $(jfield result <<<"$js") == already-patched && $(jfield verdict <<<"$js") == patched &&
	$(jfield output <<<"$js") == None && -z $(ls -A "$ap") ]] &&
	t_pass libcuda-already-patched-json || t_fail libcuda-already-patched-json "rc $rc: $js $(cat "$work/err")"
# patched by another tool, in place: nothing to do, no backup taken, the file untouched
fo=$work/foreign
mkdir -p "$fo"
cp "$work/out-590/libcuda.so.590.48.01" "$fo/"
before=$(sha "$fo/libcuda.so.590.48.01")
"$abin" libcuda patch --in-place --lib "$fo/libcuda.so.590.48.01" --state-dir "$fo-state" >"$work/log" 2>&1
rc=$?
[[ $rc == 0 && $(sha "$fo/libcuda.so.590.48.01") == "$before" && -z $(ls -A "$fo-state" 2>/dev/null) ]] &&
	grep -q "^Nothing to do: .* by another tool or by hand: .* so \`restore' cannot undo it" "$work/log" &&
	t_pass libcuda-already-patched-in-place-foreign ||
	t_fail libcuda-already-patched-in-place-foreign "rc $rc: $(head -c 400 "$work/log")"
bad bad-option 2 "Invalid argument" "$abin" libcuda status --frobnicate
bad bad-command 2 "Invalid libcuda command" "$abin" libcuda frob

src=$fx/big/libcuda.so.590.48.01
srcsha=$(sha "$src")
nothing_left() { [[ -z $(ls -A "$1") && $(sha "$src") == "$srcsha" ]]; }
ro=$work/ro
mkdir -p "$ro"
if mount -t tmpfs -o ro,size=1m nvs-ro "$ro"; then
	mounts+=("$ro")
	bad read-only-out 1 "Read-only file system" "$abin" libcuda patch --lib "$src" --out "$ro"
	nothing_left "$ro" && t_pass libcuda-read-only-nothing-left || t_fail libcuda-read-only-nothing-left "$(ls -A "$ro")"
else
	t_fail libcuda-bad-read-only-out "cannot mount a tmpfs (root needed)"
fi
full=$work/full
mkdir -p "$full"
if mount -t tmpfs -o size=2m nvs-full "$full"; then
	mounts+=("$full")
	bad disk-full 1 "No space left on device" "$abin" libcuda patch --lib "$src" --out "$full"
	nothing_left "$full" && t_pass libcuda-disk-full-nothing-left || t_fail libcuda-disk-full-nothing-left "$(ls -A "$full")"
else
	t_fail libcuda-bad-disk-full "cannot mount a tmpfs (root needed)"
fi
# SIGKILL while the copy is being written: nothing may appear under the final names.
kill9=$work/kill9
mkdir -p "$kill9"
NVS_TEST_WRITE_DELAY_MS=400 "$bin" libcuda patch --lib "$src" --out "$kill9" >/dev/null 2>&1 &
pid=$!
writing=0
for ((i = 0; i < 600; i++)); do
	if ls -l "/proc/$pid/fd" 2>/dev/null | grep -q "$kill9/"; then writing=1; break; fi
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.05
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
if ((writing)) && nothing_left "$kill9"; then
	t_pass libcuda-sigkill-mid-write
else
	t_fail libcuda-sigkill-mid-write "writing=$writing, left: $(ls -A "$kill9")"
fi
"$bin" libcuda patch --lib "$src" --out "$kill9" >/dev/null 2>&1 &&
	[[ $(ls "$kill9") == $'libcuda.so\nlibcuda.so.1\nlibcuda.so.590.48.01\nnvsidecar-libcuda.manifest' ]] &&
	t_pass libcuda-after-sigkill-clean-patch || t_fail libcuda-after-sigkill-clean-patch "$(ls -A "$kill9")"
# Sanitizers over the main paths too
for c in "status --lib $fx/615/libcuda.so.615.71.09" "verify --lib $work/out-615" "patch --lib $fx/computed/libcuda.so.555.42.02 --out $work/out-computed"; do
	# shellcheck disable=SC2086
	"$abin" libcuda $c >/dev/null 2>"$work/bad.err"
	grep -q Sanitizer "$work/bad.err" && { t_fail "libcuda-asan-${c%% *}" "$(head -c 400 "$work/bad.err")"; continue; }
	t_pass "libcuda-asan-${c%% *}"
done

# ---- bounded on any input ---------------------------------------------------
# Every input finishes in under 5 s and 256 MiB (issue 21): special files and
# files over the size limit are refused (exit 2) before they are read, and a
# library under the limit is hashed and copied a window at a time. Time is the
# command's CPU time (user + system, getrusage) where the work is real, since
# the wall clock depends on what else the machine runs; refusals are also held
# to 5 s of wall time.
measure() { python3 "$top/tests/libcuda/measure.py" 30 "$@"; }
bounded() {	# bounded NAME WANT_RC WALL_TOO CMD...
	local name=$1 want=$2 wall=$3 rc w cpu kib
	shift 3
	read -r rc w cpu kib < <(measure "$@")
	if [[ $rc == "$want" ]] && (( kib < 262144 )) &&
	   python3 -c 'import sys; w, c, wall = map(float, sys.argv[1:]); sys.exit(not (c < 5 and (not wall or w < 5)))' \
		"$w" "$cpu" "$wall"; then
		t_pass "$name"
	else
		t_fail "$name" "rc $rc (want $want), ${w} s wall, ${cpu} s CPU, max RSS ${kib} KiB (limits: 5 s, 262144 KiB)"
	fi
	echo "$name: rc $rc, ${w} s wall, ${cpu} s CPU, max RSS ${kib} KiB" >>"$NVS_BUILD/libcuda-bounded.txt"
}
: >"$NVS_BUILD/libcuda-bounded.txt"
mkdir -p "$work/giant"
truncate -s 4G "$work/giant/libcuda.so.615.71.09"
bounded libcuda-bounded-sparse-4g 2 1 "$bin" libcuda status --lib "$work/giant/libcuda.so.615.71.09"
"$bin" libcuda status --lib "$work/giant/libcuda.so.615.71.09" >/dev/null 2>"$work/err"
grep -q '256 MiB' "$work/err" && t_pass libcuda-size-limit-said || t_fail libcuda-size-limit-said "$(cat "$work/err")"
bounded libcuda-bounded-dev-zero 2 1 "$bin" libcuda status --lib /dev/zero
bounded libcuda-bounded-patch-dev-zero 2 1 "$bin" libcuda patch --lib /dev/zero --out "$work/giant-out"
mkfifo "$work/giant/fifo"
bounded libcuda-bounded-fifo 2 1 "$bin" libcuda status --lib "$work/giant/fifo"
rm -f "$work/giant/libcuda.so.615.71.09" "$work/giant/fifo"
# a real-shaped library padded with a 250 MiB hole: analysed, patched, re-checked
cp "$fx/615/libcuda.so.615.71.09" "$work/giant/"
truncate -s 250M "$work/giant/libcuda.so.615.71.09"
bounded libcuda-bounded-sparse-250m-status 0 0 "$bin" libcuda status --lib "$work/giant/libcuda.so.615.71.09"
bounded libcuda-bounded-sparse-250m-patch 0 0 "$bin" libcuda patch --lib "$work/giant/libcuda.so.615.71.09" --out "$work/giant-out"
kib=$(du -k "$work/giant-out/libcuda.so.615.71.09" 2>/dev/null | cut -f1)
[[ -n $kib && $kib -lt 65536 && $(stat -c %s "$work/giant-out/libcuda.so.615.71.09") == $((250 << 20)) ]] &&
	t_pass libcuda-copy-stays-sparse ||
	t_fail libcuda-copy-stays-sparse "the 250 MiB copy takes ${kib:-?} KiB on disk ($(stat -c %s "$work/giant-out/libcuda.so.615.71.09" 2>&1) bytes)"
# verify loads the library in a child (dlopen): the same rule before it,
# since dlopen of a FIFO blocks in open() and a giant is no libcuda
mkfifo "$work/giant/fifo"
truncate -s 300M "$work/giant/huge.so"
bounded libcuda-bounded-verify-fifo 2 1 "$bin" libcuda verify --lib "$work/giant/fifo"
bounded libcuda-bounded-verify-huge 2 1 "$bin" libcuda verify --lib "$work/giant/huge.so"
"$bin" libcuda verify --lib "$work/giant/huge.so" >/dev/null 2>"$work/err"
grep -q '256 MiB' "$work/err" && t_pass libcuda-verify-size-limit-said || t_fail libcuda-verify-size-limit-said "$(cat "$work/err")"
# verify's child has a time limit (T3-12): a cuInit that never returns, as on a
# wedged GPU, is killed after NVS_TEST_VERIFY_TIMEOUT_S (120 s without it), exit 1
mkdir -p "$work/stuck"
if gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$work/stuck/libcuda.so.1" -x c - <<'EOF'
#include <unistd.h>
int cuInit(unsigned int f) { (void)f; for (;;) pause(); }
int cuDeviceGet(int *d, int o) { *d = o; return 0; }
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
EOF
then
	s0=$SECONDS
	NVS_TEST_VERIFY_TIMEOUT_S=2 timeout 60 "$abin" libcuda verify --lib "$work/stuck/libcuda.so.1" >"$work/out" 2>"$work/err"
	rc=$? s1=$((SECONDS - s0))
	[[ $rc == 1 && $s1 -lt 20 ]] && grep -q 'timed out after 2 s and was killed' "$work/err" &&
		! grep -q Sanitizer "$work/err" && t_pass libcuda-verify-timeout ||
		t_fail libcuda-verify-timeout "rc $rc after ${s1}s: $(head -c 300 "$work/err")"
	NVS_TEST_VERIFY_TIMEOUT_S=2 timeout 60 "$abin" libcuda verify --json --lib "$work/stuck/libcuda.so.1" >"$work/out" 2>/dev/null
	rc=$?
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] is False and d["exit"] == 1 and "timed out" in d["error"], d' \
		"$work/out" 2>"$work/err" && [[ $rc == 1 ]] && t_pass libcuda-verify-timeout-json ||
		t_fail libcuda-verify-timeout-json "rc $rc: $(head -c 300 "$work/err" "$work/out")"
else
	t_fail libcuda-verify-timeout "gcc could not build the stuck libcuda"
fi
rm -rf "$work/giant" "$work/giant-out"

# ---- re-check what is written ---------------------------------------------
# NVS_TEST_LIBCUDA_DROP_REWRITE=N leaves rewrite N out of what is written (a
# wrong write, as a plan that does not do what it claims would be): the image
# read back is not patched, so nothing may be left under a final name.
src615=$fx/615/libcuda.so.615.71.09
rk=$work/recheck
mkdir -p "$rk/out"
NVS_TEST_LIBCUDA_DROP_REWRITE=0 "$bin" libcuda patch --lib "$src615" --out "$rk/out" >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 2 && -z $(ls -A "$rk/out") ]] && grep -q 'does not analyse as patched' "$work/err" &&
	t_pass libcuda-recheck-copy-nothing-published ||
	t_fail libcuda-recheck-copy-nothing-published "rc $rc, left: $(ls -A "$rk/out" | tr '\n' ' '), $(cat "$work/err")"
cp "$src615" "$rk/"
before=$(sha "$rk/libcuda.so.615.71.09")
NVS_TEST_LIBCUDA_DROP_REWRITE=1 "$bin" libcuda patch --in-place --lib "$rk/libcuda.so.615.71.09" \
	--state-dir "$rk/state" >/dev/null 2>"$work/err"
rc=$?
left=$(ls -A "$rk" | grep -v -x -e out -e state -e libcuda.so.615.71.09)
[[ $rc == 2 && $(sha "$rk/libcuda.so.615.71.09") == "$before" && -z $left &&
   -z $(ls "$rk/state" 2>/dev/null | grep -v '^backup-') ]] && grep -q 'unchanged' "$work/err" &&
	t_pass libcuda-recheck-in-place-unchanged ||
	t_fail libcuda-recheck-in-place-unchanged "rc $rc, $(ls -A "$rk" "$rk/state" 2>&1 | tr '\n' ' '), $(cat "$work/err")"
rm -rf "$rk"

# ---- the real NVIDIA binaries: every driver branch Debian carries ----------
# Builds come from Debian's archive through a private apt configuration
# (tests/libcuda/archive.sh; the system's apt setup is never touched) and are
# cached outside the clone. Each row of tests/libcuda/real-builds.tsv was read
# by hand with objdump; the analysis must match it byte for byte. A pinned
# build the archive dropped is skipped with the reason; a branch with no build
# left at all fails. The newest build of each branch that has no row yet is
# put through the same life cycle without the table comparison.
if [[ ${NVS_LIBCUDA_REAL:-1} == 0 ]]; then
	t_skip libcuda-real "NVS_LIBCUDA_REAL=0: the real builds and their mutants were not run"
	exit 0
fi
. "$top/tests/libcuda/archive.sh"
table=$top/tests/libcuda/real-builds.tsv
timings=$NVS_BUILD/libcuda-real-times.txt
: >"$timings"
declare -A tested=() branches=()
real_libs=()

# real_build NAME LIB BRANCH PINNED: status against the table, patch, the
# patched copy's status, in place and restore, and the library run with no
# driver. PINNED=1 when a table row exists for LIB.
real_build() {
	local name=$1 lib=$2 branch=$3 pinned=$4 js rc v copy ip diffs want sha
	sha=$(sha "$lib")
	js=$("$bin" libcuda status --json --lib "$lib" 2>"$work/err")
	rc=$?
	v=$(jfield verdict <<<"$js" 2>/dev/null)
	echo "$name $(jfield driver_version <<<"$js" 2>/dev/null) $v analysis $(jfield analysis_seconds <<<"$js" 2>/dev/null) s" |
		tee -a "$timings"
	tested[$branch]=$((${tested[$branch]:-0} + 1))
	if ((pinned)); then
		if out=$(python3 "$top/tests/libcuda/realcheck.py" "$table" "$sha" <<<"$js"); then
			t_pass "$name-hand-read-table"
		else
			t_fail "$name-hand-read-table" "$(tr '\n' ';' <<<"$out")"
		fi
	fi
	if [[ $v == unsupported-layout ]]; then
		mkdir -p "$work/$name-refused"
		"$bin" libcuda patch --lib "$lib" --out "$work/$name-refused" >/dev/null 2>"$work/err"
		[[ $rc == 2 && $? == 2 && -z $(ls -A "$work/$name-refused") ]] && t_pass "$name-refused" ||
			t_fail "$name-refused" "status rc $rc, patch wrote $(ls -A "$work/$name-refused")"
		((pinned)) || t_skip "$name-hand-read-table" "not in tests/libcuda/real-builds.tsv and refused ($(jfield reason <<<"$js")); read it with tests/libcuda/handread.sh and add a row"
		return
	fi
	if [[ $rc != 0 || $v != unpatched ]]; then
		t_fail "$name-status" "rc $rc, verdict $v: $(head -c 300 "$work/err")"
		return
	fi
	((pinned)) || t_skip "$name-hand-read-table" "not in tests/libcuda/real-builds.tsv yet; read it with tests/libcuda/handread.sh and add a row"
	real_libs+=("$lib")
	copy=$work/$name-copy
	mkdir -p "$copy"
	if "$bin" libcuda patch --lib "$lib" --out "$copy" >/dev/null 2>"$work/err"; then
		want=$(python3 -c 'import json,sys
n = 0
for r in json.load(sys.stdin)["rewrites"]:
    o, w = bytes.fromhex(r["old"]), bytes.fromhex(r["new"])
    n += sum(a != b for a, b in zip(o, w))
print(n)' <<<"$js")
		diffs=$(cmp -l "$lib" "$copy/$(basename "$lib")" | wc -l)
		js=$("$bin" libcuda status --json --lib "$copy/libcuda.so.1" 2>"$work/err")
		[[ $(jfield verdict <<<"$js") == patched && $diffs == "$want" && $want -gt 0 ]] &&
			t_pass "$name-patched-copy" ||
			t_fail "$name-patched-copy" "copy verdict $(jfield verdict <<<"$js"), $diffs bytes differ (plan: $want)"
	else
		t_fail "$name-patched-copy" "$(cat "$work/err")"
	fi
	ip=$work/$name-inplace
	mkdir -p "$ip"
	cp "$lib" "$ip/"
	"$bin" libcuda patch --in-place --lib "$ip/$(basename "$lib")" --state-dir "$work/$name-state" >/dev/null 2>"$work/err" &&
		[[ $("$bin" libcuda status --dump --lib "$ip/$(basename "$lib")" --state-dir "$work/$name-state" 2>/dev/null | field verdict) == patched ]] &&
		"$bin" libcuda restore --lib "$ip/$(basename "$lib")" --state-dir "$work/$name-state" >/dev/null 2>>"$work/err" &&
		[[ $(sha "$ip/$(basename "$lib")") == "$sha" ]] && t_pass "$name-in-place-restore" ||
		t_fail "$name-in-place-restore" "$(tail -c 300 "$work/err")"
	rm -rf "$ip"
	# The real library must fail cleanly in the child when there is no GPU. It is
	# run under an empty private /dev: as root, libcuda creates /dev/nvidia* itself.
	if ! unshare --mount --propagation private true 2>/dev/null; then
		t_skip "$name-verify-no-driver" "unshare cannot make a private mount namespace here"
		return
	fi
	unshare --mount --propagation private sh -c 'mount -t tmpfs nvs-empty-dev /dev && exec "$@"' sh \
		"$bin" libcuda verify --lib "$copy" >"$work/v.out" 2>"$work/v.err"
	rc=$?
	[[ $rc == 3 ]] && grep -q 'cuInit failed' "$work/v.err" && t_pass "$name-verify-no-driver" ||
		t_fail "$name-verify-no-driver" "rc $rc: $(cat "$work/v.err")"
}

if ! lc_archive_update; then
	t_fail libcuda-real-archive "apt-get update through the private sources list ($lc_apt) failed and no earlier lists are cached: $(tail -2 "$lc_log" | tr '\n' ' ')"
else
	lc_archive_list >"$work/archive.txt"
	declare -A pinned_deb=()
	# pinned rows first: one available .deb per row
	while IFS=$'\t' read -r -u 3 branch ver libsha _ _ _ _ _ _ debs; do
		[[ $branch == \#* || -z $branch ]] && continue
		branches[$branch]=1
		lib= tried=
		for d in ${debs//,/ }; do
			pkg=${d%%=*} pv=${d#*=} pv=${pv%@*} dsha=${d##*@}
			pinned_deb[$dsha]=1
			[[ -n $lib ]] && continue
			if grep -q " $dsha\$" "$work/archive.txt" || [[ -f $lc_cache/debs/${pkg}_${pv}_amd64.deb ]]; then
				lib=$(lc_archive_fetch "$pkg" "$pv" "$dsha") || { lib=; tried="$tried $pkg=$pv (download failed)"; }
			else
				tried="$tried $pkg=$pv (not in the archive)"
			fi
		done
		if [[ -z $lib ]]; then
			t_skip "libcuda-real-$ver" "Debian no longer carries it:$tried"
			continue
		fi
		if [[ $(sha "$lib") != "$libsha" ]]; then
			t_fail "libcuda-real-$ver" "$lib has sha256 $(sha "$lib"), the table row says $libsha"
			continue
		fi
		real_build "libcuda-real-$ver" "$lib" "$branch" 1
	done 3<"$table"
	# the newest build of every branch in the archive, when no row pins it
	declare -A newest=()
	while read -r pkg pv dsha; do
		b=${pv#*:} b=${b%%.*}
		branches[$b]=1
		cur=${newest[$b]:-}
		if [[ -z $cur ]] || dpkg --compare-versions "$pv" gt "$(cut -d' ' -f2 <<<"$cur")"; then
			newest[$b]="$pkg $pv $dsha"
		fi
	done <"$work/archive.txt"
	for b in "${!newest[@]}"; do
		read -r pkg pv dsha <<<"${newest[$b]}"
		[[ -n ${pinned_deb[$dsha]:-} ]] && continue
		if ! lib=$(lc_archive_fetch "$pkg" "$pv" "$dsha"); then
			t_fail "libcuda-real-$pkg-$pv" "download failed: $(tail -2 "$lc_log" | tr '\n' ' ')"
			continue
		fi
		grep -q "$(sha "$lib")" "$table" && pin=1 || pin=0
		real_build "libcuda-real-$pkg-$pv" "$lib" "$b" "$pin"
	done
	for b in $(printf '%s\n' "${!branches[@]}" | sort -n); do
		((${tested[$b]:-0})) && t_pass "libcuda-real-branch-$b" ||
			t_fail "libcuda-real-branch-$b" "no build of the $b branch could be found (archive or cache)"
	done
	# ---- mutation tests on the real builds --------------------------------
	if ((${#real_libs[@]})); then
		full=() rest=()
		for l in "${real_libs[@]}"; do
			# every store of the build with the read-modify-write initialiser; the
			# stores near the initialisers and the computed store in the others
			case $l in *libcuda.so.525.*) full+=("$l") ;; *) rest+=("$l") ;; esac
		done
		t0=$SECONDS
		{ ((${#full[@]})) && python3 "$top/tests/libcuda/mutate.py" --all-sites "$bin" "$table" "${full[@]}"
		  ((${#rest[@]})) && python3 "$top/tests/libcuda/mutate.py" "$bin" "$table" "${rest[@]}"; } >"$work/mutate.log" 2>&1
		grep -E ' (wrong|error|WRONG) |^mutants|^class' "$work/mutate.log" | tee -a "$timings"
		sums=$(awk '/^mutants/ { n += $2; r += $4; c += $7; w += $10; e += $12 } END { print n, r, c, w, e }' "$work/mutate.log" | tr -d ,)
		read -r mn mr mc mw me <<<"$sums"
		echo "mutants $mn: refused $mr, planned correctly $mc, planned wrongly $mw, errors $me ($((SECONDS - t0)) s)" | tee -a "$timings"
		[[ ${mn:-0} -gt 0 && $mw == 0 && $me == 0 ]] && ! grep -q WRONG "$work/mutate.log" &&
			t_pass libcuda-real-mutants || t_fail libcuda-real-mutants "$(grep -E ' (wrong|error|WRONG) ' "$work/mutate.log" | head -5 | tr '\n' ';')"
	fi
fi
