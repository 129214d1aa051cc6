#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""The steps of tests/device/run (issue 16), started by that wrapper.

Each step prints one line, PASS, FAIL or SKIP, with its reason, runs its
commands under its own timeout (and the whole run under a budget below 8
minutes), and records what it saw. At the end device-report.md,
device-report.json and device-run.log are written atomically to the
output directory. Every helper option a step uses is first looked up in
that subcommand's --help: a step whose option this helper lacks FAILs and
says so, it never passes by not running.

Only the standard library: the machines this runs on are GPU nodes, not
development machines. Nothing here writes to a GPU: nvidia-smi is only
queried (-q), sysfs only read, and the module only loaded, asked and
unloaded.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

# Per-step command limits in seconds; the sum of the typical times is well
# under the budget, and the budget caps the worst case.
TIMEOUTS = {
    "install": 420, "build": 240, "quick": 30, "nvidia-smi": 60, "topo": 60,
    "libcuda": 120, "verify": 90, "p2p": 150, "module-build": 240,
    "module": 60, "rdma": 90, "doctor": 90,
}
# Seconds for the steps; cleanup after a spent budget (rmmod, soft-RoCE
# teardown: quick commands) and the reports still fit in 8 minutes.
BUDGET = 400
TAIL = 2000             # characters of each command's output kept in the JSON
LOG_CAP = 256 * 1024    # characters of each command's output kept in the log

# Packages `--install-deps' installs (Debian/Ubuntu names): what `make user'
# and the module build need, pciutils for lspci, iproute2 for soft-RoCE.
DEPS = ["build-essential", "pkg-config", "libnl-3-dev", "libnl-genl-3-dev",
        "libpci-dev", "libibverbs-dev", "librdmacm-dev", "libcapstone-dev",
        "libunicorn-dev", "libelf-dev", "pciutils", "kmod", "iproute2",
        "python3"]
PKGCONFIG = ["libnl-3.0", "libnl-genl-3.0", "libpci", "libibverbs", "librdmacm",
             "capstone", "unicorn", "libelf"]

# Soft-RoCE set up by this run when there is no RDMA device: names that no
# admin uses, removed again at the end (and before, if a killed run left them).
RXE_NET, RXE_PEER, RXE_DEV, RXE_ADDR = "nvsdev0", "nvsdev1", "nvsdevrxe0", "10.213.77.1/32"

P2P_SIZE = 64 << 20
EXPORT_SIZE = 64 << 20
PROBE_SIZE = 32 << 20


class Skip(Exception):
    pass


class Fail(Exception):
    pass


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def read(path, default=None):
    try:
        with open(path, "r", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return default


def tail(text, n=TAIL):
    return text if len(text) <= n else "..." + text[-n:]


def oneline(text, n=300):
    """One line of at most n characters, control and undecodable bytes shown as `?'."""
    text = " ".join("".join(ch if ch.isprintable() and ch != "\ufffd" else "?" for ch in text.replace("\n", " ")).split())
    return text if len(text) <= n else text[:n] + "..."


def human_bytes(v):
    if v is None:
        return "?"
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if v >= 1 << shift and v % (1 << shift) == 0:
            return "%d %s" % (v >> shift, unit)
    return "%d B" % v


def write_atomic(path, text):
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:
        dfd = os.open(d, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)
    except OSError:
        pass


class Cmd:
    def __init__(self, argv, rc, out, err, seconds, timed_out, limit):
        self.argv, self.rc, self.out, self.err = argv, rc, out, err
        self.seconds, self.timed_out, self.limit = seconds, timed_out, limit

    def line(self):
        return " ".join(a if re.match(r"^[\w@%+=:,./-]+$", a) else "'%s'" % a.replace("'", "'\\''")
                        for a in self.argv)

    def json(self):
        """The command's stdout as JSON, or a FAIL that says what came instead."""
        try:
            return json.loads(self.out)
        except ValueError:
            raise Fail("`%s' printed no JSON document (exit %s): %s" %
                       (self.line(), self.rc, oneline(self.err or self.out)))


class Step:
    def __init__(self, name, gpu, title):
        self.name, self.gpu, self.title = name, gpu, title
        self.result, self.reason, self.seconds = None, "", 0.0
        self.commands, self.data = [], {}


# ---------------------------------------------------------------- nvidia-smi

def parse_nvsmi(text):
    """nvidia-smi -q: `Key : value' lines nested by indentation; sections are
    lines without ` : ' (e.g. `GPU 00000000:01:00.0', `BAR1 Memory Usage')."""
    root = {}
    stack = [(-1, root)]
    for raw in text.splitlines():
        if not raw.strip() or raw.lstrip().startswith("====="):
            continue
        raw = raw.replace("\t", "    ")
        indent = len(raw) - len(raw.lstrip(" "))
        line = raw.strip()
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        m = re.match(r"^(.+?)\s+:\s*(.*)$", line)
        if m:
            parent.setdefault(m.group(1), m.group(2).strip())
        else:
            child = {}
            key = line
            while key in parent:
                key += "'"
            parent[key] = child
            stack.append((indent, child))
    return root


def mib(v):
    m = re.match(r"^(\d+)\s*MiB$", v or "")
    return int(m.group(1)) if m else None


def intval(v):
    m = re.match(r"^(\d+)x?$", (v or "").strip())
    return int(m.group(1)) if m else None


def nvsmi_facts(text):
    """Returns (facts, missing): the essentials of every GPU section."""
    tree = parse_nvsmi(text)
    facts = {"driver_version": tree.get("Driver Version"),
             "cuda_version": tree.get("CUDA Version"),
             "attached": tree.get("Attached GPUs"), "gpus": []}
    missing = []
    if not facts["driver_version"]:
        missing.append("Driver Version")
    sections = [(k, v) for k, v in tree.items() if isinstance(v, dict) and re.match(r"^GPU [0-9A-Fa-f]+:", k)]
    for key, g in sections:
        pci = g.get("PCI", {}) if isinstance(g.get("PCI"), dict) else {}
        link = pci.get("GPU Link Info", {}) if isinstance(pci.get("GPU Link Info"), dict) else {}
        gen = link.get("PCIe Generation", {}) if isinstance(link.get("PCIe Generation"), dict) else {}
        width = link.get("Link Width", {}) if isinstance(link.get("Link Width"), dict) else {}
        bar1 = g.get("BAR1 Memory Usage", {}) if isinstance(g.get("BAR1 Memory Usage"), dict) else {}
        fb = g.get("FB Memory Usage", {}) if isinstance(g.get("FB Memory Usage"), dict) else {}
        busid = (pci.get("Bus Id") or key[4:]).lower()
        m = re.match(r"^([0-9a-f]+):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$", busid)
        if m:
            busid = "%04x:%s:%s.%s" % (int(m.group(1), 16), m.group(2), m.group(3), m.group(4))
        pci_id = None
        dev = pci.get("Device Id") or ""
        if re.match(r"^0x[0-9A-Fa-f]{8}$", dev):
            v = int(dev, 16)
            pci_id = "%04x:%04x" % (v & 0xffff, v >> 16)
        gpu = {
            "section": key, "name": g.get("Product Name"), "brand": g.get("Product Brand"),
            "architecture": g.get("Product Architecture"), "bus_id": busid, "pci_id": pci_id,
            "bar1_mib": mib(bar1.get("Total")), "fb_mib": mib(fb.get("Total")),
            "gen_current": intval(gen.get("Current")), "gen_max": intval(gen.get("Max")),
            "gen_host_max": intval(gen.get("Host Max")),
            "width_current": intval(width.get("Current")), "width_max": intval(width.get("Max")),
        }
        for k, label in (("name", "Product Name"), ("pci_id", "PCI Device Id"), ("bar1_mib", "BAR1 Memory Usage Total"),
                         ("gen_current", "PCIe Generation Current"), ("gen_max", "PCIe Generation Max"),
                         ("width_current", "Link Width Current"), ("width_max", "Link Width Max")):
            if gpu[k] is None:
                missing.append("%s of %s" % (label, key))
        if gpu["bar1_mib"] and gpu["fb_mib"]:
            gpu["rebar"] = ("BAR1 covers VRAM (Resizable BAR on or a large fixed BAR1)" if gpu["bar1_mib"] >= gpu["fb_mib"]
                            else "BAR1 %d MiB < VRAM %d MiB (Resizable BAR off or partial)" % (gpu["bar1_mib"], gpu["fb_mib"]))
        facts["gpus"].append(gpu)
    return facts, missing


def geforce(g):
    return (g.get("brand") or "").lower() in ("geforce", "titan") or "geforce" in (g.get("name") or "").lower() \
        or "titan" in (g.get("name") or "").lower()


# ---------------------------------------------------------------- sysfs

PCI = "/sys/bus/pci/devices"
NVS_CLASS = "/sys/class/nvsidecar"
IB_CLASS = "/sys/class/infiniband"


def sysfs_gpus():
    gpus = []
    try:
        names = sorted(os.listdir(PCI))
    except OSError:
        return gpus
    for bdf in names:
        d = os.path.join(PCI, bdf)
        if read(d + "/vendor") != "0x10de" or not (read(d + "/class") or "").startswith("0x03"):
            continue
        g = {"bdf": bdf, "id": "10de:%s" % (read(d + "/device") or "0x????")[2:],
             "class": read(d + "/class"), "driver": None, "bar1_bytes": None,
             "link": "%s x%s (max %s x%s)" % (read(d + "/current_link_speed", "?"), read(d + "/current_link_width", "?"),
                                            read(d + "/max_link_speed", "?"), read(d + "/max_link_width", "?")),
             "numa_node": read(d + "/numa_node")}
        if os.path.islink(d + "/driver"):
            g["driver"] = os.path.basename(os.readlink(d + "/driver"))
        res = (read(d + "/resource") or "").splitlines()
        if len(res) > 1:
            try:
                start, end = int(res[1].split()[0], 16), int(res[1].split()[1], 16)
                g["bar1_bytes"] = end - start + 1 if end > start else None
            except (ValueError, IndexError):
                pass
        gpus.append(g)
    return gpus


STAND_IN_MARK = b"NVSIDECAR-STAND-IN"


def nvidia_driver():
    """What shows an NVIDIA kernel driver on this machine, or None."""
    # tests/host/90-device.sh sets this to play a host whose container
    # runtime exposes a driver (a CI machine can) while stand-ins answer.
    fake = os.environ.get("NVS_DEVICE_DRIVER_SEEN")
    if fake is not None:
        return fake or None
    v = read("/proc/driver/nvidia/version")
    if v:
        return v.splitlines()[0]
    if os.path.exists("/sys/module/nvidia"):
        return "nvidia module %s" % (read("/sys/module/nvidia/version") or "(version unknown)")
    if os.path.exists("/dev/nvidiactl"):
        return "/dev/nvidiactl present"
    return None


def rdma_devices():
    devs = []
    base = IB_CLASS
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return devs
    for n in names:
        states = []
        try:
            for p in sorted(os.listdir(os.path.join(base, n, "ports"))):
                states.append(read(os.path.join(base, n, "ports", p, "state"), ""))
        except OSError:
            pass
        devs.append({"name": n, "active": any("ACTIVE" in s for s in states), "states": states})
    return devs


# ---------------------------------------------------------------- the run

class Run:
    def __init__(self, args):
        self.args = args
        self.top = os.environ.get("NVS_TOP") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
        self.build = os.environ.get("NVS_BUILD") or os.path.join(self.top, "build")
        self.bin = os.environ.get("NVS_BIN") or os.path.join(self.top, "user", "nvsidecar")
        self.bin_given = bool(os.environ.get("NVS_DEVICE_BIN_GIVEN"))
        self.out = os.path.abspath(args.out or os.environ.get("OUT") or os.path.join(self.build, "device"))
        os.makedirs(self.out, exist_ok=True)
        self.work = tempfile.mkdtemp(prefix="nvs-device.")
        self.logpath = os.path.join(self.out, "device-run.log")
        self.logtmp = self.logpath + ".part"
        self.logf = open(self.logtmp, "w")
        self.start, self.started = time.monotonic(), now_iso()
        self.deadline = self.start + min(args.budget, BUDGET)
        self.steps, self.help = [], {}
        self.echo = True
        self.env = dict(os.environ, NO_COLOR="1", LC_ALL="C")
        self.env.pop("NVSIDECAR_COLOR", None)
        # what later steps need from earlier ones
        self.helper = False
        self.version = None
        self.kernel = {}
        self.pci = []
        self.smi = None
        self.lib = self.lib_how = None
        self.verdict = None
        self.copy = None
        self.open_lib = None
        self.module_loaded_here = False
        self.module_ready = False
        self.dmesg_mark = None
        self.rxe = None
        self.driver = nvidia_driver()

    # -- output

    def log(self, text):
        self.logf.write(text if text.endswith("\n") else text + "\n")
        self.logf.flush()

    def remaining(self):
        return self.deadline - time.monotonic()

    def run(self, argv, kind, step, env=None, check_budget=True):
        limit = TIMEOUTS[kind]
        if self.args.step_timeout:
            limit = min(limit, self.args.step_timeout)
        if check_budget:
            left = self.remaining()
            if left < 5:
                raise Skip("the run's %d s budget is spent (the whole run must stay under 8 minutes)" % self.args.budget)
            limit = max(1, min(limit, int(left) - 3))
        t0 = time.monotonic()
        timed_out = False
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env=env or self.env, cwd=self.top, start_new_session=True)
        except OSError as e:
            c = Cmd(argv, 127, "", "%s: %s" % (argv[0], e.strerror), 0.0, False, limit)
            step.commands.append(c)
            self.log("$ %s\n[could not start: %s]" % (c.line(), e.strerror))
            return c
        try:
            out, err = p.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            out, err = p.communicate()
        except BaseException:
            # interrupted: the command's whole session goes with the run
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.wait()
            raise
        c = Cmd(argv, p.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                time.monotonic() - t0, timed_out, limit)
        step.commands.append(c)
        self.log("$ %s\n[exit %s after %.1f s%s]\n--- stdout\n%s\n--- stderr\n%s" %
                 (c.line(), c.rc, c.seconds, ", TIMED OUT (limit %d s)" % limit if timed_out else "",
                  tail(c.out, LOG_CAP), tail(c.err, LOG_CAP)))
        if timed_out:
            raise Fail("`%s' timed out after %d s (its step limit)" % (c.line(), limit))
        return c

    def nvs(self, step, kind, *args, **kw):
        return self.run([self.bin] + list(args), kind, step, **kw)

    def need(self, step, sub, *opts):
        """FAILs the step when `nvsidecar SUB --help' does not list every option."""
        key = " ".join(sub)
        if key not in self.help:
            c = self.nvs(step, "quick", *(sub + ["--help"]))
            self.help[key] = (c.rc, c.out + c.err)
        rc, text = self.help[key]
        if rc != 0:
            raise Fail("`nvsidecar %s --help' failed (exit %d): this helper lacks the subcommand: %s" %
                       (key, rc, oneline(text)))
        lacking = [o for o in opts if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(o), text)]
        if lacking:
            raise Fail("`nvsidecar %s' has no %s (its --help does not list %s): this helper lacks an option the device run needs" %
                       (key, ", ".join(lacking), "it" if len(lacking) == 1 else "them"))

    def rejected(self, c):
        # the helper's usage errors name the argument in `quotes'; a bare
        # "Invalid argument" is strerror(EINVAL) from a real failure
        if re.search(r"^(Invalid argument|Unknown option|Invalid option): `", c.err, re.M):
            raise Fail("nvsidecar rejected the command line `%s': %s" % (c.line(), oneline(c.err)))

    def step(self, name, gpu, title, fn):
        s = Step(name, gpu, title)
        self.steps.append(s)
        t0 = time.monotonic()
        self.log("\n==== %s: %s" % (name, title))
        try:
            s.reason = fn(s) or ""
            s.result = "PASS"
        except Skip as e:
            s.result, s.reason = "SKIP", str(e)
        except Fail as e:
            s.result, s.reason = "FAIL", str(e)
        except KeyboardInterrupt:
            s.result, s.reason, s.seconds = "FAIL", "interrupted by a signal while this step ran", time.monotonic() - t0
            print("%s %s: %s" % (s.result, name, s.reason))
            raise
        except Exception as e:  # a bug here must be loud, not a crash of the whole run
            s.result, s.reason = "FAIL", "internal error in the device run: %s: %s (traceback in %s)" % (
                type(e).__name__, e, self.logpath)
            self.log(traceback.format_exc())
        s.seconds = time.monotonic() - t0
        s.reason = oneline(s.reason, 600)
        self.log("==== %s %s: %s" % (s.result, name, s.reason))
        if self.echo:
            print("%s %s: %s" % (s.result, name, s.reason))
            sys.stdout.flush()
        return s

    def needs_helper(self):
        if not self.helper:
            raise Skip("no nvsidecar helper to run (see the build step)")

    def needs_lib(self):
        self.needs_helper()
        if not self.lib:
            raise Skip("no libcuda.so.1: none in the loader cache (ldconfig -p), LD_LIBRARY_PATH or the driver's "
                       "usual directories, so no NVIDIA driver is installed here (--lib names one)")

    def mode(self):
        ran = [s for s in self.steps if s.gpu and s.result in ("PASS", "FAIL")]
        if not ran:
            return "no-gpu"
        if self.args.stand_in or self.smi_is_stand_in() or not self.driver:
            return "stand-in"
        return "real-gpu"

    def smi_is_stand_in(self):
        # A driver being loaded does not make the answers real: a
        # container can expose /dev/nvidiactl while our stand-in
        # nvidia-smi is the one on PATH. The stand-in says what it is.
        smi = shutil.which("nvidia-smi")
        if not smi:
            return False
        try:
            with open(smi, "rb") as f:
                return STAND_IN_MARK in f.read(4096)
        except OSError:
            return False

    def evidence(self, s):
        if not s.gpu:
            return "this machine"
        if s.result == "SKIP":
            return "none (skipped)"
        if self.mode() == "real-gpu":
            names = sorted({g.get("name") or "?" for g in (self.smi or {}).get("gpus", [])}) or \
                sorted({g["id"] for g in self.pci}) or ["GPU model unknown"]
            drv = (self.smi or {}).get("driver_version") or self.driver
            return "real GPU: %s, driver %s" % (", ".join(names), drv)
        return "stand-in: " + self.stand_ins()

    def stand_ins(self):
        parts = []
        smi = shutil.which("nvidia-smi")
        if smi:
            parts.append("nvidia-smi %s" % smi)
        if self.args.lib:
            parts.append("libcuda %s" % self.args.lib)
        if self.args.p2p_lib:
            parts.append("p2p libcuda %s" % self.args.p2p_lib)
        if not self.driver:
            parts.append("no NVIDIA driver loaded")
        return ", ".join(parts) or "no real GPU"


# ---------------------------------------------------------------- steps

def s_install(r, s):
    if os.geteuid() != 0:
        raise Fail("--install-deps needs root (apt-get)")
    if not shutil.which("apt-get"):
        raise Fail("--install-deps knows apt-get only (Debian, Ubuntu); install by hand: %s" % " ".join(DEPS))
    env = dict(r.env, DEBIAN_FRONTEND="noninteractive")
    c = r.run(["apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "--no-install-recommends"] + DEPS,
              "install", s, env=env)
    if c.rc != 0:
        raise Fail("apt-get install failed (exit %d): %s" % (c.rc, oneline(c.err[-600:])))
    hdr = "linux-headers-" + os.uname().release
    c = r.run(["apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "--no-install-recommends", hdr],
              "install", s, env=env)
    return "the %d build packages are installed%s" % (len(DEPS), "" if c.rc == 0 else "; %s is not available (the module steps will skip)" % hdr)


def s_build(r, s):
    ncpu = os.cpu_count() or 1
    c = r.run(["make", "-C", r.top, "user", "-j%d" % min(ncpu, 16)], "build", s)
    if c.rc != 0:
        missing = []
        if shutil.which("pkg-config"):
            for p in PKGCONFIG:
                if subprocess.call(["pkg-config", "--exists", p], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
                    missing.append(p)
        else:
            missing.append("pkg-config itself")
        why = "make user failed (exit %d): %s%s" % (c.rc, oneline((c.err or c.out)[-400:]),
                                                    "; pkg-config lacks %s (--install-deps installs them)" % ", ".join(missing) if missing else "")
        if r.bin_given and os.access(r.bin, os.X_OK):
            v = r.run([r.bin, "--version"], "quick", s)
            if v.rc == 0:
                r.helper, r.version = True, v.out.strip()
                raise Skip("%s; using the caller's NVS_BIN=%s (%s)" % (why, r.bin, r.version))
        raise Fail(why)
    if not os.access(r.bin, os.X_OK):
        raise Fail("make user succeeded but there is no helper at %s (NVS_BIN, tests/lib.sh)" % r.bin)
    v = r.run([r.bin, "--version"], "quick", s)
    if v.rc != 0:
        raise Fail("%s --version failed (exit %d): %s" % (r.bin, v.rc, oneline(v.err)))
    r.helper, r.version = True, v.out.strip()
    s.data = {"bin": r.bin, "version": r.version, "bin_given": r.bin_given}
    if r.bin_given:
        return "make user passed; the steps use the caller's NVS_BIN=%s (%s)" % (r.bin, r.version)
    return "built %s (%s)" % (os.path.relpath(r.bin, r.top) if r.bin.startswith(r.top + "/") else r.bin, r.version)


def s_kernel(r, s):
    u = os.uname()
    rel = u.release
    osr = {}
    for line in (read("/etc/os-release") or "").splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            osr[k] = v.strip('"')
    cmdline = read("/proc/cmdline", "")
    iommu = [w for w in cmdline.split() if re.match(r"^(iommu|intel_iommu|amd_iommu|pcie_acs_override)=", w)]
    try:
        groups = len(os.listdir("/sys/kernel/iommu_groups"))
    except OSError:
        groups = None
    lockdown = read("/sys/kernel/security/lockdown")
    if lockdown:
        m = re.search(r"\[(\w+)\]", lockdown)
        lockdown = m.group(1) if m else lockdown
    cpu = None
    for line in (read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = None
    m = re.search(r"MemTotal:\s+(\d+) kB", read("/proc/meminfo", ""))
    if m:
        mem = int(m.group(1)) << 10
    hdr = "/lib/modules/%s/build" % rel
    k = {
        "release": rel, "version": u.version, "machine": u.machine, "os": osr.get("PRETTY_NAME"),
        "root": os.geteuid() == 0, "headers": hdr if os.path.exists(hdr + "/Makefile") else None,
        "modules_loadable": os.path.exists("/proc/modules") and read("/proc/sys/kernel/modules_disabled", "0") == "0",
        "lockdown": lockdown, "iommu_cmdline": iommu, "iommu_groups": groups,
        "nvidia_driver": r.driver, "cpu": cpu, "cpus": os.cpu_count(), "memory_bytes": mem,
    }
    r.kernel = s.data = k
    return "Linux %s %s (%s); root %s, kernel headers %s, module loading %s, lockdown %s, IOMMU groups %s; NVIDIA driver: %s" % (
        rel, u.machine, k["os"] or "unknown distribution", "yes" if k["root"] else "no",
        "yes" if k["headers"] else "no (%s missing)" % hdr, "allowed" if k["modules_loadable"] else "not possible",
        lockdown or "n/a", groups if groups is not None else "n/a", r.driver or "none loaded")


def s_pci(r, s):
    if not os.path.isdir(PCI):
        raise Skip("no %s: this kernel shows no PCI devices (a sandboxed or virtual kernel?)" % PCI)
    r.pci = sysfs_gpus()
    s.data = {"gpus": r.pci}
    if not r.pci:
        raise Skip("no NVIDIA display-class device in %s" % PCI)
    return "; ".join("%s %s driver %s, BAR1 %s, link %s" % (g["bdf"], g["id"], g["driver"] or "none",
                                                         human_bytes(g["bar1_bytes"]), g["link"]) for g in r.pci)


# Memory partitions per chip id (PMC_BOOT_0 bits 31:20), as kmod/chips.c reads
# them: bus width / 64 (gddr7-temp offsets.yaml for GB20x). GB202 = 0x1b2 is
# PawnIO's gate (landscape.md); the other ids follow the same family
# numbering (0x17x Ampere, 0x19x Ada, 0x1bx Blackwell) and were not checked
# against a public chip table here: the dump prints the id read. A chip not here
# gets no partition read: reading past the last partition can hit reserved
# MMIO (gddr7-temp).
MEM_PARTS = {0x1b2: 8, 0x1b3: 4, 0x1b5: 3, 0x192: 6, 0x193: 4, 0x194: 3, 0x172: 6}
MEM_BASE, MEM_STRIDE, MEM_STRAP = 0x9024c0, 0x4000, 0x900200


def s_mem_raw(r, s):
    """The raw per-partition memory words of every NVIDIA GPU in D0, so that
    the first real card settles the per-chip layout (issue 19): PMC_BOOT_0,
    the clamshell strap, and per partition its four data words and status
    word. Read-only, through the sysfs resource0 file, never past the
    chip's last partition, never from a GPU that is asleep."""
    import mmap
    gpus = r.pci if getattr(r, "pci", None) else sysfs_gpus()
    if not gpus:
        raise Skip("no NVIDIA GPU in %s" % PCI)
    lines, dumps = [], []
    for g in gpus:
        d = os.path.join(PCI, g["bdf"])
        if (read(d + "/power_state") or "D0") != "D0" or (read(d + "/power/runtime_status") or "active") != "active":
            lines.append("%s: not in D0 or runtime-suspended, not read (a read would wake it)" % g["bdf"])
            continue
        try:
            fd = os.open(d + "/resource0", os.O_RDONLY | os.O_SYNC)
        except OSError as e:
            lines.append("%s: cannot open resource0 (%s; root, and no kernel lockdown, are needed)" % (g["bdf"], e.strerror))
            continue
        try:
            size = os.fstat(fd).st_size
            m = mmap.mmap(fd, min(size, 16 << 20), mmap.MAP_SHARED, mmap.PROT_READ)
        except (OSError, ValueError) as e:
            os.close(fd)
            lines.append("%s: cannot map BAR0 (%s)" % (g["bdf"], e))
            continue
        # One 32-bit load per register: BAR0 registers are read as whole
        # words (the module uses readl). struct's "<I" assembles a word from
        # four single-byte loads; a native "I" memoryview item is one load.
        words = memoryview(m).cast("I")
        try:
            def rd(off):
                return words[off // 4]
            boot0 = rd(0)
            chip = (boot0 >> 20) & 0xfff
            parts = MEM_PARTS.get(chip, 0)
            dump = {"bdf": g["bdf"], "id": g["id"], "boot0": "0x%08x" % boot0, "chip_id": "0x%03x" % chip,
                    "strap": "0x%08x" % rd(MEM_STRAP) if parts else None, "partitions": []}
            for p in range(parts):
                base = MEM_BASE + p * MEM_STRIDE
                dump["partitions"].append(["0x%08x" % rd(base + 4 * k) for k in range(5)])
        finally:
            words.release()
            m.close()
            os.close(fd)
        dumps.append(dump)
        lines.append("%s %s boot0 %s chip 0x%03x: %s" % (
            g["bdf"], g["id"], dump["boot0"], chip,
            "%d partitions dumped (words +0x0 +0x4 +0x8 +0xc, status +0x10)" % parts if parts
            else "no memory layout known for this chip id, nothing else read"))
        for p, words in enumerate(dump["partitions"]):
            r.log("  %s p%d %s" % (g["bdf"], p, " ".join(words)))
        if parts:
            r.log("  %s strap 0x900200 %s" % (g["bdf"], dump["strap"]))
    s.data = {"gpus": dumps}
    if not dumps:
        raise Skip("; ".join(lines))
    return "; ".join(lines)


def s_nvsmi(r, s):
    smi = shutil.which("nvidia-smi")
    if not smi:
        raise Skip("no nvidia-smi on PATH: the NVIDIA driver's utilities are not installed")
    c = r.run([smi, "-q"], "nvidia-smi", s)
    if c.rc != 0:
        raise Fail("nvidia-smi -q exited %d: %s" % (c.rc, oneline(c.err or c.out)))
    facts, missing = nvsmi_facts(c.out)
    s.data = facts
    if not facts["gpus"] and not facts["driver_version"]:
        first = next((l.strip() for l in c.out.splitlines() if l.strip()), "(no output)")
        raise Fail("nvidia-smi -q output not recognised: no `Driver Version' line and no `GPU <bus id>' section "
                   "(first line: %s)" % oneline(first, 120))
    if not facts["gpus"]:
        raise Fail("nvidia-smi -q shows driver %s but no `GPU <bus id>' section" % facts["driver_version"])
    if missing:
        raise Fail("nvidia-smi -q lacks essentials: %s" % ", ".join(missing))
    r.smi = facts
    sys_bdfs = {g["bdf"] for g in r.pci}
    parts = []
    for g in facts["gpus"]:
        parts.append("%s %s [%s, %s] BAR1 %d MiB of %s MiB VRAM, PCIe Gen%s x%s (max Gen%s x%s)%s" % (
            g["bus_id"], g["name"], g["pci_id"], g["brand"] or "brand ?", g["bar1_mib"],
            g["fb_mib"] if g["fb_mib"] is not None else "?", g["gen_current"], g["width_current"],
            g["gen_max"], g["width_max"], "" if g["bus_id"] in sys_bdfs else ", not in sysfs"))
    return "driver %s, CUDA %s, %d GPU(s): %s" % (facts["driver_version"], facts["cuda_version"] or "?",
                                                  len(facts["gpus"]), "; ".join(parts))


def s_topo(r, s):
    r.needs_helper()
    if not os.path.isdir(PCI):
        raise Skip("no %s: nothing for topo to read" % PCI)
    r.need(s, ["topo"], "--json")
    c = r.nvs(s, "topo", "topo", "--json")
    r.rejected(c)
    if c.rc not in (0, 1):
        raise Fail("topo exited %d: %s" % (c.rc, oneline(c.err)))
    d = c.json()
    gpus = [x for x in d.get("devices", []) if x.get("role") == "gpu"]
    nics = [x for x in d.get("devices", []) if x.get("role") == "nic"]
    warns = [f for f in d.get("findings", []) if f.get("severity") == "warning"]
    s.data = {"gpus": gpus, "nics": nics, "findings": d.get("findings", []), "kernel": d.get("kernel")}
    if (c.rc == 1) != bool(warns):
        raise Fail("topo exited %d with %d warning finding(s): the exit status must be 1 exactly when there are warnings" %
                   (c.rc, len(warns)))
    want = sorted(g["bdf"] for g in r.pci)
    got = sorted(g.get("bdf") for g in gpus)
    if got != want:
        raise Fail("topo lists GPUs %s, sysfs has NVIDIA display devices %s" % (got or "none", want or "none"))
    desc = []
    for g in gpus:
        a, ln = g.get("aperture", {}), g.get("link", {})
        desc.append("%s BAR1 %s (resizable %s, max %s), link Gen%s x%s of Gen%s x%s" % (
            g["bdf"], human_bytes(a.get("bytes")), "yes" if a.get("resizable") else "no",
            human_bytes(a.get("rebar_max")), ln.get("speed_gen", "?"), ln.get("width", "?"),
            ln.get("max_speed_gen", "?"), ln.get("max_width", "?")))
    return "%d GPU(s), %d RDMA NIC(s), %d warning(s)%s%s" % (
        len(gpus), len(nics), len(warns), ": " + ", ".join("%s %s" % (f["id"], f["where"]) for f in warns) if warns else "",
        "; " + "; ".join(desc) if desc else "")


def resolve_libcuda(r):
    if r.args.lib:
        return os.path.realpath(r.args.lib), "--lib"
    try:
        out = subprocess.run(["ldconfig", "-p"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=20,
                             env=r.env).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    for line in out.splitlines():
        m = re.match(r"^\s*libcuda\.so\.1 \((.*)\) => (\S+)$", line)
        if m and "x86-64" in m.group(1):
            return os.path.realpath(m.group(2)), "ldconfig -p"
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    dirs += ["/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/x86_64-linux-gnu/nvidia/current"]
    for d in dirs:
        p = os.path.join(d, "libcuda.so.1")
        if os.path.exists(p):
            return os.path.realpath(p), "LD_LIBRARY_PATH" if d in os.environ.get("LD_LIBRARY_PATH", "") else d
    return None, None


def s_libcuda_status(r, s):
    r.needs_lib()
    r.need(s, ["libcuda", "status"], "--lib", "--json")
    c = r.nvs(s, "libcuda", "libcuda", "status", "--json", "--lib", r.lib)
    r.rejected(c)
    # nvsidecar(8) EXIT STATUS: 0 analysed, 2 unsupported layout (the
    # verdict says why), 9 a patched copy is stale
    if c.rc not in (0, 2, 9):
        raise Fail("libcuda status exited %d: %s" % (c.rc, oneline(c.err)))
    d = c.json()
    r.verdict = d.get("verdict")
    cap = d.get("capability") or {}
    rw = d.get("rewrites") or []
    s.data = {"lib": r.lib, "found_by": r.lib_how, "sha256": d.get("sha256"), "size": d.get("size"),
              "driver_version": d.get("driver_version"), "verdict": r.verdict, "reason": d.get("reason"),
              "field": cap.get("field"), "mask": cap.get("mask"), "global": cap.get("global"),
              "attr124_also_requires": cap.get("attr124_also_requires"), "path": d.get("path"),
              "stores": d.get("stores"), "rewrites": rw, "known_table": d.get("known_table"),
              "manifests": d.get("manifests"), "analysis_seconds": d.get("analysis_seconds")}
    drv = (r.smi or {}).get("driver_version")
    note = ""
    if drv and d.get("driver_version") and drv != d.get("driver_version"):
        note = "; library version %s differs from the driver's %s" % (d.get("driver_version"), drv)
    what = "%s (%s, %s, sha256 %s): verdict %s" % (r.lib, r.lib_how, d.get("driver_version"), (d.get("sha256") or "")[:16],
                                                    r.verdict)
    if c.rc == 9:
        raise Fail("%s, but a patched copy is STALE: %s" % (what, "; ".join(m.get("reason", "") for m in d.get("manifests", [])
                                                                           if m.get("stale"))))
    if r.verdict == "unsupported-layout":
        raise Fail("%s: the locator refuses this real build: %s%s" % (what, d.get("reason"), note))
    if r.verdict not in ("unpatched", "patched", "partially-patched", "not-needed"):
        raise Fail("%s: not a verdict the tool documents" % what)
    return "%s, field %s mask %s, %d rewrite(s)%s%s; %s%s" % (
        what, cap.get("field"), cap.get("mask"), len(rw),
        ": " + ", ".join("%s %s -> %s" % (w.get("offset"), w.get("from"), w.get("to")) for w in rw) if rw else "",
        "; known table: %s" % d["known_table"] if d.get("known_table") else "; build not in the known-versions table",
        d.get("reason"), note)


def attrs(d):
    return {k: v.get("value") for k, v in (d.get("attributes") or {}).items()}


def no_dmabuf(c, d):
    """verify's exit 1 for an export that worked but gave no dma-buf (review T3-16)."""
    return c.rc == 1 and d.get("dma_buf_export") is True and d.get("fd_is_dma_buf") is False


def verify(r, s, lib, size=None):
    r.need(s, ["libcuda", "verify"], "--lib", "--json", "--size")
    argv = ["libcuda", "verify", "--json", "--lib", lib]
    if size:
        argv += ["--size", str(size)]
    c = r.nvs(s, "verify", *argv)
    r.rejected(c)
    d = c.json()
    # 0 the gate is open, 6 the gate is closed (both answers); 1 with an fd
    # that is not a dma-buf answers the gate question too (it let the export
    # through): whether the fd is a dma-buf is cuda-dmabuf-export's to judge
    if no_dmabuf(c, d):
        pass
    elif c.rc not in (0, 6) or d.get("error"):
        raise Fail("libcuda verify of %s exited %d: %s" % (lib, c.rc, d.get("error") or oneline(c.err)))
    a = attrs(d)
    s.data = {"lib": d.get("lib"), "driver_api": d.get("driver_version"), "devices": d.get("devices"),
              "attributes": d.get("attributes"), "export_result": d.get("export_result"),
              "dma_buf_export": d.get("dma_buf_export"), "fd_kind": d.get("fd_kind"), "size": d.get("size")}
    return c, d, a


def s_verify_original(r, s):
    r.needs_lib()
    if not r.verdict:
        raise Skip("libcuda status did not run or gave no verdict")
    c, d, a = verify(r, s, r.lib)
    opened = bool(d.get("dma_buf_export"))
    summary = "attributes 116=%s 124=%s (110=%s), cuMemGetHandleForAddressRange %s on %d device(s)" % (
        a.get("116"), a.get("124"), a.get("110"),
        "exported a dma-buf fd (%s)" % d.get("fd_kind") if opened else "refused (CUDA error %s)" % d.get("export_result"),
        d.get("devices") or 0)
    if (a.get("124") == 1) != opened:
        raise Fail("%s: attribute 124 and the export disagree" % summary)
    if (c.rc == 0) != opened:
        raise Fail("%s: verify exited %d" % (summary, c.rc))
    gpus = (r.smi or {}).get("gpus") or []
    kinds = {geforce(g) for g in gpus}
    if len(kinds) != 1:
        return "%s; no expectation (GPU brands %s)" % (summary, "unknown" if not gpus else "mixed")
    brand = gpus[0].get("brand") or gpus[0].get("name")
    if kinds == {True}:
        want_open = r.verdict in ("patched", "not-needed")
        why = "a GeForce GPU whose libcuda is %s" % r.verdict
    else:
        want_open = True
        why = "a %s GPU: GPUDirect RDMA and dma-buf are supported natively there" % brand
    if opened != want_open or (want_open and a.get("116") != 1):
        raise Fail("%s, but %s should have the gate %s" % (summary, why, "open (116 and 124 = 1)" if want_open else "closed"))
    return "%s: as expected for %s" % (summary, why)


def s_patch(r, s):
    r.needs_lib()
    if not r.verdict:
        raise Skip("libcuda status did not run or gave no verdict")
    r.need(s, ["libcuda", "patch"], "--lib", "--out", "--json")
    out = os.path.join(r.work, "patched")
    os.makedirs(out, exist_ok=True)
    c = r.nvs(s, "libcuda", "libcuda", "patch", "--json", "--lib", r.lib, "--out", out)
    r.rejected(c)
    if r.verdict in ("unpatched", "partially-patched"):
        if c.rc != 0:
            raise Fail("patch of a %s library exited %d: %s" % (r.verdict, c.rc, oneline(c.err)))
        d = c.json()
        if d.get("result") != "patched" or not os.path.exists(os.path.join(out, "libcuda.so.1")):
            raise Fail("patch said %s and wrote no %s/libcuda.so.1" % (d.get("result"), out))
        again = r.nvs(s, "libcuda", "libcuda", "patch", "--json", "--lib", r.lib, "--out", out)
        if again.rc != 0 or again.json().get("result") != "up-to-date":
            raise Fail("a second patch into the same directory was not a no-op (exit %d): %s" % (again.rc, oneline(again.out + again.err)))
        r.copy = out
        s.data = {"out": out, "output_sha256": d.get("output_sha256"), "sites": d.get("sites")}
        return "wrote a patched copy (%d site(s): %s; output sha256 %s); a second run was a no-op" % (
            len(d.get("sites") or []), "; ".join(x.get("change", "") for x in d.get("sites") or []),
            (d.get("output_sha256") or "")[:16])
    if c.rc == 2 and re.search(r"Refus|unsupported|already", c.err):
        s.data = {"refused": oneline(c.err)}
        return "refused, as status predicted for a %s library: %s" % (r.verdict, oneline(c.err, 200))
    raise Fail("patch of a %s library exited %d (want a refusal, exit 2): %s" % (r.verdict, c.rc, oneline(c.err)))


def s_verify_copy(r, s):
    r.needs_lib()
    if not r.copy:
        raise Skip("no patched copy was written (verdict %s)" % (r.verdict or "none"))
    c, d, a = verify(r, s, r.copy)
    summary = "attributes 116=%s 124=%s (110=%s), export %s" % (
        a.get("116"), a.get("124"), a.get("110"),
        "fd (%s)" % d.get("fd_kind") if d.get("dma_buf_export") else "refused (CUDA error %s)" % d.get("export_result"))
    if (c.rc != 0 and not no_dmabuf(c, d)) or a.get("116") != 1 or a.get("124") != 1 or not d.get("dma_buf_export"):
        raise Fail("the patched copy does not open the gate (exit %d): %s" % (c.rc, summary))
    return "the patched copy opens the gate: " + summary


def pick_open_lib(r):
    for st in r.steps:
        if st.name == "libcuda-verify-original" and st.data.get("dma_buf_export"):
            return r.lib
    for st in r.steps:
        if st.name == "libcuda-verify-copy" and st.result == "PASS":
            return r.copy
    return None


def s_p2p(r, s):
    r.needs_helper()
    lib = os.path.realpath(r.args.p2p_lib) if r.args.p2p_lib else r.lib
    if not lib:
        r.needs_lib()
    r.need(s, ["p2p"], "--lib", "--size", "--iters", "--json")
    c = r.nvs(s, "p2p", "p2p", "--json", "--lib", lib, "--size", str(P2P_SIZE), "--iters", "10")
    r.rejected(c)
    if c.rc in (2, 3):
        raise Fail("p2p could not start CUDA (exit %d): %s" % (c.rc, oneline(c.err)))
    d = c.json()
    gpus, pairs = d.get("gpus") or [], d.get("pairs") or []
    s.data = {"lib": lib, "driver_api": d.get("driver_version"), "size": d.get("size"), "iters": d.get("iters"),
              "p2p_applicable": d.get("p2p_applicable"), "gpus": gpus, "pairs": pairs,
              "can_access_peer": d.get("can_access_peer"), "ladder": d.get("ladder")}
    bad = ["GPU%s local copy: %s wrong byte(s)" % (g.get("index"), g.get("local_wrong_bytes"))
           for g in gpus if not g.get("local_verified")]
    for p in pairs:
        for m in ("p2p_on", "p2p_off"):
            x = p.get(m) or {}
            if x.get("ran") and not x.get("verified"):
                bad.append("%s->%s %s: %s wrong byte(s), first at offset %s%s" % (
                    p["src"], p["dst"], m.replace("_", " "), x.get("wrong_bytes"), x.get("first_mismatch"),
                    "; " + x["error"] if x.get("error") else ""))
    if bad or c.rc != 0:
        raise Fail("p2p exited %d: %s" % (c.rc, "; ".join(bad) or oneline(c.err)))
    local = ", ".join("GPU%s %s local %.1f GB/s" % (g.get("index"), g.get("name"), g.get("local_gbps") or 0) for g in gpus)
    if not d.get("p2p_applicable"):
        return "one GPU: device-local %s MiB copies verified; %s" % (P2P_SIZE >> 20, local)
    best = max(pairs, key=lambda p: (p.get("p2p_on") or {}).get("uni_gbps") or 0)
    on = best.get("p2p_on") or {}
    return "%d GPU(s), %d ordered pair(s), every copy verified; best P2P %s->%s %.1f GB/s uni, %.1f GB/s bi; ladder reached level %s; %s" % (
        len(gpus), len(pairs), best["src"], best["dst"], on.get("uni_gbps") or 0, on.get("bi_gbps") or 0,
        (d.get("ladder") or {}).get("reached"), local)


def s_export(r, s):
    r.needs_lib()
    r.open_lib = pick_open_lib(r)
    if not r.open_lib:
        raise Skip("no libcuda here exports GPU memory: the original's gate is closed and no patched copy opened it")
    c, d, a = verify(r, s, r.open_lib, EXPORT_SIZE)
    kind = d.get("fd_kind") or ""
    if (c.rc != 0 and not no_dmabuf(c, d)) or not d.get("dma_buf_export"):
        raise Fail("cuMemGetHandleForAddressRange refused %s of GPU memory (CUDA error %s) with %s" %
                   (human_bytes(EXPORT_SIZE), d.get("export_result"), r.open_lib))
    m = re.match(r"^dma-buf \(exporter (.+)\)$", kind)
    if not m:
        raise Fail("the exported fd is not a dma-buf (%s), with %s" % (re.sub(r"^not a dma-buf: ", "", kind) or "kind unknown",
                                                                        r.open_lib))
    if (d.get("size") or 0) < EXPORT_SIZE:
        raise Fail("the dma-buf is %s, %s were exported" % (human_bytes(d.get("size")), human_bytes(EXPORT_SIZE)))
    s.data["exporter"] = m.group(1)
    return "%s of GPU memory exported as a dma-buf by exporter `%s' (with %s)" % (human_bytes(d.get("size")), m.group(1),
                                                                                  r.open_lib)


# -- module

def module_gate(r):
    r.needs_helper()
    if not r.pci:
        raise Skip("no NVIDIA GPU in sysfs: nothing for the module to look at")
    if not r.kernel.get("root"):
        raise Skip("not root: loading a module needs root")
    if not r.kernel.get("headers"):
        raise Skip("no kernel headers at /lib/modules/%s/build (install linux-headers-%s, or pass --install-deps)" %
                   (r.kernel.get("release"), r.kernel.get("release")))
    if not r.kernel.get("modules_loadable"):
        raise Skip("this kernel cannot load modules here (no /proc/modules, or modules_disabled is set)")


def ko_path(r):
    return os.path.join(r.build, "device", "kmod-%s" % r.kernel["release"], "nvsidecar.ko")


def dmesg_lines(r, s):
    c = r.run(["dmesg"], "quick", s)
    return c.out.splitlines() if c.rc == 0 else None


def s_module_build(r, s):
    module_gate(r)
    c = r.run(["make", "-C", r.top, "module", "BUILD=%s" % os.path.join(r.build, "device")], "module-build", s)
    if c.rc != 0:
        raise Fail("make module failed (exit %d): %s" % (c.rc, oneline((c.err or c.out)[-500:])))
    if not os.path.exists(ko_path(r)):
        raise Fail("make module succeeded but wrote no %s" % ko_path(r))
    return "built %s" % ko_path(r)


def s_module_load(r, s):
    module_gate(r)
    if os.path.exists("/sys/module/nvsidecar"):
        r.module_ready = True
        raise Skip("nvsidecar %s is already loaded: the next steps ask that one, and this run leaves it loaded" %
                   (read("/sys/module/nvsidecar/version") or "(no version)"))
    if not os.path.exists(ko_path(r)):
        raise Skip("no module was built (see module-build)")
    r.dmesg_mark = dmesg_lines(r, s)
    c = r.run(["insmod", ko_path(r)], "module", s)
    if c.rc != 0:
        if re.search(r"Key was rejected|Required key not available", c.err):
            raise Skip("the kernel refuses the unsigned module (Secure Boot or lockdown): %s" % oneline(c.err))
        raise Fail("insmod failed (exit %d): %s" % (c.rc, oneline(c.err)))
    r.module_loaded_here = r.module_ready = True
    want = None
    for line in (read(os.path.join(r.top, "dkms.conf")) or "").splitlines():
        m = re.match(r'^PACKAGE_VERSION="(.*)"$', line)
        if m:
            want = m.group(1)
    got = read("/sys/module/nvsidecar/version")
    if want and got != want:
        raise Fail("loaded, but /sys/module/nvsidecar/version is %s, the checkout is %s" % (got, want))
    return "loaded %s (version %s)" % (ko_path(r), got)


def mmio_reads(index):
    v = read("%s/gpu%s/mmio_reads" % (NVS_CLASS, index))
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def s_module_status(r, s):
    r.needs_helper()
    if not r.module_ready:
        raise Skip("the module is not loaded (see module-load)")
    r.need(s, ["status"], "--json")
    c = r.nvs(s, "module", "status", "--json")
    if c.rc != 0:
        raise Fail("status exited %d: %s" % (c.rc, oneline(c.err)))
    d = c.json()
    listed = {g.get("busid"): g for g in d.get("gpus") or []}
    s.data = {"module_version": d.get("module_version"), "gpus": d.get("gpus")}
    first = {g.get("index"): mmio_reads(g.get("index")) for g in listed.values()}
    if any(v is not None for v in first.values()):
        time.sleep(1)
    notes, bad = [], []
    for p in r.pci:
        g = listed.get(p["bdf"])
        if not g:
            bad.append("%s (%s) is not listed: a GPU without a recipe must be listed as unsupported and never read, "
                       "and this module does not list it at all" % (p["bdf"], p["id"]))
            continue
        idx = g.get("index")
        m0, m1 = first.get(idx), mmio_reads(idx)
        reads = "no mmio_reads counter in this module" if m0 is None else "mmio_reads %d -> %d in 1 s" % (m0, m1 or 0)
        st = g.get("status")
        if st in ("unsupported", "no-recipe"):
            if g.get("samples") or (m0 is not None and (m0 or m1)):
                bad.append("gpu%s %s is unsupported but was read: %s samples, %s" % (idx, p["bdf"], g.get("samples"), reads))
            else:
                notes.append("gpu%s %s listed unsupported (%s), never read: 0 samples, %s" % (
                    idx, p["bdf"], g.get("reason") or "no reason", reads))
        elif st in ("ok", "asleep"):
            notes.append("gpu%s %s chip %s status %s, %s samples, %s/%s sensors valid, hottest %s %s m°C; %s" % (
                idx, p["bdf"], g.get("chip"), st, g.get("samples"), g.get("sensors_valid"), g.get("sensors"),
                g.get("hottest"), g.get("hottest_mc"), reads))
        else:
            bad.append("gpu%s %s chip %s status %s: %s" % (idx, p["bdf"], g.get("chip"), st, g.get("reason") or "no reason given"))
        s.data.setdefault("mmio_reads", {})[p["bdf"]] = [m0, m1]
    if bad:
        raise Fail("; ".join(bad + notes))
    return "; ".join(notes)


def s_module_probe(r, s):
    r.needs_helper()
    if not r.module_ready:
        raise Skip("the module is not loaded (see module-load)")
    lib = r.open_lib or pick_open_lib(r)
    if not lib:
        raise Skip("no libcuda here exports GPU memory (see cuda-dmabuf-export)")
    r.need(s, ["dmabuf", "probe"], "--gpu", "--lib", "--size", "--json")
    c = r.nvs(s, "module", "status", "--json")
    listed = {g.get("busid"): g for g in (c.json().get("gpus") or [])} if c.rc == 0 else {}
    bad, notes = [], []
    for p in r.pci:
        g = listed.get(p["bdf"])
        if not g:
            # The module has no index for it: probe through the verify hook,
            # which imports the same CUDA dma-buf with the GPU as importer.
            r.need(s, ["libcuda", "verify"], "--probe", "--importer", "--lib", "--json")
            v = r.nvs(s, "verify", "libcuda", "verify", "--json", "--lib", lib, "--probe", "--importer", p["bdf"])
            vd = v.json()
            s.data.setdefault("fallback", {})[p["bdf"]] = {"rc": v.rc, "probe": vd.get("dmabuf_probe"),
                                                         "probe_result": vd.get("dmabuf_probe_result")}
            bad.append("%s: `dmabuf probe --gpu N' needs the module to list the GPU, it does not; the kernel's import "
                       "through `libcuda verify --probe --importer %s' (no BAR1 to compare with) gave exit %d: %s" % (
                           p["bdf"], p["bdf"], v.rc, vd.get("dmabuf_probe") or vd.get("error") or oneline(v.err)))
            continue
        c = r.nvs(s, "module", "dmabuf", "probe", "--gpu", str(g.get("index")), "--lib", lib,
                  "--size", str(PROBE_SIZE), "--json")
        r.rejected(c)
        d = c.json()
        s.data.setdefault("probes", {})[p["bdf"]] = d
        what = "gpu%s %s: exit %d, exporter %s, importer %s, %s entries, %s mapped, verdict %s (BAR1 0x%x + %s), p2p %s" % (
            g.get("index"), p["bdf"], c.rc, d.get("exporter"), d.get("importer"), d.get("nents"),
            human_bytes(d.get("mapped")), d.get("verdict"), d.get("bar1_start") or 0, human_bytes(d.get("bar1_len")),
            d.get("p2p"))
        if c.rc == 0 and d.get("verdict") == "bar1":
            notes.append(what)
        else:
            bad.append("%s%s" % (what, "; failed at step %s: %s" % (d.get("step"), d.get("error")) if d.get("error") else ""))
    if bad:
        raise Fail("; ".join(bad + notes))
    return "; ".join(notes)


def s_module_unload(r, s):
    if not r.module_loaded_here:
        if r.module_ready:
            raise Skip("the module was loaded before this run: left as found")
        raise Skip("the module was not loaded by this run")
    c = r.run(["rmmod", "nvsidecar"], "quick", s, check_budget=False)
    if c.rc != 0:
        raise Fail("rmmod nvsidecar failed (exit %d): %s" % (c.rc, oneline(c.err)))
    r.module_loaded_here = r.module_ready = False
    if os.path.exists("/sys/module/nvsidecar"):
        raise Fail("rmmod returned 0 but /sys/module/nvsidecar is still there")
    after = dmesg_lines(r, s)
    if r.dmesg_mark is None or after is None:
        return "unloaded (the kernel log could not be read to check it)"
    new = after[len(r.dmesg_mark):] if after[:len(r.dmesg_mark)] == r.dmesg_mark else after[-200:]
    s.data["dmesg"] = new[-100:]
    alarms = [l for l in new if re.search(r"WARNING:|BUG:|Oops|general protection|Call Trace|KASAN|UBSAN", l)]
    if alarms:
        raise Fail("unloaded, but the kernel logged: %s" % oneline(" | ".join(alarms[:5])))
    return "unloaded; %d kernel log line(s) since load, no warning, BUG or oops" % len(new)


# -- RDMA

def rxe_teardown(r, s):
    r.run(["rdma", "link", "delete", RXE_DEV], "quick", s, check_budget=False)
    r.run(["ip", "link", "del", RXE_NET], "quick", s, check_budget=False)


def rdma_setup(r, s):
    """The RDMA device to use: a real one with an active port, else soft-RoCE
    set up here when rdma_rxe is available. Skips with the reason otherwise."""
    if r.rxe is not None:
        if isinstance(r.rxe, Skip):
            raise r.rxe
        return r.rxe
    r.needs_helper()
    real = [d for d in rdma_devices() if d["active"] and d["name"] != RXE_DEV]
    if real:
        r.rxe = {"dev": real[0]["name"], "soft": real[0]["name"].startswith("rxe"), "made_here": False}
        return r.rxe
    why = None
    if not r.pci and not r.driver:
        # soft-RoCE changes the network configuration for a while: worth it
        # only where there is GPU memory to register
        why = "no RDMA device with an active port, and no NVIDIA GPU to set up soft-RoCE for"
    elif not r.kernel.get("root"):
        why = "no RDMA device with an active port, and setting up soft-RoCE needs root"
    elif not shutil.which("rdma") or not shutil.which("ip"):
        why = "no RDMA device with an active port, and no `rdma'/`ip' (iproute2) to set up soft-RoCE"
    elif r.run(["modinfo", "rdma_rxe"], "quick", s).rc != 0:
        why = "no RDMA device in /sys/class/infiniband and no rdma_rxe module (modinfo rdma_rxe)"
    if why:
        r.rxe = Skip(why)
        raise r.rxe
    rxe_teardown(r, s)          # what a killed earlier run may have left
    r.run(["modprobe", "rdma_rxe"], "quick", s)
    steps = [["ip", "link", "add", RXE_NET, "type", "veth", "peer", "name", RXE_PEER],
             ["ip", "addr", "add", RXE_ADDR, "dev", RXE_NET],
             ["ip", "link", "set", RXE_NET, "up"], ["ip", "link", "set", RXE_PEER, "up"],
             ["rdma", "link", "add", RXE_DEV, "type", "rxe", "netdev", RXE_NET]]
    r.rxe = {"dev": RXE_DEV, "soft": True, "made_here": True}
    for argv in steps:
        c = r.run(argv, "quick", s)
        if c.rc != 0:
            rxe_teardown(r, s)
            r.rxe = Skip("rdma_rxe is available but soft-RoCE could not be set up: `%s' exited %d: %s" %
                         (c.line(), c.rc, oneline(c.err)))
            raise r.rxe
    for _ in range(50):
        if any(d["name"] == RXE_DEV and d["active"] for d in rdma_devices()):
            return r.rxe
        time.sleep(0.2)
    rxe_teardown(r, s)
    r.rxe = Skip("soft-RoCE device %s on %s never reached ACTIVE" % (RXE_DEV, RXE_NET))
    raise r.rxe


def rdma_run(r, s, mem, extra):
    dev = rdma_setup(r, s)
    r.need(s, ["rdma"], "--loopback", "--dev", "--mem", "--sizes", "--iters", "--buffer", "--timeout", "--json", *extra[::2])
    c = r.nvs(s, "rdma", "rdma", "--loopback", "--dev", dev["dev"], "--mem", mem, "--sizes", "4K,64K,1M",
              "--iters", "50", "--buffer", "8M", "--timeout", "10", "--json", *extra)
    if c.rc == 2:
        raise Fail("rdma rejected its arguments (exit 2): %s" % oneline(c.err))
    d = c.json()
    s.data = {"device": dev["dev"], "soft_roce": dev["soft"], "made_here": dev["made_here"], "result": d}
    return dev, c, d


def rdma_summary(d):
    rows = d.get("results") or []
    return ", ".join("%s %s %s/%s verified %.3f GB/s" % (x.get("op"), human_bytes(x.get("size")), x.get("verified"),
                                                         x.get("transfers"), x.get("gbps") or 0) for x in rows)


def rdma_verified(d):
    rows = d.get("results") or []
    return d.get("ok") and rows and all(x.get("transfers", 0) > 0 and x.get("verified") == x.get("transfers") for x in rows)


def s_rdma_host(r, s):
    dev, c, d = rdma_run(r, s, "host", [])
    if c.rc != 0 or not rdma_verified(d):
        raise Fail("loopback on %s with host memory exited %d: %s" % (dev["dev"], c.rc, d.get("error") or rdma_summary(d)))
    return "loopback on %s%s, host memory: %s" % (dev["dev"], " (soft-RoCE)" if dev["soft"] else "", rdma_summary(d))


def s_rdma_cuda(r, s):
    r.needs_lib()
    lib = r.open_lib or pick_open_lib(r)
    if not lib:
        raise Skip("no libcuda here exports GPU memory (see cuda-dmabuf-export)")
    dev, c, d = rdma_run(r, s, "cuda-dmabuf", ["--cuda-lib", lib, "--gpu", "0"])
    if c.rc == 0 and rdma_verified(d):
        return "loopback on %s, GPU memory through a dma-buf MR (%s): %s" % (dev["dev"], lib, rdma_summary(d))
    err = d.get("error") or ""
    # exit 7: the memory registration was refused
    if c.rc == 7 and dev["soft"] and re.search(r"ibv_reg_dmabuf_mr.*\b(EOPNOTSUPP|ENOSYS)\b", err):
        raise Skip("soft-RoCE (%s) cannot register dma-buf memory: %s" % (dev["dev"], oneline(err)))
    raise Fail("loopback on %s with cuda-dmabuf memory exited %d: %s" % (dev["dev"], c.rc, err or rdma_summary(d)))


def s_doctor(r, s):
    r.needs_helper()
    # the libcuda the other steps judged, which the loader may not pick
    # (--lib names one outside its cache)
    extra = (["--patched", r.copy] if r.copy else []) + (["--lib", r.lib] if r.lib else [])
    r.need(s, ["doctor"], "--json", *extra[::2])
    c = r.nvs(s, "doctor", "doctor", "--json", *extra)
    r.rejected(c)
    d = c.json()
    checks = d.get("checks") or []
    counts = d.get("counts") or {}
    s.data = {"healthy": d.get("healthy"), "counts": counts, "checks": checks}
    tally = {k: sum(1 for x in checks if x.get("result", "").lower() == k) for k in ("ok", "warn", "fail", "skip")}
    if not checks:
        raise Fail("doctor reported no checks (exit %d)" % c.rc)
    if tally != {k: counts.get(k) for k in tally}:
        raise Fail("doctor's counts %s disagree with its checks %s" % (counts, tally))
    if (c.rc == 0) != bool(d.get("healthy")) or c.rc not in (0, 1):
        raise Fail("doctor exited %d with healthy=%s" % (c.rc, d.get("healthy")))
    fails = [x.get("name") for x in checks if x.get("result") == "FAIL"]
    lc = [x for x in checks if x.get("layer") == "libcuda"]
    return "ran: healthy %s; %d OK, %d WARN, %d FAIL%s, %d SKIP%s" % (
        "yes" if d.get("healthy") else "no", tally["ok"], tally["warn"], tally["fail"],
        " (%s)" % ", ".join(fails) if fails else "", tally["skip"],
        "; libcuda layer: %s" % "; ".join("%s %s" % (x.get("result"), x.get("message")) for x in lc) if lc else "")


# ---------------------------------------------------------------- report

def md_cell(v):
    return str(v).replace("|", "\\|").replace("\n", " ")


def git_facts(top):
    def git(*a):
        try:
            p = subprocess.run(["git", "-C", top] + list(a), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=20)
            return p.stdout.decode().strip() if p.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            return None
    commit = git("rev-parse", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(dirty) if commit else None}


def step_data(r, name):
    return next((s.data for s in r.steps if s.name == name and s.data), None)


def md_details(r, L):
    """The CUDA, module, RDMA and doctor findings, for a reader of the Markdown."""
    p = step_data(r, "cuda-p2p")
    if p:
        L += ["", "## CUDA", "", "p2p with %s, %s per copy, %s iterations, driver API %s." % (
            p.get("lib"), human_bytes(p.get("size")), p.get("iters"), p.get("driver_api")), "",
            "| GPU | name | bus id | local copy | local GB/s |", "| --- | --- | --- | --- | ---: |"]
        for g in p.get("gpus") or []:
            L.append("| %s | %s | %s | %s | %.1f |" % (g.get("index"), md_cell(g.get("name")), g.get("bus_id"),
                                                      "verified" if g.get("local_verified") else "%s wrong bytes" % g.get("local_wrong_bytes"),
                                                      g.get("local_gbps") or 0))
        if p.get("pairs"):
            L += ["", "| pair | peer access | P2P on: verified, uni/bi GB/s, latency µs | P2P off: verified, uni/bi GB/s |",
                  "| --- | --- | --- | --- |"]
            for x in p["pairs"]:
                on, off = x.get("p2p_on") or {}, x.get("p2p_off") or {}
                L.append("| %s->%s | %s | %s, %.1f/%.1f, %.2f | %s, %.1f/%.1f |" % (
                    x.get("src"), x.get("dst"), "yes" if x.get("can_access_peer") else "no",
                    "yes" if on.get("verified") else ("no" if on.get("ran") else "not run"), on.get("uni_gbps") or 0,
                    on.get("bi_gbps") or 0, on.get("latency_us") or 0,
                    "yes" if off.get("verified") else "no", off.get("uni_gbps") or 0, off.get("bi_gbps") or 0))
    e = step_data(r, "cuda-dmabuf-export")
    if e:
        L += ["", "dma-buf export: %s from %s: %s." % (human_bytes(e.get("size")), e.get("lib"),
                                                      e.get("fd_kind") or "refused (%s)" % e.get("export_result"))]
    m = step_data(r, "module-status")
    if m:
        L += ["", "## Module", "", "Module version %s." % m.get("module_version"), "",
              "| gpu | bus id | chip | status | reason | samples | mmio_reads (1 s apart) |",
              "| --- | --- | --- | --- | --- | ---: | --- |"]
        for g in m.get("gpus") or []:
            L.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                g.get("index"), g.get("busid"), g.get("chip"), g.get("status"), md_cell(g.get("reason") or "-"),
                g.get("samples"), (m.get("mmio_reads") or {}).get(g.get("busid"), "-")))
    pr = step_data(r, "module-dmabuf-probe")
    for b, d in sorted(((pr or {}).get("probes") or {}).items()):
        L.append("")
        L.append("dmabuf probe of %s: exit %s, exporter %s, importer %s, %s entries, %s mapped, segments %s..%s, "
                 "verdict %s, BAR1 0x%x + %s, p2p %s (distance %s)." % (
                     b, d.get("exit_code"), d.get("exporter"), d.get("importer"), d.get("nents"), human_bytes(d.get("mapped")),
                     d.get("seg_min"), d.get("seg_max"), d.get("verdict"), d.get("bar1_start") or 0,
                     human_bytes(d.get("bar1_len")), d.get("p2p"), d.get("p2p_distance")))
    for name in ("rdma-host", "rdma-cuda-dmabuf"):
        d = step_data(r, name)
        if d and d.get("result"):
            L += ["", "## %s on %s%s" % (name, d.get("device"), " (soft-RoCE)" if d.get("soft_roce") else ""), "",
                  "| op | size | transfers | verified | GB/s | latency µs |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
            for x in d["result"].get("results") or []:
                L.append("| %s | %s | %s | %s | %.3f | %.2f |" % (x.get("op"), human_bytes(x.get("size")), x.get("transfers"),
                                                               x.get("verified"), x.get("gbps") or 0, x.get("lat_us") or 0))
    d = step_data(r, "doctor")
    if d:
        L += ["", "## Doctor", "", "| layer | check | result | message |", "| --- | --- | --- | --- |"]
        for x in d.get("checks") or []:
            L.append("| %s | %s | %s | %s |" % (x.get("layer"), x.get("name"), x.get("result"), md_cell(x.get("message"))))


def report(r, interrupted=False):
    counts = {k: sum(1 for s in r.steps if s.result == k) for k in ("PASS", "FAIL", "SKIP")}
    code = 1 if counts["FAIL"] or interrupted else 0
    mode = r.mode()
    if mode == "real-gpu":
        banner = "Mode: real GPU. %s." % r.evidence(next(s for s in r.steps if s.gpu and s.result != "SKIP"))
    elif mode == "stand-in":
        banner = ("Mode: STAND-IN RUN. No real GPU took part (%s). These results exercise the script and the "
                  "helper against stand-ins; they are not evidence from a real GPU." % r.stand_ins())
    else:
        banner = ("Mode: no GPU. Every step that needs an NVIDIA GPU, its driver or an RDMA device was skipped; "
                  "the results below are evidence of nothing GPU-related.")
    doc = {
        "schema": 1, "tool": "tests/device/run", "started": r.started,
        "seconds": round(time.monotonic() - r.start, 1), "budget_seconds": r.args.budget,
        "mode": mode, "banner": banner, "interrupted": interrupted, "checkout": git_facts(r.top),
        "helper": {"bin": r.bin, "version": r.version}, "stand_ins": {"nvidia_smi": shutil.which("nvidia-smi"),
                                                                      "lib": r.args.lib, "p2p_lib": r.args.p2p_lib,
                                                                      "forced": r.args.stand_in},
        "kernel": r.kernel, "nvidia_driver": r.driver,
        "counts": {k.lower(): v for k, v in counts.items()}, "exit_code": code,
        "steps": [{"name": s.name, "title": s.title, "gpu_step": s.gpu, "result": s.result, "reason": s.reason,
                   "evidence": r.evidence(s), "seconds": round(s.seconds, 2), "data": s.data,
                   "commands": [{"argv": c.argv, "rc": c.rc, "seconds": round(c.seconds, 2), "timed_out": c.timed_out,
                                 "limit_s": c.limit, "stdout_tail": tail(c.out), "stderr_tail": tail(c.err)}
                                for c in s.commands]} for s in r.steps],
    }
    write_atomic(os.path.join(r.out, "device-report.json"), json.dumps(doc, indent=2, default=str) + "\n")

    L = ["# nvsidecar device run, %s" % r.started, "", "**%s**" % banner, ""]
    ck = doc["checkout"]
    L.append("Checkout %s%s, helper %s, %.0f s (budget %d s). Result: %d passed, %d failed, %d skipped; exit %d%s." % (
        (ck["commit"] or "unknown")[:12], " (uncommitted changes)" if ck.get("dirty") else "", r.version or "not built",
        doc["seconds"], r.args.budget, counts["PASS"], counts["FAIL"], counts["SKIP"], code,
        " (interrupted)" if interrupted else ""))
    L += ["", "Written by `tests/device/run`; what each step is evidence of, and what has run where so far, is in "
          "docs/hardware-evidence.md.", "", "## Steps", "",
          "| step | result | evidence | s | reason |", "| --- | --- | --- | ---: | --- |"]
    for s in r.steps:
        L.append("| %s | %s | %s | %.1f | %s |" % (s.name, s.result, md_cell(r.evidence(s)), s.seconds, md_cell(s.reason)))
    k = r.kernel
    if k:
        L += ["", "## Machine", "", "| fact | value |", "| --- | --- |"]
        for key, label in (("release", "kernel"), ("os", "distribution"), ("cpu", "CPU"), ("cpus", "CPUs"),
                           ("memory_bytes", "memory"), ("root", "root"), ("headers", "kernel headers"),
                           ("modules_loadable", "module loading"), ("lockdown", "lockdown"),
                           ("iommu_cmdline", "IOMMU command line"), ("iommu_groups", "IOMMU groups"),
                           ("nvidia_driver", "NVIDIA driver")):
            v = k.get(key)
            if key == "memory_bytes":
                v = "%.1f GiB" % (v / (1 << 30)) if v else None
            L.append("| %s | %s |" % (label, md_cell(v if v not in (None, [], "") else "-")))
    gpus = (r.smi or {}).get("gpus") or []
    topo = next((s.data.get("gpus") for s in r.steps if s.name == "facts-topo" and s.data), None) or []
    if gpus or r.pci:
        L += ["", "## GPUs", "", "| bus id | name | brand | PCI id | BAR1 (nvidia-smi) | VRAM | BAR1 (sysfs) | "
              "Resizable BAR (topo) | link now (max) |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        bdfs = [g["bus_id"] for g in gpus] + [p["bdf"] for p in r.pci if p["bdf"] not in [g["bus_id"] for g in gpus]]
        for b in bdfs:
            g = next((x for x in gpus if x["bus_id"] == b), {})
            p = next((x for x in r.pci if x["bdf"] == b), {})
            t = next((x for x in topo if x.get("bdf") == b), {})
            a = t.get("aperture") or {}
            L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                b, md_cell(g.get("name") or "-"), md_cell(g.get("brand") or "-"), g.get("pci_id") or p.get("id") or "-",
                "%s MiB" % g["bar1_mib"] if g.get("bar1_mib") is not None else "-",
                "%s MiB" % g["fb_mib"] if g.get("fb_mib") is not None else "-", human_bytes(p.get("bar1_bytes")) if p else "-",
                ("%s, %s of %s" % ("resizable" if a.get("resizable") else "not resizable", human_bytes(a.get("bytes")),
                                   human_bytes(a.get("rebar_max")))) if t else "-",
                ("Gen%s x%s (Gen%s x%s)" % (g.get("gen_current"), g.get("width_current"), g.get("gen_max"), g.get("width_max")))
                if g else p.get("link", "-")))
    st = next((s for s in r.steps if s.name == "libcuda-status" and s.data), None)
    if st:
        d = st.data
        L += ["", "## libcuda", "", "| | |", "| --- | --- |"]
        for key in ("lib", "found_by", "driver_version", "sha256", "verdict", "reason", "field", "mask", "global",
                    "attr124_also_requires", "known_table", "analysis_seconds"):
            L.append("| %s | %s |" % (key, md_cell(d.get(key) if d.get(key) is not None else "-")))
        for w in d.get("rewrites") or []:
            L.append("| rewrite | %s: %s -> %s (%s -> %s) |" % (w.get("offset"), w.get("old"), w.get("new"),
                                                             md_cell(w.get("from")), md_cell(w.get("to"))))
        vo = next((s.data for s in r.steps if s.name == "libcuda-verify-original" and s.data), {})
        vc = next((s.data for s in r.steps if s.name == "libcuda-verify-copy" and s.data), {})
        if vo:
            L += ["", "| attribute | original | patched copy |", "| --- | --- | --- |"]
            for a, v in sorted((vo.get("attributes") or {}).items(), key=lambda x: int(x[0])):
                c2 = (vc.get("attributes") or {}).get(a, {})
                L.append("| %s %s | %s | %s |" % (a, v.get("name"), v.get("value"), c2.get("value", "-")))
            L.append("| dma-buf export | %s | %s |" % (
                vo.get("fd_kind") or "refused (%s)" % vo.get("export_result"),
                (vc.get("fd_kind") or "refused (%s)" % vc.get("export_result")) if vc else "-"))
    md_details(r, L)
    L += ["", "## Commands", "", "Every command, its exit status and time; full output in device-run.log.", ""]
    for s in r.steps:
        for c in s.commands:
            L.append("- `%s` (%s): exit %s, %.1f s%s" % (c.line().replace("`", "'"), s.name, c.rc, c.seconds,
                                                        ", timed out" if c.timed_out else ""))
    write_atomic(os.path.join(r.out, "device-report.md"), "\n".join(L) + "\n")
    return code, counts


def main():
    ap = argparse.ArgumentParser(
        prog="tests/device/run",
        description="Collects real-GPU evidence for nvsidecar in one run of under 8 minutes: machine facts, libcuda, "
                    "CUDA, the module, RDMA and doctor. Each step prints PASS, FAIL or SKIP with the reason. Reports go "
                    "to $OUT, else build/device/. Exit 0 when no step failed.")
    ap.add_argument("--out", help="report directory (default: $OUT, else build/device)")
    ap.add_argument("--install-deps", action="store_true",
                    help="apt-get install the build dependencies and this kernel's headers first (root)")
    ap.add_argument("--lib", help="the libcuda for the libcuda, dma-buf and RDMA steps (default: the driver's libcuda.so.1)")
    ap.add_argument("--p2p-lib", help="the libcuda for the p2p step (default: the same as --lib)")
    ap.add_argument("--stand-in", action="store_true",
                    help="label the run a stand-in run even if an NVIDIA driver is loaded")
    ap.add_argument("--step-timeout", type=int, default=0, help="cap every command's limit at this many seconds")
    ap.add_argument("--budget", type=int, default=BUDGET, help="seconds for the whole run (at most %d)" % BUDGET)
    args = ap.parse_args()
    if args.budget <= 0 or args.budget > BUDGET or args.step_timeout < 0:
        ap.error("--budget must be 1..%d and --step-timeout positive" % BUDGET)

    r = Run(args)
    interrupted = False

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print("nvsidecar device run: reports in %s" % r.out)
    try:
        if args.install_deps:
            r.step("install-deps", False, "apt-get install the build dependencies", lambda s: s_install(r, s))
        r.step("build", False, "make user", lambda s: s_build(r, s))
        r.step("facts-kernel", False, "kernel, headers, root, IOMMU, driver", lambda s: s_kernel(r, s))
        r.step("facts-pci", True, "NVIDIA GPUs in sysfs", lambda s: s_pci(r, s))
        r.step("facts-nvidia-smi", True, "nvidia-smi -q essentials", lambda s: s_nvsmi(r, s))
        r.step("facts-mem-raw", True, "raw memory partition words (PMC_BOOT_0, strap, status)", lambda s: s_mem_raw(r, s))
        r.step("facts-topo", False, "nvsidecar topo --json", lambda s: s_topo(r, s))
        r.lib, r.lib_how = resolve_libcuda(r)
        r.step("libcuda-status", True, "nvsidecar libcuda status of the installed libcuda", lambda s: s_libcuda_status(r, s))
        r.step("libcuda-verify-original", True, "libcuda verify of the original", lambda s: s_verify_original(r, s))
        r.step("libcuda-patch", True, "libcuda patch to a copy in a temporary directory", lambda s: s_patch(r, s))
        r.step("libcuda-verify-copy", True, "libcuda verify of the copy", lambda s: s_verify_copy(r, s))
        r.step("cuda-p2p", True, "nvsidecar p2p (device-local with one GPU)", lambda s: s_p2p(r, s))
        r.step("cuda-dmabuf-export", True, "dma-buf export of a device allocation", lambda s: s_export(r, s))
        r.step("module-build", True, "make module for the running kernel", lambda s: s_module_build(r, s))
        r.step("module-load", True, "insmod nvsidecar.ko", lambda s: s_module_load(r, s))
        r.step("module-status", True, "nvsidecar status: every GPU listed, none without a recipe read",
               lambda s: s_module_status(r, s))
        r.step("module-dmabuf-probe", True, "nvsidecar dmabuf probe --gpu N on a CUDA dma-buf",
               lambda s: s_module_probe(r, s))
        r.step("module-unload", True, "rmmod nvsidecar, kernel log clean", lambda s: s_module_unload(r, s))
        r.step("rdma-host", True, "nvsidecar rdma --loopback, host memory", lambda s: s_rdma_host(r, s))
        r.step("rdma-cuda-dmabuf", True, "nvsidecar rdma --loopback, cuda-dmabuf memory", lambda s: s_rdma_cuda(r, s))
        r.step("doctor", False, "nvsidecar doctor --json", lambda s: s_doctor(r, s))
    except KeyboardInterrupt:
        interrupted = True
        print("device run interrupted: stopped by a signal; the reports hold the steps that ran")
    finally:
        # An interrupted run leaves nothing behind either.
        cleanup = Step("cleanup", False, "cleanup")
        try:
            if r.module_loaded_here:
                r.run(["rmmod", "nvsidecar"], "quick", cleanup, check_budget=False)
            if isinstance(r.rxe, dict) and r.rxe.get("made_here"):
                rxe_teardown(r, cleanup)
        except Fail as e:
            print("device run cleanup failed: %s" % e)
            interrupted = True
        shutil.rmtree(r.work, ignore_errors=True)
    code, counts = report(r, interrupted)
    r.logf.close()
    os.rename(r.logtmp, r.logpath)
    print("device run: %d passed, %d failed, %d skipped (%s); exit %d; reports: %s, %s" % (
        counts["PASS"], counts["FAIL"], counts["SKIP"], r.mode(), code,
        os.path.join(r.out, "device-report.md"), os.path.join(r.out, "device-report.json")))
    return code


if __name__ == "__main__":
    sys.exit(main())
