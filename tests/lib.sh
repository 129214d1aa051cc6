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
