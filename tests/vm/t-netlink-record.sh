#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: own (tests/vm/lanes.tsv)
#
# Issue 3: thermal --record over the generic netlink family: lossless
# recording of a 50 Hz counter, an exact loss count for a paused reader,
# Ctrl-C during a recording. The ring and the recorder are our own code
# over the genetlink dump that t-netlink.sh drives on every kernel; these
# take 35 s of wall-clock time a boot, so the reference lane runs them
# (split from t-netlink.sh for CI time).
set -u

B=$NVS_BIN
work=$(mktemp -d /tmp/nvs-netlink-record.XXXXXX)
py() { python3 - "$@"; }

nvs_unload
sim_fixture_all gb202
nvs_load || { t_fail netlink-record-load "insmod failed"; exit 1; }
wait_for 5 '[[ $(read_err "$(sim_class 0)/status" 2>/dev/null) == ok ]]'
c0=$(sim_class 0)
g0=${c0##*/gpu}

# --- lossless recording of a 50 Hz counter --------------------------------
# The sampler runs faster than the counter changes. The recording must hold
# every sample the kernel took (consecutive sequence numbers, loss 0), each
# with the counter value that was in the register at its timestamp, in
# order, and every counter value that was in the register while a sample
# was taken. (Under TCG the guest can stall: a value the simulator wrote
# and replaced while no sample was due cannot be recorded by anyone.)
"$B" set "$g0" sample-hz 100 || t_fail netlink-set-rate "set sample-hz 100 failed"
sim 0 counter --reg ch0 --hz 50 --seconds 16 --log "$work/counter.log" >"$work/counter.out" &
cpid=$!
sleep 2
"$B" thermal --gpu "$g0" --record "$work/rec.csv" --duration 10 2>"$work/rec.err"
rc=$?
wait $cpid
if ((rc == 0)) && grep -q ', lost 0$' "$work/rec.err" &&
	py "$work/rec.csv" "$work/counter.log" "$g0" "$work/counter.out" <<'EOF' >"$work/rec.chk" 2>&1; then
import bisect, csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["gpu"] == sys.argv[3]]
seq = [int(r["seq"]) for r in rows]
assert len(rows) > 300, f"only {len(rows)} rows"
gaps = [(a, b) for a, b in zip(seq, seq[1:]) if b != a + 1]
assert not gaps, f"sequence gaps: {gaps[:5]}"
ts = [int(r["timestamp_ns"]) for r in rows]
ks = [round(int(r["ch0"]) * 256 / 1000) - 0x2000 for r in rows]
back = [(a, b) for a, b in zip(ks, ks[1:]) if b < a]
assert not back, f"counter out of order: {back[:5]}"
log = [tuple(map(int, l.split()[:2])) for l in open(sys.argv[2]) if l.strip()]
starts = [t for _, t in log]
# Value k was written before nvsim logged t_k, and k+1 not before its
# deadline start + (k+1) * period: k was surely in the register between.
hdr = open(sys.argv[4]).readline().split()
start, period = int(hdr[hdr.index("start_ns") + 1]), int(1e9 / float(hdr[hdr.index("hz") + 1]))
M = 1_000_000   # between a register read and its timestamp
seen = set(ks)
due, missing, wrong = 0, [], 0
for k, t0 in log:
    t1 = start + (k + 1) * period
    if t0 < ts[0] or t1 > ts[-1]:
        continue
    i = bisect.bisect_left(ts, t0 + M)
    if i < len(ts) and ts[i] < t1 - M:
        due += 1
        if k not in seen:
            missing.append(k)
for t, k in zip(ts, ks):
    j = bisect.bisect_right(starts, t) - 1
    if j >= 0 and abs(k - log[j][0]) > 1:
        wrong += 1
assert not missing, f"{len(missing)} of {due} sampled counter values missing: {missing[:5]}"
assert wrong == 0, f"{wrong} samples do not match the counter at their timestamp"
print(f"{len(rows)} samples in order, {len(seen)} counter values, {due} of {len(log)} ticks sampled, all present")
EOF
	t_pass netlink-record-lossless
else
	t_fail netlink-record-lossless "exit $rc: $(tail -n 2 "$work/rec.err" | tr '\n' ' ') $(tail -n 1 "$work/rec.chk" 2>/dev/null)"
fi
cp "$work/rec.chk" "$NVS_OUT/netlink-record.txt" 2>/dev/null

# --- a reader paused longer than the ring lasts ----------------------------
# 1024 samples at 500 Hz last 2 s (8 s if TCG only reaches a quarter of
# the rate); the recorder is stopped for 9 s. The loss it reports must
# equal the holes in its sequence numbers exactly.
"$B" set "$g0" sample-hz 500
"$B" thermal --gpu "$g0" --record "$work/pause.csv" --duration 14 2>"$work/pause.err" &
rpid=$!
sleep 3
kill -STOP $rpid
sleep 9
kill -CONT $rpid
wait $rpid
rc=$?
lost=$(sed -n 's/.*, lost \([0-9]*\)$/\1/p' "$work/pause.err")
if ((rc == 5)) && [[ -n $lost ]] && ((lost > 0)) &&
	py "$work/pause.csv" "$g0" "$lost" <<'EOF' 2>"$work/err"; then
import csv, sys
seq = [int(r["seq"]) for r in csv.DictReader(open(sys.argv[1])) if r["gpu"] == sys.argv[2]]
holes = sum(b - a - 1 for a, b in zip(seq, seq[1:]))
assert holes == int(sys.argv[3]), f"holes {holes} != reported {sys.argv[3]}"
EOF
	t_pass netlink-record-exact-loss
else
	t_fail netlink-record-exact-loss "exit $rc, lost '$lost': $(tail -n 3 "$work/pause.err" "$work/err" 2>/dev/null | tr '\n' ' ')"
fi
"$B" set "$g0" sample-hz 50

# --- Ctrl-C finalises the recording ----------------------------------------
"$B" thermal --record "$work/int.csv" --duration 60 2>"$work/int.err" &
rpid=$!
sleep 3
kill -INT $rpid
wait $rpid
rc=$?
if ((rc == 0)) && grep -q '^Interrupted: recorded' "$work/int.err" && (($(wc -l <"$work/int.csv") > 10)) &&
	[[ -z $(find "$work" -name '.int.csv.*') ]]; then
	t_pass netlink-record-sigint
else
	t_fail netlink-record-sigint "exit $rc: $(tail -n 2 "$work/int.err" | tr '\n' ' ')"
fi

rm -rf "$work"
