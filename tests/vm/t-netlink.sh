#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# Issue 3: the generic netlink family through libnvsidecar and the CLI.
# Missing family message, JSON and --dump against hwmon, threshold events
# in order, unprivileged set, --watch. The recorder (lossless, exact loss,
# Ctrl-C) is t-netlink-record.sh, hotplug t-netlink-hotplug.sh, the
# fuzzer t-netlink-fuzz.sh; valgrind
# and ASan runs are in tests/host/40-cli.sh (valgrind under TCG takes
# minutes per run).
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
wait_for 5 '[[ $(read_err "$(sim_class 0)/status" 2>/dev/null) == ok ]]'
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
# (No process substitution: the guest's /dev has no /dev/fd.)
cut -f1-4 "$work/d1" >"$work/l1"
cut -f1-4 "$work/d2" >"$work/l2"
if [[ -z $bad && -s $work/d1 ]] && cmp -s "$work/l1" "$work/l2"; then
	t_pass netlink-dump-stable
else
	cp "$work/d1" "$work/d2" "$NVS_OUT/" 2>/dev/null
	t_fail netlink-dump-stable "bad lines: $bad; layout diff: $(diff "$work/l1" "$work/l2" | head -n 4 | tr '\n\t' '; ') (d1, d2 in the output folder)"
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
(($? == 3)) && [[ $out == *"No such GPU"* ]] &&
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

# --- --watch: in place with colour on a terminal, plain through a pipe ----
# script(1) gives the CLI a pseudo-terminal. The fixture is static, so
# every valid sensor is at its peak and is highlighted (bold yellow).
watch_cmd="$B thermal --gpu $g0 --watch --interval 0.2 --count 3"
env -u NO_COLOR -u NVSIDECAR_COLOR script -qec "$watch_cmd" /dev/null </dev/null >"$work/w.tty" 2>&1
rc=$?
env -u NO_COLOR -u NVSIDECAR_COLOR $watch_cmd >"$work/w.pipe" 2>&1
prc=$?
NO_COLOR=1 script -qec "$watch_cmd" /dev/null </dev/null >"$work/w.nocolor" 2>&1
nrc=$?
if ((rc == 0 && prc == 0 && nrc == 0)) && py "$work/w.tty" "$work/w.pipe" "$work/w.nocolor" <<'EOF' 2>"$work/err"; then
import sys
tty, pipe, nocolor = (open(f, "rb").read().decode() for f in sys.argv[1:4])
E = "\x1b"
assert tty.startswith(E + "[?25l" + E + "[H" + E + "[2J"), repr(tty[:40])
assert tty.count(E + "[H") == 4, tty.count(E + "[H")          # clear + 3 frames
assert tty.count("every 0.2 s") == 3, tty.count("every 0.2 s")
assert E + "[K" in tty and E + "[1;33m" in tty, "no in-place clear or peak colour"
assert tty.rstrip().endswith(E + "[?25h"), repr(tty[-20:])      # cursor back
assert E not in pipe, "escape sequences in piped output"
assert pipe.count("every 0.2 s") == 3 and "*" in pipe, pipe[:200]
assert E + "[H" in nocolor and E + "[1;33m" not in nocolor, "NO_COLOR ignored"
EOF
	t_pass netlink-thermal-watch
else
	cp "$work"/w.* "$NVS_OUT/" 2>/dev/null
	t_fail netlink-thermal-watch "exit $rc/$prc/$nrc: $(tail -n 2 "$work/err" | tr '\n' ' ') (w.tty, w.pipe, w.nocolor in the output folder)"
fi

rm -rf "$work"
