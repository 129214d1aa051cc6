#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# topo and p2p without a GPU:
#  - topo on crafted lspci -xxxx dumps (tests/topo/, made by mkdump.py): a
#    5090 with 32 GiB ReBAR supported but 256 MiB current, ACS redirect on a
#    switch downstream port, a Gen3 x8 link, pair classes; JSON through
#    python3; unreadable and garbage dumps; this machine's sysfs;
#  - p2p against the fake multi-GPU libcuda (tests/p2p/fakecuda.c, built
#    here): correct matrices for several device counts and peer maps, one
#    corrupted byte caught with its offset, the ladder, bad options;
#  - every input checked before any CUDA work, and the exit status
#    following every level of the ladder (nccl-check itself: 62-nccl.sh);
#  - whose NCCL log (T3-17): another host's refused unless --log-host names
#    it, a multi-node log cut to this node's lines, a log without hosts
#    taken with a note, more GPUs in the log than in this node failing.
# Everything runs under ASan/UBSan/LSan; a subset again under valgrind.
set -u
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

asan=$NVS_ASAN
plain=$NVS_BUILD/plain
fake=$NVS_BUILD/fakecuda
work=$(mktemp -d /tmp/nvs-p2p.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$asan" "$plain" "$fake"
topo=$NVS_TOP/tests/topo
nccl=$NVS_TOP/tests/nccl

export ASAN_OPTIONS=exitcode=97:detect_leaks=1:abort_on_error=0
export LSAN_OPTIONS=exitcode=97
export UBSAN_OPTIONS=halt_on_error=1:exitcode=97:print_stacktrace=1
export NO_COLOR=1

if ! why=$(nvs_asan_build); then
	t_fail p2p-build-asan "$why"
	exit 0
fi
if ! make -C "$NVS_TOP/user" O="$plain" -j2 >"$work/build-plain.log" 2>&1; then
	t_fail p2p-build-plain "$(grep -m3 -E 'error' "$work/build-plain.log" | tr '\n' ' ')"
	exit 0
fi
if ! cc -std=gnu11 -Wall -Wextra -Werror -O2 -shared -fPIC -o "$fake/libcuda.so.1" \
	"$NVS_TOP/tests/p2p/fakecuda.c" 2>"$work/build-fake.log"; then
	t_fail p2p-build-fake "$(head -n 3 "$work/build-fake.log" | tr '\n' ' ')"
	exit 0
fi
t_pass p2p-build
bin=$asan/nvsidecar
lib=$fake/libcuda.so.1
# Debian's python3 (deps.list): a version manager's shim on PATH costs
# seconds per start on a loaded machine
python=/usr/bin/python3
[[ -x $python ]] || python=python3

# run ARGS...: the ASan CLI (at most 120 s); stdout in $work/out, stderr
# in $work/err, the status in $rc. check NAME WANT_RC [PYTHON] judges it
# (tests/lib.sh t_judge: d is the parsed JSON stdout, out and err the text).
run() { t_cmd "$work" 120 "$bin" "$@"; }
check() { t_judge "$work" "$@"; }
sanitizer_clean() { t_sanitizer_clean "$@"; }

# ---------------------------------------------------------------- topo
run topo --pci-dump "$topo/5090-switch.dump" --json
check topo-dump-json 1 '
gpus = {x["bdf"]: x for x in d["devices"] if x["role"] == "gpu"}
nics = [x for x in d["devices"] if x["role"] == "nic"]
assert sorted(gpus) == ["0000:03:00.0", "0000:04:00.0", "0000:05:00.0"], gpus.keys()
assert [n["bdf"] for n in nics] == ["0000:06:00.0"], nics
assert d["from_dump"] is True
g = gpus["0000:05:00.0"]
assert g["aperture"]["bar"] == 1 and g["aperture"]["bytes"] == 256 << 20, g["aperture"]
assert g["aperture"]["rebar_max"] == 32 << 30 and g["aperture"]["vram"] == 32 << 30
assert (g["link"]["speed_gen"], g["link"]["width"]) == (3, 8), g["link"]
assert (g["link"]["max_speed_gen"], g["link"]["max_width"]) == (5, 16)
g0 = gpus["0000:03:00.0"]
assert [p["bdf"] for p in g0["path"]] == ["0000:02:00.0", "0000:01:00.0", "0000:00:01.0"], g0["path"]
assert [p["port"] for p in g0["path"]] == ["switch downstream port", "switch upstream port", "root port"]
assert g0["path"][0]["acs_redirect"] is True and "RR" in g0["path"][0]["acs_ctrl"].split()
assert gpus["0000:04:00.0"]["path"][0]["acs_redirect"] is False
assert g0["aperture"]["bytes"] == 32 << 30
'
run topo --pci-dump "$topo/5090-switch.dump" --json
check topo-dump-pairs 1 '
lab = {x["label"]: x["bdf"] for x in d["devices"]}
cls = {tuple(sorted((lab[p["a"]], lab[p["b"]]))): p for p in d["pairs"]}
assert cls[("0000:03:00.0", "0000:04:00.0")]["class"] == "PIX", cls
assert cls[("0000:03:00.0", "0000:04:00.0")]["common_bridge"] == "0000:01:00.0"
assert cls[("0000:03:00.0", "0000:05:00.0")]["class"] == "PHB"
assert cls[("0000:04:00.0", "0000:06:00.0")]["class"] == "PHB"
assert len(d["pairs"]) == 6, len(d["pairs"])
'
run topo --pci-dump "$topo/5090-switch.dump" --json
check topo-dump-findings 1 '
f = {(x["id"], x["where"]): x for x in d["findings"]}
r = f[("rebar-small", "0000:05:00.0")]
assert r["severity"] == "warning" and "256 MiB of 32 GiB supported" in r["what"], r
assert "Resizable BAR" in r["fix"] and "Above 4G" in r["fix"] and r["why"]
a = f[("acs-redirect", "0000:02:00.0")]
assert "0000:03:00.0" in a["what"] and "0000:04:00.0" in a["what"] and "setpci" in a["fix"], a
l = f[("link-degraded", "0000:05:00.0")]
assert "x8" in l["what"] and "Gen3" in l["what"] and "x16" in l["what"], l
# the root port above the switch also redirects, but it is above the pair:
# peer traffic between the switched GPUs does not pass it
assert ("acs-redirect", "0000:00:01.0") not in f, f.keys()
assert ("acs-redirect", "0000:02:01.0") not in f
assert not any(k[0] == "rebar-small" and k[1] != "0000:05:00.0" for k in f)
assert len([x for x in d["findings"] if x["severity"] == "warning"]) == 3, f.keys()
'
run topo --pci-dump "$topo/5090-switch.dump"
check topo-dump-human 1 '
assert "BAR1 is 256 MiB of 32 GiB supported" in out and "why:" in out and "fix:" in out, out
assert "PIX" in out and "switch downstream port" in out
'
run topo --pci-dump "$topo/5090-switch.dump" --dump
check topo-dump-tsv 1 '
rows = [l.split("\t") for l in out.splitlines()]
assert all(r[0] in ("dev", "path", "pair", "finding") for r in rows), rows
assert ["pair", "GPU0", "GPU1", "PIX"] in rows
dev = [r for r in rows if r[0] == "dev" and r[2] == "0000:05:00.0"][0]
assert dev[4:8] == ["3", "8", "5", "16"] and dev[9] == str(256 << 20), dev
'
run topo --pci-dump "$topo/5090-clean.dump" --json
check topo-clean-no-warnings 0 '
assert [x for x in d["findings"] if x["severity"] == "warning"] == [], d["findings"]
assert d["pairs"][0]["class"] == "PIX"
'
run topo --pci-dump "$topo/5090-rebar256.dump" --json
check topo-rebar256 1 '
assert [x["id"] for x in d["findings"]] == ["rebar-small"], d["findings"]
'
# Slot classes: a GPU behind the chipset is named, one on CPU lanes is not
run topo --pci-dump "$topo/amd-chipset.dump" --json
check topo-slot-amd-chipset 1 '
f = {(x["id"], x["where"]): x for x in d["findings"]}
c = f[("slot-chipset", "0000:04:00.0")]
assert c["severity"] == "warning" and "0000:02:00.0 chipset switch" in c["what"], c
assert "16 GT/s x4, 7.9 GB/s" in c["what"] and "13.17 GB/s" in c["why"] and "CPU lanes" in c["fix"], c
assert ("slot-chipset", "0000:01:00.0") not in f, f.keys()
assert [x["id"] for x in d["findings"]] == ["slot-chipset"], f.keys()
assert d["pairs"][0]["class"] == "PHB"
s = {x["bdf"]: (x["slot"], x["slot_bridge"]) for x in d["devices"]}
assert s == {"0000:01:00.0": ("cpu", None), "0000:04:00.0": ("chipset", "0000:02:00.0")}, s
'
run topo --pci-dump "$topo/intel-pch.dump"
check topo-slot-intel-pch 1 '
assert "0000:02:00.0 [slot-chipset] GPU sits behind the chipset (0000:00:1c.0 PCH root port)" in out, out
assert "0000:01:00.0 [slot-chipset]" not in out and "why:" in out
dev = out.split("\n\nGPU")
assert "slot      cpu (CPU lanes)" in dev[1] and "0000:01:00.0" in dev[1], dev
assert "slot      chipset (behind 0000:00:1c.0, PCH root port)" in dev[2] and "0000:02:00.0" in dev[2], dev
# a dump names no driver: "driver none" on the placement line (it once
# broke the line after "driver ")
assert "pci0000:00, driver none\n" in dev[1] and "driver \n" not in out, dev[1]
'
run topo --pci-dump "$topo/intel-pch.dump" --dump
check topo-slot-tsv 1 '
dev = {r[2]: r[14:] for r in (l.split("\t") for l in out.splitlines()) if r[0] == "dev"}
assert dev == {"0000:01:00.0": ["cpu", "-"], "0000:02:00.0": ["chipset", "0000:00:1c.0"]}, dev
'
# alone in the PCH slot: no peer to slow down, a note and exit 0
awk 'BEGIN { RS = ""; ORS = "\n\n" } /^(00:00.0|00:1c.0|02:00.0) /' "$topo/intel-pch.dump" >"$work/pch1.dump"
run topo --pci-dump "$work/pch1.dump" --json
check topo-slot-chipset-alone 0 '
assert [(x["id"], x["severity"]) for x in d["findings"]] == [("slot-chipset", "info")], d["findings"]
'
# -x (64 bytes) dumps have no capabilities: reported, not invented
head -n 5 "$topo/5090-rebar256.dump" >"$work/x.dump"
sed -n '/^01:00.0/,+4p' "$topo/5090-rebar256.dump" >>"$work/x.dump"
run topo --pci-dump "$work/x.dump" --json
check topo-short-dump 0 '
g = [x for x in d["devices"] if x["role"] == "gpu"][0]
assert g["aperture"]["resizable"] is False and g["aperture"]["bytes"] is None, g
assert g["link"] == {}, g["link"]
'
run topo --pci-dump "$topo/garbage.dump"
check topo-garbage-dump 2 'assert "no devices with config space" in err and out == "", err'
run topo --pci-dump "$topo/binary.dump"
check topo-binary-dump 2 'assert "is not lspci output" in err, err'
run topo --pci-dump "$work/missing.dump"
check topo-missing-dump 2 'assert "PCI dump: Unable to open" in err and "No such file" in err, err'
# a path that opens but cannot be read (root may read any file)
run topo --pci-dump "$work"
check topo-unreadable-dump 2 'assert "PCI dump:" in err and "is a directory" in err, err'
# read once: a pipe or <(ssh node lspci -xxxx) is judged like the file
run topo --json --pci-dump <(cat "$topo/5090-rebar256.dump")
check topo-dump-pipe 1 'assert any(x["id"] == "rebar-small" for x in d["findings"]), d["findings"]'
run topo --pci-dump - <"$topo/5090-rebar256.dump"
check topo-dump-stdin 1 'assert "rebar-small" in out, out'
# bounded and never hanging: a device, and a FIFO with no writer
run topo --pci-dump /dev/zero
check topo-dump-dev-zero 2 'assert "character device" in err, err'
mkfifo "$work/fifo"
timeout 10 "$bin" topo --pci-dump "$work/fifo" >"$work/out" 2>"$work/err"
rc=$?
check topo-dump-fifo 2 'assert "named FIFO that read as empty" in err and "--pci-dump -" in err, err'
run topo --json --pci-dump "$work/missing.dump"
check topo-json-error 2 'assert d["ok"] is False and d["exit"] == 2 and "missing.dump" in d["error"], out'
run topo --gpu-ids zz:1
check topo-bad-ids 2 'assert "Invalid --gpu-ids" in err, err'
run topo --bogus
check topo-bad-arg 2 'assert "Invalid argument" in err, err'
run topo --help
check topo-help 0 'assert "Exit status" in out'
# this machine through sysfs: whatever is there must parse and be consistent
first=$(lspci -n 2>/dev/null | awk 'NR == 1 { print $3 }')
if [[ -n $first ]]; then
	run topo --json --gpu-ids "$first" --cmdline "quiet iommu=pt pcie_acs_override=downstream,multifunction"
	check topo-sysfs 0 '
assert d["from_dump"] is False and d["source"] == "sysfs"
assert d["kernel"]["iommu"] == "pt" and d["kernel"]["pcie_acs_override"] == "downstream,multifunction", d["kernel"]
assert len(d["devices"]) >= 1
assert any(f["id"] == "acs-override" for f in d["findings"]), d["findings"]
'
else
	t_skip topo-sysfs "lspci lists no PCI devices on this machine"
fi

# ---------------------------------------------------------------- p2p
# SIZE= and ITERS= replace the defaults: each option may be given once (review T3-20)
p2p() { run p2p --lib "$lib" --size "${SIZE:-256K}" --iters "${ITERS:-3}" "$@"; }

for n in 2 3 4; do
	FAKE_CUDA_DEVICES=$n p2p --json
	check "p2p-fake-$n-gpus" 0 "
n = $n
assert len(d['gpus']) == n and d['p2p_applicable'] is True
assert d['can_access_peer'] == [[a != b for b in range(n)] for a in range(n)], d['can_access_peer']
assert len(d['pairs']) == n * (n - 1)
for p in d['pairs']:
    for m in ('p2p_on', 'p2p_off'):
        r = p[m]
        assert r['ran'] and r['verified'] and r['wrong_bytes'] == 0 and r['first_mismatch'] is None, p
    # the fake's model: size / (latency + size / rate), 48.5 GB/s and
    # 0.4 us direct, 31.5 GB/s and 14.3 us staged; both directions at once
    # on separate streams
    size = d['size']
    on = size / (0.4e-6 + size / 48.5e9) / 1e9
    off = size / (14.3e-6 + size / 31.5e9) / 1e9
    assert abs(p['p2p_on']['uni_gbps'] - on) < 0.01 * on, (on, p)
    assert abs(p['p2p_off']['uni_gbps'] - off) < 0.01 * off, (off, p)
    assert abs(p['p2p_on']['bi_gbps'] - 2 * on) < 0.02 * on, (on, p)
    assert abs(p['p2p_on']['latency_us'] - 0.4) < 0.01 and abs(p['p2p_off']['latency_us'] - 14.3) < 0.01, p
assert all(g['local_verified'] for g in d['gpus'])
lv = {l['level']: l for l in d['ladder']['levels']}
assert lv[2]['state'] == 'pass' and lv[3]['state'] == 'not run', lv
"
done

# level 1 fails (two pairs without peer access): the run fails with it
FAKE_CUDA_DEVICES=3 FAKE_CUDA_NOPEER=0-2,2-0 p2p --json
check p2p-fake-peer-map 1 '
assert d["can_access_peer"] == [[False, True, False], [True, False, True], [False, True, False]], d["can_access_peer"]
pairs = {(p["src"], p["dst"]): p for p in d["pairs"]}
assert pairs[(0, 2)]["p2p_on"]["ran"] is False and pairs[(0, 2)]["p2p_off"]["verified"] is True
assert pairs[(0, 1)]["p2p_on"]["verified"] is True
lv = {l["level"]: l for l in d["ladder"]["levels"]}
assert lv[1]["state"] == "fail" and "2 of 6" in lv[1]["detail"], lv[1]
'

FAKE_CUDA_DEVICES=3 FAKE_CUDA_CORRUPT=2-0@4097 p2p --json
check p2p-fake-corruption-caught 1 '
pairs = {(p["src"], p["dst"]): p for p in d["pairs"]}
bad = pairs[(2, 0)]["p2p_on"]
assert bad["verified"] is False and bad["wrong_bytes"] == 1 and bad["first_mismatch"] == 4097, bad
# the staged path does not corrupt, and no other pair is affected
assert pairs[(2, 0)]["p2p_off"]["verified"] is True
for k, p in pairs.items():
    if k not in ((2, 0), (0, 2)):
        assert p["p2p_on"]["verified"] and p["p2p_off"]["verified"], (k, p)
# 0->2 copies back 2->0 over the same corrupting direct path
assert pairs[(0, 2)]["p2p_on"]["wrong_bytes"] == 0 and pairs[(0, 2)]["p2p_on"]["wrong_bytes_back"] == 1
lv = {l["level"]: l for l in d["ladder"]["levels"]}
assert lv[2]["state"] == "fail" and "offset 4097" in lv[2]["detail"], lv[2]
assert d["ladder"]["reached"] == 1, d["ladder"]
'
FAKE_CUDA_DEVICES=2 FAKE_CUDA_CORRUPT=1-0@0 p2p
check p2p-fake-corruption-human 1 '
assert "1->0 P2P on  MISMATCH copy: 1 wrong byte(s), first at offset 0" in out, out
assert "1->0 P2P off ok" in out
'
# the corruption at the last byte of the buffer, found by a full scan
FAKE_CUDA_DEVICES=2 FAKE_CUDA_CORRUPT=0-1@262143 p2p --json
check p2p-fake-corruption-last-byte 1 '
p = [x for x in d["pairs"] if (x["src"], x["dst"]) == (0, 1)][0]["p2p_on"]
assert p["first_mismatch"] == 262143 and p["wrong_bytes"] == 1, p
'

# ladder: bus ids mapped onto the crafted dumps. The fixtures are other
# hosts' logs (gpu01, gpu02: --log-host says so), cut to their first two
# GPUs to fit the two-GPU dumps (a log naming more GPUs than the node has
# fails level 3: "whose NCCL log" below).
ids=0000:03:00.0,0000:04:00.0
grep -v -E ' \[[2-7]\] NCCL ' "$nccl/nccl-2.21-single-process.log" >"$work/gpu01-2gpus.log"
grep -v -E ' \[[2-3]\] NCCL ' "$nccl/nccl-2.18-pdsh-shm.log" >"$work/gpu02-2gpus-shm.log"
FAKE_CUDA_BUSIDS=$ids SIZE=4M p2p --pci-dump "$topo/5090-clean.dump" --nccl-log "$work/gpu01-2gpus.log" --log-host gpu01 --json
check p2p-ladder-all-levels 0 '
lv = {l["level"]: l for l in d["ladder"]["levels"]}
assert [lv[i]["state"] for i in (1, 2, 3, 4)] == ["pass"] * 4, lv
assert "63.0 GB/s" in lv[4]["detail"] and "77%" in lv[4]["detail"], lv[4]
assert d["ladder"]["reached"] == 4
assert abs(d["gpus"][0]["link_gbps"] - 63.02) < 0.01
'
FAKE_CUDA_BUSIDS=$ids FAKE_CUDA_P2P_GBPS=20 SIZE=4M p2p --pci-dump "$topo/5090-clean.dump" --nccl-log "$work/gpu02-2gpus-shm.log" \
	--log-host gpu02 --json
# every failed level fails the run, not only level 2
check p2p-ladder-slow-and-shm 1 '
lv = {l["level"]: l for l in d["ladder"]["levels"]}
assert lv[3]["state"] == "fail" and "SHM" in lv[3]["detail"] and "gpu02 ranks 0->1" in lv[3]["detail"], lv[3]
assert lv[4]["state"] == "fail" and "32%" in lv[4]["detail"], lv[4]
assert d["ladder"]["reached"] == 2
'
FAKE_CUDA_BUSIDS=$ids p2p --pci-dump "$topo/5090-switch.dump"
check p2p-ladder-topology-warning 0 '
assert "acs-redirect" in out and "warn" in out, out
assert "reached level 2 of 4" in out, out
'
FAKE_CUDA_DEVICES=1 p2p --json
check p2p-one-gpu 0 '
assert d["p2p_applicable"] is False and d["pairs"] == []
assert d["gpus"][0]["local_verified"] is True
lv = {l["level"]: l for l in d["ladder"]["levels"]}
assert lv[2]["state"] == "n/a" and "not applicable" in lv[2]["detail"], lv
'
FAKE_CUDA_DEVICES=4 p2p --pairs 0-3,3-0 --json
check p2p-pairs-option 0 '
assert sorted((p["src"], p["dst"]) for p in d["pairs"]) == [(0, 3), (3, 0)], d["pairs"]
'
FAKE_CUDA_DEVICES=2 p2p --pairs 0-2
check p2p-bad-pairs 2 'assert "--pairs names GPU 2, but CUDA shows 2 GPU(s)" in err, err'
FAKE_CUDA_DEVICES=2 p2p --pairs 0-x
check p2p-bad-pairs-syntax 2 'assert "Invalid --pairs" in err, err'
# %d would wrap 4294967297 to 1 and test pair 0-1
FAKE_CUDA_DEVICES=2 p2p --pairs 0-4294967297
check p2p-pairs-overflow 2 'assert "Invalid --pairs" in err and not out, (out, err)'
# an unset $PAIRS must not test nothing and pass
FAKE_CUDA_DEVICES=2 p2p --pairs ''
check p2p-empty-pairs 2 'assert "Invalid --pairs" in err, err'
FAKE_CUDA_DEVICES=2 p2p --min-efficiency nan
check p2p-min-efficiency-nan 2 'assert "Invalid --min-efficiency" in err, err'
FAKE_CUDA_DEVICES=2 p2p --min-efficiency 1e-1
check p2p-min-efficiency-exponent 2 'assert "Invalid --min-efficiency" in err, err'
FAKE_CUDA_DEVICES=2 SIZE=17179869185G p2p
check p2p-size-overflow 2 'assert "Invalid --size" in err, err'
# inputs are checked before any CUDA work: the bad --lib is never reached
run p2p --lib "$work/nonexistent.so" --nccl-log "$work/none.log"
check p2p-nccl-log-first 2 'assert "--nccl-log" in err and "Unable to load" not in err and not out, (out, err)'
# a log without NCCL lines is refused up front too (the GPU work is never reached)
run p2p --lib "$work/nonexistent.so" --nccl-log "$nccl/garbage.log"
check p2p-nccl-log-no-nccl-lines 2 'assert "no NCCL INFO or WARN lines" in err and "garbage.log" in err and "Unable to load" not in err and not out, (out, err)'
run p2p --lib "$work/nonexistent.so" --pci-dump "$work/none.dump"
check p2p-pci-dump-first 2 'assert "none.dump" in err and "Unable to load" not in err, err'
# a FIFO as --lib would block dlopen() for ever (T3-11): refused before it
timeout 20 "$bin" p2p --lib "$work/fifo" >"$work/out" 2>"$work/err"
rc=$?
check p2p-lib-fifo 2 'assert "not a regular file (a FIFO)" in err and not out, (out, err)'
run p2p --lib /dev/null
check p2p-lib-device 2 'assert "not a regular file (a special file)" in err and not out, (out, err)'
run p2p --json --nccl-log "$work/none.log"
check p2p-json-error 2 'assert d == {"ok": False, "exit": 2, "error": d["error"]} and "none.log" in d["error"], (out, err)'
# a named FIFO read as empty says why, as nccl-check does (admin review of
# the CLI, item 2): no writer yet, or a writer that wrote nothing; in the
# JSON error document's input_notes too
run p2p --lib "$work/nonexistent.so" --nccl-log "$work/fifo"
check p2p-nccl-log-fifo-no-writer 2 '
assert "is a named FIFO that had no writer when it was opened" in err and "p2p --nccl-log -" in err, err
assert "no NCCL INFO or WARN lines in 0 line(s)" in err and "Unable to load" not in err and not out, (out, err)
'
run p2p --lib "$work/nonexistent.so" --nccl-log "$work/fifo" --json
check p2p-nccl-log-fifo-no-writer-json 2 '
assert d["ok"] is False and d["exit"] == 2 and "no NCCL INFO" in d["error"], d
n = d["input_notes"]
assert len(n) == 1 and "had no writer when it was opened" in n[0], n
'
# ...and so does a symbolic link to one (review of the CLI, L3): the link is
# resolved with stat calls, never opened to look (that would wait)
ln -s fifo "$work/fifo-link"
run p2p --lib "$work/nonexistent.so" --nccl-log "$work/fifo-link" --json
check p2p-nccl-log-fifo-link-no-writer 2 '
assert "fifo-link\x27 is a named FIFO that had no writer when it was opened" in err, err
n = d["input_notes"]
assert len(n) == 1 and "had no writer when it was opened" in n[0], n
'
rm -f "$work/fifo-link"
mkfifo "$work/fifo2"
(exec 3<>"$work/fifo2"; : >"$work/opened"; sleep 0.5) &
cpid=$!
for _ in $(seq 50); do [[ -e $work/opened ]] && break; sleep 0.05; done
run p2p --lib "$work/nonexistent.so" --nccl-log "$work/fifo2" --json
wait "$cpid" 2>/dev/null
check p2p-nccl-log-fifo-writer-empty 2 '
assert "whose writer closed it without writing anything" in err and "had no writer" not in err, err
n = d["input_notes"]
assert len(n) == 1 and "whose writer closed it without writing anything" in n[0], n
'
rm -f "$work/fifo2" "$work/opened"
# an NCCL log through a pipe (read once)
FAKE_CUDA_BUSIDS=$ids SIZE=4M p2p --pci-dump "$topo/5090-clean.dump" --json --log-host gpu01 \
	--nccl-log <(cat "$work/gpu01-2gpus.log")
check p2p-nccl-log-pipe 0 'lv = {l["level"]: l for l in d["ladder"]["levels"]}; assert lv[3]["state"] == "pass", lv[3]'

# ---------------------------------------------------------------- whose NCCL log (T3-17)
# NCCL's prefix names each line's host ("%s:%d:%d [%d] NCCL INFO ", the
# name up to its first dot); a log from another node is refused before any
# GPU work, with its host, this node's name and the two ways out.
node=$(hostname)
short=${node%%.*}
run p2p --lib "$work/nonexistent.so" --nccl-log "$nccl/nccl-2.21-single-process.log"
check p2p-log-other-host-refused 2 "
assert 'from gpu01, not from this node ($node)' in err, err
assert 'Run the check on gpu01, or pass --log-host gpu01 to read it here anyway' in err, err
assert 'Unable to load' not in err and not out, (out, err)
"
run p2p --lib "$work/nonexistent.so" --nccl-log "$nccl/nccl-2.21-single-process.log" --json
check p2p-log-other-host-refused-json 2 "
assert d['ok'] is False and d['exit'] == 2 and '--log-host gpu01' in d['error'], d
n = d['nccl_log']
assert n['hosts'] == ['gpu01'] and n['host_count'] == 1 and n['host_checked'] is False and n['host'] is None, n
assert n['node'] == '$node' and n['log_host'] is None and n['gpus_in_log'] is None, n
"
# several hosts, none of them this node: all are named
run p2p --lib "$work/nonexistent.so" --nccl-log "$nccl/nccl-2.14-mpirun-tag-output.log"
check p2p-log-other-hosts-refused 2 'assert "from 2 hosts (node01, node02), none of them this node" in err and "--log-host node01" in err, err'
# --log-host on a log that names no host cannot be checked: exit 2, and
# what to do (admin review of the CLI, item 5); the JSON error document too
sed -E 's/^[^ ]*:[0-9]+:[0-9]+ (\[[0-9]+\] NCCL)/\1/' "$nccl/nccl-2.21-single-process.log" >"$work/hostless-8.log"
run p2p --lib "$work/nonexistent.so" --nccl-log "$work/hostless-8.log" --log-host gpu01
check p2p-log-host-hostless-log 2 '
assert "carries no host names" in err and "--log-host gpu01 cannot be checked" in err, err
assert "drop --log-host" in err and "Unable to load" not in err and not out, (out, err)
'
run p2p --lib "$work/nonexistent.so" --nccl-log "$work/hostless-8.log" --log-host gpu01 --json
check p2p-log-host-hostless-log-json 2 '
assert d["ok"] is False and d["exit"] == 2 and "carries no host names" in d["error"], d
n = d["nccl_log"]
assert n["hosts"] == [] and n["log_host"] == "gpu01" and n["host_checked"] is False, n
'
# Two writers glued into one line: "...NCCL INFO Connectednode22:9202:9202
# [1] NCCL INFO Connected all trees" names no host "Connectednode22"
# (admin review of the CLI, item 4)
run p2p --lib "$work/nonexistent.so" --nccl-log "$nccl/nccl-2.23-python-logging.log" --json
check p2p-log-interleaved-no-host 2 '
n = d["nccl_log"]
assert n["hosts"] == ["node21", "node22"] and n["host_count"] == 2, n
assert "from 2 hosts (node21, node22)" in d["error"], d
'
# --log-host names a host the log does not hold
run p2p --lib "$work/nonexistent.so" --nccl-log "$nccl/nccl-2.21-single-process.log" --log-host gpu09
check p2p-log-host-not-in-log 2 'assert "has no lines of gpu09 (--log-host)" in err and "names 1 host(s), gpu01" in err, err'
# the same log, read here on purpose; a short name is the FQDN it begins
FAKE_CUDA_BUSIDS=$ids p2p --pci-dump "$topo/5090-clean.dump" --nccl-log "$work/gpu01-2gpus.log" --log-host GPU01.example.com --json
check p2p-log-host-accepted 0 '
n = d["nccl_log"]
assert n["log_host"] == "GPU01.example.com" and n["host"] == "gpu01" and n["host_checked"] is True, n
assert n["hosts"] == ["gpu01"] and n["other_host_lines"] == 0 and n["notes"] == [], n
assert n["gpus_in_log"] == 2 and n["node_gpus"] == 2 and n["gpu_count_ok"] is True, n
assert n["node_gpus_source"].endswith("5090-clean.dump"), n
assert d["ok"] is True and d["exit"] == 0
lv = {l["level"]: l for l in d["ladder"]["levels"]}
assert lv[3]["state"] == "pass" and lv[3]["detail"] == "all 4 intra-node connections use P2P", lv[3]
'
FAKE_CUDA_BUSIDS=$ids p2p --pci-dump "$topo/5090-clean.dump" --nccl-log "$work/gpu01-2gpus.log" --log-host gpu01
check p2p-log-host-accepted-text 0 "
assert 'host    gpu01 (--log-host; this node is $node); the log holds 1 host(s)' in out, out
assert 'GPUs    the log names 2 on gpu01; this node has 2 NVIDIA GPU(s)' in out, out
"
# a two-node job: node01 renamed to this node (upper case, as a short name
# matches either way); only its lines are judged, the other host is counted
sed "s/node01:/${short^^}:/" "$nccl/nccl-2.14-mpirun-tag-output.log" >"$work/multi.log"
FAKE_CUDA_BUSIDS=$ids p2p --pci-dump "$topo/5090-clean.dump" --nccl-log "$work/multi.log" --json
check p2p-log-multi-host 0 "
n = d['nccl_log']
assert n['hosts'] == ['${short^^}', 'node02'] and n['host_count'] == 2 and n['host'] == '${short^^}', n
assert n['host_checked'] is True and n['log_host'] is None and n['other_host_lines'] == 24, n
assert n['gpus_in_log'] == 2 and n['gpu_count_ok'] is True, n
lv = {l['level']: l for l in d['ladder']['levels']}
# node01's two ranks: one P2P connection each way, not the four of both nodes
assert lv[3]['state'] == 'pass' and lv[3]['detail'] == 'all 2 intra-node connections use P2P', lv[3]
"
FAKE_CUDA_BUSIDS=$ids p2p --pci-dump "$topo/5090-clean.dump" --nccl-log "$work/multi.log"
check p2p-log-multi-host-text 0 "
assert 'the log holds 2 host(s) (${short^^}, node02): only the lines of ${short^^} are judged, 24 line(s) of other hosts are not' in out, out
"
# a 64-character host name (HOST_NAME_MAX) is this node's whole: cut to 63
# it named no node (admin review of the CLI, item 6). A UTS namespace gives
# this node the name; the log's lines name it.
long=n123456789012345678901234567890123456789012345678901234567890123
if [[ ${#long} == 64 ]] && unshare -u true 2>/dev/null; then
	sed "s/^gpu01:/$long:/" "$work/gpu01-2gpus.log" >"$work/long.log"
	FAKE_CUDA_BUSIDS=$ids t_cmd "$work" 120 unshare -u sh -c 'hostname "$1" && shift && exec "$@"' sh "$long" \
		"$bin" p2p --lib "$lib" --size 256K --iters 3 --pci-dump "$topo/5090-clean.dump" --nccl-log "$work/long.log" --json
	check p2p-log-host-64-chars 0 "
n = d['nccl_log']
assert n['node'] == '$long' and n['hosts'] == ['$long'] and n['host'] == '$long', n
assert n['host_checked'] is True and n['gpus_in_log'] == 2, n
"
else
	t_skip p2p-log-host-64-chars "unshare -u (a UTS namespace) is not permitted here"
fi
# a log whose lines name no host: judged, with a note that it could not be checked
sed -E 's/^[^ ]*:[0-9]+:[0-9]+ (\[[0-9]+\] NCCL)/\1/' "$work/gpu01-2gpus.log" >"$work/hostless.log"
FAKE_CUDA_BUSIDS=$ids p2p --pci-dump "$topo/5090-clean.dump" --nccl-log "$work/hostless.log" --json
check p2p-log-hostless 0 '
n = d["nccl_log"]
assert n["hosts"] == [] and n["host_count"] == 0 and n["host_checked"] is False and n["host"] is None, n
assert len(n["notes"]) == 1 and "name no host" in n["notes"][0] and "could not be checked" in n["notes"][0], n
assert n["gpus_in_log"] == 2 and n["gpu_count_ok"] is True, n
assert {l["level"]: l for l in d["ladder"]["levels"]}[3]["state"] == "pass"
'
FAKE_CUDA_BUSIDS=$ids p2p --pci-dump "$topo/5090-clean.dump" --nccl-log "$work/hostless.log"
check p2p-log-hostless-text 0 '
assert "host    not checked: its lines name no host" in out and "could not be checked" in out, out
'
# eight GPUs in the log, two in this node: not this node's current hardware
FAKE_CUDA_BUSIDS=$ids p2p --pci-dump "$topo/5090-clean.dump" --nccl-log "$nccl/nccl-2.21-single-process.log" --log-host gpu01 --json
check p2p-log-gpu-count-mismatch 1 '
assert d["ok"] is False and d["exit"] == 1, d
n = d["nccl_log"]
assert n["gpus_in_log"] == 8 and n["node_gpus"] == 2 and n["gpu_count_ok"] is False, n
lv = {l["level"]: l for l in d["ladder"]["levels"]}
t = lv[3]["detail"]
assert lv[3]["state"] == "fail" and "names 8 GPUs on gpu01, this node has 2 NVIDIA GPU(s)" in t, t
assert "not from this node" in t and "the log alone: all 16 intra-node connections use P2P" in t, t
assert lv[1]["state"] == lv[2]["state"] == "pass", lv
'
FAKE_CUDA_BUSIDS=$ids p2p --pci-dump "$topo/5090-clean.dump" --nccl-log "$nccl/nccl-2.21-single-process.log" --log-host gpu01
check p2p-log-gpu-count-mismatch-text 1 'assert "the log names 8 on gpu01; this node has 2 NVIDIA GPU(s)" in out and "MORE THAN THIS NODE HAS" in out, out'
# one process per GPU with CUDA_VISIBLE_DEVICES: every prefix says [0],
# the bus ids still tell eight GPUs apart
sed -E 's/ \[[0-9]+\] NCCL / [0] NCCL /; s/cudaDev [0-9]+/cudaDev 0/' "$nccl/nccl-2.21-single-process.log" >"$work/cvd.log"
FAKE_CUDA_BUSIDS=$ids p2p --pci-dump "$topo/5090-clean.dump" --nccl-log "$work/cvd.log" --log-host gpu01 --json
check p2p-log-gpu-count-bus-ids 1 '
n = d["nccl_log"]
assert n["gpus_in_log"] == 8 and n["gpu_count_ok"] is False, n
'
# this node's GPU count unknown (PCI facts without an NVIDIA GPU): said, not failed
awk 'BEGIN { RS = ""; ORS = "\n\n" } /^(00:00.0|00:1c.0) /' "$topo/intel-pch.dump" >"$work/nogpu.dump"
FAKE_CUDA_BUSIDS=$ids p2p --pci-dump "$work/nogpu.dump" --nccl-log "$nccl/nccl-2.21-single-process.log" --log-host gpu01 --json
check p2p-log-node-gpus-unknown 0 '
n = d["nccl_log"]
assert n["gpus_in_log"] == 8 and n["node_gpus"] is None and n["gpu_count_ok"] is None, n
assert any("GPU count is unknown" in x for x in n["notes"]), n
assert {l["level"]: l for l in d["ladder"]["levels"]}[3]["state"] == "pass"
'
# --log-host: once, with a value, and only with a log to name
run p2p --nccl-log "$work/gpu01-2gpus.log" --log-host gpu01 --log-host gpu02
check p2p-log-host-twice 2 'assert "--log-host'"'"' given twice" in err, err'
run p2p --nccl-log "$work/gpu01-2gpus.log" --log-host ''
check p2p-log-host-empty 2 'assert "Empty value for" in err, err'
run p2p --log-host gpu01
check p2p-log-host-without-log 2 'assert "give --nccl-log FILE too" in err, err'
SIZE=12X p2p
check p2p-bad-size 2 'assert "Invalid --size" in err, err'
ITERS=0 p2p
check p2p-bad-iters 2 'assert "Invalid --iters" in err, err'
run p2p --lib "$work/nonexistent.so"
check p2p-no-libcuda 2 'assert "Unable to load" in err and "check the path given" in err and "NVIDIA driver" not in err, err'
run p2p --lib "$NVS_TOP/tests/topo/garbage.dump"
check p2p-lib-not-elf 2 'assert "Unable to load" in err, err'
run p2p --lib libm.so.6
check p2p-lib-not-cuda 2 'assert "does not look like libcuda" in err, err'
FAKE_CUDA_INIT_ERROR=3 p2p
check p2p-cuinit-fails 3 'assert "Unable to initialise CUDA" in err and "CUDA_ERROR_NOT_INITIALIZED" in err, err'
FAKE_CUDA_DEVICES=0 p2p
check p2p-no-devices 3 'assert "No CUDA devices" in err, err'
p2p --pci-dump "$topo/garbage.dump"
check p2p-bad-pci-dump 2 'assert "no devices with config space" in err, err'

# ------------------------------------------------ a busy GPU outside --pairs
# Contexts only on the GPUs that --pairs names (admin review M2): GPU 2, held
# by a job in exclusive-process mode, does not stop the pair 0-1; without
# --pairs every GPU is used, and the busy one is named (exit 12, L7), as is
# one in compute mode PROHIBITED, with its own text (exit 1).
FAKE_CUDA_DEVICES=3 FAKE_CUDA_BUSY=2 p2p --pairs 0-1 --json
check p2p-pairs-busy-gpu-not-named 0 '
g = d["gpus"]
assert [x["used"] for x in g] == [True, True, False], g
assert g[0]["local_verified"] and g[1]["local_verified"], g
assert [(p["src"], p["dst"]) for p in d["pairs"]] == [(0, 1)], d["pairs"]
'
FAKE_CUDA_DEVICES=3 FAKE_CUDA_BUSY=2 p2p --pairs 0-1
check p2p-pairs-busy-gpu-not-named-text 0 '
assert "GPU2 " in out and "not used (in no --pairs pair)" in out, out
assert "FAILED" not in out, out
'
FAKE_CUDA_DEVICES=3 FAKE_CUDA_BUSY=2 p2p
check p2p-busy-gpu-named 12 '
assert "Unable to create a CUDA context on GPU 2 (NVIDIA GeForce RTX 5090 (fake 2), 0000:03:00.0): CUDA_ERROR_DEVICE_UNAVAILABLE" in err, err
assert "exclusive-process mode; --pairs can leave it out" in err, err
'
FAKE_CUDA_DEVICES=3 FAKE_CUDA_BUSY=2 p2p --pairs 1-2
check p2p-pairs-busy-gpu-named 12 '
assert "on GPU 2 (" in err and "--pairs can leave it out" not in err, err
'
FAKE_CUDA_DEVICES=3 FAKE_CUDA_PROHIBITED=1 p2p
check p2p-prohibited-gpu-named 1 '
assert "Unable to create a CUDA context on GPU 1 (NVIDIA GeForce RTX 5090 (fake 1), 0000:02:00.0): its compute mode is PROHIBITED" in err, err
assert "nvidia-smi -i 0000:02:00.0 -c DEFAULT" in err and "busy or unavailable" not in err, err
'
FAKE_CUDA_DEVICES=3 FAKE_CUDA_PROHIBITED=1 p2p --pairs 0-2,2-0
check p2p-pairs-prohibited-gpu-not-named 0 'assert "PROHIBITED" not in err, err'
# ---------------------------------------------------------------- valgrind
if ! command -v valgrind >/dev/null; then
	t_skip p2p-valgrind "valgrind is not installed (scripts/deps.sh installs it)"
else
	bad=0
	# a representative subset: one of each subcommand and error path
	for args in "topo --pci-dump $topo/5090-switch.dump --json" \
		"topo --pci-dump $topo/binary.dump" \
		"p2p --lib $lib --size 64K --iters 2 --pci-dump $topo/5090-switch.dump" \
		"p2p --lib $lib --size 64K --iters 2 --nccl-log $work/multi.log --pci-dump $topo/5090-clean.dump" \
		"p2p --lib $lib --nccl-log $nccl/nccl-2.14-mpirun-tag-output.log --json"; do
		# shellcheck disable=SC2086
		FAKE_CUDA_DEVICES=2 FAKE_CUDA_CORRUPT=1-0@7 valgrind -q --error-exitcode=99 \
			--leak-check=full --errors-for-leak-kinds=definite \
			"$plain/nvsidecar" $args >"$work/vg.out" 2>&1
		if (($? == 99)); then
			bad=1
			t_fail "p2p-valgrind" "$args: $(grep -m2 '==' "$work/vg.out" | tr '\n' ' ')"
		fi
	done
	((bad)) || t_pass p2p-valgrind
fi
exit 0
