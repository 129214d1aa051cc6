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

[[ -x $bin ]] || { t_fail libcuda-binary "no helper at $bin (run make user)"; exit 0; }

# ---- fixtures -------------------------------------------------------------
fx=$work/fx
build() {	# build NAME VERSION CPPFLAGS...
	local name=$1 ver=$2
	shift 2
	mkdir -p "$fx/$name"
	gcc -shared -fPIC -O2 -Wall -Werror "$@" -Wl,-soname,libcuda.so.1 \
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
	v1=$("$bin" libcuda verify --json --lib "$out"); rc1=$?
	local a b=""
	for a in 110 116 124; do
		b="$b $a:$(attr "$v0" $a)->$(attr "$v1" $a)"
	done
	if [[ $rc0 == 6 && $rc1 == 0 && $b == " 110:0->1 116:0->1 124:0->1" ]] &&
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
[[ $rc == 7 && $(verdict) == unsupported-layout && $(field reason <<<"$dump") == *Ambiguous* ]] &&
	t_pass libcuda-ambiguous-refused || t_fail libcuda-ambiguous-refused "rc $rc: $(field reason <<<"$dump")"
status "$fx/unprovable/libcuda.so.555.42.05"
[[ $rc == 7 && $(verdict) == unsupported-layout && $(field reason <<<"$dump") == *"no proven same-length rewrite"* ]] &&
	t_pass libcuda-unprovable-refused || t_fail libcuda-unprovable-refused "rc $rc: $(field reason <<<"$dump")"
before=$(sha "$fx/unprovable/libcuda.so.555.42.05")
"$bin" libcuda patch --lib "$fx/unprovable/libcuda.so.555.42.05" --out "$work" >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 7 && ! -e $work/libcuda.so.555.42.05 && $(sha "$fx/unprovable/libcuda.so.555.42.05") == "$before" ]] &&
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
"$bin" libcuda restore --lib "$ip/libcuda.so.590.48.01" >/dev/null 2>"$work/err"
[[ $? == 1 ]] && grep -q 'nothing to restore' "$work/err" && t_pass libcuda-restore-twice-refused ||
	t_fail libcuda-restore-twice-refused "$(cat "$work/err")"
"$bin" libcuda patch --lib "$ip/libcuda.so.590.48.01" >/dev/null 2>"$work/err"
[[ $? == 2 ]] && grep -q 'exactly one of --out' "$work/err" && t_pass libcuda-patch-needs-out ||
	t_fail libcuda-patch-needs-out "$(cat "$work/err")"

# ---- bad input, under AddressSanitizer ------------------------------------
asan=$NVS_BUILD/asan-libcuda
if make -C "$top/user" O="$asan" ASAN=1 -j2 >"$work/asan.log" 2>&1; then
	abin=$asan/nvsidecar
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=98
else
	t_fail libcuda-asan-build "$(tail -3 "$work/asan.log")"
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
bad no-export 7 "cuDeviceGetAttribute is not exported" "$abin" libcuda status --lib "$work/nocuda.so"
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
bad already-patched 7 "already patched" "$abin" libcuda patch --lib "$work/out-590/libcuda.so.590.48.01" --out "$work"
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

# ---- the real NVIDIA binaries (Debian non-free libcuda1) -------------------
cache=$NVS_BUILD/libcuda-debs
apt_dir=$cache/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
cat >"$apt_dir/sources.list" <<'SRC'
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm non-free
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-backports non-free
SRC
aptopts=(-o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
	 -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache"
	 -o APT::Architecture=amd64 -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
fetch() {	# fetch VERSION -> path of the extracted libcuda
	local ver=$1 deb lib
	lib=$cache/x-$ver/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.${ver%%-*}
	[[ -f $lib ]] && { echo "$lib"; return 0; }
	deb=$(ls "$cache"/libcuda1_"${ver/\~/%7e}"_amd64.deb "$cache"/libcuda1_"$ver"_amd64.deb 2>/dev/null | head -1)
	if [[ -z $deb ]]; then
		if [[ ! -f $apt_dir/updated ]]; then
			apt-get "${aptopts[@]}" -q update >"$work/apt.log" 2>&1 || return 1
			touch "$apt_dir/updated"
		fi
		(cd "$cache" && apt-get "${aptopts[@]}" -q download "libcuda1=$ver") >>"$work/apt.log" 2>&1 || return 1
		deb=$(ls "$cache"/libcuda1_*"${ver%%-*}"*_amd64.deb | head -1)
	fi
	rm -rf "$cache/x-$ver"
	dpkg -x "$deb" "$cache/x-$ver" && [[ -f $lib ]] && echo "$lib"
}
real() {	# real VERSION BRANCH116 INITSITE OR40 ORC0 COMPUTED_AND
	local ver=$1 b116=$2 init=$3 or40=$4 orc0=$5 cand=$6 lib name copy
	name=libcuda-real-${ver%%-*}
	if ! lib=$(fetch "$ver"); then
		t_fail "$name-download" "apt-get download libcuda1=$ver through the private sources list failed: $(tail -2 "$work/apt.log" | tr '\n' ' ')"
		return
	fi
	t_pass "$name-download"
	"$bin" libcuda status --lib "$lib" >"$work/$name.txt" 2>&1
	status "$lib"
	echo "---- $name: status"; cat "$work/$name.txt"
	local fails=()
	[[ $rc == 0 ]] || fails+=("exit $rc")
	[[ $(verdict) == unpatched ]] || fails+=("verdict $(verdict)")
	[[ $(field field <<<"$dump") == 0x3684 && $(field mask <<<"$dump") == 0x20 ]] || fails+=("capability $(field field <<<"$dump")/$(field mask <<<"$dump")")
	[[ $(field branch116 <<<"$dump") == "$b116" ]] || fails+=("branch116 $(field branch116 <<<"$dump")")
	[[ $(field global <<<"$dump") != 0x0 ]] || fails+=("no global GDR byte")
	grep -qP "^rewrite\t$or40\tor edx, 0x40\tor edx, 0x60$" <<<"$dump" || fails+=("no or \$0x40 rewrite at $or40")
	grep -qP "^rewrite\t$orc0\tor eax, 0xffffffc0\tor eax, 0xffffffe0$" <<<"$dump" || fails+=("no or \$0xc0 rewrite at $orc0")
	grep -qP "^rewrite\t$cand\tand eax, 0xffffffdf\tor eax, 0x20$" <<<"$dump" || fails+=("no computed-store rewrite at $cand")
	[[ $(grep -c '^rewrite' <<<"$dump") == 3 ]] || fails+=("$(grep -c '^rewrite' <<<"$dump") rewrites")
	grep -q "known-versions table: matches" "$work/$name.txt" || fails+=("known table cross-check")
	((${#fails[@]})) && t_fail "$name-status" "${fails[*]}" || t_pass "$name-status"
	copy=$work/$name-copy
	mkdir -p "$copy"
	if "$bin" libcuda patch --lib "$lib" --out "$copy" >/dev/null 2>"$work/err"; then
		local diffs
		diffs=$(cmp -l "$lib" "$copy/libcuda.so.${ver%%-*}" | wc -l)
		status "$copy/libcuda.so.1"
		[[ $(verdict) == patched && $diffs == 4 ]] && t_pass "$name-patched-copy" ||
			t_fail "$name-patched-copy" "verdict $(verdict), $diffs bytes differ (want 4)"
		echo "---- $name: status of the patched copy"
		"$bin" libcuda status --lib "$copy/libcuda.so.1" | tail -4
	else
		t_fail "$name-patched-copy" "$(cat "$work/err")"
	fi
	# The real library must fail cleanly in the child when there is no GPU. It is
	# run under an empty private /dev: as root, libcuda creates /dev/nvidia* itself.
	if ! unshare --mount --propagation private true 2>/dev/null; then
		t_skip "$name-verify-no-driver" "unshare cannot make a private mount namespace here"
		return
	fi
	unshare --mount --propagation private sh -c 'mount -t tmpfs nvs-empty-dev /dev && exec "$@"' sh \
		"$bin" libcuda verify --lib "$copy" >"$work/v.out" 2>"$work/v.err"
	rc=$?
	if [[ $rc == 3 ]] && grep -q 'cuInit failed' "$work/v.err"; then
		t_pass "$name-verify-no-driver"
	else
		t_fail "$name-verify-no-driver" "rc $rc: $(cat "$work/v.err")"
	fi
}
real 535.261.03-1 0x213547 0x42d410 0x42d419 0x42d43e 0x3cd99a
real 535.216.03-2~bpo12+1 0x2135a7 0x42d620 0x42d629 0x42d64e 0x3cd9da
