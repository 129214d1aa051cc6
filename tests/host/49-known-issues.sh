#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# The doctor's known-issues layer (check/known_issues.c, check/doctor_known.c)
# on simulated nodes: each node is a tree under NVS_DOCTOR_ROOT (/proc and
# /sys files as the kernel and the NVIDIA driver print them), a
# /proc/driver/nvidia/version file and a directory of libraries with the
# real sonames and version functions, built here (NVS_VERSIONS_LIBDIR).
# Every row of the shipped table gets a node that matches and one that
# does not; a test table drives each version reader and predicate; a
# broken table is an admin error with file:line that hides no other row;
# the exit status follows the exit table (nvsidecar(8)); and
# docs/known-issues.md is what scripts/known-issues-md makes of the table.
set -u
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

top=$NVS_TOP
# the build 45-doctor made (same flags): no second build of the helper in a full run
bld=$NVS_BUILD/doctor-u
table=$top/scripts/nvsidecar/known-issues.tsv
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH NO_COLOR NVS_VERSIONS_LIBDIR
export NVS_LIBCUDA_STATE=$work/state

if ! make -s -C "$top/user" O="$bld" WERROR=1 -j2 >"$work/build" 2>&1; then
	t_fail known-build "$(tail -5 "$work/build" | tr '\n' ' ')"
	exit 0
fi
bin=$bld/nvsidecar

# --- docs/known-issues.md is generated from the table --------------------------
if "$top/scripts/known-issues-md" "$table" >"$work/page.md" 2>"$work/err" &&
	cmp -s "$work/page.md" "$top/docs/known-issues.md"; then
	t_pass known-page-generated
else
	t_fail known-page-generated "docs/known-issues.md differs from scripts/known-issues-md's output: run scripts/known-issues-md >docs/known-issues.md ($(head -c 200 "$work/err"))"
fi

# the claims checked and left out (#- lines) end the page; a malformed one is
# an error with file:line, not a claim dropped in silence
if "$py" -c '
import sys
p = open(sys.argv[1], encoding="utf-8").read()
tail = p.split("\n## Claims checked and not in the table\n", 1)[1]
assert "\n## " not in tail, "the claims are not the last section"
heads = [l[4:] for l in tail.splitlines() if l.startswith("### ")]
assert heads[0].startswith("NCCL before 2.27.5") and heads[1].startswith("UCX 1.21"), heads
for u in ("noonghunna/club-3090/pull/897", "ggml-org/llama.cpp/pull/24491", "openucx/ucx/pull/11419",
          "openucx/ucx/pull/11475"):
    assert "<https://github.com/" + u + ">" in tail, u
' "$work/page.md" 2>"$work/err"; then
	t_pass known-page-claims
else
	t_fail known-page-claims "$(tail -1 "$work/err")"
fi
printf '#-\tclaim\tno sources\n' >"$work/claims.tsv"
if ! "$top/scripts/known-issues-md" "$work/claims.tsv" >/dev/null 2>"$work/err" &&
	grep -q "claims.tsv:1: a #- line is" "$work/err"; then
	t_pass known-page-claims-bad
else
	t_fail known-page-claims-bad "a #- line with two columns was accepted: $(head -c 200 "$work/err")"
fi

# --- fixtures ------------------------------------------------------------------
# node ROOT KERNEL MODULES MEMORY_PEERS(0/1) REGISTRYDWORDS: the files the doctor
# reads under NVS_DOCTOR_ROOT, in the kernel's and nvidia.ko's formats
# (/proc/modules: name size refcount deps state address; params: nv-procfs.c's
# "%s: %u" lines, then RegistryDwords: "%s").
node() {
	local r=$1
	mkdir -p "$r/proc/sys/kernel" "$r/proc/driver/nvidia" "$r/sys/kernel/mm"
	echo "$2" >"$r/proc/sys/kernel/osrelease"
	: >"$r/proc/modules"
	for m in $3; do
		echo "$m 12288 0 - Live 0x0000000000000000" >>"$r/proc/modules"
	done
	[[ $4 == 1 ]] && mkdir -p "$r/sys/kernel/mm/memory_peers/nv_mem"
	printf 'ResmanDebugLevel: 4294967295\nRmLogonRC: 1\nModifyDeviceFiles: 1\nRegistryDwords: "%s"\nRegistryDwordsPerDevice: ""\nRmMsg: ""\n' \
		"$5" >"$r/proc/driver/nvidia/params"
}
open_line() { echo "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  $1  Release Build  (builder@host)  Thu Jan  1 00:00:00 UTC 2026"; }
prop_line() { echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  $1  Thu Jan  1 00:00:00 UTC 2026"; }

# lib DIR FILE SONAME [C source]: a shared library with the real soname, and the soname link
lib() {
	mkdir -p "$1"
	printf '%s\n' "${4:-int nvs_fixture;}" >"$work/lib.c"
	gcc -shared -fPIC -O0 -Wl,-soname,"$3" -o "$1/$2" "$work/lib.c" && ln -sf "$2" "$1/$3"
}

# libdir A: every reader answers through the library's own version function
# (NCCL_VERSION_CODE 22703 = 2.27.3; fi_version() = FI_VERSION(1, 22)); the
# files are named as the projects' builds name them.
la=$work/libs-a
lib "$la" libnccl.so.2.27.3 libnccl.so.2 'int ncclGetVersion(int *v) { *v = 22703; return 0; }' &&
	lib "$la" libucp.so.0.0.0 libucp.so.0 \
		'void ucp_get_version(unsigned *a, unsigned *b, unsigned *c) { *a = 1; *b = 21; *c = 0; }' &&
	lib "$la" libfabric.so.1.25.0 libfabric.so.1 'unsigned fi_version(void) { return (1u << 16) | 22; }' &&
	lib "$la" libibverbs.so.1.14.44.0 libibverbs.so.1 ||
	{ t_fail known-fixtures "gcc could not build the fixture libraries"; exit 0; }
# libdir B: an NCCL without ncclGetVersion (the soname's file name says 2.26.2); nothing else
lb=$work/libs-b
lib "$lb" libnccl.so.2.26.2 libnccl.so.2 || { t_fail known-fixtures "gcc could not build libs-b"; exit 0; }
# libcuda files: the doctor reads libcuda's version from the real file's name
lib "$work/cuda615" libcuda.so.615.71.09 libcuda.so.1 && lib "$work/cuda590" libcuda.so.590.48.01 libcuda.so.1 ||
	{ t_fail known-fixtures "gcc could not build the libcuda files"; exit 0; }

# run NAME [doctor args]: the doctor's JSON for a node, in $work/NAME.json; rc in $work/NAME.rc
run() {
	local name=$1
	shift
	"$bin" doctor --json "$@" >"$work/$name.json" 2>"$work/$name.err"
	echo $? >"$work/$name.rc"
}
# known NAME: "id=RESULT ..." for the node's known-* checks, sorted
known() {
	"$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(sorted(c["name"][6:] + "=" + c["result"] for c in d["checks"]
                      if c["name"].startswith("known-") and c["name"] not in ("known-issues", "known-issues-table"))))
' "$work/$1.json" 2>&1
}

# --- the shipped table: each row matches one node and not another ---------------
unset NVSIDECAR_DATADIR
node "$work/m" 6.8.0-90-generic "nvidia_peermem ib_core nvidia" 0 ""
NVS_DOCTOR_ROOT=$work/m NVS_NVIDIA_VERSION_FILE=$work/none NVSIDECAR_DATADIR=$top/scripts/nvsidecar \
	run m --lib "$work/cuda615/libcuda.so.615.71.09"
got=$(known m)
want="libcuda-615-six-sites=WARN peermem-no-memory-peers=WARN"
if [[ $got == "$want" ]] && "$py" -c '
import json, sys
d = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}
p, l, k = d["known-peermem-no-memory-peers"], d["known-libcuda-615-six-sites"], d["known-issues"]
assert p["message"].startswith("kernel 6.8.0-90-generic: Kernels from 6.4 on"), p
assert "https://github.com/ROCm/rccl/pull/1328" in p["fix"] and "dma-buf" in p["fix"], p
assert l["message"].startswith("libcuda 615.71.09: "), l
assert "https://github.com/Duanyll/" in l["fix"], l
assert "known-issues-table" not in d, d["known-issues-table"]
assert k["result"] == "OK" and k["message"].startswith("2 of 3 known issues apply") and "docs/known-issues.md" in k["message"], k
' "$work/m.json"; then
	t_pass known-shipped-match
else
	t_fail known-shipped-match "got '$got', want '$want'"
fi

# each row's own non-matching node: an older kernel, memory_peers present, no
# nvidia_peermem, another libcuda
node "$work/n1" 6.1.0-28-amd64 "nvidia_peermem nvidia" 0 ""
node "$work/n2" 6.8.0-90-generic "nvidia_peermem nvidia" 1 ""
node "$work/n3" 6.8.0-90-generic "nvidia ib_core" 0 ""
miss=
for n in n1 n2 n3; do
	NVS_DOCTOR_ROOT=$work/$n NVS_NVIDIA_VERSION_FILE=$work/none NVSIDECAR_DATADIR=$top/scripts/nvsidecar \
		run "$n" --lib "$work/cuda590/libcuda.so.590.48.01"
	got=$(known "$n")
	[[ -z $got ]] || miss+=" $n:$got"
done
[[ -z $miss ]] && t_pass known-shipped-no-match || t_fail known-shipped-no-match "rows matched:$miss"

# p2p-static-bar1: two GB20x GPUs (the dump's) on the open driver without both
# overrides match, one key alone too; one GB20x, both keys set or the
# proprietary driver do not
sb() { # NAME DUMP VERSION_LINE REGISTRYDWORDS
	node "$work/$1" 6.12.0 "nvidia" 0 "$4"
	echo "$3" >"$work/$1-version"
	NVS_DOCTOR_ROOT=$work/$1 NVS_NVIDIA_VERSION_FILE=$work/$1-version NVSIDECAR_DATADIR=$top/scripts/nvsidecar \
		run "$1" --lib "$work/cuda590/libcuda.so.590.48.01" --pci-dump "$top/tests/topo/$2"
}
sb s 5090-clean.dump "$(open_line 610.43.03)" ""
sb s-half 5090-clean.dump "$(open_line 610.43.03)" "RMForceStaticBar1=1"
got="$(known s) $(known s-half)"
want="p2p-static-bar1=WARN p2p-static-bar1=WARN"
if [[ $got == "$want" ]] && "$py" -c '
import json, sys
d = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}
s = d["known-p2p-static-bar1"]
assert s["message"].startswith("driver 610.43.03: ") and "ncclCommInitRank" in s["message"], s
assert s["message"].endswith("(GB20x GPUs here: 0000:03:00.0, 0000:04:00.0)"), s
assert "RMForceStaticBar1=1;PeerMappingOverride=1" in s["fix"] and "/etc/modprobe.d/" in s["fix"], s
for u in ("issues/873", "pull/875", "pull/880"):
    assert "https://github.com/noonghunna/club-3090/" + u in s["fix"], (u, s)
' "$work/s.json"; then
	t_pass known-static-bar1-match
else
	t_fail known-static-bar1-match "got '$got', want '$want'"
fi
sb s-one 5090-rebar256.dump "$(open_line 610.43.03)" ""
sb s-keys 5090-clean.dump "$(open_line 610.43.03)" "RMForceStaticBar1=1;PeerMappingOverride=1"
sb s-prop 5090-clean.dump "$(prop_line 610.43.03)" ""
miss=
for n in s-one s-keys s-prop; do
	got=$(known "$n")
	[[ -z $got ]] || miss+=" $n:$got"
done
[[ -z $miss ]] && t_pass known-static-bar1-no-match || t_fail known-static-bar1-no-match "rows matched:$miss"

# --- the version readers and predicates, through a test table ------------------
mkdir -p "$work/data"
tab() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@"; }
{
	echo "# a test table: one row per reader"
	tab t-nccl nccl '>=2.27.0,<2.27.5' - WARN 'nccl in range' 'fix it' https://example.org/nccl
	tab t-nccl-name nccl '=2.26.2' - WARN 'nccl by file name' 'fix it' https://example.org/nccl
	tab t-ucx ucx '=1.21.0' - WARN 'ucx' 'fix it' https://example.org/ucx
	tab t-fabric libfabric '>=1.22,<1.23' - WARN 'libfabric' 'fix it' https://example.org/fabric
	tab t-rdma rdma-core '=44.0' - FAIL 'rdma-core' 'fix it' https://example.org/rdma
	tab t-open driver '>=610.43.03' 'flavour:open & reg:RMForceStaticBar1=1 & reg:PeerMappingOverride=0x1' WARN \
		'open driver with the overrides' 'fix it' https://example.org/drv
	tab t-prop driver '*' 'flavour:proprietary & !(reg:RMForceStaticBar1=1 | have:ucx)' WARN \
		'proprietary driver, no override' 'fix it' https://example.org/drv
	tab t-kernel - '*' 'kernel>6.7 & kernel<6.9 & module:nvidia-peermem' WARN 'kernel and module' 'fix it' \
		https://example.org/k
	printf 't-bad\tnccl\t>=2.x\t-\tWARN\tbad version\tfix\thttps://example.org/\n'
	tab t-bad2 nccl '*' 'module:nvidia & (kernel>=6' WARN 'bad condition' 'fix' https://example.org/
	printf 't-tab\tnccl\t*\t-\tWARN\ta trailing tab\tfix\thttps://example.org/\t\n'
} >"$work/data/known-issues.tsv"

node "$work/ra" 6.8.0-90-generic "nvidia_peermem nvidia" 0 "RMForceStaticBar1=1;PeerMappingOverride=1"
open_line 610.43.03 >"$work/ra-version"
NVS_DOCTOR_ROOT=$work/ra NVS_NVIDIA_VERSION_FILE=$work/ra-version NVS_VERSIONS_LIBDIR=$la \
	NVSIDECAR_DATADIR=$work/data run ra
got=$(known ra)
want="t-fabric=WARN t-kernel=WARN t-nccl=WARN t-open=WARN t-rdma=FAIL t-ucx=WARN"
[[ $got == "$want" ]] && t_pass known-readers-functions || t_fail known-readers-functions "got '$got', want '$want'"

node "$work/rb" 6.12.0 "nvidia" 0 ""
prop_line 595.71.05 >"$work/rb-version"
NVS_DOCTOR_ROOT=$work/rb NVS_NVIDIA_VERSION_FILE=$work/rb-version NVS_VERSIONS_LIBDIR=$lb \
	NVSIDECAR_DATADIR=$work/data run rb
got=$(known rb)
want="t-nccl-name=WARN t-prop=WARN"
[[ $got == "$want" ]] && t_pass known-readers-names || t_fail known-readers-names "got '$got', want '$want'"

# the messages name the version each reader found
"$py" -c '
import json, sys
d = {c["name"]: c["message"] for c in json.load(open(sys.argv[1]))["checks"]}
want = {"known-t-nccl": "nccl 2.27.3: ", "known-t-ucx": "ucx 1.21.0: ", "known-t-fabric": "libfabric 1.22: ",
        "known-t-rdma": "rdma-core 44.0: ", "known-t-open": "driver 610.43.03: "}
bad = [k for k, v in want.items() if not d.get(k, "").startswith(v)]
assert not bad, [(k, d.get(k)) for k in bad]
' "$work/ra.json" 2>"$work/err" && t_pass known-readers-versions ||
	t_fail known-readers-versions "$(tail -1 "$work/err")"

# --- a broken table: file:line for each bad row, the good rows still judged ------
"$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
errs = [c["message"] for c in d["checks"] if c["name"] == "known-issues-table"]
assert all(c["result"] == "WARN" for c in d["checks"] if c["name"] == "known-issues-table")
path = sys.argv[2]
assert any(e.startswith(path + ":10: versions `>=2.x'"'"'") for e in errs), errs
assert any(e.startswith(path + ":11: condition: missing `)'"'"'") for e in errs), errs
assert any(e.startswith(path + ":12: 9 tab-separated columns") for e in errs), errs
assert len(errs) == 3, errs
' "$work/ra.json" "$work/data/known-issues.tsv" 2>"$work/err" && t_pass known-table-bad-rows ||
	t_fail known-table-bad-rows "$(tail -1 "$work/err")"

# gpus: names a family it knows and needs a comparison and a count
mkdir -p "$work/data-g"
{
	tab g-family - '*' 'gpus:gb99>=2' WARN 'c' 'f' https://example.org/g
	tab g-count - '*' 'flavour:open & gpus:gb20x' WARN 'c' 'f' https://example.org/g
	tab g-ok - '*' 'gpus:gb20x=2 & gpus:nvidia>=2 & !gpus:gb20x<2' WARN 'c' 'f' https://example.org/g
} >"$work/data-g/known-issues.tsv"
NVS_DOCTOR_ROOT=$work/s NVS_NVIDIA_VERSION_FILE=$work/s-version NVSIDECAR_DATADIR=$work/data-g \
	run g --lib "$work/cuda590/libcuda.so.590.48.01" --pci-dump "$top/tests/topo/5090-clean.dump"
"$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
errs = [c["message"] for c in d["checks"] if c["name"] == "known-issues-table"]
path = sys.argv[2]
assert errs == [path + ":1: condition: gpus:gb99 names no GPU family; known: gb20x, nvidia",
                path + ":2: condition: gpus:gb20x needs >=, <=, >, < or = and a count, e.g. gpus:gb20x>=2"], errs
assert [c["name"] for c in d["checks"] if c["name"].startswith("known-g")] == ["known-g-ok"]
' "$work/g.json" "$work/data-g/known-issues.tsv" 2>"$work/err" && t_pass known-table-gpus ||
	t_fail known-table-gpus "$(tail -1 "$work/err")"

# no table at all: a SKIP that says where it looked, not a failure
NVS_DOCTOR_ROOT=$work/rb NVS_NVIDIA_VERSION_FILE=$work/none NVSIDECAR_DATADIR=$work/nowhere run none
"$py" -c '
import json, sys
d = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}
k = d["known-issues"]
assert k["result"] == "SKIP" and "nowhere/known-issues.tsv" in k["message"] and "NVSIDECAR_DATADIR" in k["fix"], k
' "$work/none.json" 2>"$work/err" && t_pass known-table-missing || t_fail known-table-missing "$(tail -1 "$work/err")"

# --- a table that is there but not one: bounded, never a hang, never an OK ----
# (review A1, A2, A11) each is a WARN known-issues check naming the file and
# what it is; the doctor finishes within seconds whatever the file is.
# bad NAME SETUP: a data directory $work/bad-NAME whose known-issues.tsv SETUP makes
bad_table() {
	local d=$work/bad-$1
	mkdir -p "$d"
	eval "$2"
	NVS_DOCTOR_ROOT=$work/rb NVS_NVIDIA_VERSION_FILE=$work/none NVSIDECAR_DATADIR=$d \
		timeout -k 2 20 "$bin" doctor --json >"$work/bad-$1.json" 2>"$work/bad-$1.err"
	echo $? >"$work/bad-$1.rc"
}
# known_check NAME RESULT TEXT: the known-issues check of bad-NAME has RESULT and TEXT in its message
known_check() {
	"$py" -c '
import json, sys
d = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}
k = d["known-issues"]
assert k["result"] == sys.argv[2] and sys.argv[3] in k["message"], k
' "$work/bad-$1.json" "$2" "$3" 2>"$work/err"
}
bad_table zero 'ln -s /dev/zero "$d/known-issues.tsv"'
[[ $(cat "$work/bad-zero.rc") != 124 ]] && known_check zero WARN "is not a regular file (a character device)" &&
	t_pass known-table-dev-zero ||
	t_fail known-table-dev-zero "rc $(cat "$work/bad-zero.rc"): $(tail -1 "$work/err")"
bad_table fifo 'mkfifo "$d/known-issues.tsv"'
[[ $(cat "$work/bad-fifo.rc") != 124 ]] && known_check fifo WARN "is not a regular file (a FIFO)" &&
	t_pass known-table-fifo ||
	t_fail known-table-fifo "rc $(cat "$work/bad-fifo.rc") (124: it hung): $(tail -1 "$work/err")"
bad_table dir 'mkdir "$d/known-issues.tsv"'
known_check dir WARN "known-issues.tsv' is a directory" && t_pass known-table-dir ||
	t_fail known-table-dir "$(tail -1 "$work/err")"
# one line over the cap (1 MiB): refused as a whole, in bounded memory
bad_table big 'head -c 1100000 /dev/zero | tr "\\0" x >"$d/known-issues.tsv"'
known_check big WARN "is larger than 1048576 bytes" && t_pass known-table-big ||
	t_fail known-table-big "$(tail -1 "$work/err")"
# unreadable (not as root: root reads it anyway) is a WARN with the reason too
if [[ $(id -u) != 0 ]]; then
	bad_table eacces 'tab x - "*" - WARN c f https://example.org/x >"$d/known-issues.tsv"; chmod 000 "$d/known-issues.tsv"'
	known_check eacces WARN "Permission denied" && t_pass known-table-eacces ||
		t_fail known-table-eacces "$(tail -1 "$work/err")"
fi
# empty, comments only, and only bad rows: nothing is checked, so not an OK
bad_table empty ': >"$d/known-issues.tsv"'
bad_table header 'grep "^#" "$table" >"$d/known-issues.tsv"'
bad_table allbad 'tab t-bad nccl ">=2.x" - WARN c f https://example.org/x >"$d/known-issues.tsv"'
known_check empty WARN "has no rows: no known issue is checked" &&
	known_check header WARN "has no rows: no known issue is checked" &&
	known_check allbad WARN "has no rows that could be read" && t_pass known-table-empty ||
	t_fail known-table-empty "$(tail -1 "$work/err")"
# a UTF-8 byte order mark before the first row is skipped, as doctor.conf skips it:
# the row keeps its id and matches (rb has no GB20x: the row's condition is -)
bad_table bom '{ printf "\357\273\277"; tab bom-row - "*" - WARN "bom row" f https://example.org/x; } >"$d/known-issues.tsv"'
"$py" -c '
import json, sys
d = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}
assert "known-issues-table" not in d, d["known-issues-table"]
assert d["known-bom-row"]["result"] == "WARN", d.get("known-bom-row")
assert d["known-issues"]["result"] == "OK" and d["known-issues"]["message"].startswith("1 of 1 "), d["known-issues"]
' "$work/bad-bom.json" 2>"$work/err" && t_pass known-table-bom || t_fail known-table-bom "$(tail -1 "$work/err")"

# --- the exit status: 1 when any check failed (a FAIL row is one), WARN rows
# only with --strict; the JSON's exit is the process's (nvsidecar(8)) --------
NVS_DOCTOR_ROOT=$work/ra NVS_NVIDIA_VERSION_FILE=$work/ra-version NVS_VERSIONS_LIBDIR=$la \
	NVSIDECAR_DATADIR=$work/data run rs --strict
bad=
for n in m ra rb rs; do
	r=$(cat "$work/$n.rc")
	"$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = d["counts"]
want = 1 if c["fail"] or (d["strict"] and c["warn"]) else 0
assert int(sys.argv[2]) == want == d["exit"], (sys.argv[2], want, d["exit"], c)
' "$work/$n.json" "$r" 2>/dev/null || bad+=" $n(rc $r)"
done
# ra's FAIL row (t-rdma) is one of the failed checks its exit counts
[[ -z $bad && $(known ra) == *t-rdma=FAIL* ]] && t_pass known-exit-status ||
	t_fail known-exit-status "exit status against the exit table:$bad"
