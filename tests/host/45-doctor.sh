#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# nvsidecar doctor on this host, where the module is not loaded: the module
# layer fails with the modprobe hint (exit 1), the topology layer reports
# the crafted 5090 dump's warnings in text and JSON, --strict, bad
# arguments (exit 2), --patched on a missing or foreign directory, and a
# patched fake libcuda that is current (OK) and then stale (FAIL). A few
# cases run again under ASan/UBSan. The guest half is tests/vm/t-doctor.sh.
set -u
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

top=$NVS_TOP
bld=$NVS_BUILD/doctor-u
asan=$NVS_BUILD/doctor-asan
dump=$top/tests/topo/5090-switch.dump
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export NVS_NVIDIA_VERSION_FILE=$work/no-driver NVS_LIBCUDA_STATE=$work/state
unset LD_LIBRARY_PATH NO_COLOR

if ! make -s -C "$top/user" O="$bld" -j2 >"$work/build" 2>&1; then
	t_fail doctor-build "$(tail -5 "$work/build" | tr '\n' ' ')"
	exit 0
fi
t_pass doctor-build
bin=$bld/nvsidecar

if [[ -d /sys/module/nvsidecar ]]; then
	t_skip doctor-no-module "the nvsidecar module is loaded on this host; the guest test covers it"
else
	"$bin" doctor >"$work/out" 2>&1
	rc=$?
	[[ $rc == 1 ]] && grep -q '^FAIL module   module-loaded' "$work/out" && grep -q 'modprobe nvsidecar' "$work/out" &&
		grep -q 'dkms status nvsidecar' "$work/out" && grep -q '^SKIP gpu' "$work/out" &&
		grep -q 'UNHEALTHY$' "$work/out" && t_pass doctor-no-module ||
		t_fail doctor-no-module "rc $rc: $(head -4 "$work/out" | tr '\n' ' ')"
fi

# Pipes are not terminals: no escape codes, whatever NO_COLOR says.
grep -q $'\e' "$work/out" && t_fail doctor-no-colour "escape codes in piped output" || t_pass doctor-no-colour

"$bin" doctor --pci-dump "$dump" >"$work/out" 2>&1
rc=$?
miss=
for id in rebar-small acs-redirect link-degraded; do
	grep -q "^WARN topology topo-$id@" "$work/out" || miss+=" $id"
done
[[ -z $miss && $rc == 1 ]] && grep -q 'fix: .*setpci' "$work/out" && t_pass doctor-topo-human ||
	t_fail doctor-topo-human "rc $rc, missing:$miss"

"$bin" doctor --pci-dump "$dump" --json >"$work/json" 2>"$work/err"
rc=$?
if ! "$py" -m json.tool "$work/json" >/dev/null 2>&1; then
	t_fail doctor-topo-json "not JSON: $(head -c 200 "$work/json")"
else
	got=$("$py" - "$work/json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
c = d["checks"]
w = sorted({x["name"].split("@")[0] for x in c if x["layer"] == "topology" and x["result"] == "WARN"})
mod = [x["result"] for x in c if x["name"] == "module-loaded"]
fixes = all(x["fix"] for x in c if x["result"] in ("WARN", "FAIL"))
n = d["counts"]
print(",".join(w), mod, fixes, d["healthy"], n["warn"] == sum(x["result"] == "WARN" for x in c))
EOF
	)
	want="topo-acs-redirect,topo-link-degraded,topo-rebar-small ['FAIL'] True False True"
	[[ $rc == 1 && $got == "$want" ]] && t_pass doctor-topo-json || t_fail doctor-topo-json "rc $rc: $got"
fi

# --strict: without the module every run here has a FAIL, so only the flag
# and verdict are checked here; tests/vm/t-doctor.sh checks that --strict
# alone turns a warnings-only run (exit 0) into exit 1.
"$bin" doctor --strict --pci-dump "$dump" --json >"$work/sjson" 2>/dev/null
rc=$?
s=$("$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["strict"], d["healthy"])' "$work/sjson" 2>&1)
[[ $rc == 1 && $s == "True False" ]] && t_pass doctor-strict-json || t_fail doctor-strict-json "rc $rc: $s"

# bad arguments: exit 2 with a message, nothing on stdout
bad() {
	local name=$1 want=$2 out err rc
	shift 2
	out=$("$bin" doctor "$@" 2>"$work/err")
	rc=$?
	[[ $rc == 2 && -z $out ]] && grep -q "$want" "$work/err" && t_pass "doctor-bad-$name" ||
		t_fail "doctor-bad-$name" "rc $rc: $(head -2 "$work/err" | tr '\n' ' ')"
}
bad option 'Invalid argument: `--frobnicate' --frobnicate
bad gpu-ids 'Invalid --gpu-ids' --gpu-ids nonsense
bad missing-value 'Missing value for `--patched' --patched
bad empty-patched 'empty directory name' --patched ''
"$bin" doctor --help >"$work/help"
[[ $? == 0 ]] && grep -q -- '--strict' "$work/help" && grep -q 'Exit status: 0' "$work/help" &&
	grep -q 'HealthCheckProgram' "$work/help" && t_pass doctor-help || t_fail doctor-help "$(head -3 "$work/help")"

# A missing dump is a failed topology check, the other layers still run.
"$bin" doctor --pci-dump "$work/nope.dump" >"$work/out" 2>&1
rc=$?
[[ $rc == 1 ]] && grep -q '^FAIL topology topo-scan' "$work/out" && grep -q '^SKIP libcuda' "$work/out" &&
	t_pass doctor-missing-dump || t_fail doctor-missing-dump "rc $rc: $(grep topology "$work/out")"

# --patched on a directory that does not exist, and on one that is not a patch output
"$bin" doctor --patched "$work/nonexistent" >"$work/out" 2>&1
rc=$?
[[ $rc == 1 ]] && grep -q "^FAIL libcuda  libcuda: Unable to use --patched \`$work/nonexistent': No such file or directory" "$work/out" &&
	grep -q 'fix: .*libcuda patch --out' "$work/out" && t_pass doctor-patched-missing ||
	t_fail doctor-patched-missing "rc $rc: $(grep libcuda "$work/out")"
mkdir "$work/empty"
"$bin" doctor --patched "$work/empty" >"$work/out" 2>&1
grep -q "^FAIL libcuda  libcuda: Unable to read .*nvsidecar-libcuda.manifest.*not a \`libcuda patch --out' directory" "$work/out" &&
	t_pass doctor-patched-foreign || t_fail doctor-patched-foreign "$(grep libcuda "$work/out")"

# A real patch output of a fake libcuda (tests/libcuda/), current then stale.
fx=$work/fx
mkdir -p "$fx" "$work/patched"
if gcc -shared -fPIC -O2 -DSHAPE_615 -DINIT_COPY=2 -Wl,-soname,libcuda.so.1 -o "$fx/libcuda.so.615.71.09" \
	"$top/tests/libcuda/fake_gate.S" "$top/tests/libcuda/fake_driver.c" 2>"$work/err" &&
	"$bin" libcuda patch --lib "$fx/libcuda.so.615.71.09" --out "$work/patched" >"$work/log" 2>&1; then
	echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  615.71.09  Thu Jan  1 00:00:00 UTC 2026" >"$work/version"
	NVS_NVIDIA_VERSION_FILE=$work/version "$bin" doctor --patched "$work/patched" >"$work/out" 2>&1
	grep -q "^OK   libcuda  libcuda: patched copy in $work/patched is current" "$work/out" &&
		t_pass doctor-patched-current || t_fail doctor-patched-current "$(grep libcuda "$work/out")"
	echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  620.10.02  Thu Jan  1 00:00:00 UTC 2026" >"$work/version"
	NVS_NVIDIA_VERSION_FILE=$work/version "$bin" doctor --patched "$work/patched" --json >"$work/json" 2>&1
	rc=$?
	got=$("$py" -c '
import json, sys
c = [x for x in json.load(open(sys.argv[1]))["checks"] if x["layer"] == "libcuda"][0]
print(c["result"], "stale" in c["message"], "re-run nvsidecar libcuda patch" in c["fix"].lower())' "$work/json" 2>&1)
	[[ $rc == 1 && $got == "FAIL True True" ]] && t_pass doctor-patched-stale || t_fail doctor-patched-stale "rc $rc: $got"
else
	t_fail doctor-patched-fixture "could not build or patch the fake libcuda: $(cat "$work/err" "$work/log" 2>/dev/null | tail -n 2 | tr '\n' ' ')"
fi

# ASan/UBSan: the same paths (fork/exec child included) must be clean.
if ! make -s -C "$top/user" O="$asan" ASAN=1 -j2 >"$work/build" 2>&1; then
	t_fail doctor-asan-build "$(tail -5 "$work/build" | tr '\n' ' ')"
	exit 0
fi
export ASAN_OPTIONS=detect_leaks=1:exitcode=99 UBSAN_OPTIONS=halt_on_error=1:exitcode=98
bad=
for args in "" "--pci-dump $dump --json" "--pci-dump $dump --strict" "--patched $work/nonexistent" \
	"--patched $work/patched" "--bogus"; do
	# shellcheck disable=SC2086
	NVS_NVIDIA_VERSION_FILE=$work/version "$asan/nvsidecar" doctor $args >/dev/null 2>"$work/err"
	rc=$?
	[[ $rc == 98 || $rc == 99 ]] || grep -q 'Sanitizer' "$work/err" && bad+=" [$args] rc $rc"
done
[[ -z $bad ]] && t_pass doctor-asan || t_fail doctor-asan "$bad"
