# SPDX-License-Identifier: GPL-2.0 OR MIT
# Sourced by every test suite. A suite reports each test with exactly one of
# t_pass, t_fail or t_skip; tests/run counts the lines they append to
# $NVS_RESULTS. A skip always says why.

: "${NVS_TOP:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${NVS_RESULTS:=/dev/null}"
: "${NVS_BUILD:=$NVS_TOP/build}"
: "${NVS_SHARED:=$NVS_TOP/../shared}"
export NVS_TOP NVS_RESULTS NVS_BUILD NVS_SHARED

if [[ -t 1 && -z ${NO_COLOR:-} ]]; then
	_t_g=$'\e[32m' _t_r=$'\e[31m' _t_y=$'\e[33m' _t_n=$'\e[0m'
else
	_t_g= _t_r= _t_y= _t_n=
fi

t_pass() { echo "PASS $1" >>"$NVS_RESULTS"; echo "  ${_t_g}PASS${_t_n} $1"; }
# t_fail NAME REASON
t_fail() { echo "FAIL $1: $2" >>"$NVS_RESULTS"; echo "  ${_t_r}FAIL${_t_n} $1: $2"; }
# t_skip NAME REASON
t_skip() { echo "SKIP $1: $2" >>"$NVS_RESULTS"; echo "  ${_t_y}SKIP${_t_n} $1: $2"; }

# t_sanitizer_clean FILE: no ASan/LSan/UBSan report in FILE.
t_sanitizer_clean() {
	! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: UndefinedBehavior' "$1"
}

# t_cmd DIR SECS CMD...: runs CMD bounded by SECS, stdout in DIR/out and
# stderr in DIR/err; its exit status is in $rc (124: it timed out).
t_cmd() {
	local dir=$1 secs=$2
	shift 2
	timeout -k 5 "$secs" "$@" >"$dir/out" 2>"$dir/err"
	rc=$?
}

# t_judge DIR NAME WANT_RC [PYTHON]: judges the last t_cmd in DIR: no
# sanitizer report on stderr, exit status WANT_RC, and the PYTHON
# assertions, which see the JSON stdout as d (None when it is not JSON)
# and stdout and stderr as the strings out and err (undecodable bytes kept
# as surrogates); they fail the test by raising.
t_judge() {
	local dir=$1 name=$2 want=$3 py=${4:-} msg py3=/usr/bin/python3
	# Debian's python3 (deps.list): a version manager's shim on PATH costs
	# seconds per start on a loaded machine.
	[[ -x $py3 ]] || py3=python3
	if ! t_sanitizer_clean "$dir/err"; then
		t_fail "$name" "sanitizer: $(grep -m1 -E 'ERROR|runtime error' "$dir/err")"
		return
	fi
	if ((rc != want)); then
		t_fail "$name" "exit $rc, want $want: $(head -c 300 "$dir/err" "$dir/out" | tr '\n' ' ')"
		return
	fi
	[[ -z $py ]] && { t_pass "$name"; return; }
	if msg=$("$py3" - "$dir/out" "$dir/err" 2>&1 <<EOF
import json, sys
out = open(sys.argv[1], encoding="utf-8", errors="surrogateescape").read()
err = open(sys.argv[2], encoding="utf-8", errors="surrogateescape").read()
try:
    d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
except ValueError:
    d = None
$py
EOF
	); then
		t_pass "$name"
	else
		t_fail "$name" "$(tail -n 2 <<<"$msg" | tr '\n' ' ')"
	fi
}

# t_run NAME CMD...: passes if CMD exits 0; on failure shows its last lines.
t_run() {
	local name=$1 out rc
	shift
	out=$("$@" 2>&1) && { t_pass "$name"; return 0; }
	rc=$?
	t_fail "$name" "exit $rc: $(tail -n 5 <<<"$out" | tr '\n' ' ')"
	return 1
}

# Every build a test makes turns warnings into errors (user/Makefile keeps
# -Werror out of a user's `make', so that a newer compiler cannot break it).
export WERROR=1

# nvs_asan_build: the helper built with AddressSanitizer and UBSan
# (user/Makefile ASAN=1) in $NVS_ASAN, the one ASan build every suite uses:
# the first suite of a run builds it, the others find it up to date. On
# failure prints the log's last lines (for t_fail) and returns 1.
: "${NVS_ASAN:=$NVS_BUILD/asan}"
export NVS_ASAN
nvs_asan_build() {
	mkdir -p "$NVS_ASAN"
	make -s -C "$NVS_TOP/user" O="$NVS_ASAN" ASAN=1 -j2 >"$NVS_ASAN.log" 2>&1 && return 0
	echo "$(grep -m3 -E 'error' "$NVS_ASAN.log" | tr '\n' ' ')(log: $NVS_ASAN.log)"
	return 1
}

# nvs_world_copy FILE: copies FILE (a program or tool a test runs as an
# unprivileged user) into $NVS_WORLD, a folder every user may enter, and
# sets NVS_WORLD_COPY to the copy. The checkout may sit in a folder others
# cannot enter (root's home, a 0700 mktemp folder): run in place, such a
# program fails with "Permission denied". tests/run makes $NVS_WORLD and
# removes it at the end; a suite run alone gets one in /tmp.
nvs_world_copy() {
	if [[ -z ${NVS_WORLD:-} || ! -d $NVS_WORLD ]]; then
		NVS_WORLD=$(mktemp -d /tmp/nvs-world.XXXXXX) && chmod 755 "$NVS_WORLD" || return 1
		export NVS_WORLD
	fi
	NVS_WORLD_COPY=$(mktemp "$NVS_WORLD/${1##*/}.XXXXXX") &&
		cp "$1" "$NVS_WORLD_COPY" && chmod 755 "$NVS_WORLD_COPY"
}

# nvs_proof_hook KIND [poweroff]: prints the premount proof of 85-boot and
# 86-image (tests/host/premount-proof) as the hook that runs it: KIND
# initramfs-tools, an init-premount script (the real root goes to
# ${rootmnt:-/root}), or dracut, a cmdline hook that dracut's init sources
# (the root goes to /sysroot). poweroff: the guest powers off after it.
nvs_proof_hook() {
	case $1 in
	initramfs-tools)
		echo '#!/bin/sh'
		# shellcheck disable=SC2016 # for the script's shell
		echo 'case "$1" in prereqs) exit 0 ;; esac'
		cat "$NVS_TOP/tests/host/premount-proof"
		# shellcheck disable=SC2016
		echo 'nvs_proof init-premount "${rootmnt:-/root}"' "${2:-}"
		;;
	dracut)
		cat "$NVS_TOP/tests/host/premount-proof"
		echo "nvs_proof cmdline /sysroot ${2:-}"
		;;
	*) return 1 ;;
	esac
}

# The helper binary under test (built by `make user`; override with NVS_BIN).
: "${NVS_BIN:=$NVS_TOP/user/nvsidecar}"
export NVS_BIN

# debian_kernels NAME: the installed Debian kernels' releases (the 6.1 and
# 6.12 lanes scripts/deps.sh installs; their ABI is read from the
# metapackages, never written here) in the array `kernels'. A missing one
# is a failure of NAME. Needs scripts/kernels.sh sourced.
debian_kernels() {
	local lane
	kernels=()
	for lane in 6.1 6.12; do
		if kern_resolve "$lane"; then
			kernels+=("$KREL")
		else
			t_fail "$1: kernel $lane" "$KERR"
		fi
	done
}

# nvs_only NAME...: true when $NVS_ONLY (blank-separated globs, e.g.
# 'cli thermal-*') is unset or one of its globs matches one of the NAMEs
# (callers pass a test's names with and without prefix and suffix:
# "40-cli.sh 40-cli cli", "t-topo.sh t-topo topo").
nvs_only() {
	local g n globs
	[[ -z ${NVS_ONLY:-} ]] && return 0
	# Split without expanding: the globs are matched against names here.
	read -ra globs <<<"$NVS_ONLY"
	for g in "${globs[@]}"; do
		for n; do
			# shellcheck disable=SC2053 # g is a glob
			[[ $n == $g ]] && return 0
		done
	done
	return 1
}

# The VM lane policy lives in tests/vm/lanes.tsv (its header says the
# format); these read it on the host (lanes.sh) and in the guest
# (guest-run.sh).
_nvs_lanes=$NVS_TOP/tests/vm/lanes.tsv

# lane_class FILE: prints the class FILE declares in its header
# ("# class: NAME"), nothing if none.
lane_class() {
	sed -n '1,12{s/^# class: \([A-Za-z0-9_-]*\).*/\1/p}' "$1" | head -n 1
}

# lane_class_check FILE: true when FILE declares a class the table knows;
# otherwise prints why to stdout and returns 1.
lane_class_check() {
	local c kind name _
	c=$(lane_class "$1")
	if [[ -z $c ]]; then
		echo "${1##*/} declares no class: add a \"# class: NAME\" line under its SPDX line (classes: tests/vm/lanes.tsv)"
		return 1
	fi
	while read -r kind name _; do
		[[ $kind == class && $name == "$c" ]] && return 0
	done <"$_nvs_lanes"
	echo "${1##*/} declares class \`$c', which tests/vm/lanes.tsv does not list"
	return 1
}

# lane_knobs LANE: sets LANE_LIMIT, LANE_FTIMEOUT (s), LANE_GPUS and the
# array LANE_ENV (VAR=VALUE) from LANE's "lane" row; 1500 400 8 without one.
# shellcheck disable=SC2034 # LANE_* are for the caller
lane_knobs() {
	local kind name limit ft gpus rest
	LANE_LIMIT=1500 LANE_FTIMEOUT=400 LANE_GPUS=8 LANE_ENV=()
	while read -r kind name limit ft gpus rest; do
		[[ $kind == lane && $name == "$1" ]] || continue
		LANE_LIMIT=$limit LANE_FTIMEOUT=$ft LANE_GPUS=$gpus
		read -ra LANE_ENV <<<"$rest"
	done <"$_nvs_lanes"
}

# lane_verdict LANE FILE: sets LANE_WHY to the reason LANE leaves FILE out
# (a "skip" row naming the file, else one naming its class, else
# $NVS_LANE_SKIP_EXTRA naming it) and returns 1; returns 0 when it runs.
# shellcheck disable=SC2034 # LANE_WHY is for the caller
lane_verdict() {
	local lane=$1 base=${2##*/} c kind l what why by_class=
	c=$(lane_class "$2")
	LANE_WHY=
	while read -r kind l what why; do
		[[ $kind == skip && $l == "$lane" ]] || continue
		if [[ ,$what, == *",$base,"* ]]; then
			LANE_WHY=$why
			return 1
		fi
		[[ -n $c && ,$what, == *",$c,"* && -z $by_class ]] && by_class=$why
	done <"$_nvs_lanes"
	if [[ -n $by_class ]]; then
		LANE_WHY=$by_class
		return 1
	fi
	if [[ " ${NVS_LANE_SKIP_EXTRA:-} " == *" $base "* ]]; then
		LANE_WHY="left out by NVS_LANE_SKIP_EXTRA"
		return 1
	fi
	return 0
}
