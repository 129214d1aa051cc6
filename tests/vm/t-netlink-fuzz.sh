#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: stress (tests/vm/lanes.tsv)
#
# Issue 3: at least 50,000 malformed and random generic netlink messages
# (tests/vm/tools/nlfuzz.c) get clean answers; afterwards the module still
# answers GPU_GET (nlfuzz and the CLI) and the kernel log is clean.
# NVS_FUZZ_COUNT overrides the count, NVS_FUZZ_SEED the seed.
set -u

B=$NVS_BIN
count=${NVS_FUZZ_COUNT:-50000}
seed=${NVS_FUZZ_SEED:-$(date +%s)}

sim_fixture_all gb202
nvs_load || { t_fail netlink-fuzz-load "insmod failed"; exit 1; }
wait_for 5 '[[ $(read_err "$(sim_class 0)/status" 2>/dev/null) == ok ]]'
[[ -x $NVS_TOOLS/nlfuzz ]] || { t_fail netlink-fuzz "nlfuzz was not built (see the vm-tools-build result)"; exit 1; }

dmesg_mark "netlink-fuzz seed $seed"
"$NVS_TOOLS/nlfuzz" -n "$count" -s "$seed" -q >"$NVS_OUT/nlfuzz.txt" 2>&1
rc=$?
if ((rc == 0)); then
	t_pass netlink-fuzz
else
	t_fail netlink-fuzz "exit $rc (seed $seed): $(tail -n 3 "$NVS_OUT/nlfuzz.txt" | tr '\n' ' ')"
fi
dmesg_check netlink-fuzz-kernel-log

# Settings the fuzzer may have changed go back; then the CLI must work.
for c in /sys/class/nvsidecar/gpu*; do
	"$B" set "${c##*/gpu}" sample-hz 50 reset-peaks >/dev/null 2>&1
done
if "$B" thermal --dump >/dev/null 2>"$NVS_OUT/fuzz-after.err" &&
	[[ $(cat "$(sim_class 0)/status") == ok ]]; then
	t_pass netlink-fuzz-still-works
else
	t_fail netlink-fuzz-still-works "$(head -n 2 "$NVS_OUT/fuzz-after.err")"
fi
