#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""The judging of the module and RDMA steps of device.py, which cannot run
on a machine without an NVIDIA GPU, kernel headers and an RDMA device.

The steps' functions run unchanged against a stand-in helper: a script that
answers `--help' with the real helper's help (so the option checks are the
real ones) and `status --json', `dmabuf probe --json', `libcuda verify
--probe --json' and `rdma --json' with documents in the shapes user/status.c,
user/dmabuf.c, user/libcuda.c and user/rdma.c print; sysfs counters and RDMA
ports come from a temporary directory. Each case names the verdict it must
give. Prints one `PASS name' or `FAIL name: why' line per case; exit 1 on
any FAIL.

Usage: selftest.py NVS_BIN
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True     # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import device  # noqa: E402

real_bin = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="nvs-device-selftest.")
failed = 0

FAKE = """#!/bin/bash
# the real helper's help, canned answers for the rest
for a in "$@"; do [[ $a == --help ]] && exec "%s" "$@"; done
echo "$*" >>"%s/argv"
case "$1 $2" in
"status --json") cat "%s/status.json" ;;
"dmabuf probe") cat "%s/probe.json"; exit "$(cat "%s/probe.rc")" ;;
"libcuda verify") cat "%s/verify.json"; exit "$(cat "%s/verify.rc")" ;;
rdma*) cat "%s/rdma.json"; exit "$(cat "%s/rdma.rc")" ;;
*) echo "selftest stand-in: unexpected $*" >&2; exit 99 ;;
esac
""" % ((real_bin,) + (tmp,) * 8)
fake = os.path.join(tmp, "nvsidecar")
with open(fake, "w") as f:
    f.write(FAKE)
os.chmod(fake, 0o755)
device.NVS_CLASS = os.path.join(tmp, "class")
device.IB_CLASS = os.path.join(tmp, "infiniband")


def put(name, text):
    with open(os.path.join(tmp, name), "w") as f:
        f.write(text if isinstance(text, str) else json.dumps(text))


def new_run():
    args = argparse.Namespace(out=os.path.join(tmp, "out"), budget=120, step_timeout=20, lib=None, p2p_lib=None,
                              stand_in=True)
    os.environ["NVS_BIN"] = fake
    r = device.Run(args)
    r.helper, r.module_ready, r.echo = True, True, False
    r.kernel = {"root": True, "release": "test"}
    r.pci = [{"bdf": "0000:01:00.0", "id": "10de:2335"}]
    r.lib = r.open_lib = "/opt/stand-in/libcuda.so.1"
    return r


def case(name, fn, want, text):
    global failed
    r = new_run()
    s = r.step(name, True, name, lambda s: fn(r, s))
    r.logf.close()
    shutil.rmtree(r.work, ignore_errors=True)
    if s.result == want and text in s.reason:
        print("PASS %s" % name)
    else:
        failed += 1
        print("FAIL %s: got %s `%s', want %s with `%s'" % (name, s.result, s.reason, want, text))


def gpu(status, samples, chip="gh100", index=0):
    return {"index": index, "busid": "0000:01:00.0", "chip": chip, "name": "NVIDIA H200", "status": status,
            "reason": "no recipe for 10de:2335" if status == "unsupported" else None, "simulated": False,
            "driver_bound": True, "sample_hz": 0 if status == "unsupported" else 50, "samples": samples,
            "unavailable": 0, "crossings": 0, "sensors": 0 if status == "unsupported" else 2,
            "sensors_valid": 0 if status == "unsupported" else 2, "alarms": 0,
            "hottest": None if status == "unsupported" else "hotspot", "hottest_mc": None if status == "unsupported" else 41250}


def status(gpus):
    put("status.json", {"module_version": "0.1.0", "family_version": 1, "tool_version": "0.1.0", "gpus": gpus})


def counter(index, value):
    d = os.path.join(device.NVS_CLASS, "gpu%d" % index)
    os.makedirs(d, exist_ok=True)
    put(os.path.join(d, "mmio_reads"), "%d\n" % value)


# -- module-status
status([])
case("status-gpu-not-listed", device.s_module_status, "FAIL",
     "0000:01:00.0 (10de:2335) is not listed: a GPU without a recipe must be listed as unsupported")
status([gpu("unsupported", 0)])
case("status-unsupported-no-counter", device.s_module_status, "PASS",
     "gpu0 0000:01:00.0 listed unsupported (no recipe for 10de:2335), never read: 0 samples, no mmio_reads counter")
counter(0, 0)
case("status-unsupported-counter-zero", device.s_module_status, "PASS", "mmio_reads 0 -> 0 in 1 s")
counter(0, 3)
case("status-unsupported-but-read", device.s_module_status, "FAIL", "is unsupported but was read: 0 samples, mmio_reads 3")
shutil.rmtree(device.NVS_CLASS)
status([gpu("unsupported", 12)])
case("status-unsupported-samples", device.s_module_status, "FAIL", "is unsupported but was read: 12 samples")
status([gpu("ok", 500, chip="gb202")])
case("status-supported-ok", device.s_module_status, "PASS", "gpu0 0000:01:00.0 chip gb202 status ok, 500 samples, 2/2 sensors valid")
status([gpu("unavailable", 500, chip="gb202")])
case("status-supported-unavailable", device.s_module_status, "FAIL", "chip gb202 status unavailable")

# -- module-dmabuf-probe
PROBE = {"source": "cuda", "cuda_device": "NVIDIA H200", "gpu": 0, "gpu_busid": "0000:01:00.0", "ok": True, "exit_code": 0,
         "step": "done", "errno": 0, "error": None, "exporter": "nvidia", "importer": "0000:01:00.0", "size": 33554432,
         "nents": 1, "mapped": 33554432, "seg_min": 33554432, "seg_max": 33554432, "verdict": "bar1",
         "bar1_start": 0x38000000000, "bar1_len": 256 << 30, "p2p": "allowed", "p2p_distance": 0}
status([gpu("unsupported", 0)])
put("probe.json", PROBE)
put("probe.rc", "0")
case("probe-bar1", device.s_module_probe, "PASS", "gpu0 0000:01:00.0: exit 0, exporter nvidia, importer 0000:01:00.0, 1 entries, "
     "32 MiB mapped, verdict bar1 (BAR1 0x38000000000 + 256 GiB), p2p allowed")
put("probe.json", dict(PROBE, ok=False, exit_code=8, verdict="system-ram"))
put("probe.rc", "8")
case("probe-not-bar1", device.s_module_probe, "FAIL", "exit 8, exporter nvidia")
put("probe.json", dict(PROBE, ok=False, exit_code=7, step="map", errno=22, error="Invalid argument", verdict="unknown"))
put("probe.rc", "7")
case("probe-refused", device.s_module_probe, "FAIL", "failed at step map: Invalid argument")
status([])
put("verify.json", {"lib": "/opt/stand-in/libcuda.so.1", "driver_version": 13000, "devices": 1, "device": 0,
                    "attributes": {}, "export_result": 0, "fd": 3, "size": 2097152, "fd_kind": "dma-buf (exporter nvidia)",
                    "dmabuf_probe_result": 0, "dmabuf_probe": "exporter nvidia, importer 0000:01:00.0, 1 entries, "
                    "2097152 bytes mapped, verdict elsewhere, p2p n/a", "dma_buf_export": True, "error": None})
put("verify.rc", "0")
case("probe-gpu-not-listed", device.s_module_probe, "FAIL",
     "`dmabuf probe --gpu N' needs the module to list the GPU, it does not; the kernel's import through "
     "`libcuda verify --probe --importer 0000:01:00.0' (no BAR1 to compare with) gave exit 0: exporter nvidia")

# -- RDMA
os.makedirs(os.path.join(device.IB_CLASS, "mlx5_0", "ports", "1"))
put(os.path.join(device.IB_CLASS, "mlx5_0", "ports", "1", "state"), "4: ACTIVE\n")
ROWS = [{"op": "write", "size": 4096, "transfers": 50, "verified": 50, "gbps": 1.5, "lat_us": 3.1},
        {"op": "read", "size": 1048576, "transfers": 50, "verified": 50, "gbps": 11.2, "lat_us": 95.0}]
RDMA = {"mode": "loopback", "device": "mlx5_0", "device_why": "--dev", "port": 1, "gid": "::ffff:10.0.0.1",
        "peer_device": "mlx5_0", "peer_device_why": "--dev", "gpu": None, "mem": "host", "mem_registration": "ibv_reg_mr",
        "peer_mem": "host", "results": ROWS, "ok": True, "exit": 0, "error": None}
put("rdma.json", RDMA)
put("rdma.rc", "0")
case("rdma-host-verified", device.s_rdma_host, "PASS", "loopback on mlx5_0, host memory: write 4 KiB 50/50 verified 1.500 GB/s")
put("rdma.json", dict(RDMA, results=[dict(ROWS[0], verified=49)], ok=False, exit=1, error="transfer 7: byte 12 is 0x00, want 0x5a"))
put("rdma.rc", "1")
case("rdma-host-corrupt", device.s_rdma_host, "FAIL", "exited 1: transfer 7: byte 12 is 0x00")
put("rdma.json", dict(RDMA, results=[], ok=False, exit=7, error="ibv_reg_dmabuf_mr on mlx5_0, 67108864 bytes: EOPNOTSUPP "
                      "(Operation not supported, 95): this RDMA driver cannot take dma-buf MRs"))
put("rdma.rc", "7")
case("rdma-cuda-real-nic-refused", device.s_rdma_cuda, "FAIL", "with cuda-dmabuf memory exited 7: ibv_reg_dmabuf_mr on mlx5_0")
shutil.rmtree(os.path.join(device.IB_CLASS, "mlx5_0"))
os.makedirs(os.path.join(device.IB_CLASS, "rxe0", "ports", "1"))
put(os.path.join(device.IB_CLASS, "rxe0", "ports", "1", "state"), "4: ACTIVE\n")
put("rdma.json", dict(RDMA, device="rxe0", results=[], ok=False, exit=7, error="ibv_reg_dmabuf_mr on rxe0, 8388608 bytes: "
                      "EOPNOTSUPP (Operation not supported, 95): this RDMA driver cannot take dma-buf MRs"))
case("rdma-cuda-soft-roce-refused", device.s_rdma_cuda, "SKIP", "soft-RoCE (rxe0) cannot register dma-buf memory")
put("rdma.json", dict(RDMA, device="rxe0", results=[], ok=False, exit=7, error="ibv_reg_dmabuf_mr on rxe0, 8388608 bytes: "
                      "EINVAL (Invalid argument, 22): the dma-buf was refused"))
case("rdma-cuda-soft-roce-einval", device.s_rdma_cuda, "FAIL", "exited 7: ibv_reg_dmabuf_mr on rxe0")

argv = open(os.path.join(tmp, "argv")).read()
if "dmabuf probe --gpu 0 --lib /opt/stand-in/libcuda.so.1 --size 33554432 --json" not in argv or \
        "rdma --loopback --dev rxe0 --mem cuda-dmabuf" not in argv:
    failed += 1
    print("FAIL argv: the steps did not pass the expected command lines:\n" + argv)
else:
    print("PASS argv")
shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failed else 0)
