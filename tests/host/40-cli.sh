#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# The netlink CLI (status, thermal, set, events) and libnvsidecar without
# the module: usage, --help, argument checking, the "module not loaded"
# message and exit code, atomic --record, the output formats (JSON checked
# by python3's parser), the man page and bash completion. Everything runs
# under AddressSanitizer/UBSan/LeakSanitizer ($NVS_BUILD/asan), and a
# subset chosen by rule (see "valgrind" at the end) once more under
# valgrind with a plain build ($NVS_BUILD/plain).
set -u
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

asan=$NVS_ASAN
plain=$NVS_BUILD/plain
unit=$NVS_BUILD/unit-cli
work=$(mktemp -d /tmp/nvs-cli.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$asan" "$plain" "$unit"

export ASAN_OPTIONS=exitcode=97:detect_leaks=1:abort_on_error=0
export LSAN_OPTIONS=exitcode=97
export UBSAN_OPTIONS=halt_on_error=1:exitcode=97:print_stacktrace=1
export NO_COLOR=1

if ! why=$(nvs_asan_build); then
	t_fail cli-build-asan "$why"
	exit 0
fi
t_pass cli-build-asan
if ! make -C "$NVS_TOP/user" O="$plain" -j2 >"$work/build-plain.log" 2>&1; then
	t_fail cli-build-plain "$(tail -n 5 "$work/build-plain.log" | tr '\n' ' ')"
	exit 0
fi
bin=$asan/nvsidecar

# The floors of user/ (scripts/floors.sh, also in `make check'): no include
# or call up a floor, none sideways, no cycle.
if "$NVS_TOP/scripts/floors.sh" "$plain" >"$work/floors.out" 2>&1; then
	t_pass cli-floors
else
	t_fail cli-floors "$(head -n 5 "$work/floors.out" | tr '\n' ' ')"
fi
# libnvsidecar.so exports its netlink client only: the version script's
# list, and every function libnvsidecar.h declares.
so=$(ls "$plain"/libnvsidecar.so.* 2>/dev/null | head -n 1)
if [[ -z $so ]]; then
	t_fail cli-lib-exports "no libnvsidecar.so.* in $plain"
else
	nm -D --defined-only "$so" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | sort >"$work/exports"
	sed -n 's/^\t\t\(nvs_[a-z0-9_]*\);$/\1/p' "$NVS_TOP/user/sys/libnvsidecar/libnvsidecar.map" | sort >"$work/map"
	sed -n 's/^[a-z].*[ *]\(nvs_[a-z0-9_]*\)(.*/\1/p' "$NVS_TOP/user/sys/libnvsidecar/libnvsidecar.h" | sort -u >"$work/api"
	if [[ -s $work/api ]] && cmp -s "$work/exports" "$work/map" && cmp -s "$work/exports" "$work/api"; then
		t_pass cli-lib-exports
	else
		t_fail cli-lib-exports "exported vs header: $(diff "$work/exports" "$work/api" | grep '^[<>]' | tr '\n' ' ')"
	fi
fi

# sanitizer_clean FILE: no ASan/LSan/UBSan report in FILE.
sanitizer_clean() {
	! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: UndefinedBehavior' "$1"
}

# vg_note RC ARGS...: a case the ASan helper ran with ARGS and exit status
# RC, offered to the valgrind pass at the end, which picks its cases from
# these by a rule (there). Every case runner below calls it.
vg_all=()
vg_note() {
	vg_all+=("$1 $(printf '%q ' "${@:2}")")
}

# expect NAME RC REGEX CMD...: runs the ASan CLI with CMD as arguments;
# passes if it exits RC, its stdout+stderr match REGEX (grep -E, "" for
# any) and no sanitizer complained.
expect() {
	local name=$1 rc=$2 re=$3 got
	shift 3
	"$bin" "$@" >"$work/out" 2>&1
	got=$?
	vg_note "$got" "$@"
	if ! sanitizer_clean "$work/out"; then
		t_fail "$name" "sanitizer: $(grep -m1 -E 'ERROR|runtime error' "$work/out")"
	elif ((got != rc)); then
		t_fail "$name" "exit $got, want $rc: $(head -c 300 "$work/out" | tr '\n' ' ')"
	elif [[ -n $re ]] && ! grep -qE -- "$re" "$work/out"; then
		t_fail "$name" "output does not match /$re/: $(head -c 300 "$work/out" | tr '\n' ' ')"
	else
		t_pass "$name"
	fi
}

nomod='not registered: load the module with `modprobe nvsidecar'"'"'.*`dkms status nvsidecar'"'"
usage_re='^Usage: .*nvsidecar'

# --- dispatcher and --help ----------------------------------------------
expect cli-no-args 2 'Available subcommands'
expect cli-help 0 'status +Shows the module' --help
expect cli-unknown-subcommand 2 'Invalid subcommand: `frobnicate'"'" frobnicate
for sub in status thermal set events; do
	expect "cli-$sub-help" 0 'Exit codes: 0 success' "$sub" --help
	"$bin" "$sub" --help 2>/dev/null | grep -qE "$usage_re $sub" ||
		t_fail "cli-$sub-help-stdout" "--help does not print its usage line on stdout"
done

# --- the module is not loaded on this host --------------------------------
if [[ -d /sys/module/nvsidecar ]]; then
	for t in status thermal thermal-json events set set-json record-cleanup; do
		t_skip "cli-nomodule-$t" "the nvsidecar module is loaded on this host"
	done
else
	expect cli-nomodule-status 3 "$nomod" status
	expect cli-nomodule-thermal 3 "$nomod" thermal
	expect cli-nomodule-thermal-json 3 "$nomod" thermal --json
	expect cli-nomodule-events 3 "$nomod" events --timeout 1
	expect cli-nomodule-set 3 "$nomod" set 0 reset-peaks
	expect cli-nomodule-set-json 3 '^\{"ok":false,"exit":3,' set 0 mem-hz 2 --json
	# The temporary file made before the module was asked must be gone.
	mkdir "$work/rec"
	expect cli-nomodule-record-cleanup 3 "$nomod" thermal --record "$work/rec/x.csv" --duration 1
	if [[ -n $(ls -A "$work/rec") ]]; then
		t_fail cli-nomodule-record-leftover "left behind: $(ls -A "$work/rec" | tr '\n' ' ')"
	else
		t_pass cli-nomodule-record-leftover
	fi
	# a 250-byte file name: the temporary file must not need a longer one
	expect cli-nomodule-record-long-name 3 "$nomod" thermal --record "$work/rec/$(printf 'r%.0s' {1..250})" --duration 1
fi

# --- bad arguments: all refused before the kernel is asked (exit 2) -------
expect cli-status-extra-arg 2 'Invalid argument: `--frob'"'" status --frob
expect cli-set-no-gpu 2 'Missing the GPU' set
expect cli-set-nothing 2 'Nothing to change' set 0
expect cli-set-hz-negative 2 'Invalid sample rate \(0 to 1000\): `-1'"'" set 0 sample-hz -1
expect cli-set-hz-huge 2 'Invalid sample rate' set 0 sample-hz 99999999999999999999999
expect cli-set-hz-over-max 2 'Invalid sample rate' set 0 sample-hz 1001
expect cli-set-hz-text 2 'Invalid sample rate' set 0 sample-hz fast
expect cli-set-hz-hex 2 'Invalid sample rate' set 0 sample-hz 0x10
expect cli-set-hz-missing 2 'Missing value for `sample-hz'"'" set 0 sample-hz
expect cli-set-hz-twice 2 '`sample-hz'"'"' given twice: once is enough' set 0 sample-hz 50 sample-hz 60
expect cli-set-memhz-zero 2 'Invalid memory-sensor rate \(1 to 10\): `0'"'" set 0 mem-hz 0
expect cli-set-memhz-over-max 2 'Invalid memory-sensor rate' set 0 mem-hz 11
expect cli-set-memhz-missing 2 'Missing value for `mem-hz'"'" set 0 mem-hz
expect cli-set-memhz-twice 2 '`mem-hz'"'"' given twice: once is enough' set 0 mem-hz 1 mem-hz 2
expect cli-set-thresh-high 2 'Invalid threshold \(-40 to 200' set 0 threshold hotspot 200.001
expect cli-set-thresh-low 2 'Invalid threshold' set 0 threshold hotspot -41
expect cli-set-thresh-text 2 'Invalid threshold' set 0 threshold hotspot warm
expect cli-set-thresh-precision 2 'Invalid threshold' set 0 threshold hotspot 95.0001
expect cli-set-thresh-nan 2 'Invalid threshold' set 0 threshold hotspot nan
expect cli-set-thresh-missing 2 'Missing value for `threshold'"'" set 0 threshold hotspot
expect cli-set-thresh-two 2 'Only one threshold' set 0 threshold hotspot 90 threshold ch0 90
expect cli-set-sensor-empty 2 'Invalid sensor label' set 0 threshold '' 90
expect cli-set-sensor-long 2 'Invalid sensor label' set 0 threshold aaaaaaaaaaaaaaaaaaaaaaaaaaa 90
expect cli-set-unknown 2 'Unknown setting: `fan'"'" set 0 fan 100
expect cli-thermal-json-dump 2 'Choose one of' thermal --json --dump
expect cli-thermal-watch-record 2 'Choose one of' thermal --watch --record x.csv --duration 1
expect cli-thermal-record-no-duration 2 'go together' thermal --record x.csv
expect cli-thermal-duration-no-record 2 'go together' thermal --duration 5
expect cli-thermal-record-empty 2 'Empty file name' thermal --record '' --duration 1
expect cli-thermal-duration-zero 2 'Invalid --duration' thermal --record x.csv --duration 0
expect cli-thermal-duration-negative 2 'Invalid --duration' thermal --record x.csv --duration -5
expect cli-thermal-duration-text 2 'Invalid --duration' thermal --record x.csv --duration soon
expect cli-thermal-duration-unit 2 'Invalid --duration' thermal --record x.csv --duration 10x
expect cli-thermal-duration-huge 2 'Invalid --duration' thermal --record x.csv --duration 99999999999999999999h
expect cli-thermal-duration-8days 2 'Invalid --duration' thermal --record x.csv --duration 8d
expect cli-thermal-duration-missing 2 'Missing value for `--duration'"'" thermal --record x.csv --duration
expect cli-thermal-interval-small 2 'Invalid --interval \(0.05 s' thermal --watch --interval 0.01
expect cli-thermal-interval-text 2 'Invalid --interval' thermal --watch --interval often
expect cli-thermal-count-zero 2 'Invalid --count' thermal --watch --count 0
expect cli-thermal-count-no-watch 2 'only applies to --watch' thermal --count 3
expect cli-thermal-allow-loss-alone 2 'only applies to --record' thermal --allow-loss
expect cli-thermal-unknown 2 'Invalid argument: `--celsius'"'" thermal --celsius
expect cli-events-count-negative 2 'Invalid --count' events --count -1
expect cli-events-timeout-text 2 'Invalid --timeout' events --timeout later
expect cli-events-timeout-zero 2 'Invalid --timeout' events --timeout 0
expect cli-events-unknown 2 'Invalid argument: `--follow'"'" events --follow

# --- --record paths that cannot be written: clear error, nothing left -----
expect cli-record-proc 2 'Unable to create a file next to `/proc/nvs-x.csv'"'" \
	thermal --record /proc/nvs-x.csv --duration 1
expect cli-record-notdir 2 'Unable to create a file next to .*Not a directory' \
	thermal --record /etc/hostname/x.csv --duration 1
expect cli-record-nodir 2 'No such file or directory' \
	thermal --record "$work/missing/x.csv" --duration 1
if command -v setpriv >/dev/null && ((EUID == 0)); then
	mkdir -m 755 "$work/ro"
	nvs_world_copy "$plain/nvsidecar"
	setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		"$NVS_WORLD_COPY" thermal --record "$work/ro/x.csv" --duration 1 >"$work/out" 2>&1
	rc=$?
	if ((rc == 4)) && grep -q 'Permission denied' "$work/out" && [[ -z $(ls -A "$work/ro") ]]; then
		t_pass cli-record-unwritable
	else
		t_fail cli-record-unwritable "exit $rc, left: $(ls -A "$work/ro" | tr '\n' ' ') $(head -c 200 "$work/out")"
	fi
else
	t_skip cli-record-unwritable "needs root and setpriv to try as an unprivileged user"
fi

# --- output targets: regular files or -, never a device or a directory ----
# (before the module is asked: these fail the same with and without it)
expect cli-record-dev-null 2 '`/dev/null'"'"' is a character device, not a regular file' \
	thermal --record /dev/null --duration 1
[[ -c /dev/null ]] && t_pass cli-record-dev-null-intact || t_fail cli-record-dev-null-intact "/dev/null is no longer a device"
mkdir -p "$work/recdir"
expect cli-record-directory 2 'is a directory' thermal --record "$work/recdir" --duration 1
expect cli-record-trailing-slash 2 'names a directory' thermal --record "$work/recdir/" --duration 1
ln -s /dev/null "$work/null-link"
expect cli-record-link-to-device 2 'is a character device' thermal --record "$work/null-link" --duration 1
[[ -L $work/null-link ]] && t_pass cli-record-link-intact || t_fail cli-record-link-intact "the symlink was replaced"
mkfifo "$work/rec.fifo"
expect cli-record-fifo 2 'is a FIFO' thermal --record "$work/rec.fifo" --duration 1
if [[ ! -d /sys/module/nvsidecar ]]; then
	(cd "$work/recdir" && "$bin" thermal --record - --duration 1 >/dev/null 2>&1)
	[[ -z $(ls -A "$work/recdir") ]] && t_pass cli-record-dash-is-stdout ||
		t_fail cli-record-dash-is-stdout "a file appeared: $(ls -A "$work/recdir")"
else
	t_skip cli-record-dash-is-stdout "the nvsidecar module is loaded on this host"
fi

# --- arguments checked before the module is asked (exit 2, not 3) ---------
expect cli-thermal-gpu-negative 2 'Invalid --gpu' thermal --gpu -1
expect cli-thermal-gpu-bad-bdf 2 'Invalid --gpu' thermal --gpu 0000:zz:00.0
expect cli-thermal-interval-no-watch 2 'only applies to --watch' thermal --interval 5
expect cli-events-gpu-bad 2 'Invalid --gpu' events --gpu gpuX
expect cli-set-gpu-bad 2 'Invalid GPU' set gpu-1 reset-peaks
expect cli-dmabuf-importer-bad 2 'Invalid --importer' dmabuf probe --importer zz --fd 0
expect cli-dmabuf-size-overflow 2 'Invalid size' dmabuf probe --gpu 0 --size 17179869185G
expect cli-usage-short 2 "Try \`.*thermal --help'" thermal --celsius
if (($(wc -l <"$work/out") <= 3)); then t_pass cli-usage-no-full-help; else t_fail cli-usage-no-full-help "$(wc -l <"$work/out") lines"; fi

# --- a real run in text of the subcommands that need no module ------------
# (nccl-check reads a fixture; rdma finds no such NIC): success and
# not-found paths, also for the valgrind rule at the end
expect cli-nccl-text 0 '^NCCL 2\.21\.5' nccl-check "$NVS_TOP/tests/nccl/nccl-2.21-single-process.log"
expect cli-rdma-no-such-device 3 'No RDMA device' rdma --loopback --dev nvs-no-such-dev

# --- input files that are not what they seem (admin review L5) -----------
# A link to a FIFO gets the FIFO note, as the FIFO does (it was "has no
# devices with config space"); doctor refuses a --pci-dump it cannot use
# as the admin's input, exit 2, before any check, whatever the reason
# (a FIFO or a text file were a node FAIL, exit 1; a missing one exit 2);
# a dangling link names the target that is missing.
mkfifo "$work/l5.fifo"
ln -s "$work/l5.fifo" "$work/l5.fifo-link"
ln -s "$work/l5-nothere" "$work/l5.dangling"
fifo_re="PCI dump \`$work/l5.fifo-link' is a named FIFO that read as empty .*--pci-dump -"
dang_re="Unable to open \`$work/l5.dangling'.*No such file or directory \(a symbolic link to \`$work/l5-nothere', which does not exist\)"
expect cli-p2p-pci-dump-fifo-link 2 "$fifo_re" p2p --pci-dump "$work/l5.fifo-link"
expect cli-topo-pci-dump-fifo 2 "PCI dump \`$work/l5.fifo' is a named FIFO" topo --pci-dump "$work/l5.fifo"
expect cli-doctor-pci-dump-fifo-link 2 "$fifo_re" doctor --pci-dump "$work/l5.fifo-link"
expect cli-doctor-pci-dump-not-a-dump 2 "PCI dump \`$NVS_TOP/tests/nccl/nccl-2.21-single-process.log' has no devices with config space" \
	doctor --pci-dump "$NVS_TOP/tests/nccl/nccl-2.21-single-process.log"
expect cli-doctor-pci-dump-dangling 2 "$dang_re" doctor --pci-dump "$work/l5.dangling"
expect cli-nccl-check-dangling 2 "$dang_re" nccl-check "$work/l5.dangling"
expect cli-p2p-pci-dump-dangling 2 "$dang_re" p2p --pci-dump "$work/l5.dangling"

# --- an option given twice, or one the rest would make ignored: exit 2 ----
# (review T3-20: last-wins without a word, or accepted and ignored).
# usage_table NAME: each row of stdin is the message, then the words; each
# must be exit 2 with that message and the pointer to --help, and fail the
# same way with --json, as one error document.
usage_table() {
	local bad= msg words r n=0
	rm -rf "$work/ut"
	mkdir -p "$work/ut"
	while IFS='|' read -r msg words; do
		[[ -z $msg ]] && continue
		n=$((n + 1))
		# shellcheck disable=SC2086 # words
		"$bin" $words >"$work/out" 2>"$work/err"
		r=$?
		# shellcheck disable=SC2086
		vg_note "$r" $words
		[[ $r == 2 && ! -s $work/out ]] && grep -qF -- "$msg" "$work/err" && grep -q "^Try \`.* --help'" "$work/err" ||
			bad+=" [$words] rc $r: $(head -c 150 "$work/err" | tr '\n' ' ');"
		# shellcheck disable=SC2086 # words
		"$bin" --json $words >"$work/ut/$n.json" 2>/dev/null
		r=$?
		# shellcheck disable=SC2086
		vg_note "$r" --json $words
		[[ $r == 2 ]] || bad+=" [--json $words] rc $r;"
		printf '%s\n' "$msg" >"$work/ut/$n.msg"
		printf '%s\n' "$words" >"$work/ut/$n.words"
	done
	# the documents, all at once (one python, not one a row)
	bad+=$(python3 - "$work/ut" "$n" <<'EOP'
import json, sys
for i in range(1, int(sys.argv[2]) + 1):
    p = "%s/%d" % (sys.argv[1], i)
    msg = open(p + ".msg").read().rstrip("\n")
    try:
        d = json.load(open(p + ".json"))
        assert d["ok"] is False and d["exit"] == 2 and msg in d["error"]
    except Exception:
        print(" [--json %s] %s;" % (open(p + ".words").read().strip(), open(p + ".json").read()[:150]), end="")
EOP
)
	[[ -z $bad ]] && t_pass "$1" || t_fail "$1" "$bad"
}
dup=$NVS_TOP/tests/topo/5090-switch.dump
nlog=$NVS_TOP/tests/nccl/nccl-2.21-single-process.log
# (admin review A2: rdma, dmabuf and nccl-check --expect took the last of
# a repeat, or merged it; set had its own words for it)
usage_table cli-option-twice-or-ignored <<EOF2
\`--gpu' given twice: once is enough|thermal --gpu 0 --gpu 1
\`--duration' given twice|thermal --record $work/dup.csv --duration 1 --duration 2
\`--count' given twice|events --count 1 --count 2
\`--size' given twice|p2p --size 1M --size 2M
\`--pci-dump' given twice|topo --pci-dump $dup --pci-dump $dup
\`--expect-gpus' given twice|doctor --expect-gpus 8 --expect-gpus 2
\`--config' given twice|doctor --config /dev/null --config /dev/null
\`--threshold' given twice|idle-fix --threshold 50 --threshold 60
\`--lib' given twice|libcuda verify --lib /nonexistent --lib /nonexistent
--quick and --pci-dump exclude each other|doctor --quick --pci-dump $dup
--quick and --lib exclude each other|doctor --quick --lib /nonexistent
--quick and --nvml exclude each other|doctor --nvml /nonexistent --quick
--quick and --patched exclude each other|doctor --quick --patched /nonexistent
--quick and --driver-version exclude each other|doctor --quick --driver-version 590.48.01
--quick and --gpu-ids exclude each other|doctor --gpu-ids 1af4:1110 --quick
--importer only applies to --probe|libcuda verify --importer 0000:41:00.0
--out and --lib exclude each other|libcuda env --out /nonexistent --lib /nonexistent
\`--dev' given twice: once is enough|rdma --loopback --dev mlx5_0 --dev mlx5_1
\`--sizes' given twice|rdma --loopback --sizes 4K --sizes 8K
\`--mem' given twice|rdma --loopback --mem host --mem cuda-dmabuf
\`--gpu' given twice|dmabuf probe --gpu 0 --gpu 1
\`--importer' given twice|dmabuf probe --fd 3 --importer 0000:41:00.0 --importer 0000:42:00.0
\`--fd' given twice: once is enough|dmabuf probe --importer 0000:41:00.0 --fd 3 --fd 4
\`--source' given twice|dmabuf probe --gpu 0 --source udmabuf --source cuda
--source and --fd exclude each other|dmabuf probe --importer 0000:41:00.0 --fd 3 --source udmabuf
\`--expect' given twice: once is enough|nccl-check --expect p2p --expect gdr $nlog
\`sample-hz' given twice: once is enough|set 0 sample-hz 50 sample-hz 60
\`mem-hz' given twice|set 0 mem-hz 2 mem-hz 2
EOF2
# --opt=value is refused alike by every subcommand, in the same words,
# with the two words to write (admin review, small items b)
eq="write the option and its value as two words"
usage_table cli-option-equals-form <<EOF2
Invalid argument: \`--frob=1': \`--frob' is not an option of status; its --help lists the options|status --frob=1
Invalid argument: \`--gpu=0': $eq, \`--gpu 0'|thermal --gpu=0
Invalid argument: \`--count=1': $eq, \`--count 1'|events --count=1
Unknown setting: \`sample-hz=50': write the setting and its value as two words, \`sample-hz 50'|set 0 sample-hz=50
Invalid argument: \`--pci-dump=$dup': $eq, \`--pci-dump $dup'|topo --pci-dump=$dup
Invalid argument: \`--size=4M': $eq, \`--size 4M'|p2p --size=4M
Invalid argument: \`--expect=p2p': $eq, \`--expect p2p'|nccl-check --expect=p2p $nlog
Invalid argument: \`--sizes=4K': $eq, \`--sizes 4K'|rdma --loopback --sizes=4K
Invalid argument: \`--expect-gpus=8': $eq, \`--expect-gpus 8'|doctor --expect-gpus=8
Invalid argument: \`--threshold=50': $eq, \`--threshold 50'|idle-fix --threshold=50
Invalid argument: \`--lib=/x': $eq, \`--lib /x'|libcuda status --lib=/x
Invalid argument: \`--gpu=0': $eq, \`--gpu 0'|dmabuf probe --gpu=0
Invalid argument: \`--frob'|rdma --loopback --frob
EOF2
# ...and what to write depends on the option (admin review of the CLI,
# item 3): one that takes no value is written alone, not `--json yes'; one
# the subcommand does not have is said to be none, not `--foo bar'
nv="takes no value: write"
usage_table cli-option-equals-no-value <<EOF2
Invalid argument: \`--json=yes': \`--json' $nv \`--json'|status --json=yes
Invalid argument: \`--help=1': \`--help' $nv \`--help'|p2p --help=1
Invalid argument: \`--dump=1': \`--dump' $nv \`--dump'|thermal --dump=1
Invalid argument: \`--dry-run=yes': \`--dry-run' $nv \`--dry-run'|idle-fix --dry-run=yes
Invalid argument: \`--quick=1': \`--quick' $nv \`--quick'|doctor --quick=1
Invalid argument: \`--strict=yes': \`--strict' $nv \`--strict'|doctor --strict=yes
Invalid argument: \`--loopback=1': \`--loopback' $nv \`--loopback'|rdma --loopback=1
Invalid argument: \`--in-place=1': \`--in-place' $nv \`--in-place'|libcuda patch --in-place=1
Invalid argument: \`--dump=1': \`--dump' $nv \`--dump'|dmabuf probe --dump=1
Invalid argument: \`--dump=1': \`--dump' $nv \`--dump'|topo --dump=1
EOF2
ua="is not an option of"
usage_table cli-option-equals-unknown <<EOF2
Invalid argument: \`--foo=bar': \`--foo' $ua p2p; its --help lists the options|p2p --foo=bar
Invalid argument: \`--json=1': \`--json' $nv|events --json=1
Invalid argument: \`--probe=1': \`--probe' $ua libcuda status;|libcuda status --probe=1
Invalid argument: \`--fast=1': \`--fast' $ua rdma;|rdma --loopback --fast=1
Invalid argument: \`--foo=1': \`--foo' $ua doctor;|doctor --foo=1
Invalid argument: \`--follow=1': \`--follow' $ua events;|events --follow=1
Invalid argument: \`--gpu=0': \`--gpu' $ua nccl-check;|nccl-check --gpu=0 $nlog
Invalid argument: \`--frob=1': \`--frob' $ua set;|set 0 --frob=1
EOF2
# an option doctor does not have gets the words of --conf=x without the
# `=' too (it was a bare "Invalid argument"); a repeated --full or
# --strict is refused like a repeated option (admin review L6)
usage_table cli-doctor-unknown-bare-and-twice <<EOF2
Invalid argument: \`--conf': \`--conf' $ua doctor; its --help lists the options|doctor --conf
Invalid argument: \`--jso': \`--jso' $ua doctor; its --help lists the options|doctor --jso
Invalid argument: \`--frob': \`--frob' $ua status; its --help lists the options|status --frob
\`--full' given twice: once is enough|doctor --full --full
\`--strict' given twice: once is enough|doctor --strict --strict
EOF2
# a run's option written in doctor.conf as a word gets the run-option
# words, as "no-strict = 1" does (it was "expected key = value")
printf 'no-strict\n' >"$work/l6.conf"
expect cli-doctor-conf-run-option-word 2 \
	"^$work/l6.conf:1: \`no-strict' is not a doctor.conf key: it chooses one run; pass \`--no-strict' on the command line" \
	doctor --quick --config "$work/l6.conf"
# rdma's libcuda option is --cuda-lib: the --lib of p2p, doctor and
# libcuda points there (admin review L7: a bare "Invalid argument")
usage_table cli-rdma-lib-points-to-cuda-lib <<EOF2
Invalid argument: \`--lib': rdma names its libcuda with --cuda-lib PATH|rdma --loopback --lib /x
Invalid argument: \`--lib=/x': rdma names its libcuda with --cuda-lib PATH|rdma --lib=/x
EOF2
# a relative textfile in doctor.conf is refused as the file is read, with
# its line, before any check runs (admin review L7: it failed after all
# the checks, with no line number); "-" and absolute paths stay
printf '# node_exporter\ntextfile = rel/nvsidecar.prom\n' >"$work/l7.conf"
expect cli-doctor-conf-textfile-relative 2 \
	"^$work/l7.conf:2: textfile \`rel/nvsidecar.prom' is a relative path, .*use an absolute path" \
	doctor --quick --config "$work/l7.conf"
grep -q 'SKIP\|FAIL\|UNHEALTHY' "$work/out" && t_fail cli-doctor-conf-textfile-before-checks "$(head -c 200 "$work/out")" ||
	t_pass cli-doctor-conf-textfile-before-checks
bad=
for words in "p2p --foo=bar" "status --json=yes" "doctor --foo=1" "rdma --loopback --fast=1"; do
	# shellcheck disable=SC2086
	"$bin" $words >/dev/null 2>"$work/err"
	grep -q "two words" "$work/err" && bad+=" [$words] $(head -n 1 "$work/err")"
done
[[ -z $bad ]] && t_pass cli-option-equals-no-made-up-words || t_fail cli-option-equals-no-made-up-words "$bad"
# the two words to write are a command line to paste: a value with blanks,
# quotes or shell syntax is one quoted word there, the same value again
# (review of the CLI, L2)
bad=
for v in "4 M" "it's" "" "\$(touch $work/pwned); *" "a'b c\"d"; do
	for words in "p2p|--size=$v|two words, \`\\(.*\\)' (an option.*" "set|sample-hz=$v|two words, \`\\(.*\\)'\$"; do
		IFS='|' read -r sub arg re <<<"$words"
		if [[ $sub == set ]]; then "$bin" set 0 "$arg" >/dev/null 2>"$work/err"; else "$bin" "$sub" "$arg" >/dev/null 2>"$work/err"; fi
		r=$?
		sugg=$(sed -n "s/.*$re/\\1/p" "$work/err" | head -n 1)
		w=()
		eval "w=($sugg)" 2>/dev/null
		[[ $r == 2 && ${#w[@]} == 2 && ${w[0]} == "${arg%%=*}" && ${w[1]} == "$v" ]] ||
			bad+=" [$sub $arg] rc $r: [$sugg] -> ${#w[@]} word(s): $(head -n 1 "$work/err");"
	done
done
[[ -z $bad && ! -e $work/pwned ]] && t_pass cli-option-equals-value-quoted || t_fail cli-option-equals-value-quoted "$bad"
# control characters in a refused argument come out escaped, a newline as
# \n too (it was written raw, while ESC came out as \x1b); and no two
# words are offered to paste when the value has them, since the escaped
# text pasted is another value: the admin is told to retype it (admin
# review L6)
bad=
cc_sub=(p2p p2p set p2p)
cc_arg=($'--size=a\nb' $'--size=\e[31mred' $'sample-hz=5\n0' $'--fo\no=1')
cc_re=('--size=a\\nb' '--size=\\x1b\[31mred' 'sample-hz=5\\n0' '--fo\\no=1.: .--fo\\no. is not an option of p2p')
for k in "${!cc_arg[@]}"; do
	sub=${cc_sub[k]} arg=${cc_arg[k]} re=${cc_re[k]}
	if [[ $sub == set ]]; then "$bin" set 0 "$arg" >/dev/null 2>"$work/err"; else "$bin" "$sub" "$arg" >/dev/null 2>"$work/err"; fi
	r=$?
	[[ $r == 2 && $(wc -l <"$work/err") == 2 ]] && grep -q -- "^[A-Za-z ]*: \`$re" "$work/err" &&
		! grep -q "two words, \`" "$work/err" && { [[ $arg == --fo* ]] || grep -q 'retype it' "$work/err"; } ||
		bad+=" [$sub $(printf %q "$arg")] rc $r: $(head -c 200 "$work/err" | tr '\n' '|');"
done
[[ -z $bad ]] && t_pass cli-option-control-chars-escaped || t_fail cli-option-control-chars-escaped "$bad"
# the repeatable one still repeats
"$bin" doctor --quick --brief --limit hotspot:90 --limit mem:95 >/dev/null 2>"$work/err"
r=$?
[[ $r != 2 ]] && t_pass cli-doctor-limit-repeats || t_fail cli-doctor-limit-repeats "rc $r: $(head -c 200 "$work/err")"

# --- every --json failure is one JSON document {"ok":false,"exit":N,"error"} --
# jexpect NAME RC ARGS...: exit RC and, on stdout, exactly that document
jexpect() {
	local name=$1 rc=$2 got
	shift 2
	"$bin" "$@" >"$work/out" 2>"$work/err"
	got=$?
	vg_note "$got" "$@"
	if ! sanitizer_clean "$work/err"; then
		t_fail "$name" "sanitizer: $(grep -m1 -E 'ERROR|runtime error' "$work/err")"
	elif ((got != rc)); then
		t_fail "$name" "exit $got, want $rc: $(head -c 300 "$work/err" | tr '\n' ' ')"
	elif python3 -c '
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
assert d["ok"] is False and d["exit"] == int(sys.argv[2]) and isinstance(d["error"], str) and d["error"], d
' "$work/out" "$rc" 2>"$work/py"; then
		t_pass "$name"
	else
		t_fail "$name" "stdout is not the error document: $(head -c 200 "$work/out") $(tail -n 1 "$work/py")"
	fi
}
if [[ ! -d /sys/module/nvsidecar ]]; then
	jexpect cli-json-status 3 status --json
	jexpect cli-json-thermal 3 thermal --json
	jexpect cli-json-events 3 events --json --timeout 1
	jexpect cli-json-dmabuf 3 dmabuf probe --json --importer 0000:00:00.0 --fd 0
else
	for t in status thermal events dmabuf; do t_skip "cli-json-$t" "the nvsidecar module is loaded on this host"; done
fi
jexpect cli-json-usage-status 2 status --json --frob
jexpect cli-json-usage-set 2 set --json
jexpect cli-json-usage-thermal 2 thermal --json --dump
jexpect cli-json-usage-dispatcher 2 frobnicate --json
jexpect cli-json-usage-doctor 2 doctor --json --frobnicate
jexpect cli-json-topo 2 topo --json --pci-dump "$work/none.dump"
jexpect cli-json-nccl 2 nccl-check --json "$work/none.log"
jexpect cli-json-libcuda 2 libcuda status --json --lib "$work/none.so"
jexpect cli-json-rdma-usage 2 rdma --json --loopback --sizes 17179869185G

# --- one JSON contract: every subcommand, --json before or after it ------
# Every document, success or failure, is one JSON object whose "ok" and
# "exit" equal the process's exit status (issue 23 item 9). The list of
# subcommands is the dispatcher's own (--help), so a new one is walked too.
# jdoc NAME ARGS...: stdout is one document agreeing with the exit status.
jdoc() {
	local name=$1 got
	shift
	timeout 60 "$bin" "$@" >"$work/out" 2>"$work/err" </dev/null
	got=$?
	vg_note "$got" "$@"
	if ! sanitizer_clean "$work/err"; then
		t_fail "$name" "sanitizer: $(grep -m1 -E 'ERROR|runtime error' "$work/err")"
	elif python3 -c '
import json, sys
def once(pairs):
	keys = [k for k, _ in pairs]
	assert len(keys) == len(set(keys)), "a key twice: %r" % keys
	return dict(pairs)
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"), object_pairs_hook=once)
rc = int(sys.argv[2])
assert isinstance(d, dict), "not an object"
assert type(d.get("ok")) is bool and type(d.get("exit")) is int, "no ok/exit"
assert d["ok"] is (rc == 0) and d["exit"] == rc, "ok %r exit %r, process %d" % (d["ok"], d["exit"], rc)
' "$work/out" "$got" 2>"$work/py"; then
		t_pass "$name"
	else
		t_fail "$name" "exit $got: $(tail -n 1 "$work/py") $(head -c 150 "$work/out" | tr '\n' ' ')"
	fi
}
subs=$("$bin" --help | awk '/^Available subcommands:/ { f = 1; next } f && /^  [a-z]/ { print $1 }')
if [[ -z $subs ]]; then
	t_fail cli-json-walk "no subcommand listed by --help"
fi
# events waits for events when the module is loaded: --timeout bounds it
for s in $subs; do
	extra=()
	[[ $s == events ]] && extra=(--timeout 1)
	jdoc "cli-json-walk-$s-after" "$s" --json "${extra[@]}"
	jdoc "cli-json-walk-$s-before" --json "$s" "${extra[@]}"
	jdoc "cli-json-walk-$s-bad-after" "$s" --json --frobnicate
	jdoc "cli-json-walk-$s-bad-before" --json "$s" --frobnicate
done
# inputs that succeed, and success documents of subcommands with levels
nccl_log=$NVS_TOP/tests/nccl/nccl-2.21-single-process.log
for pos in before after; do
	j() { if [[ $pos == before ]]; then jdoc "$1" --json "${@:2}"; else jdoc "$1" "${@:2}" --json; fi; }
	j "cli-json-ok-topo-$pos" topo
	j "cli-json-ok-nccl-$pos" nccl-check "$nccl_log"
	j "cli-json-libcuda-env-$pos" libcuda env --out "$work/nolib"
	j "cli-json-doctor-quick-$pos" doctor --quick
	j "cli-json-doctor-textfile-full-$pos" doctor --quick --textfile /dev/full
	j "cli-json-usage-bare-$pos" frobnicate
done
jdoc cli-json-usage-alone --json
# a document that cannot be written: the status says so, with the real errno
"$bin" topo --json >/dev/full 2>"$work/err"
got=$?
if ((got == 1)) && grep -q 'No space left on device' "$work/err"; then
	t_pass cli-json-write-error
else
	t_fail cli-json-write-error "exit $got, want 1 and ENOSPC: $(head -c 200 "$work/err" | tr '\n' ' ')"
fi
# `help CMD' is `CMD --help'
if "$bin" help status >"$work/out" 2>"$work/err" && grep -q '^Usage: .* status' "$work/out"; then
	t_pass cli-help-cmd
else
	t_fail cli-help-cmd "$(head -c 200 "$work/err" | tr '\n' ' ')"
fi

# `--help' wherever --json puts it (review A7, A8): help and exit 0; an
# action missing after a leading --json is named as missing
bad=
for a in "--json set --help" "set --json --help" "set --help --json" "set 0 --help" "set gpu0 mem-hz 5 --help" \
	"--json dmabuf --help" "dmabuf --json --help" "--json libcuda --help" "libcuda --json --help" "--json --help"; do
	# shellcheck disable=SC2086 # words
	"$bin" $a >"$work/out" 2>"$work/err"
	r=$?
	[[ $r == 0 ]] && grep -q '^Usage: ' "$work/out" || bad+=" [$a] rc $r: $(head -c 120 "$work/err" "$work/out" | tr '\n' ' ');"
done
[[ -z $bad ]] && t_pass cli-json-help-anywhere || t_fail cli-json-help-anywhere "$bad"
bad=
# shellcheck disable=SC2089 # the quote is in the message part, not in the words
for a in "--json libcuda:Missing action: status, patch, verify, restore or env" "libcuda --json:Missing action: status" \
	"--json dmabuf:Missing action: \`probe'" "dmabuf --json:Missing action: \`probe'"; do
	# shellcheck disable=SC2086,SC2090 # words
	"$bin" ${a%%:*} >"$work/out" 2>"$work/err"
	r=$?
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["exit"] == 2 and d["error"].startswith(sys.argv[2]), d' \
		"$work/out" "${a#*:}" 2>/dev/null && [[ $r == 2 ]] || bad+=" [${a%%:*}] rc $r: $(head -c 150 "$work/out");"
done
# and the actions still run after a leading --json (the refusal names the
# action: an unknown --option is "not an option of" it, admin review L6)
"$bin" --json libcuda status --bogus >"$work/out" 2>/dev/null
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["error"] == "Invalid argument: `--bogus'"'"': `--bogus'"'"' is not an option of libcuda status; its --help lists the options", d' \
	"$work/out" 2>/dev/null || bad+=" [--json libcuda status --bogus] $(head -c 150 "$work/out");"
"$bin" --json dmabuf probe --bogus >"$work/out" 2>/dev/null
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["error"] == "Invalid argument: `--bogus'"'"': `--bogus'"'"' is not an option of dmabuf probe; its --help lists the options", d' \
	"$work/out" 2>/dev/null || bad+=" [--json dmabuf probe --bogus] $(head -c 150 "$work/out");"
[[ -z $bad ]] && t_pass cli-json-missing-action || t_fail cli-json-missing-action "$bad"

# T3-09: the commands that return 4 (permission denied) say so in --help,
# and do return it: an unreadable input, as an unprivileged user
bad=
for c in nccl-check topo p2p thermal; do
	"$bin" "$c" --help 2>&1 | tr '\n' ' ' | grep -Eq '(,|;) 4 permission denied' || bad+=" $c --help lacks 4;"
done
if ((EUID == 0)) && command -v setpriv >/dev/null; then
	nob=$work/nobody
	mkdir -p "$nob"
	chmod 755 "$work" "$nob"
	echo "host:1:1 [0] NCCL INFO Bootstrap : Using eth0" >"$nob/log"
	cp "$NVS_TOP/tests/topo/5090-switch.dump" "$nob/dump"
	chmod 600 "$nob/log" "$nob/dump"
	cp "$plain/nvsidecar" "$nob/nvsidecar"
	chmod 755 "$nob/nvsidecar"
	# (thermal: --record's file is made before the module is asked, in a directory nobody cannot write)
	for c in "nccl-check $nob/log" "topo --pci-dump $nob/dump" "p2p --nccl-log $nob/log" \
		"thermal --record $nob/rec.csv --duration 1"; do
		# shellcheck disable=SC2086 # words
		setpriv --reuid=65534 --regid=65534 --clear-groups "$nob/nvsidecar" $c >/dev/null 2>"$work/err"
		r=$?
		[[ $r == 4 ]] || bad+=" [$c] as nobody: rc $r, want 4: $(head -c 100 "$work/err");"
	done
fi
[[ -z $bad ]] && t_pass cli-help-exit-perm || t_fail cli-help-exit-perm "$bad"

# A14: the man page documents what set --help and the doctor's settings name
man8=$NVS_TOP/docs/nvsidecar.8
sect() { sed -n "/^\\.S[SH] $1\$/,/^\\.S[SH] $2\$/p" "$man8" | sed 's/\\-/-/g'; }
bad=
set_sec=$(sect set events)
for w in '.RB [ mem-hz' '.BI mem-hz' 'CAP_SYS_ADMIN' '.B --json'; do
	grep -qF -- "$w" <<<"$set_sec" || bad+=" set section lacks \`$w';"
done
env_sec=$(sect ENVIRONMENT FILES)
for v in NVSIDECAR_DATADIR NVSIDECAR_STATE_DIR NVSIDECAR_VERDICT_MAX_AGE NVSIDECAR_DOCTOR_TIMEOUT; do
	grep -q "^\.B $v\$" <<<"$env_sec" || bad+=" ENVIRONMENT lacks $v;"
done
grep -q '^\.I @DATADIR@/nvsidecar/known-issues.tsv$' <<<"$(sect FILES EXAMPLES)" || bad+=" FILES lacks known-issues.tsv;"
[[ -z $bad ]] && t_pass cli-man-set-env || t_fail cli-man-set-env "$bad"
# T3-22: every NVS_* variable the helper reads is in ENVIRONMENT (Test hooks)
env_sec=$(sect ENVIRONMENT FILES)
hooks=$(grep -rhoE '(nvs_env|env_ms)\("NVS_[A-Z0-9_]+"' "$NVS_TOP/user" --include='*.c' | sed 's/.*"\(NVS_[A-Z0-9_]*\)"/\1/' | sort -u)
bad=
for v in $hooks; do
	grep -qw -- "$v" <<<"$env_sec" || bad+=" $v"
done
if [[ -z $hooks ]]; then
	t_fail cli-man-test-hooks "found no NVS_* variable read in user/ (the pattern is stale)"
elif [[ -n $bad ]]; then
	t_fail cli-man-test-hooks "nvsidecar(8) ENVIRONMENT lacks:$bad"
else
	t_pass "cli-man-test-hooks ($(wc -w <<<"$hooks") variables)"
fi

# --- unit tests of the pure functions and the formatters ------------------
# The sources they share are compiled once (two at a time) into one
# archive that each test links, not once per test: 10 s less of CI.
unit_cc=(${CC:-gcc} -std=gnu11 -D_GNU_SOURCE -DNVS_TOOL_VERSION='"test"' -O1 -g
	-Wall -Wextra -Werror -fsanitize=address,undefined -fno-omit-frame-pointer
	-I"$NVS_TOP/user" -I"$NVS_TOP/user/sys/libnvsidecar" -I"$NVS_TOP/kmod/uapi"
	$(pkg-config --cflags libnl-genl-3.0))
rm -rf "$unit/obj" "$unit/shared.a"
mkdir -p "$unit/obj"
unit_ok=1
if ! printf '%s\n' "$NVS_TOP"/user/lib/*.c "$NVS_TOP"/user/cli/{out,gpu,csv,row,row_thermal,row_dmabuf,args}.c \
	"$NVS_TOP"/user/check/record.c |
	xargs -P "$(nproc)" -I{} sh -c 'src=$1 dir=$2; shift 2; exec "$@" -c -o "$dir/obj/$(echo "$src" | tr / _).o" "$src"' \
		sh {} "$unit" "${unit_cc[@]}" \
		>"$unit/shared.log" 2>&1 || ! ar rcs "$unit/shared.a" "$unit"/obj/*.o >>"$unit/shared.log" 2>&1; then
	t_fail cli-unit-build-shared "$(head -n 5 "$unit/shared.log" | tr '\n' ' ')"
	unit_ok=0
fi
cc_unit() {
	local out=$1
	shift
	((unit_ok)) || return 1
	"${unit_cc[@]}" -o "$unit/$out" "$@" "$unit/shared.a" "$asan/libnvsidecar.a" $(pkg-config --libs libnl-genl-3.0) \
		>"$unit/$out.log" 2>&1 || { t_fail "cli-unit-build-$out" "$(head -n 5 "$unit/$out.log" | tr '\n' ' ')"; return 1; }
}

if cc_unit cli-util "$NVS_TOP/tests/unit/cli-util.c"; then
	"$unit/cli-util" >"$work/out" 2>&1
	rc=$?
	if ((rc == 0)) && sanitizer_clean "$work/out"; then
		t_pass cli-unit-parse-format
	else
		t_fail cli-unit-parse-format "$(grep -m3 -E 'FAIL|ERROR|runtime' "$work/out" | tr '\n' ' ')"
	fi
fi

if cc_unit cli-io "$NVS_TOP/tests/unit/cli-io.c"; then
	"$unit/cli-io" >"$work/out" 2>&1
	rc=$?
	if ((rc == 0)) && sanitizer_clean "$work/out"; then
		t_pass cli-unit-io-text
	else
		t_fail cli-unit-io-text "$(grep -m3 -E 'FAIL|ERROR|runtime' "$work/out" | tr '\n' ' ')"
	fi
fi

for kind in THERMAL STATUS EVENTS; do
	cc_unit "cli-format-$kind" -DFMT_$kind "$NVS_TOP/tests/unit/cli-format.c" || continue
done

# fmt KIND MODE: output of a formatter, or fails on a sanitizer report.
fmt() {
	"$unit/cli-format-$1" "$2" >"$work/fmt" 2>"$work/fmt.err" && sanitizer_clean "$work/fmt.err" &&
		cat "$work/fmt"
}

for kind in THERMAL STATUS; do
	k=${kind,,}
	if out=$(fmt "$kind" json) && python3 -c 'import json, sys; json.load(sys.stdin)' <<<"$out"; then
		t_pass "cli-$k-json-parses"
	else
		t_fail "cli-$k-json-parses" "python3 rejects it: $(head -c 200 <<<"$out")"
	fi
done
out=$(fmt THERMAL json)
if python3 - "$out" <<'EOF'; then
import json, sys
d = json.loads(sys.argv[1])
g = d["gpus"][0]
s = g["sensors"]
assert [x["label"] for x in s] == ["hotspot", "average", "ch0", "mem0"], s
assert s[0]["mc"] == 60000 and s[0]["max_mc"] == 55000 and s[0]["alarm"] is True
assert s[3]["valid"] is False and s[3]["mc"] is None
assert d["gpus"][1]["status"] == "no-driver"
EOF
	t_pass cli-thermal-json-content
else
	t_fail cli-thermal-json-content "values differ from the fixture"
fi
out=$(fmt STATUS json)
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["gpus"][1]["reason"] == "driver \"nvidia\"\tunbound\n\\ \x01", d["gpus"][1]["reason"]' <<<"$out" &&
	t_pass cli-status-json-escapes || t_fail cli-status-json-escapes "control characters or quotes not round-tripped"

if out=$(fmt EVENTS json) && python3 -c '
import json, sys
lines = sys.stdin.read().splitlines()
ev = [json.loads(l) for l in lines]
assert [e["type"] for e in ev] == ["threshold-crossed", "threshold-cleared", "status-changed", "unknown"], ev
assert ev[0]["sensor"]["mc"] == 96250 and ev[2]["reason"] == "quote \" backslash \\"
' <<<"$out"; then
	t_pass cli-events-json-lines
else
	t_fail cli-events-json-lines "not one valid JSON object per line: $(head -c 200 <<<"$out")"
fi
out=$(fmt EVENTS human)
if grep -qx '\[12345.678901\] gpu0 0000:03:00.0 threshold-crossed hotspot 96.25 °C > 95.0 °C' <<<"$out"; then
	t_pass cli-events-human
else
	t_fail cli-events-human "unexpected line: $(head -n 1 <<<"$out")"
fi

# --dump: the documented columns, in order, exactly.
want=$'0\t0000:03:00.0\t0\thotspot\t1\t60000\t60000\t-5250\t55000\t1\n0\t0000:03:00.0\t1\taverage\t1\t61001\t90000\t-5250\t-\t0\n0\t0000:03:00.0\t2\tch0\t1\t62002\t90000\t-5250\t-\t0\n0\t0000:03:00.0\t3\tmem0\t0\t-\t-\t-\t-\t0'
out=$(fmt THERMAL dump)
if [[ $out == "$want" ]]; then
	t_pass cli-thermal-dump-columns
else
	t_fail cli-thermal-dump-columns "got: $(head -n 2 <<<"$out" | tr '\t\n' '|;')"
fi
out=$(fmt THERMAL table)
if grep -qE '^gpu0 +hotspot +60\.0\* +60\.0 +-5\.25 +55\.0 +ALARM$' <<<"$out" && ! grep -q $'\e' <<<"$out"; then
	t_pass cli-thermal-table
else
	t_fail cli-thermal-table "unexpected table: $(head -n 2 <<<"$out" | tr '\n' ';')"
fi

# --- man page and completion ----------------------------------------------
man8=$NVS_TOP/docs/nvsidecar.8
if [[ ! -f $man8 ]]; then
	t_fail cli-man-renders "docs/nvsidecar.8 is missing"
elif warn=$(LC_ALL=C.UTF-8 groff -man -ww -z -Tutf8 "$man8" 2>&1) && [[ -z $warn ]] &&
	MANWIDTH=80 man -l "$man8" 2>/dev/null | grep -q '^NAME'; then
	t_pass cli-man-renders
else
	t_fail cli-man-renders "groff: $(head -n 3 <<<"$warn" | tr '\n' ' ')"
fi
# Every subcommand of the dispatcher table has an entry in the man page.
missing=
for sub in $(sed -n 's/^\t{ "\([a-z0-9-]*\)", .*/\1/p' "$NVS_TOP/user/cmd/nvsidecar.c"); do
	sed 's/\\-/-/g' "$man8" 2>/dev/null | grep -qE "^\.SS \"?$sub( |\"|$)" || missing+=" $sub"
done
if [[ -z $missing ]]; then t_pass cli-man-covers-subcommands; else t_fail cli-man-covers-subcommands "no .SS for:$missing"; fi

comp=$NVS_TOP/scripts/completion/nvsidecar.bash
# complete_words WORD...: what the completion offers for the last word.
complete_words() {
	bash -c '
		. "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
		_nvsidecar nvsidecar "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}"' _ "$comp" "$@" 2>&1
}
if [[ ! -f $comp ]] || ! bash -n "$comp"; then
	t_fail cli-completion "scripts/completion/nvsidecar.bash is missing or not valid bash"
else
	ok=1
	grep -qx thermal <<<"$(complete_words nvsidecar th)" || ok=0
	grep -qx -- --record <<<"$(complete_words nvsidecar thermal --re)" || ok=0
	grep -qx sample-hz <<<"$(complete_words nvsidecar set 0 s)" || ok=0
	grep -qx -- --timeout <<<"$(complete_words nvsidecar events --t)" || ok=0
	[[ -z $(complete_words nvsidecar thermal --duration '') ]] || ok=0
	if ((ok)); then t_pass cli-completion; else t_fail cli-completion "missing subcommands or options"; fi

	# Every subcommand of the dispatcher, and every option its --help lists
	# (for libcuda and dmabuf, of each action), is completed.
	# help_opts ARGS...: the options a --help lists (usage lines, option lines).
	help_opts() {
		"$bin" "$@" --help 2>/dev/null | python3 -c '
import re, sys
opts = set()
for line in sys.stdin:
    if line.startswith("Usage:") or re.match(r"^ +\[", line) or re.match(r"^ +(\w+ )+\[", line):
        opts.update(re.findall(r"--[a-z][a-z-]*", line))
    else:
        m = re.match(r"^ +(--[a-z][a-z-]*)", line)
        if m:
            opts.add(m.group(1))
print("\n".join(sorted(opts)))'
	}
	missing= nopts=0
	subs=$(complete_words nvsidecar '')
	for sub in $(sed -n 's/^\t{ "\([a-z0-9-]*\)", .*/\1/p' "$NVS_TOP/user/cmd/nvsidecar.c"); do
		grep -qx -- "$sub" <<<"$subs" || missing+=" $sub"
		case $sub in
		libcuda) acts="status patch verify restore env" ;;
		dmabuf) acts="probe" ;;
		*) acts="" ;;
		esac
		for act in ${acts:--}; do
			[[ $act == - ]] && act=
			# shellcheck disable=SC2086 # no action is no word
			offered=$(complete_words nvsidecar "$sub" $act --)
			# shellcheck disable=SC2086
			for o in $(help_opts "$sub" $act); do
				nopts=$((nopts + 1))
				grep -qx -- "$o" <<<"$offered" || missing+=" $sub${act:+ $act}:$o"
			done
		done
	done
	if [[ -z $missing ]] && ((nopts > 60)); then
		t_pass cli-completion-every-option
	else
		t_fail cli-completion-every-option "$nopts options in the --help texts; not completed:$missing"
	fi

	# File and directory names where a path is expected.
	mkdir -p "$work/comp/dir-a"
	: >"$work/comp/nccl-run1.log"
	ok=1
	for words in "nccl-check $work/comp/nccl" "nccl-check --json $work/comp/nccl" "topo --pci-dump $work/comp/nc" \
		"p2p --nccl-log $work/comp/nc" "thermal --record $work/comp/nc" "doctor --pci-dump $work/comp/nc" \
		"libcuda status --lib $work/comp/nc"; do
		# shellcheck disable=SC2086 # the words are the point
		grep -qx "$work/comp/nccl-run1.log" <<<"$(complete_words nvsidecar $words)" || { ok=0; bad="$words"; }
	done
	grep -qx "$work/comp/dir-a" <<<"$(complete_words nvsidecar libcuda patch --out "$work/comp/d")" || { ok=0; bad=--out; }
	grep -qx -- "p2p,gdr" <<<"$(complete_words nvsidecar nccl-check --expect p2p,g)" || { ok=0; bad=--expect; }
	grep -qx dma-heap <<<"$(complete_words nvsidecar dmabuf probe --source d)" || { ok=0; bad=--source; }
	if ((ok)); then t_pass cli-completion-files; else t_fail cli-completion-files "no file names for: ${bad:-}"; fi
	# bash falls back to file names where the function has nothing to offer
	if bash -c '. "$1"; complete -p nvsidecar' _ "$comp" | grep -q -- '-o default'; then
		t_pass cli-completion-default-files
	else
		t_fail cli-completion-default-files "complete -p lacks -o default"
	fi
fi

# --- a failed write to standard output is said, and is not success ----------
# (review 2, m15: rc 1 with an empty stderr, and --help rc 0, before)
if [[ -w /dev/full ]]; then
	bad=
	for c in "--help" "--version" "topo --pci-dump $NVS_TOP/tests/topo/5090-switch.dump" \
		"nccl-check $NVS_TOP/tests/nccl/nccl-2.19-roce-nogdr.log" "topo --json --pci-dump /nonexistent"; do
		# shellcheck disable=SC2086
		"$bin" $c >/dev/full 2>"$work/err"
		rc=$?
		[[ $rc != 0 && $rc != 97 ]] && grep -q '^write error: No space left on device' "$work/err" &&
			[[ $(grep -c 'write error' "$work/err") == 1 ]] || bad+=" [$c] rc $rc: $(head -c 200 "$work/err")"
	done
	[[ -z $bad ]] && t_pass cli-stdout-write-error || t_fail cli-stdout-write-error "$bad"
else
	t_skip cli-stdout-write-error "/dev/full is not writable here"
fi

# --- a closed pipe with SIGPIPE ignored is EPIPE, not EIO -------------------
# (review T3-21: "write error: Input/output error" for `| head -c 10').
# The reader is gone before the first write: the sleep lets `true' exit, so
# no byte can reach a live reader, whatever the scheduler does.
bad=
for c in "nccl-check --json $NVS_TOP/tests/nccl/nccl-2.21-single-process.log" \
	"nccl-check $NVS_TOP/tests/nccl/nccl-2.21-single-process.log" "--help"; do
	rm -f "$work/err" "$work/err.rc"
	# shellcheck disable=SC2016,SC2086 # $@ is the inner bash's; the words are the point
	E=$work/err bash -c 'trap "" PIPE; sleep 0.3; "$@" 2>"$E"; echo $? >"$E.rc"' _ "$bin" $c | true
	rc=$(cat "$work/err.rc" 2>/dev/null)
	[[ $rc == 1 ]] && grep -qx 'write error: Broken pipe (standard output)' "$work/err" &&
		[[ $(grep -c 'write error' "$work/err") == 1 ]] || bad+=" [$c] rc ${rc:-?}: $(head -c 200 "$work/err")"
done
[[ -z $bad ]] && t_pass cli-stdout-epipe || t_fail cli-stdout-epipe "$bad"

# --- valgrind: a subset of the cases above, chosen by rule -----------------
# Valgrind finds what ASan does not: reads of uninitialised memory. Every
# case above already ran under ASan, so valgrind (about 20 times slower)
# gets a subset that covers every subcommand in both renderings. The rule:
# for each subcommand of the dispatcher (its --help list; "-" for a
# command line with none) and each output mode (JSON when --json is among
# the words before `--', else text), the first case in this file's order
# that got past argument checking (exit status not 2), or else the first
# case. A new subcommand or a new case is picked up by the same rule; a
# subcommand that no case runs in one of the modes fails cli-valgrind-cover.
vg_subs=" $("$bin" --help | awk '/^Available subcommands:/ { f = 1; next } f && /^  [a-z]/ { printf "%s ", $1 }')"
declare -A vg_pick=() vg_first=()
for e in "${vg_all[@]}"; do
	rc=${e%% *}
	eval "args=(${e#* })"
	sub=- mode=text
	for w in "${args[@]}"; do
		[[ $w == -- ]] && break
		[[ $w == --json ]] && mode=json
		[[ $sub == - && $w != -* && $vg_subs == *" $w "* ]] && sub=$w
	done
	k="$sub/$mode"
	[[ -z ${vg_first[$k]:-} ]] && vg_first[$k]=${e#* }
	[[ -z ${vg_pick[$k]:-} && $rc != 2 ]] && vg_pick[$k]=${e#* }
done
vg_cases=() missing=
for k in "${!vg_first[@]}"; do
	vg_cases+=("${vg_pick[$k]:-${vg_first[$k]}}")
done
for s in $vg_subs; do
	for m in text json; do
		[[ -n ${vg_first[$s/$m]:-} ]] || missing+=" $s/$m"
	done
done
[[ -z $missing ]] && t_pass "cli-valgrind-cover (${#vg_cases[@]} cases)" ||
	t_fail cli-valgrind-cover "no case runs these subcommand/mode pairs:$missing"
if ! command -v valgrind >/dev/null; then
	t_skip cli-valgrind "valgrind is not installed (scripts/deps.sh installs it)"
else
	# one case a CPU at a time: each is a single-threaded valgrind run
	bad= k=0 jobs=${NVS_HOST_JOBS:-$(nproc)}
	for c in "${vg_cases[@]}"; do
		(
			eval "args=($c)"
			timeout 120 valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
				--show-leak-kinds=definite "$plain/nvsidecar" "${args[@]}" >/dev/null 2>"$work/vg.$k" </dev/null
			(($? == 99)) && echo " [${args[*]}]: $(grep -m1 '==' "$work/vg.$k")" >"$work/vg.$k.bad"
		) &
		k=$((k + 1))
		((k % jobs)) || wait
	done
	wait
	for ((i = 0; i < k; i++)); do
		[[ -f $work/vg.$i.bad ]] && bad+=$(<"$work/vg.$i.bad")
	done
	if [[ -z $bad ]]; then
		t_pass cli-valgrind
	else
		t_fail cli-valgrind "${bad:0:400}"
	fi
fi
exit 0
