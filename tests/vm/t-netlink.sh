#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# Issue 3: the generic netlink family through libnvsidecar and the CLI.
# Missing family message, JSON and --dump against hwmon, lossless
# recording of a 50 Hz counter, an exact loss count for a paused reader,
# threshold events in order, unprivileged set, hotplug during dumps and
# during a recording, Ctrl-C during a recording, and one run under
# valgrind. The fuzzer is t-netlink-fuzz.sh.
set -u

B=$NVS_BIN
work=$(mktemp -d /tmp/nvs-netlink.XXXXXX)
py() { python3 - "$@"; }

# gpu_index N: the module's index of simulated GPU N.
gpu_index() {
	local c
	c=$(sim_class "$1") || return 1
	echo "${c##*/gpu}"
}

# --- before the module is loaded ----------------------------------------
# Resolving the family makes the kernel modprobe its alias (an installed
# DKMS module would load, without the simulator); keep that from happening.
nvs_unload
modprobe_path=$(cat /proc/sys/kernel/modprobe)
echo /bin/true >/proc/sys/kernel/modprobe
out=$("$B" status 2>&1)
rc=$?
echo "$modprobe_path" >/proc/sys/kernel/modprobe
if ((rc == 3)) && [[ $out == *"modprobe nvsidecar"*"dkms status nvsidecar"* ]]; then
	t_pass netlink-no-module
else
	t_fail netlink-no-module "exit $rc: $out"
fi

sim_fixture_all gb202
nvs_load || { t_fail netlink-load "insmod failed"; exit 1; }
wait_until 5 test "$(cat "$(sim_class 0)/status" 2>/dev/null)" = ok
g0=$(gpu_index 0)

# --- output formats -------------------------------------------------------
"$B" thermal --json >"$work/t.json" 2>"$work/err"
rc=$?
if ((rc == 0)) && py "$work/t.json" "$NVS_GPUS" <<'EOF' 2>>"$work/err"; then
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["gpus"]) == int(sys.argv[2]), len(d["gpus"])
for g in d["gpus"]:
    labels = [s["label"] for s in g["sensors"]]
    for l in ("hotspot", "average", "ch0", "ch1", "ch2", "ch3", "mem0"):
        assert l in labels, (l, labels)
    assert g["status"] == "ok", g
EOF
	t_pass netlink-thermal-json
else
	t_fail netlink-thermal-json "exit $rc: $(tail -n 3 "$work/err" | tr '\n' ' ')"
fi
"$B" status --json >"$work/s.json" 2>"$work/err" &&
	py "$work/s.json" <<<'import json,sys; d=json.load(open(sys.argv[1])); assert d["gpus"] and d["module_version"]' 2>>"$work/err" &&
	t_pass netlink-status-json || t_fail netlink-status-json "$(tail -n 2 "$work/err" | tr '\n' ' ')"
"$B" status >"$work/s.txt" 2>&1 && grep -q "^gpu$g0: $(sim_bdf 0)" "$work/s.txt" &&
	t_pass netlink-status-human || t_fail netlink-status-human "$(head -n 4 "$work/s.txt" | tr '\n' ' ')"

# --dump: 10 columns, the same layout twice, values equal to hwmon's (the
# fixture is static, so they must match exactly).
"$B" thermal --dump >"$work/d1" && "$B" thermal --dump >"$work/d2"
bad=$(awk -F'\t' 'NF != 10 { print NR": "NF" fields" }' "$work/d1" | head -n 3)
if [[ -z $bad && -s $work/d1 ]] && diff <(cut -f1-5 "$work/d1") <(cut -f1-5 "$work/d2") >/dev/null; then
	t_pass netlink-dump-stable
else
	t_fail netlink-dump-stable "bad lines: $bad; or the layout changed between two runs"
fi
h=$(sim_hwmon 0) mism=
while IFS=$'\t' read -r gpu busid id label valid mc _; do
	[[ $gpu == "$g0" && $valid == 1 ]] || continue
	hw=$(cat "$(hw_temp "$h" "$label")_input" 2>/dev/null)
	[[ $hw == "$mc" ]] || mism+=" $label:$mc/$hw"
done <"$work/d1"
[[ -z $mism ]] && t_pass netlink-dump-matches-hwmon || t_fail netlink-dump-matches-hwmon "netlink/hwmon:$mism"

# --- unprivileged ---------------------------------------------------------
out=$(as_user "$B" set "$g0" sample-hz 10 2>&1)
rc=$?
((rc == 4)) && [[ $out == *"needs root (CAP_NET_ADMIN)"* ]] &&
	t_pass netlink-user-set-eperm || t_fail netlink-user-set-eperm "exit $rc: $out"
as_user "$B" thermal --dump >/dev/null 2>"$work/err" &&
	t_pass netlink-user-reads || t_fail netlink-user-reads "$(cat "$work/err")"
out=$("$B" set "$g0" threshold nosuch 90 2>&1)
rc=$?
((rc == 1)) && [[ $out == *"Unable to change gpu$g0"* ]] &&
	t_pass netlink-set-unknown-sensor || t_fail netlink-set-unknown-sensor "exit $rc: $out"
out=$("$B" set 99 sample-hz 10 2>&1)
(($? == 1)) && [[ $out == *"No such GPU"* ]] &&
	t_pass netlink-set-unknown-gpu || t_fail netlink-set-unknown-gpu "$out"

# --- events: crossing, then clearing, in order -----------------------------
sim 0 temp ch0 40
"$B" set "$g0" threshold ch0 60 || t_fail netlink-set-threshold "set failed"
sleep 0.5
"$B" events --json --gpu "$g0" --count 2 --timeout 30 >"$work/ev" 2>"$work/ev.err" &
evpid=$!
if wait_until 20 grep -q 'Listening for events' "$work/ev.err"; then
	sim 0 temp ch0 70
	sleep 1
	sim 0 temp ch0 45
fi
wait $evpid
rc=$?
if ((rc == 0)) && py "$work/ev" "$g0" <<'EOF' 2>"$work/err"; then
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert [e["type"] for e in ev] == ["threshold-crossed", "threshold-cleared"], ev
assert all(e["gpu"] == int(sys.argv[2]) and e["sensor"]["label"] == "ch0" for e in ev), ev
assert ev[0]["sensor"]["mc"] > 60000 >= ev[1]["sensor"]["mc"], ev
assert ev[0]["ts_ns"] < ev[1]["ts_ns"], ev
EOF
	t_pass netlink-events-order
else
	t_fail netlink-events-order "exit $rc: $(tr '\n' ' ' <"$work/ev") $(tail -n 2 "$work/ev.err" "$work/err" 2>/dev/null | tr '\n' ' ')"
fi
"$B" set "$g0" threshold ch0 clear
sim 0 fixture gb202

# --- lossless recording of a 50 Hz counter --------------------------------
# The sampler runs 4x faster than the counter changes, so every counter
# value is seen at least once; the recording must hold all of them, in
# order, with consecutive sequence numbers and a loss of 0.
"$B" set "$g0" sample-hz 200 || t_fail netlink-set-rate "set sample-hz 200 failed"
sim 0 counter --reg ch0 --hz 50 --seconds 36 --log "$work/counter.log" >"$work/counter.out" &
cpid=$!
sleep 2
"$B" thermal --gpu "$g0" --record "$work/rec.csv" --duration 30 2>"$work/rec.err"
rc=$?
wait $cpid
if ((rc == 0)) && grep -q ', lost 0$' "$work/rec.err" &&
	py "$work/rec.csv" "$work/counter.log" "$g0" <<'EOF' >"$work/rec.chk" 2>&1; then
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["gpu"] == sys.argv[3]]
seq = [int(r["seq"]) for r in rows]
assert len(rows) > 1000, f"only {len(rows)} rows"
gaps = [(a, b) for a, b in zip(seq, seq[1:]) if b != a + 1]
assert not gaps, f"sequence gaps: {gaps[:5]}"
ks = [round(int(r["ch0"]) * 256 / 1000) - 0x2000 for r in rows]
steps = [(a, b) for a, b in zip(ks, ks[1:]) if b - a not in (0, 1)]
assert not steps, f"counter jumps: {steps[:5]}"
t0, t1 = int(rows[0]["timestamp_ns"]), int(rows[-1]["timestamp_ns"])
ticks = [int(l.split()[0]) for l in open(sys.argv[2])
         if l.strip() and t0 + 30_000_000 < int(l.split()[1]) < t1 - 30_000_000]
missing = sorted(set(ticks) - set(ks))
assert not missing, f"{len(missing)} counter values missing, first {missing[:5]}"
print(f"{len(rows)} samples, counter {ks[0]}..{ks[-1]}, {len(ticks)} ticks checked")
EOF
	t_pass netlink-record-lossless
else
	t_fail netlink-record-lossless "exit $rc: $(tail -n 2 "$work/rec.err" | tr '\n' ' ') $(tail -n 1 "$work/rec.chk" 2>/dev/null)"
fi
cp "$work/rec.chk" "$NVS_OUT/netlink-record.txt" 2>/dev/null

# --- a reader paused longer than the ring lasts ----------------------------
# 1024 samples at 200 Hz last 5 s; the recorder is stopped for 10 s. The
# loss it reports must equal the holes in its sequence numbers exactly.
"$B" thermal --gpu "$g0" --record "$work/pause.csv" --duration 16 2>"$work/pause.err" &
rpid=$!
sleep 3
kill -STOP $rpid
sleep 10
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

# --- hotplug during dumps and during a recording ---------------------------
hp=$((NVS_GPUS > 1 ? 1 : 0))
bdf=$(sim_bdf $hp)
replug() {
	echo 1 >"/sys/bus/pci/devices/$bdf/remove"
	sleep "$1"
	echo 1 >/sys/bus/pci/rescan
	wait_until 10 test -d "/sys/bus/pci/devices/$bdf" || return 1
	# Linux leaves a driverless device's memory decoding off after a rescan.
	setpci -s "$bdf" COMMAND=2:2
	sim $hp fixture gb202
	wait_until 10 sim_class $hp >/dev/null 2>&1
}

: >"$work/hp.rc"
(for i in $(seq 60); do
	"$B" thermal --dump >/dev/null 2>>"$work/hp.err"
	echo $? >>"$work/hp.rc"
done) &
lpid=$!
sleep 1
replug 1 || t_fail netlink-hotplug-dump-back "$bdf did not come back"
wait $lpid
odd=$(grep -vx '[01]' "$work/hp.rc" | sort -u | tr '\n' ' ')
msgs=$(grep -v '^Unable to read the sensors: ' "$work/hp.err" | head -n 3)
if [[ -z $odd && -z $msgs ]] && (($(wc -l <"$work/hp.rc") == 60)); then
	t_pass netlink-hotplug-dump
else
	t_fail netlink-hotplug-dump "exit codes: $odd; messages: $msgs"
fi
wait_until 5 bash -c "'$B' thermal --dump | grep -q '$bdf'" &&
	t_pass netlink-hotplug-dump-back || t_fail netlink-hotplug-dump-back "$bdf is not in thermal --dump"

"$B" thermal --record "$work/hp.csv" --duration 12 2>"$work/hprec.err" &
rpid=$!
sleep 2
replug 2
wait $rpid
rc=$?
newidx=$(sed -n 's/^gpu\([0-9]*\) ([^)]*) is back.*/\1/p' "$work/hprec.err")
if ((rc == 0)) && grep -q "($bdf) went away" "$work/hprec.err" && [[ -n $newidx ]] &&
	(($(awk -F, -v g="$newidx" '$1 == g' "$work/hp.csv" | wc -l) > 0)); then
	t_pass netlink-hotplug-record
else
	t_fail netlink-hotplug-record "exit $rc: $(tail -n 4 "$work/hprec.err" | tr '\n' ' ')"
fi

# --- the real netlink path under valgrind ----------------------------------
if command -v valgrind >/dev/null; then
	if valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		"$B" thermal --json >/dev/null 2>"$work/vg"; then
		t_pass netlink-valgrind
	else
		t_fail netlink-valgrind "$(grep -m 3 '==' "$work/vg" | tr '\n' ' ')"
	fi
else
	t_skip netlink-valgrind "valgrind is not installed on the host root"
fi

rm -rf "$work"
dmesg_check netlink-dmesg
