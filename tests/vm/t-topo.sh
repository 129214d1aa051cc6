#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: userspace (tests/vm/lanes.tsv)
#
# Issue 6: `nvsidecar topo' on the guest's real q35 PCIe layout (run-vm):
# GPU0 and GPU1 behind an x3130 switch under root port 00:10.0, GPU2 on its
# own root port 00:11.0. The simulated GPUs are ivshmem devices, named as
# GPUs with --gpu-ids. Checks the paths, the pair classes (same switch vs
# different root ports), the aperture BAR from sysfs, and that an
# unprivileged user (64 bytes of config space) gets the same topology.
# The human report goes to $NVS_OUT/topo.txt.
set -u

if ((NVS_GPUS < 2)); then
	t_skip topo-switch "this boot has $NVS_GPUS simulated GPUs (run-vm -g 3 or more)"
	exit 0
fi
py=/usr/bin/python3
[[ -x $py ]] || py=python3
if ! command -v "$py" >/dev/null; then
	t_skip topo-switch "python3 is not available in the guest to check the JSON"
	exit 0
fi
ids=1af4:1110
g0=$(sim_bdf 0) g1=$(sim_bdf 1) || { t_fail topo-switch "no simulated GPU0/GPU1 in $NVS_OUT/gpus"; exit 0; }
g2=
((NVS_GPUS >= 3)) && g2=$(sim_bdf 2)
json=$NVS_OUT/topo.json

"$NVS_BIN" topo --gpu-ids "$ids" >"$NVS_OUT/topo.txt" 2>&1
"$NVS_BIN" topo --gpu-ids "$ids" --json >"$json" 2>"$NVS_OUT/topo.err"
rc=$?
if ((rc > 1)); then
	t_fail topo-run "exit $rc: $(head -c 300 "$NVS_OUT/topo.err")"
	exit 0
fi
t_pass topo-run

# topo_py NAME CODE: CODE sees the JSON as d, the GPU bdfs as g0, g1, g2.
topo_py() {
	local name=$1 msg
	if msg=$("$py" - "$json" "$g0" "$g1" "$g2" 2>&1 <<EOF
import json, sys
d = json.load(open(sys.argv[1]))
g0, g1, g2 = sys.argv[2], sys.argv[3], sys.argv[4]
dev = {x["bdf"]: x for x in d["devices"]}
lab = {x["label"]: x["bdf"] for x in d["devices"]}
pair = {tuple(sorted((lab[p["a"]], lab[p["b"]]))): p for p in d["pairs"]}
$2
EOF
	); then
		t_pass "$name"
	else
		t_fail "$name" "$(tail -n 2 <<<"$msg" | tr '\n' ' ')"
	fi
}

topo_py topo-gpus-found '
gpus = sorted(b for b, x in dev.items() if x["role"] == "gpu")
assert g0 in gpus and g1 in gpus and len(gpus) == '"$NVS_GPUS"', (gpus, g0, g1)
'
topo_py topo-switch-path '
p = dev[g0]["path"]
assert [x["port"] for x in p] == ["switch downstream port", "switch upstream port", "root port"], p
assert p[2]["bdf"] == "0000:00:10.0", p
q = dev[g1]["path"]
assert q[1]["bdf"] == p[1]["bdf"] and q[2]["bdf"] == p[2]["bdf"] and q[0]["bdf"] != p[0]["bdf"], (p, q)
# QEMU root ports carry an ACS capability
assert p[2]["acs"] is True, p[2]
'
topo_py topo-switch-pair '
x = pair[tuple(sorted((g0, g1)))]
assert x["class"] == "PIX", x
assert x["common_bridge"] == dev[g0]["path"][1]["bdf"], x
'
if [[ -n $g2 ]]; then
	topo_py topo-root-port-pair '
assert [x["bdf"] for x in dev[g2]["path"]] == ["0000:00:11.0"], dev[g2]["path"]
for g in (g0, g1):
    x = pair[tuple(sorted((g, g2)))]
    assert x["class"] == "PHB" and x["common_bridge"] is None, x
assert dev[g0]["host_bridge"] == dev[g2]["host_bridge"] == "pci0000:00"
'
fi
topo_py topo-aperture '
a = dev[g0]["aperture"]
assert a["bar"] == 2 and a["bytes"] == 16 << 20 and a["resizable"] is False, a
assert dev[g0]["driver"] in (None, "nvsidecar") or dev[g0]["driver"], dev[g0]
'
# QEMU's ports report links it never trained; only the device below a
# port judges a link, so none of them may be called degraded
topo_py topo-no-false-findings '
assert d["config_limited"] is False
assert [f for f in d["findings"] if f["severity"] == "warning"] == [], d["findings"]
'
grep -q 'PIX' "$NVS_OUT/topo.txt" && t_pass topo-human || t_fail topo-human "no PIX in the report: $(head -c 200 "$NVS_OUT/topo.txt")"

# unprivileged: sysfs config reads stop at 64 bytes, no capabilities, but
# the paths come from sysfs and the pair classes must not change
as_user "$NVS_BIN" topo --gpu-ids "$ids" --dump >"$NVS_OUT/topo-user.tsv" 2>&1
as_user "$NVS_BIN" topo --gpu-ids "$ids" >"$NVS_OUT/topo-user.txt" 2>&1
want=$("$NVS_BIN" topo --gpu-ids "$ids" --dump 2>&1 | grep -E '^pair')
got=$(grep -E '^pair' "$NVS_OUT/topo-user.tsv")
if [[ -n $want && $want == "$got" ]]; then
	t_pass topo-unprivileged-pairs
else
	t_fail topo-unprivileged-pairs "as root: $(tr '\n' ' ' <<<"$want"); as nobody: $(tr '\n' ' ' <<<"$got")"
fi
if grep -q 'need root' "$NVS_OUT/topo-user.txt"; then
	t_pass topo-unprivileged-note
else
	t_fail topo-unprivileged-note "no note that capabilities need root: $(head -c 300 "$NVS_OUT/topo-user.txt" | tr '\n' ' ')"
fi
exit 0
