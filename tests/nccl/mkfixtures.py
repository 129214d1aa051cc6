#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""
Writes the NCCL log fixtures of tests/nccl/ (run it from anywhere; it
writes beside itself). Every line is built from a format string in NCCL's
own source, at the tag named in the fixture's header, with the file and
line given there; host names, pids, addresses and pointers are made up.
The launcher prefixes are what the launchers add in front of a line:
Open MPI's --tag-output ("[jobid,rank]<stdout>:"), pdsh ("host: "), Python
logging (a formatter's text before the message). Nothing here is copied
from anybody's log.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def info(host, pid, tid, dev, msg):
    # src/debug.cc: "%s:%d:%d [%d] NCCL INFO "
    return f"{host}:{pid}:{tid} [{dev}] NCCL INFO {msg}"


def warn(host, pid, tid, dev, fileline, msg, stamp=None):
    # src/debug.cc: "\n%s:%d:%d [%d] %s:%d NCCL WARN "; from 2.26 a
    # "[%F %T] " timestamp comes first (NCCL_DEBUG_TIMESTAMP_LEVELS
    # defaults to WARN). The leading newline leaves an empty line.
    pre = f"[{stamp}] " if stamp else ""
    return ["", f"{pre}{host}:{pid}:{tid} [{dev}] {fileline} NCCL WARN {msg}"]


def trace(host, pid, tid, dev, ms, funcline, msg):
    # src/debug.cc: "%s:%d:%d [%d] %f %s:%d NCCL TRACE "
    return f"{host}:{pid}:{tid} [{dev}] {ms:f} {funcline} NCCL TRACE {msg}"


def write(name, header, lines, cut=False):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        for h in header.strip("\n").split("\n"):
            f.write("# " + h if h else "#")
            f.write("\n")
        text = "\n".join(lines)
        f.write(text if cut else text + "\n")


class Rank:
    def __init__(self, rank, host, pid, tid, dev, busid):
        self.rank, self.host, self.pid, self.tid, self.dev, self.busid = rank, host, pid, tid, dev, busid

    def i(self, msg):
        return info(self.host, self.pid, self.tid, self.dev, msg)


def ring(ranks):
    return [(ranks[k], ranks[(k + 1) % len(ranks)]) for k in range(len(ranks))]


# --------------------------------------------------------------------------
# NCCL 2.14.3, two nodes x two GPUs, one process per GPU, mpirun --tag-output
# --------------------------------------------------------------------------
def v214_tag_output():
    ranks = [Rank(0, "node01", 31001, 31001, 0, 0x1000), Rank(1, "node01", 31002, 31002, 1, 0x2000),
             Rank(2, "node02", 41001, 41001, 0, 0x1000), Rank(3, "node02", 41002, 41002, 1, 0x2000)]
    out = []

    def tag(r, line):
        return f"[1,{r.rank}]<stdout>:{line}"
    for r in ranks:
        out.append(tag(r, "NCCL version 2.14.3+cuda11.7"))
    for r in ranks:
        ip = 1 + r.rank
        out += [tag(r, r.i("NET/Plugin : No plugin found (libnccl-net.so), using internal implementation")),
                tag(r, r.i(f"NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.10.0.{ip}<0>")),
                tag(r, r.i("Using network IB")),
                tag(r, r.i(f"DMA-BUF is available on GPU device {r.dev}")),
                tag(r, r.i("NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'")),
                tag(r, r.i(f"GPU Direct RDMA Enabled for GPU {r.busid:x} / HCA 0 (distance 3 <= 3), read 1"))]
    for ch in (0, 1):
        for a, b in ring(ranks):
            if a.host == b.host:
                out.append(tag(a, a.i(f"Channel {ch:02d}/0 : {a.rank}[{a.busid:x}] -> {b.rank}[{b.busid:x}] via P2P/IPC/read")))
            else:
                out.append(tag(a, a.i(f"Channel {ch:02d}/0 : {a.rank}[{a.busid:x}] -> {b.rank}[{b.busid:x}] [send] via NET/IB/0/GDRDMA")))
                out.append(tag(b, b.i(f"Channel {ch:02d}/0 : {a.rank}[{a.busid:x}] -> {b.rank}[{b.busid:x}] [receive] via NET/IB/0/GDRDMA")))
    for r in ranks:
        out.append(tag(r, r.i("Connected all rings")))
        out.append(tag(r, r.i("Connected all trees")))
    for r in ranks:
        out.append(tag(r, r.i(f"comm 0x55d1c0{r.rank:02d}a000 rank {r.rank} nranks 4 cudaDev {r.dev} busId {r.busid:x} - Init COMPLETE")))
    write("nccl-2.14-mpirun-tag-output.log", """
nccl-check fixture: NCCL 2.14.3 (tag v2.14.3-1), two nodes x two GPUs, one
process per GPU, run under mpirun --tag-output ("[1,RANK]<stdout>:" prefix).
Lines follow NCCL's source at that tag:
  prefix            src/debug.cc:171    "%s:%d:%d [%d] NCCL INFO "
  version           src/init.cc:428     printf("%s\\n", VERSION_STRING), no prefix
  plugin            src/net.cc:183      "NET/Plugin : No plugin found (%s), using internal implementation"
  IB devices        src/transport/net_ib.cc:247 "NET/IB : Using%s %s; OOB %s:%s"
  network           src/init.cc:324     "Using network %s"
  DMA-BUF           src/init.cc:267     "DMA-BUF is available on GPU device %d"
  GDR per HCA       src/graph/topo.cc:664 "NET/%s : GPU Direct RDMA %s for HCA %d '%s'"
  GDR per GPU       src/graph/paths.cc:398 "GPU Direct RDMA Enabled for GPU %lx / HCA %d (distance %d <= %d), read %d"
  P2P               src/transport/p2p.cc:245 "Channel %02d/%01d : %d[%lx] -> %d[%lx] via P2P/IPC%s%s"
  NET               src/transport/net.cc:180,216 "Channel %02d/%d : %d[%lx] -> %d[%lx] [send|receive] via NET/%s/%d%s%s"
  rings, trees      src/init.cc:792,802 "Connected all rings", "Connected all trees"
  init done         src/init.cc:1095    "comm %p rank %d nranks %d cudaDev %d busId %lx - Init COMPLETE"
Host names, pids, addresses and pointers are made up (tests/nccl/mkfixtures.py).
""", out)


# The NCCL 2.18.6 (tag v2.18.6-1) statements a single-node run over sockets
# and SHM prints after its prefix, as the fixtures' headers cite them.
V218_SINGLE_NODE_SOURCES = """  plugin            src/net.cc:180      "NET/Plugin : No plugin found, using internal implementation"
  no IB             src/transport/net_ib.cc:252 "NET/IB : No device found."
  sockets           src/transport/net_socket.cc:62 "NET/Socket : Using%s"
  network           src/init.cc:310     "Using network %s"
  DMA-BUF           src/init.cc:267     "DMA-BUF is available on GPU device %d"
  SHM               src/transport/shm.cc:95 "Channel %02d : %d[%d] -> %d[%d] via SHM/%s/%s"
  rings             src/init.cc:1080    "Connected all rings"
  init done         src/init.cc:1375    "comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init COMPLETE"
"""


# --------------------------------------------------------------------------
# NCCL 2.18.6, one node, four GPUs, NCCL_P2P_DISABLE=1, run through pdsh
# --------------------------------------------------------------------------
def v218_pdsh_shm():
    ranks = [Rank(k, "gpu02", 5101 + k, 5101 + k, k, 0) for k in range(4)]
    out = ["gpu02: NCCL version 2.18.6+cuda12.2"]
    for r in ranks:
        out += [r.i("NCCL_P2P_LEVEL set by environment to LOC"),
                r.i("NET/Plugin : No plugin found, using internal implementation"),
                r.i("NET/IB : No device found."),
                r.i("NET/Socket : Using [0]eth0:10.0.0.2<0>"),
                r.i("Using network Socket"),
                r.i(f"DMA-BUF is available on GPU device {r.dev}")]
    for ch in (0, 1):
        for a, b in ring(ranks):
            out.append(a.i(f"Channel {ch:02d} : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] via SHM/direct/direct"))
    for r in ranks:
        out.append(r.i("Connected all rings"))
    for r in ranks:
        out.append(r.i(f"comm 0x5591aa{r.rank:02d}b000 rank {r.rank} nranks 4 cudaDev {r.dev} nvmlDev {r.dev} busId {(r.dev + 1) * 0x1000:x} commId 0x6b3c1f2e9d4a5807 - Init COMPLETE"))
    out = [line if line.startswith("gpu02: ") else "gpu02: " + line for line in out]
    write("nccl-2.18-pdsh-shm.log", """
nccl-check fixture: NCCL 2.18.6 (tag v2.18.6-1), one node (gpu02), four GPUs
in four processes, NCCL_P2P_DISABLE=1, started through pdsh ("gpu02: " prefix).
Before 2.23 NCCL reports NCCL_P2P_DISABLE=1 as NCCL_P2P_LEVEL LOC.
Lines follow NCCL's source at that tag:
  prefix            src/debug.cc:175    "%s:%d:%d [%d] NCCL INFO "
  version           src/init.cc:452     printf("%s\\n", VERSION_STRING), no prefix
  P2P level         src/graph/paths.cc:242 "%s set by environment to %s"
""" + V218_SINGLE_NODE_SOURCES + """Host names, pids and pointers are made up (tests/nccl/mkfixtures.py).
""", out)


# --------------------------------------------------------------------------
# NCCL 2.18.6 through pdsh and a per-rank wrapper whose tag has the shape of
# NCCL's own prefix ("job:JOBID:RANK [NODEID] ", made up here like every
# launcher prefix): the host and pid of a line are NCCL's, after it
# --------------------------------------------------------------------------
def v218_pdsh_wrapper(host="gpu03", name="nccl-2.18-pdsh-wrapper.log", note=""):
    ranks = [Rank(k, host, 5301 + k, 5301 + k, k, 0) for k in range(4)]
    out = []

    def tag(r, line):
        return f"gpu03: job:4242:{r.rank} [1] {line}"
    for r in ranks:
        out += [tag(r, r.i("NET/Plugin : No plugin found, using internal implementation")),
                tag(r, r.i("NET/IB : No device found.")),
                tag(r, r.i("NET/Socket : Using [0]eth0:10.0.0.3<0>")),
                tag(r, r.i("Using network Socket")),
                tag(r, r.i(f"DMA-BUF is available on GPU device {r.dev}"))]
    for a, b in ring(ranks):
        out.append(tag(a, a.i(f"Channel 00 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] via SHM/direct/direct")))
    for r in ranks:
        out.append(tag(r, r.i("Connected all rings")))
    for r in ranks:
        out.append(tag(r, r.i(f"comm 0x5591bb{r.rank:02d}c000 rank {r.rank} nranks 4 cudaDev {r.dev} nvmlDev {r.dev} busId {(r.dev + 1) * 0x1000:x} commId 0x2a7e90c4d1b35f68 - Init COMPLETE")))
    write(name, f"""
nccl-check fixture: NCCL 2.18.6 (tag v2.18.6-1), one node ({host}), four GPUs
in four processes, started through pdsh ("gpu03: " prefix) and a wrapper that
tags each rank's output "job:JOBID:RANK [NODEID] ", a tag with the shape of
NCCL's own "host:pid:tid [dev] " prefix (the host, pid and CUDA device of
each line are NCCL's, after it: {host}, 5301..5304 and 0..3, not job, 4242
and 1).{note}
Lines follow NCCL's source at that tag:
  prefix            src/debug.cc:175    "%s:%d:%d [%d] NCCL INFO "
""" + V218_SINGLE_NODE_SOURCES + """Host names, pids, pointers and the wrapper's tag are made up (tests/nccl/mkfixtures.py).
""", out)


# The same with a host name that starts with 'N', as the "NCCL" mark does:
# the host is read whole all the same (admin review L4)
def v218_pdsh_wrapper_nhost():
    v218_pdsh_wrapper("NVgpu03", "nccl-2.18-pdsh-wrapper-nhost.log", """
The host name starts with 'N', as NCCL's "NCCL" mark does, but is no cut
mark: it is the host all the same.""")


# --------------------------------------------------------------------------
# NCCL 2.19.3, two nodes, RoCE without GPUDirect RDMA
# --------------------------------------------------------------------------
def v219_ib_nogdr():
    ranks = [Rank(0, "node11", 2201, 2201, 0, 0x1000), Rank(1, "node12", 3301, 3301, 0, 0x1000)]
    out = ["NCCL version 2.19.3+cuda12.3"]
    for r in ranks:
        out += [r.i("NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory No plugin found (libnccl-net.so), using internal implementation"),
                r.i(f"NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.3.0.{r.rank + 1}<0>"),
                r.i("Using network IB"),
                r.i(f"DMA-BUF is available on GPU device {r.dev}"),
                r.i("NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'"),
                r.i(f"GPU Direct RDMA Disabled for GPU {r.busid:x} / HCA 0 (distance 7 > 3)")]
    for ch in (0, 1):
        for a, b in ring(ranks):
            out.append(a.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] [send] via NET/IB/0"))
            out.append(b.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] [receive] via NET/IB/0"))
    for r in ranks:
        out.append(r.i("Connected all rings"))
        out.append(r.i(f"comm 0x55e07{r.rank}00c000 rank {r.rank} nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x2f1e3d4c5b6a7988 - Init COMPLETE"))
    write("nccl-2.19-roce-nogdr.log", """
nccl-check fixture: NCCL 2.19.3 (tag v2.19.3-1), two nodes with one GPU
each over RoCE, GPUDirect RDMA disabled (no nvidia-peermem, no dma-buf path,
GPU and NIC too far apart). No launcher prefix.
Lines follow NCCL's source at that tag:
  prefix            src/debug.cc:176    "%s:%d:%d [%d] NCCL INFO "
  version           src/init.cc:481     printf("%s\\n", VERSION_STRING), no prefix
  plugin            src/net.cc:231      "NET/Plugin : dlerror=%s No plugin found (%s), using internal implementation"
  IB devices        src/transport/net_ib.cc:264 "NET/IB : Using%s %s; OOB %s:%s"
  network           src/init.cc:335     "Using network %s"
  DMA-BUF           src/init.cc:287     "DMA-BUF is available on GPU device %d"
  GDR per HCA       src/graph/topo.cc:698 "NET/%s : GPU Direct RDMA %s for HCA %d '%s'"
  GDR per GPU       src/graph/paths.cc:395 "GPU Direct RDMA Disabled for GPU %lx / HCA %d (distance %d > %d)"
  NET               src/transport/net.cc:194,233 "Channel %02d/%d : %d[%d] -> %d[%d] [send|receive] via NET/%s/%d%s%s"
  rings             src/init.cc:1118    "Connected all rings"
  init done         src/init.cc:1418    "comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init COMPLETE"
Host names, pids, addresses and pointers are made up (tests/nccl/mkfixtures.py).
""", out)


# --------------------------------------------------------------------------
# NCCL 2.21.5, one process driving eight GPUs (nccl-tests -g 8)
# --------------------------------------------------------------------------
def v221_p2p_direct():
    ranks = [Rank(k, "gpu01", 41207, 41207 if k == 0 else 41230 + k, k, 0) for k in range(8)]
    out = ["NCCL version 2.21.5+cuda12.4"]
    r0 = ranks[0]
    out += [r0.i("NCCL_P2P_LEVEL set by environment to SYS"),
            r0.i("NET/Plugin: No plugin found (libnccl-net.so)"),
            r0.i("NET/IB : No device found."),
            r0.i("NET/Socket : Using [0]eno1:192.168.40.11<0>"),
            r0.i("Using network Socket")]
    for r in ranks:
        out.append(r.i(f"DMA-BUF is available on GPU device {r.dev}"))
        out.append(r.i(f"comm 0x55f3b2{r.rank:02d}e000 rank {r.rank} nRanks 8 nNodes 1 localRanks 8 localRank {r.rank} MNNVL 0"))
    for ch in (0, 1):
        for a, b in ring(ranks):
            out.append(a.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] via P2P/direct pointer"))
    for r in ranks:
        out.append(r.i("Connected all rings"))
    for r in ranks:
        out.append(r.i(f"ncclCommInitRank comm 0x55f3b2{r.rank:02d}e000 rank {r.rank} nranks 8 cudaDev {r.dev} nvmlDev {r.dev} busId {(r.dev + 1) * 0x1000:x} commId 0x7a9c3e1b2d4f6081 - Init COMPLETE"))
    write("nccl-2.21-single-process.log", """
nccl-check fixture: NCCL 2.21.5 (tag v2.21.5-1), one node (gpu01), one
process driving eight GPUs (as nccl-tests -g 8 does), NCCL_P2P_LEVEL=SYS.
No launcher prefix.
Lines follow NCCL's source at that tag:
  prefix            src/debug.cc:183    "%s:%d:%d [%d] NCCL INFO "
  version           src/init.cc:476     printf("%s\\n", VERSION_STRING), no prefix
  P2P level         src/graph/paths.cc:244 "%s set by environment to %s"
  plugin            src/net.cc:349      "NET/Plugin: No plugin found (%s)"
  no IB             src/transport/net_ib.cc:511 "NET/IB : No device found."
  sockets           src/transport/net_socket.cc:62 "NET/Socket : Using%s"
  network           src/init.cc:322     "Using network %s"
  DMA-BUF           src/init.cc:275     "DMA-BUF is available on GPU device %d"
  ranks and nodes   src/init.cc:1160    "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d"
  P2P               src/transport/p2p.cc:364 "Channel %02d/%01d : %d[%d] -> %d[%d] via P2P/direct pointer%s"
  rings             src/init.cc:1264    "Connected all rings"
  init done         src/init.cc:1573    "ncclCommInitRank comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init COMPLETE"
Host names, pids, addresses and pointers are made up (tests/nccl/mkfixtures.py).
""", out)


# --------------------------------------------------------------------------
# NCCL 2.22.3, two nodes x two GPUs over a net plugin named "AWS Libfabric"
# --------------------------------------------------------------------------
def v222_plugin():
    ranks = [Rank(0, "ip-10-1-2-3", 7001, 7001, 0, 0x10), Rank(1, "ip-10-1-2-3", 7002, 7002, 1, 0x20),
             Rank(2, "ip-10-1-9-8", 8001, 8001, 0, 0x10), Rank(3, "ip-10-1-9-8", 8002, 8002, 1, 0x20)]
    out = []
    for r in ranks:
        out += [r.i("NCCL version 2.22.3+cuda12.6"),
                r.i("NET/Plugin: Failed to find ncclNetPlugin_v8 symbol."),
                r.i("NET/Plugin: Loaded net plugin AWS Libfabric (v7)"),
                r.i("Using network AWS Libfabric"),
                r.i(f"DMA-BUF is available on GPU device {r.dev}"),
                r.i("NET/AWS Libfabric : GPU Direct RDMA Enabled for HCA 0 'rdmap16s27'"),
                r.i(f"comm 0x5601{r.rank:02d}7c8000 rank {r.rank} nRanks 4 nNodes 2 localRanks 2 localRank {r.dev} MNNVL 0")]
    for ch in (0, 1):
        for a, b in ring(ranks):
            if a.host == b.host:
                out.append(a.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] via P2P/CUMEM/read"))
            else:
                out.append(a.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] [send] via NET/AWS Libfabric/{a.dev}/GDRDMA"))
                out.append(b.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] [receive] via NET/AWS Libfabric/{b.dev}/GDRDMA"))
    for r in ranks:
        out.append(r.i("Connected all rings"))
        out.append(r.i(f"ncclCommInitRank comm 0x5601{r.rank:02d}7c8000 rank {r.rank} nranks 4 cudaDev {r.dev} nvmlDev {r.dev} busId {r.busid:x}0 commId 0x3c2b1a0f9e8d7c6b - Init COMPLETE"))
    write("nccl-2.22-net-plugin.log", """
nccl-check fixture: NCCL 2.22.3 (tag v2.22.3-1), two nodes x two GPUs, one
process per GPU, over a net plugin whose name is "AWS Libfabric" (the name
aws-ofi-nccl 1.11 and before give their ncclNet; it has a space in it).
From 2.22 the version is an INFO line. No launcher prefix.
Lines follow NCCL's source at that tag:
  prefix            src/debug.cc:196    "%s:%d:%d [%d] NCCL INFO "
  version           src/init.cc:497     INFO(NCCL_ALL, "%s", VERSION_STRING)
  plugin            src/net.cc:447,478  "NET/Plugin: Failed to find ncclNetPlugin_v8 symbol.",
                                        "NET/Plugin: Loaded net plugin %s (v7)"
  network           src/init.cc:331     "Using network %s"
  DMA-BUF           src/init.cc:283     "DMA-BUF is available on GPU device %d"
  GDR per HCA       src/graph/topo.cc:791 "NET/%s : GPU Direct RDMA %s for HCA %d '%s'"
  ranks and nodes   src/init.cc:999     "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d"
  P2P               src/transport/p2p.cc:372 "Channel %02d/%01d : %d[%d] -> %d[%d] via P2P/%s%s%s" (CUMEM, /read)
  NET               src/transport/net.cc:196,236 "Channel %02d/%d : %d[%d] -> %d[%d] [send|receive] via NET/%s/%d%s%s"
  rings             src/transport/generic.cc:12 "Connected all rings"
  init done         src/init.cc:1434    "ncclCommInitRank comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init COMPLETE"
Host names, pids, device names and pointers are made up (tests/nccl/mkfixtures.py).
""", out)


# --------------------------------------------------------------------------
# NCCL 2.23.4, two nodes x two GPUs, printed through Python logging
# --------------------------------------------------------------------------
def v223_python_logging():
    ranks = [Rank(0, "node21", 9101, 9101, 0, 0x1000), Rank(1, "node21", 9102, 9102, 1, 0x2000),
             Rank(2, "node22", 9201, 9201, 0, 0x1000), Rank(3, "node22", 9202, 9202, 1, 0x2000)]
    out = []

    def log(k, line):
        # logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s")
        return f"2025-03-04 10:15:{2 + k // 10:02d},{(k * 37) % 1000:03d} - train.nccl - INFO - {line}"
    body = []
    for r in ranks:
        body += [r.i("NCCL version 2.23.4+cuda12.6"),
                 r.i("NCCL_DMABUF_ENABLE set by environment to 1."),
                 r.i("NET/Plugin: Using internal network plugin."),
                 r.i(f"NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.2.0.{r.rank + 1}<0>"),
                 r.i("Using network IB"),
                 r.i(f"DMA-BUF is available on GPU device {r.dev}"),
                 r.i("NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'"),
                 r.i(f"comm 0x5620{r.rank:02d}9a4000 rank {r.rank} nRanks 4 nNodes 2 localRanks 2 localRank {r.dev} MNNVL 0"),
                 r.i(f"ncclCommInitRank comm 0x5620{r.rank:02d}9a4000 rank {r.rank} nranks 4 cudaDev {r.dev} nvmlDev {r.dev} busId {r.busid:x} commId 0x1d2c3b4a59687766 - Init COMPLETE")]
    # From 2.23 rings connect at the first collective, after Init COMPLETE.
    for ch in (0, 1):
        for a, b in ring(ranks):
            if a.host == b.host:
                body.append(a.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] via P2P/CUMEM/read"))
            else:
                body.append(a.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] [send] via NET/IB/0/GDRDMA"))
                body.append(b.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] [receive] via NET/IB/0/GDRDMA"))
    for r in ranks:
        body.append(r.i("Connected all rings"))
    for k, line in enumerate(body):
        out.append(log(k, line))
    # Two processes that wrote to one pipe without a newline between them.
    cut = ranks[0].i("Connected all trees")[:40]
    out.append(log(len(body), cut + ranks[3].i("Connected all trees")))
    write("nccl-2.23-python-logging.log", """
nccl-check fixture: NCCL 2.23.4 (tag v2.23.4-1), two nodes x two GPUs, one
process per GPU, NCCL_DMABUF_ENABLE=1; each line re-emitted through Python's
logging with the formatter "%(asctime)s - %(name)s - %(levelname)s - %(message)s".
From 2.23 the rings connect at the first collective, after Init COMPLETE.
The last line holds two writers' messages, the first cut short.
Lines follow NCCL's source at that tag:
  prefix            src/debug.cc:204    "%s:%d:%d [%d] NCCL INFO "
  version           src/init.cc:532     INFO(NCCL_ALL, "%s", VERSION_STRING)
  environment       src/misc/param.cc:86 "%s set by environment to %lld."
  plugin            src/net.cc:441      "NET/Plugin: Using internal network plugin."
  IB devices        src/transport/net_ib.cc:669 "NET/IB : Using%s %s; OOB %s:%s"
  network           src/init.cc:342     "Using network %s"
  DMA-BUF           src/init.cc:293     "DMA-BUF is available on GPU device %d"
  GDR per HCA       src/graph/topo.cc:802 "NET/%s : GPU Direct RDMA %s for HCA %d '%s'"
  ranks and nodes   src/init.cc:1044    "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d"
  init done         src/init.cc:1482    "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init COMPLETE"
  P2P               src/transport/p2p.cc:397 "Channel %02d/%01d : %d[%d] -> %d[%d] via P2P/%s%s%s"
  NET               src/transport/net.cc:194,233 "Channel %02d/%d : %d[%d] -> %d[%d] [send|receive] via NET/%s/%d%s%s"
  rings, trees      src/transport/generic.cc:12,30 "Connected all rings", "Connected all trees"
Host names, pids, addresses, times and pointers are made up (tests/nccl/mkfixtures.py).
""", out)


# --------------------------------------------------------------------------
# NCCL 2.23.4 with NCCL_DEBUG_SUBSYS=NET,P2P: no INIT lines at all
# --------------------------------------------------------------------------
def v223_subsys():
    ranks = [Rank(0, "node31", 1201, 1201, 0, 0x1000), Rank(1, "node31", 1202, 1202, 1, 0x2000),
             Rank(2, "node32", 1301, 1301, 0, 0x1000), Rank(3, "node32", 1302, 1302, 1, 0x2000)]
    out = []
    for r in ranks:
        out += [r.i("NCCL version 2.23.4+cuda12.6"),
                r.i("NET/Plugin: Using internal network plugin."),
                r.i(f"NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.4.0.{r.rank + 1}<0>"),
                r.i("NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'"),
                r.i(f"GPU Direct RDMA Enabled for GPU {r.busid:x} / HCA 0 (distance 3 <= 3), read 1")]
    for ch in (0, 1):
        for a, b in ring(ranks):
            if a.host == b.host:
                out.append(a.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] via P2P/CUMEM/read"))
            else:
                out.append(a.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] [send] via NET/IB/0/GDRDMA"))
                out.append(b.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] [receive] via NET/IB/0/GDRDMA"))
    write("nccl-2.23-subsys-net-p2p.log", """
nccl-check fixture: NCCL 2.23.4 (tag v2.23.4-1), two nodes x two GPUs, run
with NCCL_DEBUG_SUBSYS=NET,P2P: lines logged for INIT only (Using network,
DMA-BUF, Init COMPLETE, Connected all rings) are filtered out; lines whose
flags include NET or P2P, and the version (NCCL_ALL), remain.
Lines follow NCCL's source at that tag:
  prefix            src/debug.cc:204    "%s:%d:%d [%d] NCCL INFO "
  version           src/init.cc:532     INFO(NCCL_ALL, "%s", VERSION_STRING)
  plugin            src/net.cc:441      INFO(NCCL_INIT|NCCL_NET, "NET/Plugin: Using internal network plugin.")
  IB devices        src/transport/net_ib.cc:669 INFO(NCCL_INIT|NCCL_NET, "NET/IB : Using%s %s; OOB %s:%s")
  GDR per HCA       src/graph/topo.cc:802 INFO(NCCL_NET, "NET/%s : GPU Direct RDMA %s for HCA %d '%s'")
  GDR per GPU       src/graph/paths.cc:412 INFO(NCCL_NET, "GPU Direct RDMA Enabled for GPU %lx / HCA %lx (distance %d <= %d), read %d")
  P2P               src/transport/p2p.cc:397 INFO(NCCL_INIT|NCCL_P2P, "Channel ... via P2P/%s%s%s")
  NET               src/transport/net.cc:194,233 INFO(NCCL_INIT|NCCL_NET, "Channel ... via NET/%s/%d%s%s")
Host names, pids and addresses are made up (tests/nccl/mkfixtures.py).
""", out)


# --------------------------------------------------------------------------
# NCCL 2.27.7, two nodes x two GPUs, a WARN with its timestamp, GDR mode PCI
# --------------------------------------------------------------------------
def v227_warn_pci():
    ranks = [Rank(0, "gpuA", 4401, 4401, 0, 0x1000), Rank(1, "gpuA", 4402, 4402, 1, 0x2000),
             Rank(2, "gpuB", 5501, 5501, 0, 0x1000), Rank(3, "gpuB", 5502, 5502, 1, 0x2000)]
    out = []
    for r in ranks:
        out += [r.i("NCCL version 2.27.7+cuda12.9"),
                r.i(f"NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.6.0.{r.rank + 1}<0>"),
                r.i("Using network IB"),
                r.i(f"DMA-BUF is available on GPU device {r.dev}"),
                r.i("NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'"),
                r.i(f"GPU Direct RDMA Enabled for GPU {r.rank} / HCA 0 (distance 3 <= 3), read 1 mode PCI"),
                r.i(f"comm 0x55a1{r.rank:02d}3f0000 rank {r.rank} nRanks 4 nNodes 2 localRanks 2 localRank {r.dev} MNNVL 0")]
    out.append(ranks[0].i("Check P2P Type isAllDirectP2p 0 directMode 0"))
    for r in ranks:
        out.append(r.i(f"ncclCommInitRankConfig comm 0x55a1{r.rank:02d}3f0000 rank {r.rank} nranks 4 cudaDev {r.dev} nvmlDev {r.dev} busId {r.busid:x} commId 0x5e4d3c2b1a098f7e - Init COMPLETE"))
    out += warn("gpuB", 5502, 5519, 1, "transport/net_ib.cc:199",
                "NET/IB : mlx5_0:1 Got async error event: local catastrophic error", "2025-06-02 14:03:11")
    for ch in (0, 1):
        for a, b in ring(ranks):
            if a.host == b.host:
                out.append(a.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] via P2P/CUMEM"))
            else:
                out.append(a.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] [send] via NET/IB/0/GDRDMA(PCI)/Shared"))
                out.append(b.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] [receive] via NET/IB/0/GDRDMA(PCI)/Shared"))
    for r in ranks:
        out.append(r.i("Connected all rings, use ring PXN 0 GDR 1"))
    write("nccl-2.27-warn-gdr-pci.log", """
nccl-check fixture: NCCL 2.27.7 (tag v2.27.7-1), two nodes x two GPUs, one
process per GPU; GPUDirect RDMA in PCI mode with shared buffers; one WARN,
which from 2.26 carries a "[%F %T] " timestamp and always a file:line.
Lines follow NCCL's source at that tag:
  prefix            src/debug.cc:352,366 "%s:%d:%d " then "[%d] NCCL INFO "
  WARN              src/debug.cc:314,352,363 "\\n", "[%F %T] " (timestamp), "%s:%d:%d ", "[%d] %s:%d NCCL WARN "
  version           src/init.cc:543     INFO(NCCL_ALL, "%s", VERSION_STRING)
  IB devices        src/transport/net_ib.cc:762 "NET/IB : Using%s %s; OOB %s:%s"
  network           src/init.cc:346     "Using network %s"
  DMA-BUF           src/init.cc:304     "DMA-BUF is available on GPU device %d"
  GDR per HCA       src/graph/topo.cc:1259 "NET/%s : GPU Direct RDMA %s for HCA %d '%s'"
  GDR per GPU       src/graph/paths.cc:460 "GPU Direct RDMA Enabled for GPU %d / HCA %lx (distance %d <= %d), read %d mode %s"
  ranks and nodes   src/init.cc:998     "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d"
  P2P type          src/transport.cc:99 "Check P2P Type isAllDirectP2p %d directMode %d" (rank 0)
  init done         src/init.cc:1469    "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init COMPLETE"
  async event       src/transport/net_ib.cc:199 "NET/IB : %s:%d Got async error event: %s"
  P2P               src/transport/p2p.cc:393 "Channel %02d/%01d : %d[%d] -> %d[%d] via P2P/%s%s%s"
  NET               src/transport/net.cc:218,264 "Channel %02d/%d : %d[%d] -> %d[%d] [send|receive] via NET/%s/%d%s%s%s"
  rings             src/transport/generic.cc:31 "Connected all rings, use ring PXN %d GDR %d"
Host names, pids, addresses, times and pointers are made up (tests/nccl/mkfixtures.py).
""", out)


# --------------------------------------------------------------------------
# NCCL 2.18.6 debug build, NCCL_DEBUG=TRACE: dma-buf registrations shown
# --------------------------------------------------------------------------
def v218_trace_dmabuf():
    ranks = [Rank(0, "node41", 6101, 6101, 0, 0x1000), Rank(1, "node42", 6201, 6201, 0, 0x1000)]
    out = ["NCCL version 2.18.6+cuda12.2"]
    for r in ranks:
        out += [r.i(f"NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.8.0.{r.rank + 1}<0>"),
                r.i("Using network IB"),
                r.i(f"DMA-BUF is available on GPU device {r.dev}"),
                r.i("NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'")]
    for ch in (0, 1):
        for a, b in ring(ranks):
            out.append(a.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] [send] via NET/IB/0/GDRDMA"))
            out.append(b.i(f"Channel {ch:02d}/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] [receive] via NET/IB/0/GDRDMA"))
    for k, r in enumerate(ranks):
        out.append(trace(r.host, r.pid, r.tid + 9, r.dev, 812.314159 + k, "ncclIbRegMrDmaBuf:914",
                         f"regAddr 7f{r.rank}a40000000 size 4194304 rkey 1e{r.rank}03 fd 57"))
    for r in ranks:
        out.append(r.i("Connected all rings"))
        out.append(r.i(f"comm 0x55c0{r.rank:02d}11d000 rank {r.rank} nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x0a1b2c3d4e5f6071 - Init COMPLETE"))
    write("nccl-2.18-trace-dmabuf.log", """
nccl-check fixture: NCCL 2.18.6 (tag v2.18.6-1) built with tracing, run with
NCCL_DEBUG=TRACE: two nodes with one GPU each over IB with GPUDirect RDMA.
Only at TRACE level does NCCL show how a buffer was registered: a fd other
than -1 in "regAddr ... fd N" is a dma-buf registration.
Lines follow NCCL's source at that tag:
  prefix            src/debug.cc:175,181 "%s:%d:%d [%d] NCCL INFO ", "%s:%d:%d [%d] %f %s:%d NCCL TRACE "
  version           src/init.cc:452     printf("%s\\n", VERSION_STRING), no prefix
  IB devices        src/transport/net_ib.cc:264 "NET/IB : Using%s %s; OOB %s:%s"
  network           src/init.cc:310     "Using network %s"
  DMA-BUF           src/init.cc:267     "DMA-BUF is available on GPU device %d"
  GDR per HCA       src/graph/topo.cc:664 "NET/%s : GPU Direct RDMA %s for HCA %d '%s'"
  NET               src/transport/net.cc:186,227 "Channel %02d/%d : %d[%d] -> %d[%d] [send|receive] via NET/%s/%d%s%s"
  registration      src/transport/net_ib.cc:914 TRACE "regAddr %llx size %lld rkey %x fd %d"
  rings             src/init.cc:1080    "Connected all rings"
  init done         src/init.cc:1375    "comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init COMPLETE"
Host names, pids, addresses and pointers are made up (tests/nccl/mkfixtures.py).
""", out)


# --------------------------------------------------------------------------
# NCCL 2.21.5 cut short: init lines and some connections, then mid-line
# --------------------------------------------------------------------------
def v221_truncated():
    ranks = [Rank(k, "gpu05", 61000 + k, 61000 + k, k, 0) for k in range(4)]
    out = ["NCCL version 2.21.5+cuda12.4"]
    for r in ranks:
        out += [r.i("Using network IB"),
                r.i(f"comm 0x5577{r.rank:02d}b1c000 rank {r.rank} nRanks 4 nNodes 1 localRanks 4 localRank {r.rank} MNNVL 0")]
    for a, b in ring(ranks)[:3]:
        out.append(a.i(f"Channel 00/0 : {a.rank}[{a.dev}] -> {b.rank}[{b.dev}] via P2P/IPC"))
    out.append(ranks[3].i("Channel 00/0 : 3[3] -> 0[0] via P2P/dir"))
    write("nccl-2.21-truncated.log", """
nccl-check fixture: NCCL 2.21.5 (tag v2.21.5-1), one node (gpu05), four GPUs
in four processes; the job was killed while NCCL connected: INIT lines, three
connections, and a last line cut in the middle (no newline at the end).
Lines follow NCCL's source at that tag:
  prefix            src/debug.cc:183    "%s:%d:%d [%d] NCCL INFO "
  version           src/init.cc:476     printf("%s\\n", VERSION_STRING), no prefix
  network           src/init.cc:322     "Using network %s"
  ranks and nodes   src/init.cc:1160    "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d"
  P2P               src/transport/p2p.cc:376 "Channel %02d/%01d : %d[%d] -> %d[%d] via P2P/IPC%s%s"
Host names, pids and pointers are made up (tests/nccl/mkfixtures.py).
""", out, cut=True)


for make in (v214_tag_output, v218_pdsh_shm, v218_pdsh_wrapper, v218_pdsh_wrapper_nhost, v219_ib_nogdr, v221_p2p_direct, v222_plugin,
             v223_python_logging, v223_subsys, v227_warn_pci, v218_trace_dmabuf, v221_truncated):
    make()
