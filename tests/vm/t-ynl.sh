#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: userspace (tests/vm/lanes.tsv): the ABI is the same on every kernel
#
# Issue 20: the kernel's own generic netlink client, tools/net/ynl's
# cli.py from a prepared Debian kernel tree (scripts/kernels.sh), drives
# the module from our spec, docs/netlink/nvsidecar.yaml, validated against
# that tree's schema: a dump of the GPUs and their sensors compared with
# sysfs and hwmon, a GET, a SET refused to an unprivileged user, the read
# budget (raising a rate needs CAP_SYS_ADMIN, lowering it does not), and a
# multicast subscription that sees the event a SET causes.
set -u

work=$(mktemp -d /tmp/nvs-ynl.XXXXXX)
spec=$NVS_TOP/docs/netlink/nvsidecar.yaml
cli= schema=
# The newest tree first: its cli.py has --subscribe with --duration.
for t in "${NVS_CACHE:-/var/cache/nvsidecar}"/ktree/{experimental,sid}/tree; do
	if [[ -f $t/tools/net/ynl/pyynl/cli.py && -f $t/Documentation/netlink/genetlink-legacy.yaml ]]; then
		cli=$t/tools/net/ynl/pyynl/cli.py
		schema=$t/Documentation/netlink/genetlink-legacy.yaml
		break
	fi
done
if [[ -z $cli ]]; then
	for n in dump get set-user rate sub rate-ondemand; do
		t_skip "ynl-$n" "no prepared kernel tree with tools/net/ynl/pyynl (scripts/kernels.sh prepare sid)"
	done
	exit 0
fi
# The host's root is read-only here: no __pycache__.
ynl() { PYTHONDONTWRITEBYTECODE=1 python3 "$cli" --spec "$spec" --schema "$schema" --output-json "$@"; }

nvs_unload
sim_fixture_all gb202
nvs_load || { t_fail ynl-load "insmod failed"; exit 1; }
wait_for 5 '[[ $(read_err "$(sim_class 0)/status" 2>/dev/null) == ok ]]'
c0=$(sim_class 0)
g0=${c0##*/gpu}

# --- dump as nobody: every GPU, each as sysfs and hwmon say ---------------
as_user env PYTHONDONTWRITEBYTECODE=1 python3 "$cli" --spec "$spec" --schema "$schema" \
	--output-json --dump gpu-get >"$work/dump" 2>"$work/err"
rc=$?
if ((rc == 0)) && python3 - "$work/dump" "$NVS_GPUS" <<'PY' 2>>"$work/err"; then
import glob, json, os, sys
gpus = json.load(open(sys.argv[1]))
assert len(gpus) == int(sys.argv[2]), "%d GPUs, want %s" % (len(gpus), sys.argv[2])
def rd(p):
    return open(p).read().strip()
for g in gpus:
    c = "/sys/class/nvsidecar/gpu%d" % g["gpu-index"]
    assert g["gpu-busid"] == rd(c + "/pci"), (g["gpu-busid"], rd(c + "/pci"))
    assert g["gpu-chip"] == rd(c + "/chip"), g["gpu-chip"]
    assert g["gpu-status"] == rd(c + "/status").split(":")[0], g["gpu-status"]
    for a, f in (("gpu-sample-hz", "sample_hz"), ("gpu-mem-hz", "mem_hz")):
        assert g[a] == int(rd(c + "/" + f)), (a, g[a], rd(c + "/" + f))
    # counters only grow: netlink's value lies between two sysfs reads
    assert 0 < g["gpu-mmio-reads"] <= int(rd(c + "/mmio_reads")), g["gpu-mmio-reads"]
    hw = glob.glob("/sys/bus/pci/devices/%s/hwmon/hwmon*" % g["gpu-busid"])
    labels = {}
    for h in hw:
        if rd(h + "/name") == "nvsidecar":
            for lf in glob.glob(h + "/temp*_label"):
                labels[rd(lf)] = lf.replace("_label", "_input")
    sensors = g["gpu-sensors"]["gpu-sensor"]
    valid = [s for s in sensors if s["valid"] == 1]
    assert valid and labels, (sensors, labels)
    for s in sensors:
        assert s["label"] in labels, (s["label"], sorted(labels))
    for s in valid:
        # the fixture is static: the same reading in both places
        got = int(rd(labels[s["label"]]))
        assert got == s["mc"], (s["label"], s["mc"], got)
PY
	t_pass ynl-dump
else
	cp "$work/dump" "$NVS_OUT/ynl-dump.json" 2>/dev/null
	t_fail ynl-dump "exit $rc: $(tail -n 3 "$work/err" | tr '\n' ' ')"
fi

# --- a do for one GPU -----------------------------------------------------
out=$(ynl --do gpu-get --json "{\"gpu-index\": $g0}" 2>&1)
got=$(python3 -c 'import json,sys; g=json.loads(sys.argv[1]); print(g["gpu-index"], g["gpu-busid"], g["gpu-mem-hz"])' "$out" 2>&1)
t_eq ynl-get "$got" "$g0 $(<"$c0/pci") $(<"$c0/mem_hz")"

# --- a set from nobody is refused, and changes nothing --------------------
before=$(<"$c0/mem_hz")
out=$(as_user env PYTHONDONTWRITEBYTECODE=1 python3 "$cli" --spec "$spec" --schema "$schema" \
	--do gpu-set --json "{\"gpu-index\": $g0, \"gpu-mem-hz\": 2}" 2>&1)
rc=$?
if ((rc != 0)) && [[ $out == *"Operation not permitted"* && $(<"$c0/mem_hz") == "$before" ]]; then
	t_pass ynl-set-user
else
	t_fail ynl-set-user "exit $rc, mem_hz $(<"$c0/mem_hz") (was $before): $out"
fi

# --- the read budget (review N10): CAP_NET_ADMIN lowers, CAP_SYS_ADMIN raises
netadmin() { setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin -- "$@"; }
def_hz=$(</sys/module/nvsidecar/parameters/sample_hz)
def_mem=$(</sys/module/nvsidecar/parameters/mem_hz)
up=$(netadmin env PYTHONDONTWRITEBYTECODE=1 python3 "$cli" --spec "$spec" --schema "$schema" \
	--do gpu-set --json "{\"gpu-index\": $g0, \"gpu-sample-hz\": $((def_hz + 1))}" 2>&1)
uprc=$?
upmem=$(netadmin "$NVS_BIN" set "gpu$g0" mem-hz $((def_mem + 1)) 2>&1)
upmemrc=$?
down=$(netadmin env PYTHONDONTWRITEBYTECODE=1 python3 "$cli" --spec "$spec" --schema "$schema" \
	--do gpu-set --json "{\"gpu-index\": $g0, \"gpu-sample-hz\": $((def_hz / 2))}" 2>&1)
downrc=$?
hz=$(<"$c0/sample_hz")
if ((uprc != 0 && upmemrc == 4 && downrc == 0)) && [[ $up == *"Operation not permitted"* &&
	$upmem == *"needs CAP_SYS_ADMIN: run it as root"* && $hz == $((def_hz / 2)) && $(<"$c0/mem_hz") == "$def_mem" ]]; then
	t_pass ynl-rate
else
	t_fail ynl-rate "raise: exit $uprc $up; mem-hz raise: exit $upmemrc $upmem; lower: exit $downrc $down; sample_hz $hz"
fi
# sysfs follows the same rule: root without CAP_SYS_ADMIN lowers, not raises
netadmin sh -c "echo $((def_hz + 1)) >$c0/sample_hz" 2>/dev/null
uprc=$?
netadmin sh -c "echo $((def_mem + 1)) >$c0/mem_hz" 2>/dev/null
upmemrc=$?
netadmin sh -c "echo $((def_hz / 4)) >$c0/sample_hz" 2>/dev/null
downrc=$?
t_eq ynl-rate-sysfs "$uprc $upmemrc $downrc $(<"$c0/sample_hz") $(<"$c0/mem_hz")" \
	"1 1 0 $((def_hz / 4)) $def_mem"
# root (CAP_SYS_ADMIN) may raise; the CLI's JSON says what was set
out=$("$NVS_BIN" set "gpu$g0" sample-hz "$def_hz" mem-hz 2 --json 2>&1)
rc=$?
got=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["ok"], d["gpu"], d["sample_hz"], d["mem_hz"])' "$out" 2>&1)
t_eq ynl-cli-set-json "$rc $got $(<"$c0/sample_hz") $(<"$c0/mem_hz")" "0 True $g0 $def_hz 2 $def_hz 2"
"$NVS_BIN" set "gpu$g0" mem-hz "$def_mem" >/dev/null

# --- multicast: cli.py subscribes, then sets a threshold under the current
# hotspot reading (as root), and must see the crossing event it causes.
mc=$(python3 -c 'import json,sys
for s in json.load(open(sys.argv[1]))[0]["gpu-sensors"]["gpu-sensor"]:
    if s["label"] == "hotspot": print(s["mc"])' "$work/dump" 2>/dev/null)
if [[ -z $mc ]]; then
	t_fail ynl-sub "no hotspot reading in the dump"
else
	ynl --subscribe events --duration 3 --do gpu-set \
		--json "{\"gpu-index\": $g0, \"set-threshold\": [{\"sensor\": \"hotspot\", \"max\": $((mc - 1000))}]}" \
		>"$work/sub" 2>&1
	rc=$?
	"$NVS_BIN" set "gpu$g0" threshold hotspot clear >/dev/null
	if ((rc == 0)) && python3 - "$work/sub" "$g0" "$(<"$c0/pci")" <<'PY' 2>>"$work/err"; then
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"name"')]
hit = [e["msg"] for e in ev if e["name"] == "event" and e["msg"].get("event-type") == "threshold-crossed"]
assert hit, ev
m = hit[0]
assert m["gpu-index"] == int(sys.argv[2]) and m["gpu-busid"] == sys.argv[3], m
assert m["gpu-sensor"]["label"] == "hotspot" and m["gpu-sensor"]["alarm"] == 1, m
PY
		t_pass ynl-sub
	else
		cp "$work/sub" "$NVS_OUT/ynl-sub.txt" 2>/dev/null
		t_fail ynl-sub "exit $rc: $(tail -c 300 "$work/sub" | tr '\n' ' ')"
	fi
fi

rm -rf "$work"

# --- on demand (0) is up to 50 passes a second: with a default of 5 it is
# a raise, refused to CAP_NET_ADMIN alone by netlink and sysfs (review K4)
nvs_unload
if nvs_load sample_hz=5 && wait_for 5 '[[ $(read_err "$(sim_class 0)/status" 2>/dev/null) == ok ]]'; then
	c0=$(sim_class 0)
	g0=${c0##*/gpu}
	out=$(netadmin env PYTHONDONTWRITEBYTECODE=1 python3 "$cli" --spec "$spec" --schema "$schema" \
		--do gpu-set --json "{\"gpu-index\": $g0, \"gpu-sample-hz\": 0}" 2>&1)
	rc=$?
	netadmin sh -c "echo 0 >$c0/sample_hz" 2>/dev/null
	src=$?
	netadmin sh -c "echo 4 >$c0/sample_hz" 2>/dev/null
	lrc=$?
	low=$(<"$c0/sample_hz")
	echo 0 >"$c0/sample_hz"
	rrc=$?
	if ((rc != 0 && src == 1 && lrc == 0 && rrc == 0)) && [[ $out == *"needs CAP_SYS_ADMIN"* &&
		$low == 4 && $(<"$c0/sample_hz") == 0 ]]; then
		t_pass ynl-rate-ondemand
	else
		t_fail ynl-rate-ondemand "netlink 0: exit $rc $out; sysfs 0: exit $src; lower to 4: exit $lrc ($low); root 0: exit $rrc ($(<"$c0/sample_hz"))"
	fi
else
	t_fail ynl-rate-ondemand "insmod sample_hz=5 failed or GPU0 not ok"
fi
nvs_unload
nvs_load || t_fail ynl-reload "insmod failed"
