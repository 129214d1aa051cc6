#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# `nvsidecar rdma' on the host, where there is no RDMA device: --help and
# its exit codes, argument checking (bad sizes, unknown memory kinds,
# missing peer, options for the wrong mode) with clear messages and exit 2,
# the "no RDMA device" path (exit 3) in human and JSON form. Everything
# runs under AddressSanitizer/UBSan/LeakSanitizer. The transfers, dma-buf
# refusals and faults run on soft-RoCE in the VM lanes (tests/vm/t-rdma.sh).
set -u
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

asan=$NVS_ASAN
work=$(mktemp -d /tmp/nvs-rdma.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$asan"

export ASAN_OPTIONS=exitcode=97:detect_leaks=1:abort_on_error=0
export LSAN_OPTIONS=exitcode=97
export UBSAN_OPTIONS=halt_on_error=1:exitcode=97:print_stacktrace=1
export NO_COLOR=1

if ! why=$(nvs_asan_build); then
	t_fail rdma-build-asan "$why"
	exit 0
fi
bin=$asan/nvsidecar
if ! "$bin" --help 2>/dev/null | grep -q '^  rdma '; then
	t_fail rdma-listed "the rdma subcommand is not in \`nvsidecar --help'"
	exit 0
fi
t_pass rdma-listed

sanitizer_clean() { t_sanitizer_clean "$@"; }

# expect NAME RC PATTERN ARGS...: exit status RC and PATTERN on stderr.
expect() {
	local name=$1 want=$2 pat=$3 rc
	shift 3
	timeout 30 "$bin" rdma "$@" >"$work/out" 2>"$work/err"
	rc=$?
	if ((rc != want)); then
		t_fail "$name" "exit $rc, want $want: $(head -c 300 "$work/err")"
	elif ! grep -q -- "$pat" "$work/err"; then
		t_fail "$name" "stderr lacks \`$pat': $(head -c 300 "$work/err")"
	elif ! sanitizer_clean "$work/err"; then
		t_fail "$name" "sanitizer report: $(grep -m2 -E 'ERROR|runtime error' "$work/err" | tr '\n' ' ')"
	else
		t_pass "$name"
	fi
}

timeout 10 "$bin" rdma --help >"$work/help" 2>&1
rc=$?
if ((rc == 0)) && grep -q "^Exit status: 0 every transfer verified" "$work/help" &&
	grep -q -- "--dmabuf-source" "$work/help" && grep -q "NVS_RDMA_TEST_CORRUPT" "$work/help"; then
	t_pass rdma-help
else
	t_fail rdma-help "exit $rc or missing exit codes/options: $(head -c 200 "$work/help")"
fi

expect rdma-no-mode 2 "Choose exactly one of --loopback, --server or --client HOST"
expect rdma-two-modes 2 "Choose exactly one" --loopback --server
expect rdma-missing-peer 2 "Missing value for \`--client'" --client
expect rdma-bad-size-zero 2 "Sizes are a comma-separated list" --loopback --sizes 0
expect rdma-bad-size-suffix 2 "Sizes are a comma-separated list" --loopback --sizes 4X
expect rdma-bad-size-empty 2 "Sizes are a comma-separated list" --loopback --sizes ,
expect rdma-bad-size-huge 2 "Sizes are a comma-separated list" --loopback --sizes 2G
expect rdma-bad-size-neg 2 "Sizes are a comma-separated list" --loopback --sizes -4K
expect rdma-size-over-buffer 2 "larger than the 1048576 byte buffer" --loopback --sizes 2M --buffer 1M
expect rdma-unknown-mem 2 "Unknown memory kind (host, cuda-dmabuf, cuda-peermem): \`gpu'" --loopback --mem gpu
expect rdma-unknown-source 2 "Unknown dma-buf source (cuda, udmabuf): \`dmaheap'" --loopback --mem cuda-dmabuf --dmabuf-source dmaheap
expect rdma-source-needs-dmabuf 2 "applies to --mem cuda-dmabuf" --loopback --dmabuf-source udmabuf
expect rdma-peer-mem-two-node 2 "are for --loopback" --client 10.0.0.1 --peer-mem host
expect rdma-bad-port 2 "Port is not 1..65535: \`70000'" --server --port 70000
expect rdma-bad-iters 2 "Iterations are not" --loopback --iters 0
expect rdma-bad-timeout 2 "takes seconds" --loopback --timeout 1s
expect rdma-bad-op 2 "Operation is write, read or both: \`copy'" --loopback --op copy
expect rdma-wait-not-server 2 "--wait is for --server" --loopback --wait 5
expect rdma-sizes-overflow 2 "Sizes are a comma-separated list" --loopback --sizes 17179869185G
expect rdma-buffer-overflow 2 "Buffer size is not" --loopback --buffer 17179869185G
expect rdma-unknown-option 2 "Invalid argument: \`--fast'" --loopback --fast
# a --cuda-lib named that is not there or not a library is a bad argument (2), about the path
expect rdma-cuda-lib-missing 2 "Unable to load $work/none.so.*check the path given" \
	--loopback --mem cuda-dmabuf --cuda-lib "$work/none.so" --sizes 4K --iters 1
expect rdma-cuda-lib-not-lib 2 "Unable to load /etc/passwd.*check the path given" \
	--loopback --mem cuda-dmabuf --cuda-lib /etc/passwd --sizes 4K --iters 1

# No RDMA device on this host (skipped where one exists).
if compgen -G "/sys/class/infiniband/*" >/dev/null; then
	t_skip rdma-no-device "this host has RDMA devices; the no-device path is not reachable here"
else
	expect rdma-no-device 3 "No RDMA device found" --loopback --sizes 4K --iters 1
	expect rdma-no-device-named 3 "No RDMA device" --loopback --dev mlx5_9 --sizes 4K --iters 1
	timeout 30 "$bin" rdma --loopback --json --sizes 4K --iters 1 >"$work/j" 2>"$work/jerr"
	rc=$?
	if ((rc == 3)) && python3 -c "import json,sys
d=json.load(open(sys.argv[1]))
assert d['ok'] is False and d['exit'] == 3 and 'No RDMA device' in d['error'], d" "$work/j" 2>"$work/py" &&
		sanitizer_clean "$work/jerr"; then
		t_pass rdma-no-device-json
	else
		t_fail rdma-no-device-json "exit $rc: $(head -c 200 "$work/j") $(head -c 200 "$work/py")"
	fi
	# Two-node without a usable RDMA stack must still end with a named error.
	timeout 30 "$bin" rdma --client 127.0.0.1 --timeout 2 --sizes 4K --iters 1 >"$work/c" 2>"$work/cerr"
	rc=$?
	if ((rc == 3 || rc == 4)) && [[ -s $work/cerr ]] && sanitizer_clean "$work/cerr"; then
		t_pass rdma-client-no-stack
	else
		t_fail rdma-client-no-stack "exit $rc (want 3 or 4): $(head -c 300 "$work/cerr")"
	fi
fi
