#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""Guest-side generic netlink client for the review and budget VM tests.

It speaks the "nvsidecar" family over a raw NETLINK_GENERIC socket (no
libnl), so that a test controls exactly which requests an unprivileged or
privileged process sends, and can repeat them in one process.

Usage:
  nvs_genl.py get [--gpu N]          GPU_GET (dump, or a do for one GPU);
                                     one line per GPU: index=N status=S
                                     sample_hz=N mem_hz=N mmio_reads=N
                                     samples=N last_sample_ns=N (one
                                     consistent snapshot), then
                                     label=mc/valid/alarm per sensor
  nvs_genl.py set --gpu N [--sample-hz X] [--mem-hz Y]...
                                     GPU_SET, once per --mem-hz given (or
                                     once); prints ret=ERRNO (0 or -errno)
                                     per request, then the GPU's mem_hz
  nvs_genl.py window --gpu N --seconds S
                                     two GPU_GET snapshots S seconds apart;
                                     prints "READS PASSES RATE": register
                                     reads, sampling passes and reads a
                                     second of the sampler's clock between
                                     them (each snapshot is taken under the
                                     GPU's lock, so the two counts agree)
  nvs_genl.py hammer --seconds S     GPU_GET dumps back to back; prints
                                     requests=N
  nvs_genl.py lookups --seconds S    nlctrl CTRL_CMD_GETFAMILY "nvsidecar"
                                     back to back; prints n=N max_ms=X
                                     p50_ms=X p90_ms=X (the latency every libnl
                                     client pays to resolve a family)
Command and attribute numbers and the status names come from the YNL
spec, docs/netlink/nvsidecar.yaml (which scripts/ynl-check keeps in step
with the uapi header and the kernel's policies), never from numbers here.
"""
import argparse
import os
import socket
import struct
import sys
import time

NETLINK_GENERIC = 16
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 0x1, 0x4, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
GENL_ID_CTRL, CTRL_CMD_GETFAMILY = 0x10, 3
CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 1, 2

SPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "../../../docs/netlink/nvsidecar.yaml")


def load_spec(path=SPEC):
    """Numbers as YNL assigns them: attributes from 1 and operations from 1
    in list order, enum entries from value-start (0), unless a "value"
    says otherwise."""
    # The callers run python3 -S (a fast start under TCG); yaml lives in
    # site-packages, so turn the site machinery on for this import only.
    import site
    site.main()
    import yaml

    with open(path) as f:
        spec = yaml.safe_load(f)
    sets = {}
    for aset in spec["attribute-sets"]:
        if "subset-of" in aset:
            continue
        val, names = 1, {}
        for a in aset["attributes"]:
            val = a.get("value", val)
            names[a["name"]] = val
            val += 1
        sets[aset["name"]] = names
    ops, val = {}, 1
    for o in spec["operations"]["list"]:
        val = o.get("value", val)
        ops[o["name"]] = val
        val += 1
    enums = {}
    for d in spec.get("definitions", []):
        if d["type"] == "enum":
            entries = [e if isinstance(e, str) else e["name"] for e in d["entries"]]
            enums[d["name"]] = entries
    return sets, ops, enums


_SETS, _OPS, _ENUMS = load_spec()
NVS_CMD_GPU_GET, NVS_CMD_GPU_SET = _OPS["gpu-get"], _OPS["gpu-set"]
_G, _S = _SETS["gpu"], _SETS["sensor"]
A_GPU_INDEX, A_GPU_STATUS = _G["gpu-index"], _G["gpu-status"]
A_GPU_STATUS_REASON, A_GPU_SAMPLE_HZ = _G["gpu-status-reason"], _G["gpu-sample-hz"]
A_GPU_SAMPLES, A_GPU_LAST_SAMPLE_NS = _G["gpu-samples"], _G["gpu-last-sample-ns"]
A_GPU_SENSORS, A_GPU_SENSOR = _G["gpu-sensors"], _G["gpu-sensor"]
A_GPU_MMIO_READS, A_GPU_MEM_HZ = _G["gpu-mmio-reads"], _G["gpu-mem-hz"]
S_ID, S_LABEL, S_VALID, S_MC, S_ALARM = (_S[n] for n in ("id", "label", "valid", "mc", "alarm"))
STATUS = _ENUMS["nvs-status"]


def nla(atype, data):
    n = 4 + len(data)
    return struct.pack("HH", n, atype) + data + b"\0" * ((4 - n % 4) % 4)


def attrs(buf):
    out, off = {}, 0
    while off + 4 <= len(buf):
        n, t = struct.unpack_from("HH", buf, off)
        if n < 4:
            break
        out.setdefault(t & 0x3FFF, []).append(buf[off + 4:off + n])
        off += (n + 3) & ~3
    return out


def u32(b):
    return struct.unpack("I", b[:4])[0]


class Genl:
    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
        self.sock.bind((0, 0))
        self.seq = 0

    def request(self, family, cmd, payload=b"", dump=False):
        """Returns (errno_or_0, [genl payloads after the 4-byte header])."""
        self.seq += 1
        flags = NLM_F_REQUEST | (NLM_F_DUMP if dump else NLM_F_ACK)
        body = struct.pack("BBH", cmd, 1, 0) + payload
        self.sock.send(struct.pack("IHHII", 16 + len(body), family, flags, self.seq, 0) + body)
        msgs = []
        while True:
            data = self.sock.recv(1 << 16)
            off = 0
            while off + 16 <= len(data):
                n, mtype, _, seq, _ = struct.unpack_from("IHHII", data, off)
                body = data[off + 16:off + n]
                off += (n + 3) & ~3
                if seq != self.seq:
                    continue
                if mtype == NLMSG_ERROR:
                    return struct.unpack_from("i", body)[0], msgs
                if mtype == NLMSG_DONE:
                    return 0, msgs
                msgs.append(body[4:])

    def family(self, name):
        err, msgs = self.request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY,
                                 nla(CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0"))
        if err or not msgs:
            sys.exit("nvs_genl: no generic netlink family %s (%d)" % (name, err))
        return struct.unpack("H", attrs(msgs[0])[CTRL_ATTR_FAMILY_ID][0][:2])[0]


def gpu_line(msg):
    a = attrs(msg)
    st = u32(a[A_GPU_STATUS][0])
    out = ["index=%d" % u32(a[A_GPU_INDEX][0]),
           "status=%s" % (STATUS[st] if st < len(STATUS) else st),
           "sample_hz=%d" % u32(a[A_GPU_SAMPLE_HZ][0]),
           "mem_hz=%d" % u32(a[A_GPU_MEM_HZ][0]) if A_GPU_MEM_HZ in a else "mem_hz=-",
           "mmio_reads=%d" % struct.unpack("Q", a[A_GPU_MMIO_READS][0][:8])[0]
           if A_GPU_MMIO_READS in a else "mmio_reads=-",
           "samples=%d" % struct.unpack("Q", a[A_GPU_SAMPLES][0][:8])[0],
           "last_sample_ns=%d" % struct.unpack("Q", a[A_GPU_LAST_SAMPLE_NS][0][:8])[0]]
    for s in attrs(a.get(A_GPU_SENSORS, [b""])[0]).get(A_GPU_SENSOR, []):
        sa = attrs(s)
        label = sa[S_LABEL][0].rstrip(b"\0").decode()
        mc = struct.unpack("i", sa[S_MC][0][:4])[0]
        out.append("%s=%d/%d/%d" % (label, mc, sa[S_VALID][0][0], sa[S_ALARM][0][0]))
    return " ".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["get", "set", "window", "hammer", "lookups"])
    ap.add_argument("--gpu", type=int)
    ap.add_argument("--sample-hz", type=int)
    ap.add_argument("--mem-hz", type=int, action="append")
    ap.add_argument("--seconds", type=float, default=5)
    o = ap.parse_args()
    g = Genl()
    if o.cmd == "lookups":
        lat, end = [], time.monotonic() + o.seconds
        while time.monotonic() < end:
            t0 = time.monotonic()
            g.family("nvsidecar")
            lat.append((time.monotonic() - t0) * 1000)
        lat.sort()
        print("n=%d max_ms=%.1f p50_ms=%.1f p90_ms=%.1f" %
              (len(lat), lat[-1], lat[len(lat) // 2], lat[len(lat) * 9 // 10]))
        return 0
    fam = g.family("nvsidecar")
    if o.cmd == "get":
        if o.gpu is None:
            err, msgs = g.request(fam, NVS_CMD_GPU_GET, dump=True)
        else:
            err, msgs = g.request(fam, NVS_CMD_GPU_GET, nla(A_GPU_INDEX, struct.pack("I", o.gpu)))
        if err:
            print("ret=%d" % err)
            return 1
        for m in msgs:
            print(gpu_line(m))
        return 0
    if o.cmd == "window":
        snaps = []
        for i in range(2):
            if i:
                time.sleep(o.seconds)
            err, msgs = g.request(fam, NVS_CMD_GPU_GET, nla(A_GPU_INDEX, struct.pack("I", o.gpu)))
            if err or not msgs:
                print("ret=%d" % err)
                return 1
            a = attrs(msgs[0])
            snaps.append([struct.unpack("Q", a[k][0][:8])[0]
                          for k in (A_GPU_MMIO_READS, A_GPU_SAMPLES, A_GPU_LAST_SAMPLE_NS)])
        r, p, t = (snaps[1][k] - snaps[0][k] for k in range(3))
        print("%d %d %d" % (r, p, r * 1000000000 // t if t else 0))
        return 0
    if o.cmd == "set":
        for mem_hz in o.mem_hz or [None]:
            p = nla(A_GPU_INDEX, struct.pack("I", o.gpu))
            if o.sample_hz is not None:
                p += nla(A_GPU_SAMPLE_HZ, struct.pack("I", o.sample_hz))
            if mem_hz is not None:
                p += nla(A_GPU_MEM_HZ, struct.pack("I", mem_hz))
            err, _ = g.request(fam, NVS_CMD_GPU_SET, p)
            print("ret=%d" % err)
        err, msgs = g.request(fam, NVS_CMD_GPU_GET, nla(A_GPU_INDEX, struct.pack("I", o.gpu)))
        if not err and msgs:
            print("mem_hz=%d" % u32(attrs(msgs[0])[A_GPU_MEM_HZ][0]))
        return 0
    n, end = 0, time.monotonic() + o.seconds
    while time.monotonic() < end:
        err, _ = g.request(fam, NVS_CMD_GPU_GET, dump=True)
        if err:
            print("ret=%d" % err)
            return 1
        n += 1
    print("requests=%d" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
