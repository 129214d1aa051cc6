#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# libFuzzer on every reader of a file an admin hands us (tests/fuzz/): the
# libcuda ELF reader, alone and with the gate analysis on what it parsed,
# NCCL logs, lspci dumps, the libcuda manifest, doctor.conf, the idle-fix
# state file, the verdict cache and the known-issues table. Each target is
# built with clang under ASan and UBSan (-fsanitize=fuzzer,address,undefined),
# replays its saved regression inputs (tests/fuzz/regress/TARGET/), then
# fuzzes for NVS_FUZZ_SECONDS (10 s by default per target, NVS_FUZZ_JOBS
# targets at a time, plus the build:
# CI's 55-minute budget; executions per target are in docs/benchmarks.md)
# from seeds taken from the test fixtures. A crash, leak, hang (over
# NVS_FUZZ_TIMEOUT s on one input) or sanitizer report fails the target
# and the input is kept under $NVS_BUILD/fuzz/crashes/.
set -u
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

top=$NVS_TOP
secs=${NVS_FUZZ_SECONDS:-10}
per_input=${NVS_FUZZ_TIMEOUT:-15}
out=$NVS_BUILD/fuzz
crashes=$out/crashes
targets=(elf gate nccl pcidump manifest doctorconf idlefix vcache knownissues)
# the readers write (the manifest is rewritten, idle-fix saves its state):
# memory, where there is some, keeps fsync cheap
work=$(mktemp -d /dev/shm/nvs-fuzz.XXXXXX 2>/dev/null || mktemp -d /tmp/nvs-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# --- the toolchain: Debian's clang and its libFuzzer runtime ----------------
# the package names, from the list scripts/deps.sh installs
pkgs=$(sed -n -e 's/#.*//' -e '/^clang$/p' -e '/^libclang-rt/p' "$top/scripts/deps.list" | tr '\n' ' ')
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$work/probe.c"
if ! command -v clang >/dev/null; then
	t_fail fuzz-toolchain "no clang: install the Debian packages ${pkgs}(scripts/deps.sh does)"
	exit 0
fi
if ! clang -fsanitize=fuzzer,address,undefined -o "$work/probe" "$work/probe.c" >"$work/probe.log" 2>&1; then
	t_fail fuzz-toolchain "clang cannot link a libFuzzer target ($(grep -m1 -i error "$work/probe.log")): install the Debian packages ${pkgs}(scripts/deps.sh does)"
	exit 0
fi
t_pass "fuzz-toolchain $(clang --version | head -1)"

if ! make -C "$top/tests/fuzz" O="$out" -j2 >"$work/build.log" 2>&1; then
	t_fail fuzz-build "$(grep -m3 -E 'error|No rule' "$work/build.log" | tr '\n' ' ')"
	exit 0
fi
t_pass fuzz-build

# --- seeds, from the fixtures the other suites use --------------------------
seed=$work/seed
mkdir -p "$seed"/{elf,nccl,pcidump,manifest,doctorconf,idlefix,vcache,knownissues}
# fake libcudas, by tests/host/50-libcuda.sh's recipe: three gate shapes
for s in '590 590.48.01 -DSHAPE_590' '615 615.71.09 -DSHAPE_615 -DINIT_COPY=2' \
	'memset 555.42.15 -DSHAPE_MEMSET'; do
	read -r name ver flags <<<"$s"
	# shellcheck disable=SC2086 # flags are words
	gcc -shared -fPIC -O2 -Wall -Werror $flags -DNVS_FAKE_VERSION="\"$ver\"" -Wl,-soname,libcuda.so.1 \
		-o "$seed/elf/libcuda-$name.so" "$top/tests/libcuda/fake_gate.S" "$top/tests/libcuda/fake_driver.c" \
		2>>"$work/seed.log"
done
cp "$top"/tests/nccl/*.log "$seed/nccl/"
cp "$top"/tests/topo/*.dump "$seed/pcidump/"
for t in manifest doctorconf idlefix vcache knownissues; do
	cp "$top/tests/fuzz/corpus/$t/"* "$seed/$t/"
done
# the doctor.conf shipped for /etc/nvsidecar
find "$top/scripts" -name doctor.conf -exec cp {} "$seed/doctorconf/shipped.conf" \;
# and the shipped known-issues table
cp "$top/scripts/nvsidecar/known-issues.tsv" "$seed/knownissues/shipped.tsv"
n_seed=$(find "$seed" -type f | wc -l)
if [[ ! -s $seed/elf/libcuda-590.so ]] || ((n_seed < 20)); then
	t_fail fuzz-seeds "only $n_seed seed files: $(head -c 300 "$work/seed.log")"
	exit 0
fi

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TMPDIR=$work
unset NVS_LIBCUDA_STATE NO_COLOR

# keep NAME LOG: the crash input libFuzzer wrote, copied where the run
# leaves it; echoes its path and the sanitizer's summary.
keep() {
	local t=$1 log=$2 f kept=""
	mkdir -p "$crashes/$t"
	for f in "$work/art-$t-"*; do
		[[ -f $f ]] || continue
		cp "$f" "$crashes/$t/" && kept+="$crashes/$t/$(basename "$f") "
	done
	echo "${kept:-no input saved (see $crashes/$t.log)}: $(grep -m1 -E 'SUMMARY|ERROR: libFuzzer|runtime error|Timeout' "$log")"
	cp "$log" "$crashes/$t.log"
}

# fuzz_one NAME: replay the target's regression inputs, then fuzz it.
fuzz_one() {
	local t=$1 bin seeds reg n rc execs
	bin=$out/fuzz-$t
	seeds=$seed/$t
	[[ $t == gate ]] && seeds=$seed/elf
	# regression inputs: every crash found so far, replayed once
	reg=$top/tests/fuzz/regress/$t
	if compgen -G "$reg/*" >/dev/null; then
		n=$(find "$reg" -type f | wc -l)
		if timeout $((per_input * n + 60)) "$bin" -timeout="$per_input" "$reg"/* >"$work/reg-$t.log" 2>&1; then
			t_pass "fuzz-$t-regress $n inputs"
		else
			mkdir -p "$crashes" && cp "$work/reg-$t.log" "$crashes/$t-regress.log"
			t_fail "fuzz-$t-regress" "$(grep '^Running: ' "$work/reg-$t.log" | tail -1 | sed 's/^Running: //') crashes: $(grep -m1 -E 'SUMMARY|runtime error' "$work/reg-$t.log") (log $crashes/$t-regress.log)"
		fi
	fi
	mkdir -p "$work/corpus/$t"
	timeout $((secs + per_input + 60)) "$bin" -max_total_time="$secs" -timeout="$per_input" \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/art-$t-" \
		"$work/corpus/$t" "$seeds" >"$work/$t.log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")
	if ((rc == 0)) && [[ -n $execs ]]; then
		t_pass "fuzz-$t $execs executions in ${secs} s, corpus $(find "$work/corpus/$t" -type f | wc -l) + $(find "$seeds" -type f | wc -l) seeds"
	else
		t_fail "fuzz-$t" "rc $rc after ${execs:-?} executions, crash input $(keep "$t" "$work/$t.log")"
	fi
}

# Two targets at a time (NVS_FUZZ_JOBS, default the CPU count): each
# libFuzzer process is single-threaded, so on CI's two cores the suite
# takes half the time for the same executions per target. Beside a VM
# lane (tests/run sets NVS_HOST_JOBS=1) one at a time.
jobs=${NVS_FUZZ_JOBS:-${NVS_HOST_JOBS:-$(nproc)}}
running=()
for t in "${targets[@]}"; do
	fuzz_one "$t" &
	running+=($!)
	if ((${#running[@]} >= jobs)); then
		wait "${running[0]}"
		running=("${running[@]:1}")
	fi
done
wait
