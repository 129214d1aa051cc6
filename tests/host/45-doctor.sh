#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# nvsidecar doctor on this host, where the module is not loaded: the module
# layer fails with the modprobe hint (exit 1), the topology layer reports
# the crafted 5090 dump's warnings in text and JSON, --strict, bad
# arguments (exit 2), --patched on a missing or foreign directory, and a
# patched fake libcuda that is current (OK) and then stale (FAIL). Then
# what is new with the node's verdict: doctor.conf and the options that
# share its keys, --brief, --quick, expect-gpus with no GPU, the module's
# installation in a tree under NVS_DOCTOR_ROOT (modules.dep, Secure Boot,
# DKMS, initramfs images built with cpio and gzip/zstd/xz around a real
# .modinfo section), the driver layer with a fake NVML and the fake
# libcuda, --full, the textfile (promtool check metrics), and the NHC check
# file. A few cases run again under ASan/UBSan. The guest halves are
# tests/vm/t-doctor.sh, t-slurm.sh and t-prometheus.sh.
set -u
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

top=$NVS_TOP
bld=$NVS_BUILD/doctor-u
asan=$NVS_ASAN
dump=$top/tests/topo/5090-switch.dump
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# An empty tree: no /boot, /lib/modules or DKMS state of this host counts.
mkdir -p "$work/noroot"
export NVS_NVIDIA_VERSION_FILE=$work/no-driver NVS_LIBCUDA_STATE=$work/state NVS_DOCTOR_ROOT=$work/noroot
unset LD_LIBRARY_PATH NO_COLOR

if ! make -s -C "$top/user" O="$bld" WERROR=1 -j2 >"$work/build" 2>&1; then
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
		grep -q 'dkms status nvsidecar' "$work/out" && grep -q '^SKIP gpu      gpus' "$work/out" &&
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
	out=$(timeout 20 "$bin" doctor "$@" 2>"$work/err")
	rc=$?
	[[ $rc == 2 && -z $out ]] && grep -q "$want" "$work/err" && t_pass "doctor-bad-$name" ||
		t_fail "doctor-bad-$name" "rc $rc: $(head -2 "$work/err" | tr '\n' ' ')"
}
bad option 'Invalid argument: `--frobnicate' --frobnicate
bad limit 'Invalid --limit `hotspot' --limit hotspot
bad limit-range 'Invalid --limit `hotspot:300' --limit hotspot:300
bad expect 'Invalid --expect-gpus `x' --expect-gpus x
bad driver-version 'Invalid --driver-version `latest' --driver-version latest
bad modes 'exclude each other' --quick --full
bad config-missing "Unable to read $work/nope.conf" --config "$work/nope.conf"
mkdir -p "$work/conf.d"	# a directory reads as empty through stdio: not a configuration
bad config-dir "Unable to read $work/conf.d: not a regular file" --config "$work/conf.d" --quick
# a FIFO with no writer would block fopen() for ever (T3-11): refused, not waited on
mkfifo "$work/conf.fifo"
bad config-fifo "Unable to read $work/conf.fifo: not a regular file" --config "$work/conf.fifo" --quick
# --textfile - is standard output: after a JSON document it would break it
out=$("$bin" doctor --quick --json --textfile - 2>"$work/err")
rc=$?
[[ $rc == 2 ]] && python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["exit"] == 2 and "--textfile -" in d["error"], d' "$out" &&
	t_pass doctor-bad-json-textfile-stdout || t_fail doctor-bad-json-textfile-stdout "rc $rc: $(head -c 300 <<<"$out") $(head -2 "$work/err")"
bad gpu-ids 'Invalid --gpu-ids' --gpu-ids nonsense
bad missing-value 'Missing value for `--patched' --patched
bad empty-patched 'empty directory name' --patched ''
"$bin" doctor --brief --json >/dev/null 2>"$work/err"
[[ $? == 2 ]] && grep -q 'exclude each other' "$work/err" && t_pass doctor-bad-brief-json ||
	t_fail doctor-bad-brief-json "$(head -1 "$work/err")"
"$bin" doctor --help >"$work/help"
[[ $? == 0 ]] && grep -q -- '--strict' "$work/help" && grep -q '^Exit status' "$work/help" &&
	grep -q '^0 healthy' "$work/help" && grep -q 'doctor.conf' "$work/help" &&
	grep -q 'HealthCheckProgram' "$work/help" && t_pass doctor-help || t_fail doctor-help "$(head -3 "$work/help")"
# T3-06: the doctor's 0/1/2 are not Nagios codes (Nagios: 1 WARNING, 2
# CRITICAL, 3 UNKNOWN); the help, README and man page say so and name the
# mapping nvsidecar-healthcheck --nagios does (0 OK, 2 CRITICAL, 3 UNKNOWN)
why=
grep -qi 'as Nagios plugins' "$work/help" && why+=" help claims Nagios reads 0/1/2;"
tr '\n' ' ' <"$work/help" | grep -q "nvsidecar-healthcheck --nagios', which maps 0 to OK (0), 1 and a doctor that timed out or is missing to CRITICAL (2), and 2 to UNKNOWN (3)" ||
	why+=" help lacks the --nagios mapping;"
tr '\n' ' ' <"$top/README.md" | grep -q 'exit 0/1/2 for *node-problem-detector and Nagios' && why+=" README claims Nagios;"
tr '\n' ' ' <"$top/README.md" | grep -q 'nvsidecar-healthcheck --nagios`, which maps them to 0 OK, 2 CRITICAL' ||
	why+=" README lacks the mapping;"
grep -q 'it maps the doctor.s 0 to OK (0), its 1, a doctor that timed out' "$top/docs/nvsidecar.8" || why+=" man page lacks the mapping;"
# and the mapping is what the health check does: doctor's 0/1/2 -> 0/2/3
hc=$work/hc-doctor
printf '#!/bin/sh\necho "FAIL: x: y"\nexit "$HC_RC"\n' >"$hc"
chmod +x "$hc"
for m in 0:0 1:2 2:3; do
	HC_RC=${m%%:*} NVSIDECAR_BIN=$hc NVSIDECAR_DEFAULTS=/nonexistent NVSIDECAR_HEALTHCHECK_DIR=$work/hcdir \
		bash "$top/scripts/slurm/nvsidecar-healthcheck" --nagios >/dev/null 2>&1
	r=$?
	[[ $r == "${m#*:}" ]] || why+=" doctor exit ${m%%:*} -> --nagios exit $r, want ${m#*:};"
done
[[ -z $why ]] && t_pass doctor-help-nagios || t_fail doctor-help-nagios "$why"

# The verdict cache's settings (review A4): a value the doctor cannot use is a
# WARN naming the variable and the value, not a silent default; a relative
# NVSIDECAR_STATE_DIR would be another directory in each caller's cwd.
# settings NAME VAR VALUE WANT: WANT in the full-cache-settings WARN of doctor --quick
settings() {
	env "$2=$3" "$bin" doctor --quick --json >"$work/set.json" 2>"$work/err"
	"$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
w = [c for c in d["checks"] if c["name"] == "full-cache-settings"]
if sys.argv[2] == "-":
    assert not w, w
else:
    assert len(w) == 1 and w[0]["result"] == "WARN" and sys.argv[2] in w[0]["message"], w
    assert "/etc/default/nvsidecar" in w[0]["fix"], w
' "$work/set.json" "$4" 2>>"$work/set.err" || echo "[$2=$3] $(tail -1 "$work/set.err")"
}
: >"$work/set.err"
miss=
for v in 1h abc -1 ' 5' 99999999999 8640001 ''; do
	miss+=$(settings age NVSIDECAR_VERDICT_MAX_AGE "$v" "NVSIDECAR_VERDICT_MAX_AGE=\`$v' is not a number of seconds from 0 to 8640000: using 7200 s")
done
for v in 0 3600 8640000; do
	miss+=$(settings age-ok NVSIDECAR_VERDICT_MAX_AGE "$v" -)
done
[[ -z $miss ]] && t_pass doctor-verdict-max-age-bad || t_fail doctor-verdict-max-age-bad "$miss"
miss=$(settings rel NVSIDECAR_STATE_DIR rel/dir "NVSIDECAR_STATE_DIR=\`rel/dir' is not an absolute path: the verdict is kept in $work/noroot/var/lib/nvsidecar instead")
miss+=$(settings empty NVSIDECAR_STATE_DIR '' "NVSIDECAR_STATE_DIR=\`' is empty: the verdict is kept in")
miss+=$(settings abs NVSIDECAR_STATE_DIR "$work/vstate" -)
[[ -z $miss ]] && t_pass doctor-verdict-state-dir-bad || t_fail doctor-verdict-state-dir-bad "$miss"

# A missing dump is the admin's typo, not an unhealthy node (T3-08): exit 2
# (usage) before any check runs, never 1 ("drain the node"); also with --quick.
bad missing-dump "Unable to open \`$work/nope.dump' (the --pci-dump given): No such file" --pci-dump "$work/nope.dump"
bad missing-dump-quick "Unable to open \`$work/nope.dump' (the --pci-dump given)" --quick --pci-dump "$work/nope.dump"
bad dump-dir "Unable to open \`$work' (the --pci-dump given): Is a directory" --pci-dump "$work"

# --patched on a directory that does not exist, and on one that is not a patch output
"$bin" doctor --patched "$work/nonexistent" >"$work/out" 2>&1
rc=$?
[[ $rc == 1 ]] && grep -q "^FAIL libcuda  libcuda-patched: Unable to use the patched copy in \`$work/nonexistent': No such file or directory" "$work/out" &&
	grep -q 'fix: .*libcuda patch --out' "$work/out" && grep -q '^FAIL gdr      gdr-dmabuf: .*not usable' "$work/out" &&
	t_pass doctor-patched-missing || t_fail doctor-patched-missing "rc $rc: $(grep 'libcuda\|gdr' "$work/out" | tr '\n' ' ')"
mkdir "$work/empty"
"$bin" doctor --patched "$work/empty" >"$work/out" 2>&1
grep -q "^FAIL libcuda  libcuda-patched: Unable to read .*nvsidecar-libcuda.manifest.*not a \`libcuda patch --out' directory" "$work/out" &&
	t_pass doctor-patched-foreign || t_fail doctor-patched-foreign "$(grep libcuda "$work/out" | tr '\n' ' ')"

# A real patch output of a fake libcuda (tests/libcuda/), current then stale.
fx=$work/fx
mkdir -p "$fx" "$work/patched"
if gcc -shared -fPIC -O2 -DSHAPE_615 -DINIT_COPY=2 -Wl,-soname,libcuda.so.1 -o "$fx/libcuda.so.615.71.09" \
	"$top/tests/libcuda/fake_gate.S" "$top/tests/libcuda/fake_driver.c" 2>"$work/err" &&
	"$bin" libcuda patch --lib "$fx/libcuda.so.615.71.09" --out "$work/patched" >"$work/log" 2>&1; then
	echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  615.71.09  Thu Jan  1 00:00:00 UTC 2026" >"$work/version"
	NVS_NVIDIA_VERSION_FILE=$work/version "$bin" doctor --patched "$work/patched" --lib "$fx/libcuda.so.615.71.09" >"$work/out" 2>&1
	grep -q "^OK   libcuda  libcuda-patched: patched copy in $work/patched is current" "$work/out" &&
		grep -q '^OK   driver   driver-libcuda: libcuda 615.71.09 matches the kernel driver' "$work/out" &&
		grep -q '^OK   libcuda  libcuda: libcuda 615.71.09 .*: unpatched' "$work/out" &&
		grep -q "^OK   gdr      gdr-dmabuf: libcuda's dma-buf gate is open in the patched copy" "$work/out" &&
		t_pass doctor-patched-current || t_fail doctor-patched-current "$(grep 'libcuda\|gdr' "$work/out" | tr '\n' ' ')"
	echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  620.10.02  Thu Jan  1 00:00:00 UTC 2026" >"$work/version"
	NVS_NVIDIA_VERSION_FILE=$work/version "$bin" doctor --patched "$work/patched" --lib "$fx/libcuda.so.615.71.09" \
		--json >"$work/json" 2>&1
	rc=$?
	got=$("$py" -c '
import json, sys
d = {x["name"]: x for x in json.load(open(sys.argv[1]))["checks"]}
c, v = d["libcuda-patched"], d["driver-libcuda"]
# T3-15: patch --out writes into exactly DIR, so the fix names a directory for the new driver
print(c["result"], "stale" in c["message"],
      "\x60nvsidecar libcuda patch --out " + sys.argv[2] + "/620.10.02'"'"'" in c["fix"] and "rolling upgrade" in c["fix"],
      v["result"], "615.71.09 but the kernel driver is 620.10.02" in v["message"])' "$work/json" "$work/patched" 2>&1)
	[[ $rc == 1 && $got == "FAIL True True FAIL True" ]] && t_pass doctor-patched-stale || t_fail doctor-patched-stale "rc $rc: $got"
else
	t_fail doctor-patched-fixture "could not build or patch the fake libcuda: $(cat "$work/err" "$work/log" 2>/dev/null | tail -n 2 | tr '\n' ' ')"
fi

# --- doctor.conf: the same keys as the options; the command line wins ---------
cat >"$work/doctor.conf" <<'EOF'
# a doctor.conf as an admin writes it
expect-gpus = 4
limit = hotspot:100
limit = mem*:95.5
driver-version = 615.71.09
strict = no
EOF
"$bin" doctor --quick --config "$work/doctor.conf" --json >"$work/json" 2>"$work/err"
rc=$?
got=$("$py" -c '
import json, sys
d = {x["name"]: x for x in json.load(open(sys.argv[1]))["checks"]}
print(d["gpus"]["result"], d["gpus"]["message"])' "$work/json" 2>&1)
[[ $rc == 1 && $got == "FAIL 0 GPU(s) visible (the module is not loaded), 4 expected" ]] && t_pass doctor-conf-expect ||
	t_fail doctor-conf-expect "rc $rc: $got $(head -c 200 "$work/err")"
"$bin" doctor --quick --config "$work/doctor.conf" --expect-gpus 2 --brief >"$work/out" 2>&1
grep -q '^FAIL: module-loaded: .* (+1 more)$' "$work/out" && t_pass doctor-conf-override-brief ||
	t_fail doctor-conf-override-brief "$(cat "$work/out")"
"$bin" doctor --quick --config "$work/doctor.conf" --expect-gpus 2 --json | grep -q '2 expected' &&
	t_pass doctor-conf-cli-wins || t_fail doctor-conf-cli-wins "--expect-gpus 2 did not override expect-gpus = 4"
# --no-strict undoes `strict = yes' (review T3-19: the file said the command
# line wins, but nothing on it could turn strict off)
printf 'strict = yes\n' >"$work/strict.conf"
"$bin" doctor --quick --config "$work/strict.conf" --json 2>/dev/null | grep -q '"strict": *true' &&
	"$bin" doctor --quick --config "$work/strict.conf" --no-strict --json 2>/dev/null | grep -q '"strict": *false' &&
	t_pass doctor-no-strict-overrides-conf || t_fail doctor-no-strict-overrides-conf "strict = yes stayed on with --no-strict"
"$bin" doctor --quick --strict --no-strict >"$work/out" 2>"$work/err"
rc=$?
[[ $rc == 2 && ! -s $work/out ]] && grep -q -- '--strict and --no-strict exclude each other' "$work/err" &&
	t_pass doctor-strict-no-strict-conflict || t_fail doctor-strict-no-strict-conflict "rc $rc: $(cat "$work/err")"
# without a count, no GPU is a warning that says how to make it fail
"$bin" doctor --quick >"$work/out" 2>&1
grep -q '^SKIP gpu      gpus' "$work/out" && ! grep -q 'expected' "$work/out" && t_pass doctor-no-expect ||
	t_fail doctor-no-expect "$(grep gpus "$work/out")"
printf 'expect-gpus = 4\nfrobnicate = 1\n' >"$work/bad.conf"
"$bin" doctor --config "$work/bad.conf" >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 2 ]] && grep -q "bad.conf:2: Unknown setting \`frobnicate'" "$work/err" && t_pass doctor-conf-bad-key ||
	t_fail doctor-conf-bad-key "rc $rc: $(head -1 "$work/err")"
# --pci-dump, --quick and the like choose one run: not keys of a file every
# health check reads (the man page said doctor.conf took pci-dump; it never did)
printf 'pci-dump = %s\n' "$top/tests/topo/5090-switch.dump" >"$work/bad.conf"
"$bin" doctor --config "$work/bad.conf" >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 2 ]] && grep -q "bad.conf:1: \`pci-dump' is not a doctor.conf key: it chooses one run; pass \`--pci-dump' on the command line" "$work/err" &&
	t_pass doctor-conf-pci-dump-not-a-key || t_fail doctor-conf-pci-dump-not-a-key "rc $rc: $(head -1 "$work/err")"
# The option lists in these hints come from doctor's option tables, never a
# list typed by hand that drifts (review L5): every run option, --no-strict
# included, is named as one in doctor.conf; every option --help lists gets
# its own hint for `--opt=value' (never "not an option of doctor")
bad=
for o in no-strict help brief; do
	printf '%s = yes\n' "$o" >"$work/bad.conf"
	"$bin" doctor --config "$work/bad.conf" >/dev/null 2>"$work/err"
	grep -q "bad.conf:1: \`$o' is not a doctor.conf key: it chooses one run; pass \`--$o' on the command line (doctor.conf keys: expect-gpus, limit, driver-version, patched, nvml, lib, gpu-ids, textfile, strict)" "$work/err" ||
		bad+=" [$o] $(head -1 "$work/err")"
done
opts=$("$bin" doctor --help | grep -oE '^ +--[a-z-]+' | tr -d ' ' | sort -u)
for o in $opts; do
	"$bin" doctor "$o=x" >/dev/null 2>"$work/err"
	grep -qE "\`$o' takes no value|two words, \`$o x'" "$work/err" || bad+=" [$o=x] $(head -1 "$work/err")"
done
[[ -n $opts && -z $bad ]] && t_pass "doctor-opts-from-table ($(wc -w <<<"$opts") options)" || t_fail doctor-opts-from-table "$bad"
printf 'limit = hotspot\n' >"$work/bad.conf"
"$bin" doctor --config "$work/bad.conf" >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 2 ]] && grep -q "bad.conf:1: Invalid limit \`hotspot'" "$work/err" && t_pass doctor-conf-bad-value ||
	t_fail doctor-conf-bad-value "rc $rc: $(head -1 "$work/err")"
printf 'expect-gpus 4\n' >"$work/bad.conf"
"$bin" doctor --config "$work/bad.conf" >/dev/null 2>"$work/err"
[[ $? == 2 ]] && grep -q "bad.conf:1: expected \`key = value'" "$work/err" && t_pass doctor-conf-bad-line ||
	t_fail doctor-conf-bad-line "$(head -1 "$work/err")"
# admin review finding 15: a UTF-8 byte order mark is read past; a NUL
# byte or a file far too large is "not a doctor.conf", not "line too long";
# the same setting twice is an error naming both lines, not last-wins; a
# file error is not followed by a pointer to --help
printf '\xef\xbb\xbfexpect-gpus = 4\n' >"$work/bom.conf"
"$bin" doctor --quick --config "$work/bom.conf" --json >"$work/json" 2>"$work/err"
grep -q '4 expected' "$work/json" && t_pass doctor-conf-bom || t_fail doctor-conf-bom "$(head -c 200 "$work/err")"
printf 'expect-gpus = 2\n\0x\n' >"$work/nul.conf"
bad conf-nul "nul.conf:2: a NUL byte: not a text file" --config "$work/nul.conf" --quick
head -c 100000 /dev/zero | tr '\0' x >"$work/big.conf"
bad conf-big "big.conf is over 64 KiB: not a doctor.conf" --config "$work/big.conf" --quick
printf 'expect-gpus = 2\nlimit = hotspot:95\nlimit = mem*:90\nexpect-gpus = 4\n' >"$work/dup.conf"
bad conf-dup "dup.conf:4: \`expect-gpus' is already set on line 1; keep one" --config "$work/dup.conf" --quick
printf 'limit = hotspot:95\nlimit = hotspot:90\n' >"$work/dup.conf"
bad conf-dup-limit "dup.conf:2: \`limit' for hotspot is already set on line 1" --config "$work/dup.conf" --quick
grep -q 'Try' "$work/err" && t_fail doctor-conf-no-help-hint "$(cat "$work/err")" || t_pass doctor-conf-no-help-hint
if command -v setpriv >/dev/null && ((EUID == 0)); then
	pub=$(mktemp -d /tmp/nvs-dconf.XXXXXX)
	chmod 755 "$pub"
	install -m 600 "$work/bom.conf" "$pub/doctor.conf"
	nvs_world_copy "$bin"
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$NVS_WORLD_COPY" doctor --quick --config "$pub/doctor.conf" \
		>/dev/null 2>"$work/err"
	rc=$?
	[[ $rc == 4 ]] && grep -q 'Permission denied (run as root, or make it readable)' "$work/err" &&
		t_pass doctor-conf-eacces || t_fail doctor-conf-eacces "rc $rc: $(head -2 "$work/err" | tr '\n' ' ')"
	rm -rf "$pub"
else
	t_skip doctor-conf-eacces "needs root and setpriv to read as an unprivileged user"
fi
# the example shipped for /etc/nvsidecar/doctor.conf parses, and sets nothing by default
"$bin" doctor --quick --config "$top/scripts/nvsidecar/doctor.conf" --brief >"$work/out" 2>&1
[[ $? == 1 ]] && grep -q '^FAIL: module-loaded' "$work/out" && t_pass doctor-conf-example ||
	t_fail doctor-conf-example "$(cat "$work/out")"

# --- --brief and --quick -------------------------------------------------------
"$bin" doctor --quick --brief >"$work/out" 2>"$work/err"
rc=$?
[[ $rc == 1 && $(wc -l <"$work/out") == 1 && ! -s $work/err ]] && grep -q '^FAIL: module-loaded: nvsidecar module is not loaded' "$work/out" &&
	t_pass doctor-brief || t_fail doctor-brief "rc $rc: $(cat "$work/out" "$work/err" | head -3 | tr '\n' ' ')"
"$bin" doctor --quick --json >"$work/json"
got=$("$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["mode"], sorted({x["layer"] for x in d["checks"]}))' "$work/json" 2>&1)
[[ $got == "quick ['gpu', 'module']" ]] && t_pass doctor-quick-layers || t_fail doctor-quick-layers "$got"

# --- the module's installation, in a tree under NVS_DOCTOR_ROOT ----------------
kver=$(uname -r)
root=$work/root
mkko() { # mkko FILE VERSION SRCVERSION: an object with a real .modinfo section
	printf '%s\n' "static const char a[] __attribute__((section(\".modinfo\"), used, aligned(1))) = \"version=$2\";" \
		"static const char b[] __attribute__((section(\".modinfo\"), used, aligned(1))) = \"srcversion=$3\";" \
		'static const char c[] __attribute__((section(".modinfo"), used, aligned(1))) = "name=nvsidecar";' |
		gcc -c -x c -o "$1" -
}
# mkinitrd COMPRESSOR KO: early microcode cpio, then the main archive compressed
mkinitrd() {
	local st=$work/initrd-stage
	rm -rf "$st"
	mkdir -p "$st/early/kernel/x86/microcode" "$st/main/usr/lib/modules/$kver/updates/dkms" "$st/main/usr/bin"
	echo microcode >"$st/early/kernel/x86/microcode/GenuineIntel.bin"
	echo busybox >"$st/main/usr/bin/busybox"
	[[ -n $2 ]] && cp "$2" "$st/main/usr/lib/modules/$kver/updates/dkms/nvsidecar.ko"
	(cd "$st/early" && find . | cpio -o -H newc --quiet) >"$root/boot/initrd.img-$kver"
	(cd "$st/main" && find . | cpio -o -H newc --quiet | $1) >>"$root/boot/initrd.img-$kver"
}
install_ko() { # install_ko VERSION SRCVERSION: the DKMS-installed module, xz-compressed as Debian's are
	mkko "$work/nvsidecar.ko" "$1" "$2" &&
		xz -c "$work/nvsidecar.ko" >"$root/lib/modules/$kver/updates/dkms/nvsidecar.ko.xz"
}
mkdir -p "$root/boot" "$root/lib/modules/$kver/updates/dkms" "$root/var/lib/dkms/nvsidecar/0.1.0/$kver/$(uname -m)/module" \
	"$root/sys/firmware/efi/efivars"
echo "updates/dkms/nvsidecar.ko.xz:" >"$root/lib/modules/$kver/modules.dep"
ln -s 0.1.0 "$root/var/lib/dkms/nvsidecar/kernel-$kver-$(uname -m)"
ln -s "/usr/src/nvsidecar-0.1.0" "$root/var/lib/dkms/nvsidecar/0.1.0/source"
if ! install_ko 0.1.0 4A1B2C3D4E5F60718293A4B; then
	t_fail doctor-install-fixture "could not build a module object with gcc"
else
	cp "$work/nvsidecar.ko" "$work/nvsidecar-0.1.0.ko"
	mkinitrd "zstd -q" "$work/nvsidecar-0.1.0.ko"
	NVS_DOCTOR_ROOT=$root "$bin" doctor >"$work/out" 2>&1
	grep -q "^FAIL module   module-loaded: nvsidecar module is not loaded (installed as $root/lib/modules/$kver/updates/dkms/nvsidecar.ko.xz)" "$work/out" &&
		grep -q "^OK   module   module-dkms: DKMS installed 0.1.0 for $kver" "$work/out" &&
		grep -q "^OK   module   module-initramfs: .*initrd.img-$kver carries the installed nvsidecar 0.1.0" "$work/out" &&
		t_pass doctor-install-current || t_fail doctor-install-current "$(grep module "$work/out" | tr '\n' ' ')"
	# the cache: the same image again, with no zstd to read it, gives the same answer
	mkdir -p "$work/nozstd"
	for t in gcc xz cpio ldconfig; do ln -sf "$(command -v $t)" "$work/nozstd/$t" 2>/dev/null; done
	NVS_DOCTOR_ROOT=$root PATH=$work/nozstd "$bin" doctor >"$work/out" 2>&1
	grep -q "^OK   module   module-initramfs: .* carries the installed nvsidecar 0.1.0" "$work/out" &&
		t_pass doctor-initramfs-cached || t_fail doctor-initramfs-cached "$(grep initramfs "$work/out")"
	# an upgrade installs 0.2.0; the initramfs still carries 0.1.0
	install_ko 0.2.0 9F8E7D6C5B4A392817060F1
	NVS_DOCTOR_ROOT=$root "$bin" doctor --json >"$work/json" 2>&1
	got=$("$py" -c '
import json, sys
d = {x["name"]: x for x in json.load(open(sys.argv[1]))["checks"]}
i = d["module-initramfs"]
print(i["result"], "carries nvsidecar 0.1.0" in i["message"], "is 0.2.0" in i["message"], "update-initramfs -u -k" in i["fix"],
      "dracut -f --kver" in i["fix"])' "$work/json" 2>&1)
	[[ $got == "WARN True True True True" ]] && t_pass doctor-initramfs-stale || t_fail doctor-initramfs-stale "$got"
	# the same version rebuilt from other sources: srcversion tells them apart
	install_ko 0.1.0 000000000000000000000AA
	NVS_DOCTOR_ROOT=$root "$bin" doctor 2>&1 | grep -q '^WARN module   module-initramfs: .*(4A1B2C3D4E5F60718293A4B).*(000000000000000000000AA)' &&
		t_pass doctor-initramfs-srcversion || t_fail doctor-initramfs-srcversion "same version, other build not noticed"
	install_ko 0.1.0 4A1B2C3D4E5F60718293A4B
	for z in "gzip -c" "xz -c --check=crc32"; do
		mkinitrd "$z" "$work/nvsidecar-0.1.0.ko"
		NVS_DOCTOR_ROOT=$root "$bin" doctor 2>&1 | grep -q '^OK   module   module-initramfs: .* carries the installed nvsidecar 0.1.0' &&
			t_pass "doctor-initramfs-${z%% *}" || t_fail "doctor-initramfs-${z%% *}" "$(NVS_DOCTOR_ROOT=$root "$bin" doctor 2>&1 | grep initramfs)"
	done
	mkinitrd "zstd -q" ""
	NVS_DOCTOR_ROOT=$root "$bin" doctor 2>&1 | grep -q '^OK   module   module-initramfs: .* does not carry nvsidecar' &&
		t_pass doctor-initramfs-without || t_fail doctor-initramfs-without "$(NVS_DOCTOR_ROOT=$root "$bin" doctor 2>&1 | grep initramfs)"
	printf 'garbage that is no archive' >"$root/boot/initrd.img-$kver"
	NVS_DOCTOR_ROOT=$root "$bin" doctor 2>&1 | grep -q '^WARN module   module-initramfs: Unable to read .*unknown data at offset 0' &&
		t_pass doctor-initramfs-garbage || t_fail doctor-initramfs-garbage "$(NVS_DOCTOR_ROOT=$root "$bin" doctor 2>&1 | grep initramfs)"
	# Secure Boot on (EFI variable: 4 bytes of attributes, then 1)
	printf '\006\000\000\000\001' >"$root/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
	NVS_DOCTOR_ROOT=$root "$bin" doctor --quick >"$work/out" 2>&1
	grep -q '^FAIL module   module-loaded: .*Secure Boot is on' "$work/out" && grep -q 'Key was rejected by service' "$work/out" &&
		grep -q 'mokutil --import /var/lib/dkms/mok.pub' "$work/out" && t_pass doctor-secure-boot ||
		t_fail doctor-secure-boot "$(grep module-loaded -A1 "$work/out" | tr '\n' ' ')"
	# nothing installed for this kernel, DKMS only for another one
	: >"$root/lib/modules/$kver/modules.dep"
	rm "$root/var/lib/dkms/nvsidecar/kernel-$kver-$(uname -m)"
	mv "$root/var/lib/dkms/nvsidecar/0.1.0/$kver" "$root/var/lib/dkms/nvsidecar/0.1.0/6.1.0-other"
	NVS_DOCTOR_ROOT=$root "$bin" doctor --quick >"$work/out" 2>&1
	grep -q "^FAIL module   module-loaded: nvsidecar module is not loaded, and none is installed for the running kernel $kver" "$work/out" &&
		grep -q "dkms autoinstall -k $kver" "$work/out" &&
		grep -q "^FAIL module   module-dkms: DKMS has nvsidecar for 1 other kernel(s) but not for the running kernel" "$work/out" &&
		t_pass doctor-install-missing || t_fail doctor-install-missing "$(grep module "$work/out" | tr '\n' ' ')"
fi

# --- the driver layer: kernel driver, libcuda and NVML ------------------------
gcc -shared -fPIC -O2 -Wall -Werror -o "$work/libnvidia-ml.so.1" "$top/tests/nvml/fakenvml.c" 2>"$work/err" ||
	t_fail doctor-fakenvml "$(head -3 "$work/err")"
export FAKE_NVML_STATE=$work/nvml.state
echo "0000:01:00.0 0 0 61 80" >"$work/nvml.state"
echo "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  615.71.09  Release Build  (dvs-builder@U16-I3-B09-2-1)  Thu Jan  1 00:00:00 UTC 2026" >"$work/open-version"
drv() { NVS_NVIDIA_VERSION_FILE=$work/open-version "$bin" doctor --nvml "$work/libnvidia-ml.so.1" --lib "$fx/libcuda.so.615.71.09" "$@"; }
drv >"$work/out" 2>&1
grep -q '^OK   driver   driver-loaded: NVIDIA kernel driver 615.71.09 loaded$' "$work/out" &&
	grep -q '^OK   driver   driver-libcuda: libcuda 615.71.09 matches' "$work/out" &&
	grep -q '^OK   driver   driver-nvml: NVML 575.64.03 answers for 1 GPU(s), 0 of them watched by nvsidecar' "$work/out" &&
	t_pass doctor-driver-ok || t_fail doctor-driver-ok "$(grep driver "$work/out" | tr '\n' ' ')"
drv --driver-version 620.10.02 2>&1 | grep -q '^FAIL driver   driver-loaded: NVIDIA kernel driver 615.71.09, but 620.10.02 is expected' &&
	t_pass doctor-driver-expected || t_fail doctor-driver-expected "driver-version not enforced"
# NVML 18: "Driver/library version mismatch", the classic half-done upgrade
FAKE_NVML_INIT_ERROR=18 drv 2>&1 | grep -q '^FAIL driver   driver-nvml: nvmlInit failed' &&
	t_pass doctor-driver-nvml-fails || t_fail doctor-driver-nvml-fails "$(FAKE_NVML_INIT_ERROR=18 drv 2>&1 | grep nvml)"
"$bin" doctor --nvml "$work/nope.so" 2>&1 | grep -q '^FAIL driver   driver-nvml: Unable to load' &&
	t_pass doctor-driver-nvml-missing || t_fail doctor-driver-nvml-missing "an --nvml that is not there must fail"

# --- --full: p2p through the fake libcuda; no RDMA device here ----------------
gcc -shared -fPIC -O2 -o "$work/libcuda.so.1" "$top/tests/p2p/fakecuda.c" 2>"$work/err" ||
	t_fail doctor-fakecuda "$(head -3 "$work/err")"
FAKE_CUDA_DEVICES=2 "$bin" doctor --full --lib "$work/libcuda.so.1" >"$work/out" 2>&1
grep -q '^OK   full     full-p2p: ' "$work/out" && grep -q '^SKIP full     full-rdma: ' "$work/out" &&
	t_pass doctor-full || t_fail doctor-full "$(grep full "$work/out" | tr '\n' ' ')"
FAKE_CUDA_DEVICES=2 FAKE_CUDA_CORRUPT=0-1@4096 "$bin" doctor --full --lib "$work/libcuda.so.1" >"$work/out" 2>&1
[[ $? == 1 ]] && grep -q '^FAIL full     full-p2p: ' "$work/out" && t_pass doctor-full-corrupt ||
	t_fail doctor-full-corrupt "$(grep full "$work/out" | tr '\n' ' ')"

# --- the verdict file: who wrote it, what it is (admin review H2, L1-L3) -------
# vfull DIR / vquick DIR: doctor --full (the fake libcuda) / --quick with the
# verdict in DIR; the full-cache lines into $work/vout
vfull() { NVSIDECAR_STATE_DIR=$1 FAKE_CUDA_DEVICES=2 "$bin" doctor --full --lib "$work/libcuda.so.1" >"$work/vout" 2>&1; }
vquick() { NVSIDECAR_STATE_DIR=$1 "$bin" doctor --quick >"$work/vout" 2>&1; }
vshow() { grep -A1 'full-cache\|full-p2p' "$work/vout" | head -c 600 | tr '\n' ' '; }
# H2: a link at the verdict's name is replaced, never written through
vs=$work/vs
mkdir -m 755 "$vs" "$work/outside"
echo precious >"$work/outside/target"
ln -s "$work/outside/target" "$vs/verdict"
vfull "$vs"
[[ $(cat "$work/outside/target") == precious && -f $vs/verdict && ! -L $vs/verdict ]] &&
	grep -q '^nvsidecar-verdict 3$' "$vs/verdict" && grep -q "^OK   full     full-cache: verdict stored in $vs/verdict" "$work/vout" &&
	t_pass doctor-verdict-link-replaced ||
	t_fail doctor-verdict-link-replaced "target: $(head -c 40 "$work/outside/target"); $(ls -l "$vs/verdict"); $(vshow)"
cp "$vs/verdict" "$work/good.verdict"
# H2: a state directory or a verdict another user can write is neither
# trusted (read) nor written; the fix names the commands
why=
chmod 777 "$vs"
vfull "$vs"
grep -q "full-cache: the verdict was not stored: the state directory \`$vs' is writable by others (owner uid $(id -u), mode 777): not trusted" "$work/vout" &&
	grep -q "chown $( ((EUID)) && echo '\$USER' || echo root) $vs && chmod 755 $vs" "$work/vout" || why+=" [write, dir 777] $(vshow)"
cmp -s "$vs/verdict" "$work/good.verdict" || why+=" [write, dir 777: the verdict changed]"
vquick "$vs"
grep -q "^WARN full     full-cache: .*the state directory \`$vs' is writable by others" "$work/vout" &&
	! grep -q full-p2p "$work/vout" || why+=" [read, dir 777] $(vshow)"
chmod 755 "$vs"
vquick "$vs"
grep -q '^OK   full     full-p2p: ' "$work/vout" || why+=" [read, dir 755] $(vshow)"
chmod 666 "$vs/verdict"
vquick "$vs"
grep -q "^WARN full     full-cache: .*the verdict \`$vs/verdict' is writable by others (owner uid $(id -u), mode 666): not trusted" "$work/vout" &&
	! grep -q full-p2p "$work/vout" || why+=" [read, verdict 666] $(vshow)"
chmod 644 "$vs/verdict"
if ((EUID == 0)); then
	chown nobody "$vs/verdict"
	vquick "$vs"
	grep -q "^WARN full     full-cache: .*the verdict \`$vs/verdict' is owned by another user (owner uid $(id -u nobody), mode 644)" "$work/vout" &&
		! grep -q full-p2p "$work/vout" || why+=" [read, verdict nobody's] $(vshow)"
	chown root "$vs/verdict"
	chown nobody "$vs"
	vfull "$vs"
	grep -q "the verdict was not stored: the state directory \`$vs' is owned by another user (owner uid $(id -u nobody), mode 755)" "$work/vout" ||
		why+=" [write, dir nobody's] $(vshow)"
	chown root "$vs"
fi
[[ -z $why ]] && t_pass doctor-verdict-untrusted || t_fail doctor-verdict-untrusted "$why"
# L1, L2: a newer format is called one; an older file with a newer line is refused
why=
rm -f "$vs/verdict"
sed '1s/.*/nvsidecar-verdict 4/' "$work/good.verdict" >"$vs/verdict"
vquick "$vs"
grep -q "full-cache: .*$vs/verdict:1: written by a newer nvsidecar (format 4); this one reads up to 3: run \`nvsidecar doctor --full' to rewrite it" "$work/vout" ||
	why+=" [format 4] $(vshow)"
sed '1s/.*/nvsidecar-verdict 2/; /^check .* full-p2p /a gpu 1' "$work/good.verdict" >"$vs/verdict"
vquick "$vs"
grep -q "full-cache: .*$vs/verdict:[0-9]*: a \`gpu' line is format 3's, and this file says format 2" "$work/vout" &&
	! grep -q full-p2p "$work/vout" || why+=" [gpu in format 2] $(vshow)"
sed '1s/.*/nvsidecar-verdict 1/' "$work/good.verdict" >"$vs/verdict"
vquick "$vs"
grep -q "full-cache: .*$vs/verdict:[0-9]*: a \`end' line is format 2's, and this file says format 1" "$work/vout" ||
	why+=" [end in format 1] $(vshow)"
sed '1s/.*/nvsidecar-verdict 2/' "$work/good.verdict" >"$vs/verdict"
vquick "$vs"
grep -q '^OK   full     full-p2p: ' "$work/vout" || why+=" [format 2] $(vshow)"
[[ -z $why ]] && t_pass doctor-verdict-format-versions || t_fail doctor-verdict-format-versions "$why"
# L3: one hint for every verdict that is no file (a FIFO, a directory, a link
# to /dev/zero, an empty file), read or written; a state directory that
# cannot be created is named as asked
why=
hint="not a regular file: remove it, then run \`nvsidecar doctor --full'"
for kind in fifo dir zero empty; do
	rm -rf "$vs/verdict"
	case $kind in
	fifo) mkfifo "$vs/verdict" ;;
	dir) mkdir "$vs/verdict" ;;
	zero) ln -s /dev/zero "$vs/verdict" ;;
	empty) : >"$vs/verdict" ;;
	esac
	timeout 20 env NVSIDECAR_STATE_DIR="$vs" "$bin" doctor --quick >"$work/vout" 2>&1
	if [[ $kind == empty ]]; then
		grep -q "full-cache: .*$vs/verdict:0: empty, not a verdict: remove it, then run \`nvsidecar doctor --full'" "$work/vout" &&
			! grep -q incomplete "$work/vout" || why+=" [read $kind] $(vshow)"
	else
		grep -q "full-cache: .*$vs/verdict:0: $hint (it is a" "$work/vout" || why+=" [read $kind] $(vshow)"
	fi
done
rm -rf "$vs/verdict"
mkdir "$vs/verdict"
vfull "$vs"
grep -q "full-cache: the verdict was not stored: $vs/verdict:0: $hint again (it is a directory)" "$work/vout" &&
	! grep -q 'standard output\|give a new' "$work/vout" || why+=" [write dir] $(vshow)"
rmdir "$vs/verdict"
mkfifo "$vs/verdict"
vfull "$vs"
[[ -f $vs/verdict ]] && grep -q "^OK   full     full-cache: verdict stored in $vs/verdict" "$work/vout" || why+=" [write over a FIFO] $(vshow)"
: >"$work/afile"
vfull "$work/afile/sub"
grep -q "full-cache: the verdict was not stored: Unable to create the state directory \`$work/afile/sub': \`$work/afile' is not a directory" "$work/vout" ||
	why+=" [state dir under a file] $(vshow)"
[[ -z $why ]] && t_pass doctor-verdict-bad-file-hint || t_fail doctor-verdict-bad-file-hint "$why"
# H2: a state directory that is another user's link to a directory of ours
if ((EUID == 0)); then
	why=
	mkdir -m 755 "$work/ours"
	ln -s "$work/ours" "$work/theirs"
	chown -h nobody "$work/theirs"
	vfull "$work/theirs"
	grep -q "the verdict was not stored: the state directory \`$work/theirs' is a symbolic link owned by another user (uid $(id -u nobody))" "$work/vout" &&
		[[ ! -e $work/ours/verdict ]] || why+=" [write] $(vshow)"
	cp "$work/good.verdict" "$work/ours/verdict"
	vquick "$work/theirs"
	grep -q "^WARN full     full-cache: .*the state directory \`$work/theirs' is a symbolic link owned by another user" "$work/vout" &&
		! grep -q full-p2p "$work/vout" || why+=" [read] $(vshow)"
	[[ -z $why ]] && t_pass doctor-verdict-dir-link-untrusted || t_fail doctor-verdict-dir-link-untrusted "$why"
else
	t_skip doctor-verdict-dir-link-untrusted "not root: no link of another user to make"
fi

# --- --full and a GPU that another process holds (issue 23 item 3) ------------
# In exclusive-process compute mode the driver refuses a second process a
# context with CUDA_ERROR_DEVICE_UNAVAILABLE (46); the fake does that for
# FAKE_CUDA_BUSY. Nothing is broken: full-p2p is SKIP with the reason, never
# FAIL. This host has no nvsidecar module, so its module checks fail either
# way: the exit must be the one the same run has with every GPU free, and
# no check outside the module layer may fail.
fulljson() { # ENV... : doctor --full --json; "EXIT FAILS RESULT MESSAGE" of full-p2p into $work/j
	env NVSIDECAR_STATE_DIR="$work/busy-state" "$@" "$bin" doctor --full --json --lib "$work/libcuda.so.1" \
		>"$work/json" 2>"$work/err"
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
c = {k["name"]: k for k in d["checks"]}
f = sorted(k["name"] for k in d["checks"] if k["result"].strip() == "FAIL" and k["layer"] != "module")
p = c.get("full-p2p", {})
print(d["exit"], ",".join(f) or "-", p.get("result", "none").strip(), p.get("message", ""))' "$work/json" >"$work/j" 2>&1
}
fulljson FAKE_CUDA_DEVICES=2
base=$(cut -d' ' -f1 "$work/j")
fulljson FAKE_CUDA_DEVICES=2 FAKE_CUDA_BUSY=1
got=$(<"$work/j")
[[ $got == "$base - SKIP GPU 1 in use by another process (exclusive-process mode: CUDA_ERROR_DEVICE_UNAVAILABLE at context creation): the check did not run" ]] &&
	t_pass doctor-full-busy-skip-json || t_fail doctor-full-busy-skip-json "want exit $base, no failure; got: $got"
NVSIDECAR_STATE_DIR=$work/busy-state FAKE_CUDA_DEVICES=2 FAKE_CUDA_BUSY=1 "$bin" doctor --full --lib "$work/libcuda.so.1" >"$work/out" 2>&1
rc=$?
[[ $rc == "$base" ]] && grep -q '^SKIP full     full-p2p: GPU 1 in use by another process (exclusive-process mode' "$work/out" &&
	! grep -qE '^FAIL (full|libcuda|gdr) ' "$work/out" && t_pass doctor-full-busy-skip ||
	t_fail doctor-full-busy-skip "rc $rc (want $base): $(grep -E 'full|FAIL' "$work/out" | tr '\n' ' ')"
# every GPU busy, and one an admin set to PROHIBITED on purpose: the same
fulljson FAKE_CUDA_DEVICES=3 FAKE_CUDA_BUSY=0,2 FAKE_CUDA_PROHIBITED=1
got=$(<"$work/j")
[[ $got == "$base - SKIP GPUs 0, 2 in use by another process (exclusive-process mode"*"; GPU 1 in compute mode PROHIBITED"*": the check did not run" ]] &&
	t_pass doctor-full-busy-prohibited || t_fail doctor-full-busy-prohibited "want exit $base, no failure; got: $got"
# a job that takes the GPU after the doctor's probe: p2p itself meets 46
fulljson FAKE_CUDA_DEVICES=2 FAKE_CUDA_BUSY=1 FAKE_CUDA_ONLY_IN=p2p
got=$(<"$work/j")
[[ $got == "$base - SKIP a GPU was taken by another process (exclusive-process mode) as the check started"*CUDA_ERROR_DEVICE_UNAVAILABLE* ]] &&
	t_pass doctor-full-busy-race || t_fail doctor-full-busy-race "want exit $base, no failure; got: $got"
# control: a GPU that answers anything else is broken, and still fails;
# so does one that answers 46 in the default compute mode, where no job
# can hold it (the review of this change: it was SKIP)
bad=
for e in 999 101 46; do
	fulljson FAKE_CUDA_DEVICES=2 FAKE_CUDA_RETAIN_ERROR=1:$e
	got=$(<"$work/j")
	[[ $got == "1 full-p2p FAIL "*"($e)"* ]] || bad+=" [$e] $got"
done
[[ -z $bad ]] && t_pass doctor-full-broken-gpu-fails || t_fail doctor-full-broken-gpu-fails "$bad"
# A GPU whose context request errs is broken even while another GPU is
# busy: the busy one must not turn the whole check into SKIP (review M4)
fulljson FAKE_CUDA_DEVICES=3 FAKE_CUDA_BUSY=0 FAKE_CUDA_RETAIN_ERROR=2:999
got=$(<"$work/j")
[[ $got == "1 full-p2p FAIL GPU 2 (999) refused a CUDA context"*"GPU 0 in use by another process"* ]] &&
	t_pass doctor-full-busy-hides-no-error || t_fail doctor-full-busy-hides-no-error "$got"
# Busy is the child's exit code 12 (NVS_EX_BUSY), never text in its output:
# a real copy failure on a node with an exclusive-process GPU (free), its
# output quoting "CUDA error (46)" (here the --lib path), still fails (M3)
mkdir -p "$work/CUDA error (46)"
cp "$work/libcuda.so.1" "$work/CUDA error (46)/"
NVSIDECAR_STATE_DIR=$work/busy-state FAKE_CUDA_DEVICES=2 FAKE_CUDA_BUSY=1 FAKE_CUDA_ONLY_IN=none \
	FAKE_CUDA_CORRUPT=0-1@4096 "$bin" doctor --full --json --lib "$work/CUDA error (46)/libcuda.so.1" >"$work/json" 2>&1
got=$(python3 -c 'import json, sys
c = {k["name"]: k for k in json.load(open(sys.argv[1]))["checks"]}
print(c["full-p2p"]["result"].strip(), c["full-p2p"]["message"])' "$work/json" 2>&1)
FAKE_CUDA_DEVICES=2 FAKE_CUDA_BUSY=1 FAKE_CUDA_ONLY_IN=p2p "$bin" p2p --size 4M --iters 2 --lib "$work/libcuda.so.1" >/dev/null 2>&1
rc=$?
[[ $got == FAIL* && $rc == 12 ]] && t_pass doctor-full-busy-by-exit-code ||
	t_fail doctor-full-busy-by-exit-code "full-p2p: $got; p2p on a held GPU: exit $rc (want 12)"
# A probe that hangs is a wedged GPU: FAIL, not SKIP, and a child that does
# not go after SIGKILL (state D; NVS_TEST_UNKILLABLE=1 sends signal 0) is
# left behind after a bounded wait, not waited for forever (M5)
t0=$SECONDS
NVSIDECAR_STATE_DIR=$work/busy-state NVS_TEST_UNKILLABLE=1 FAKE_CUDA_DEVICES=2 FAKE_CUDA_RETAIN_HANG=1 \
	T45_LEFT_MARK=$work timeout 60 "$bin" doctor --full --lib "$work/libcuda.so.1" >"$work/out" 2>&1
rc=$?
took=$((SECONDS - t0))
left=$(sed -n 's/.*full-probe: .*(pid \([0-9]*\), left behind).*/\1/p' "$work/out")
# what this run left behind (whatever the doctor did), by its environment
for p in /proc/[0-9]*; do
	[[ " $({ tr '\0' ' ' <"$p/environ"; } 2>/dev/null) " == *" T45_LEFT_MARK=$work "* ]] && kill -KILL "${p#/proc/}" 2>/dev/null
done
[[ $rc == 1 && $took -lt 40 && -n $left ]] &&
	grep -q "^FAIL full     full-probe: Asking the GPUs .* did not finish in 15 s, and did not exit after SIGKILL (pid $left, left behind): the GPU may be wedged" "$work/out" &&
	grep -q '^SKIP full     full-p2p: not run: the GPUs did not answer the probe' "$work/out" &&
	t_pass doctor-full-probe-unreaped-fails ||
	t_fail doctor-full-probe-unreaped-fails "rc $rc after $took s: $(grep -E 'full' "$work/out" | head -c 400 | tr '\n' ' ')"

# --- the textfile for node_exporter -------------------------------------------
mkdir -p "$work/tf"
"$bin" doctor --quick --expect-gpus 2 --textfile "$work/tf" >/dev/null 2>&1
rc=$?
tf=$work/tf/nvsidecar.prom
if [[ $rc == 1 && -f $tf ]] && grep -q '^nvsidecar_doctor_healthy 0$' "$tf" &&
	grep -q '^nvsidecar_doctor_check_status{layer="module",check="module-loaded",status="fail"} 1$' "$tf" &&
	grep -q '^nvsidecar_doctor_expected_gpus 2$' "$tf" && grep -q '^nvsidecar_doctor_mode{mode="quick"} 1$' "$tf" &&
	grep -q '^nvsidecar_doctor_last_run_timestamp_seconds [0-9]' "$tf"; then
	t_pass doctor-textfile
else
	t_fail doctor-textfile "rc $rc: $(head -c 300 "$tf" 2>/dev/null | tr '\n' ' ')"
fi
if command -v promtool >/dev/null; then
	out=$(promtool check metrics <"$tf" 2>&1) && t_pass doctor-textfile-promtool || t_fail doctor-textfile-promtool "$out"
else
	t_skip doctor-textfile-promtool "promtool is not installed (scripts/deps.sh installs prometheus)"
fi
left=$(shopt -s dotglob nullglob; f=("$work"/tf/*); echo "${f[*]##*/}")
[[ $left == nvsidecar.prom ]] && t_pass doctor-textfile-atomic || t_fail doctor-textfile-atomic "directory holds: $left"
"$bin" doctor --quick --textfile /dev/null >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 2 && -c /dev/null ]] && grep -qi 'not a regular file' "$work/err" && t_pass doctor-textfile-refuses ||
	t_fail doctor-textfile-refuses "rc $rc: $(head -1 "$work/err")"

# --- the NHC check file, with this doctor ------------------------------------
got=$(NVSIDECAR_BIN=$bin bash -c '
die() { echo "die $1: $2"; }
. "$1/scripts/slurm/nvsidecar.nhc"
check_nvsidecar_doctor --expect-gpus 1; echo "rc $?"' _ "$top" 2>&1)
[[ $got == $'die 1: nvsidecar: module-loaded: nvsidecar module is not loaded, and none is installed for the running kernel '*$'\nrc 1' ]] &&
	t_pass doctor-nhc || t_fail doctor-nhc "$got"
got=$(NVSIDECAR_BIN=$work/none bash -c 'die() { echo "die $1: $2"; }; . "$1/scripts/slurm/nvsidecar.nhc"; check_nvsidecar_doctor' _ "$top" 2>&1)
[[ $got == "die 1: nvsidecar: $work/none not found"* ]] && t_pass doctor-nhc-missing || t_fail doctor-nhc-missing "$got"

# ASan/UBSan: the same paths (fork/exec child included) must be clean.
if ! why=$(nvs_asan_build); then
	t_fail doctor-asan-build "$why"
	exit 0
fi
export ASAN_OPTIONS=detect_leaks=1:exitcode=99 UBSAN_OPTIONS=halt_on_error=1:exitcode=98
bad=
for args in "" "--pci-dump $dump --json" "--pci-dump $dump --strict" "--patched $work/nonexistent" \
	"--patched $work/patched" "--bogus" "--quick --brief --config $work/doctor.conf" "--config $work/bad.conf" \
	"--quick --textfile $work/tf --expect-gpus 3" "--nvml $work/libnvidia-ml.so.1 --lib $fx/libcuda.so.615.71.09" \
	"--full --lib $work/libcuda.so.1"; do
	# shellcheck disable=SC2086
	NVS_NVIDIA_VERSION_FILE=$work/version "$asan/nvsidecar" doctor $args >/dev/null 2>"$work/err"
	rc=$?
	[[ $rc == 98 || $rc == 99 ]] || grep -q 'Sanitizer' "$work/err" && bad+=" [$args] rc $rc"
done
# the initramfs reader and module checks, the cache cleared so that the image is read
if [[ -f $work/nvsidecar-0.1.0.ko ]]; then
	echo "updates/dkms/nvsidecar.ko.xz:" >"$root/lib/modules/$kver/modules.dep"
	mkinitrd "zstd -q" "$work/nvsidecar-0.1.0.ko"
	rm -f "$root/run/nvsidecar/doctor-initramfs.cache"
	NVS_DOCTOR_ROOT=$root "$asan/nvsidecar" doctor >"$work/out" 2>"$work/err"
	rc=$?
	{ [[ $rc == 98 || $rc == 99 ]] || grep -q 'Sanitizer' "$work/err"; } && bad+=" [initramfs] rc $rc"
	grep -q 'module-initramfs: .* carries the installed nvsidecar 0.1.0' "$work/out" || bad+=" [initramfs: $(grep initramfs "$work/out")]"
fi
[[ -z $bad ]] && t_pass doctor-asan || t_fail doctor-asan "$bad"
