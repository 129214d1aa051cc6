#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: userspace (tests/vm/lanes.tsv)
#
# `nvsidecar doctor' with the module loaded and simulated GPUs: the module
# and GPU layers pass; --strict alone turns a warnings-only run (the 5090
# dump's topology warnings) into exit 1; an all-ones GPU0 fails the run,
# naming it unavailable, and passes again once its registers come back.
# The host half (no module, bad arguments, libcuda) is tests/host/45-doctor.sh.
set -u

py=/usr/bin/python3
[[ -x $py ]] || py=python3
if ! command -v "$py" >/dev/null; then
	t_skip doctor-guest "python3 is not available in the guest to check the JSON"
	exit 0
fi
ids=1af4:1110
out=$NVS_OUT/doctor.json
# An empty tree for /boot, /lib/modules and DKMS: reading the host's
# initramfs under emulation takes half a minute, and its module checks are
# tests/host/45-doctor.sh's.
mkdir -p /run/nvs-doctor-root
export NVS_DOCTOR_ROOT=/run/nvs-doctor-root

sim_fixture_all gb202
# Memory modules that read invalid (the all-ones fault below) are re-read
# only every mem_reprobe_s (default 30 s, the read budget): 1 s here, so
# that the recovery is seen within the test.
nvs_load mem_reprobe_s=1 || { t_fail doctor-load "insmod failed"; exit 0; }
c=$(sim_class 0) || { t_fail doctor-gpu0 "no class device for simulated GPU0"; exit 0; }
wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
g0=${c##*/}	# simulated GPU 0 is not necessarily the module's gpu0

# summary FILE: "module-loaded module-netlink GPU-RESULTS..." from the JSON
summary() {
	"$py" - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["name"]: x["result"] for x in d["checks"]}
g = sorted((x["name"], x["result"]) for x in d["checks"] if x["layer"] == "gpu" and x["name"][3:].isdigit())
print(r.get("module-loaded"), r.get("module-netlink"), " ".join(f"{n}={v}" for n, v in g))
EOF
}

"$NVS_BIN" doctor --gpu-ids "$ids" --json >"$out" 2>"$NVS_OUT/doctor.err"
rc=$?
s=$(summary "$out" 2>&1)
want="OK OK"
for ((i = 0; i < NVS_GPUS; i++)); do want+=" gpu$i=OK"; done
# gpuN names sort as strings: compare as sets
norm() { tr ' ' '\n' <<<"$1" | sort | tr '\n' ' '; }
[[ $(norm "$s") == "$(norm "$want")" ]] && t_pass doctor-guest-ok || t_fail doctor-guest-ok "rc $rc: $s (want $want)"
grep -A3 "\"name\": \"$g0\"" "$out" | grep -q ' °C'  && t_pass doctor-guest-reading ||
	t_fail doctor-guest-reading "no sensor reading in gpu0's line"

# Warnings only: exit 0, and 1 with --strict.
dump=$NVS_TOP/tests/topo/5090-switch.dump
"$NVS_BIN" doctor --pci-dump "$dump" >"$NVS_OUT/doctor.txt" 2>&1
rc=$?
"$NVS_BIN" doctor --pci-dump "$dump" --strict >/dev/null 2>&1
src=$?
[[ $rc == 0 && $src == 1 ]] && grep -q '^WARN topology topo-rebar-small' "$NVS_OUT/doctor.txt" &&
	t_pass doctor-guest-strict || t_fail doctor-guest-strict "exit $rc, --strict exit $src: $(grep -v '^OK' "$NVS_OUT/doctor.txt" | head -3 | tr '\n' ' ')"

# GPU0 reads all-ones: the run fails and names it.
sim 0 allones
if wait_for 3 '[[ $(read_err "$c/status") != ok ]]'; then
	"$NVS_BIN" doctor --gpu-ids "$ids" >"$NVS_OUT/doctor-fault.txt" 2>&1
	rc=$?
	[[ $rc == 1 ]] && grep -q "^FAIL gpu      $g0: .* unavailable" "$NVS_OUT/doctor-fault.txt" &&
		grep -q 'UNHEALTHY$' "$NVS_OUT/doctor-fault.txt" && t_pass doctor-guest-allones ||
		t_fail doctor-guest-allones "exit $rc: $(grep "$g0" "$NVS_OUT/doctor-fault.txt" | head -2 | tr '\n' ' ')"
else
	t_fail doctor-guest-allones "gpu0 status stayed $(cat "$c/status") after nvsim allones"
fi
sim 0 fixture gb202
wait_for 3 '[[ $(read_err "$c/status") == ok ]]'
wait_for 5 '[[ $(read_err "$(hw_temp "$(sim_hwmon 0)" mem0)_input") =~ ^[0-9]+$ ]]'
"$NVS_BIN" doctor --gpu-ids "$ids" --json >"$out" 2>/dev/null
s=$(summary "$out" 2>&1)
[[ $s == *"$g0=OK"* ]] && t_pass doctor-guest-recovers || t_fail doctor-guest-recovers "$s"

# The second GDR gate: with an RDMA device (soft-RoCE on a dummy interface)
# and no nvidia-peermem, gdr-peermem warns and names the device.
if command -v rdma >/dev/null && modprobe rdma_rxe 2>/dev/null && ip link add nvsd0 type dummy 2>/dev/null; then
	ip link set nvsd0 up
	if rdma link add nvsrxe0 type rxe netdev nvsd0 2>"$NVS_OUT/doctor-rxe.err"; then
		"$NVS_BIN" doctor --gpu-ids "$ids" >"$NVS_OUT/doctor-rxe.txt" 2>&1
		grep -q "^WARN gdr      gdr-peermem: nvidia-peermem is not loaded although nvsrxe0 is here" "$NVS_OUT/doctor-rxe.txt" &&
			grep -q 'modprobe nvidia-peermem' "$NVS_OUT/doctor-rxe.txt" && t_pass doctor-guest-peermem ||
			t_fail doctor-guest-peermem "$(grep gdr "$NVS_OUT/doctor-rxe.txt" | tr '\n' ' ')"
		rdma link delete nvsrxe0
	else
		t_fail doctor-guest-peermem "rdma link add failed: $(cat "$NVS_OUT/doctor-rxe.err")"
	fi
	ip link del nvsd0
else
	t_skip doctor-guest-peermem "no rdma tool or rdma_rxe module in this guest (rdma-core, the kernel's rdma_rxe)"
fi

nvs_unload || t_fail doctor-unload "rmmod failed"
