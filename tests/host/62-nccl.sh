#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# nccl-check on the logs clusters produce: fixtures written from NCCL's own
# format strings for 2.14 to 2.27 (tests/nccl/mkfixtures.py; each fixture's
# header cites the source), under each launcher's prefix (mpirun
# --tag-output, pdsh, Python logging), a net plugin whose name has a space,
# GDR in PCI mode, a NCCL_DEBUG_SUBSYS-filtered log, a TRACE log that shows
# dma-buf registrations, logs cut short; and hostile input: binary, an
# endless line, /dev/zero, a FIFO with no writer, pipes, control bytes and
# broken UTF-8. Everything runs under ASan/UBSan/LSan, a subset under
# valgrind.
set -u
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

asan=$NVS_ASAN
plain=$NVS_BUILD/plain
work=$(mktemp -d /tmp/nvs-nccl.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$asan" "$plain"
nccl=$NVS_TOP/tests/nccl

export ASAN_OPTIONS=exitcode=97:detect_leaks=1:abort_on_error=0
export LSAN_OPTIONS=exitcode=97
export UBSAN_OPTIONS=halt_on_error=1:exitcode=97:print_stacktrace=1
export NO_COLOR=1

if ! why=$(nvs_asan_build); then
	t_fail nccl-build "$why"
	exit 0
fi
if ! make -C "$NVS_TOP/user" O="$plain" -j2 >"$work/build-plain.log" 2>&1; then
	t_fail nccl-build "$(grep -h -m3 -E 'error' "$work"/build-*.log | tr '\n' ' ')"
	exit 0
fi
bin=$asan/nvsidecar
python=/usr/bin/python3
[[ -x $python ]] || python=python3

# The fixtures are generated: they must be what the generator writes.
cp -r "$nccl" "$work/regen"
if "$python" "$work/regen/mkfixtures.py" && diff -r -q "$nccl" "$work/regen" >"$work/diff" 2>&1; then
	t_pass nccl-fixtures-current
else
	t_fail nccl-fixtures-current "tests/nccl differs from mkfixtures.py's output: $(head -c 300 "$work/diff")"
fi

# run ARGS...: the ASan CLI (at most 20 s); stdout in $work/out, stderr
# in $work/err, the status in $rc. check NAME WANT_RC [PYTHON] judges it
# (tests/lib.sh t_judge: d is the parsed JSON stdout, out and err the text).
run() { t_cmd "$work" 20 "$bin" "$@"; }
check() { t_judge "$work" "$@"; }
sanitizer_clean() { t_sanitizer_clean "$@"; }

# --- one fixture per format family ------------------------------------------
run nccl-check --json --expect p2p,gdr "$nccl/nccl-2.14-mpirun-tag-output.log"
check nccl-214-tag-output 0 '
assert d["version"] == "2.14.3+cuda11.7", d["version"]
hosts = {c["host"] for c in d["connections"]}
assert hosts == {"node01", "node02"}, hosts
assert d["nodes"] == 2 and d["init_complete"] == 4 and d["truncated"] is False
assert d["transports"]["P2P/IPC"] == 4 and d["transports"]["NET with GDRDMA"] == 8, d["transports"]
assert d["expect"]["p2p"]["ok"] and d["expect"]["gdr"]["ok"]
'
run nccl-check --expect p2p,gdr "$nccl/nccl-2.18-pdsh-shm.log"
check nccl-218-pdsh-shm 1 '
assert "NOT MET: 8 of 8 intra-node connections do not use P2P" in out, out
assert "at: gpu02 ranks 0->1 (SHM/direct/direct), 1->2" in out, out
assert "a single-node run (gpu02)" in out, out
# a single node gets no advice about networks
assert "No device found" not in out and "TCP sockets" not in out, out
assert "NCCL_P2P_LEVEL set by environment to LOC" in out and "as level LOC" in out, out
'
# a wrapper's tag shaped like NCCL's own prefix, "job:4242:0 [1] ", before
# it: host, pid and device are NCCL's, after it (review of the CLI, L4)
run nccl-check --json "$nccl/nccl-2.18-pdsh-wrapper.log"
check nccl-218-wrapper-lookalike-prefix 0 '
who = sorted({(c["host"], c["pid"], c["dev"]) for c in d["connections"]})
assert who == [("gpu03", 5301 + k, k) for k in range(4)], who
assert d["nodes"] == 1 and d["single_node"] is True and d["init_complete"] == 4, d
assert d["transports"]["SHM"] == 4, d["transports"]
'
# ...also when the host starts with 'N', as the "NCCL" mark does (admin
# review L4: "NVgpu03" lost its host, pid and the node count); a line
# cut inside its "NCCL" mark ("NCnode22", "NCCLnode22") still names none
run nccl-check --json "$nccl/nccl-2.18-pdsh-wrapper-nhost.log"
check nccl-218-wrapper-n-host 0 '
who = sorted({(c["host"], c["pid"], c["dev"]) for c in d["connections"]})
assert who == [("NVgpu03", 5301 + k, k) for k in range(4)], who
assert d["nodes"] == 1 and d["single_node"] is True and d["init_complete"] == 4, d
'
ch=0
for cut in NC NCC NCCL; do
	printf '%s\n' "node21:9101:9101 [0] ${cut}node22:9202:9202 [1] NCCL INFO Channel 0$((ch++)) : 0[0] -> 1[1] via SHM/direct/direct"
done >"$work/cut-mark.log"
run nccl-check --json "$work/cut-mark.log"
check nccl-cut-mark-names-no-host 0 '
c = d["connections"]
assert len(c) == 3 and all(x["host"] is None and x["pid"] == -1 and x["dev"] == 1 for x in c), c
'
run nccl-check --json --expect gdr "$nccl/nccl-2.19-roce-nogdr.log"
check nccl-219-roce-nogdr 1 '
g = d["expect"]["gdr"]
assert not g["ok"] and "8 of 8 network connections (NET/IB)" in g["detail"], g
assert "node11 ranks 0->1 (NET/IB/0)" in g["where"] and "node12 ranks" in g["where"], g
assert d["networks"] == [{"name": "IB", "connections": 8, "gdr": 0}], d["networks"]
assert any("stages network traffic through host memory" in (n["explain"] or "") for n in d["notes"])
'
run nccl-check --expect p2p,direct "$nccl/nccl-2.21-single-process.log"
check nccl-221-single-process 0 '
assert "met: all 16 intra-node connections use P2P" in out and "P2P/direct pointer" in out, out
assert "1 node(s)" in out and "TCP sockets" not in out, out
'
run nccl-check --json --expect gdr "$nccl/nccl-2.22-net-plugin.log"
check nccl-222-net-plugin-gdr 0 '
assert d["networks"] == [{"name": "AWS Libfabric", "connections": 8, "gdr": 8}], d["networks"]
assert "NET/AWS Libfabric" in d["expect"]["gdr"]["detail"], d["expect"]
assert all(c["net"] == "AWS Libfabric" and c["gdr"] for c in d["connections"] if c["transport"].startswith("NET"))
assert any(c["via"] == "NET/AWS Libfabric/1/GDRDMA" for c in d["connections"])
'
run nccl-check "$nccl/nccl-2.22-net-plugin.log"
check nccl-222-net-plugin-text 0 'assert "NET/AWS Libfabric with GDRDMA" in out, out'
run nccl-check --json --expect p2p,gdr "$nccl/nccl-2.23-python-logging.log"
check nccl-223-python-logging 0 '
assert {c["host"] for c in d["connections"]} == {"node21", "node22"}, d["connections"][0]
assert d["interleaved"] == 1 and d["init_complete"] == 4 and d["version"] == "2.23.4+cuda12.6"
assert d["expect"]["p2p"]["ok"] and d["expect"]["gdr"]["ok"]
'
# its last line is two writers glued together ("...NCCL INFO Connected" cut
# short, then "node22:9202:9202 [1] NCCL INFO Connected all trees"): the
# glued word "Connectednode22" is no host (admin review of the CLI, item 4).
# Without nNodes the node count is the hosts the prefixes name.
sed 's/ nNodes 2 / /' "$nccl/nccl-2.23-python-logging.log" >"$work/python-nonnodes.log"
run nccl-check --json "$work/python-nonnodes.log"
check nccl-223-interleaved-no-host 0 '
assert d["nodes"] == 2 and d["interleaved"] == 1, (d["nodes"], d["interleaved"])
assert all(c["host"] in ("node21", "node22") for c in d["connections"]), d["connections"]
'
run nccl-check --json --expect p2p,gdr "$nccl/nccl-2.23-subsys-net-p2p.log"
check nccl-223-subsys-filtered 0 '
assert d["truncated"] is False and d["filtered"] is True, d
assert d["expect"]["p2p"]["ok"] and d["expect"]["gdr"]["ok"], d["expect"]
'
run nccl-check --json --expect gdr,direct "$nccl/nccl-2.27-warn-gdr-pci.log"
check nccl-227-warn-gdr-pci 1 '
w = [n for n in d["notes"] if n["level"] == "WARN"]
assert len(w) == 1 and w[0]["host"] == "gpuB" and "Got async error event" in w[0]["text"], w
assert d["expect"]["gdr"]["ok"] and d["all_direct_p2p"] == 0
x = d["expect"]["direct"]
assert not x["ok"] and "gpuA ranks 0->1 (P2P/CUMEM)" in x["where"] and "gpuB ranks 2->3" in x["where"], x
'
# --- DMA-BUF: the init line proves nothing --------------------------------------
run nccl-check --json --expect dmabuf "$nccl/nccl-2.23-python-logging.log"
check nccl-dmabuf-not-shown 1 '
x = d["expect"]["dmabuf"]
assert not x["ok"] and x["detail"].startswith("not shown by this log"), x
assert len(d["dmabuf"]["available"]) == 4 and d["dmabuf"]["use_shown"] is False, d["dmabuf"]
'
run nccl-check --expect dmabuf "$nccl/nccl-2.23-python-logging.log"
check nccl-dmabuf-not-shown-text 1 'assert "used for a connection: not shown by this log" in out, out'
run nccl-check --json --expect dmabuf "$nccl/nccl-2.18-trace-dmabuf.log"
check nccl-dmabuf-trace 0 '
assert d["expect"]["dmabuf"]["ok"], d["expect"]
assert {(g["host"], g["dev"]) for g in d["dmabuf"]["used"]} == {("node41", 0), ("node42", 0)}, d["dmabuf"]
'
# --- cut short, filtered, several files -----------------------------------------
run nccl-check --expect p2p "$nccl/nccl-2.21-truncated.log"
check nccl-truncated 1 '
assert "looks truncated" in out and "NOT MET" in out and "before NCCL finished" in out, out
assert "P2P/dir " not in out
'
grep -v 'Init COMPLETE\|Connected all' "$nccl/nccl-2.21-single-process.log" >"$work/no-complete.log"
run nccl-check --json "$work/no-complete.log"
check nccl-init-without-complete 0 'assert d["truncated"] is True and d["filtered"] is False, d'
run nccl-check --json "$nccl/nccl-2.19-roce-nogdr.log" "$nccl/nccl-2.22-net-plugin.log"
check nccl-several-files 0 '
assert {n["name"] for n in d["networks"]} == {"IB", "AWS Libfabric"}, d["networks"]
assert len(d["files"]) == 2
'
run nccl-check --expect p2p - <"$nccl/nccl-2.21-single-process.log"
check nccl-stdin 0 'assert "met:" in out'
run nccl-check --expect p2p <(cat "$nccl/nccl-2.21-single-process.log")
check nccl-process-substitution 0 'assert "met:" in out'
run nccl-check -- "$nccl/nccl-2.21-single-process.log"
check nccl-double-dash 0

# --- bad input --------------------------------------------------------------------
run nccl-check "$nccl/garbage.log"
check nccl-garbage 2 'assert "No NCCL INFO or WARN lines in 3 line(s) of `" in err and "garbage.log" in err and "NCCL_DEBUG=INFO" in err, err'
run nccl-check "$nccl/garbage.log" "$nccl/nccl-2.19-roce-nogdr.log"
check nccl-garbage-named 0 'assert "garbage.log" in err, err'
run nccl-check "$nccl/binary.log"
check nccl-binary 2 'assert "holds binary data" in err, err'
# a log being written when the node crashed: a run of NULs where the
# filesystem had allocated blocks that were never written (T3-18); the
# lines around it are still NCCL's, and are judged
{ head -n 20 "$nccl/nccl-2.21-single-process.log"; head -c 4096 /dev/zero; echo
  tail -n +21 "$nccl/nccl-2.21-single-process.log"; } >"$work/crashed.log"
run nccl-check --expect p2p "$work/crashed.log"
check nccl-nul-run-skipped 0 'assert "met:" in out and "1 line(s) held NUL bytes" in out, out'
run nccl-check --json "$work/crashed.log"
check nccl-nul-run-json 0 'assert d["binary_lines"] == 1, d'
run nccl-check "$work/none.log"
check nccl-missing 2 'assert "Unable to open" in err and "none.log" in err, err'
run nccl-check --expect p2p,nvlink "$nccl/nccl-2.21-single-process.log"
check nccl-bad-expect 2 'assert "Invalid --expect" in err, err'
run nccl-check
check nccl-no-input 2 'assert "No log to read" in err and "--help" in err, err'
# a device is refused by name; through stdin its NULs are binary at once
run nccl-check /dev/zero
check nccl-dev-zero 2 'assert "character device" in err, err'
run nccl-check - </dev/zero
check nccl-stdin-zero 2 'assert "binary data" in err or "longer than 1048576 bytes" in err, err'
# one endless line: bounded, with a clear error (not 4 GB of memory)
head -c 3000000 /dev/zero | tr '\0' 'x' >"$work/long.log"
/usr/bin/time -f %M -o "$work/rss" "$bin" nccl-check "$work/long.log" >"$work/out" 2>"$work/err"
rc=$?
check nccl-long-line 2 "assert 'longer than 1048576 bytes' in err, err
assert int(open('$work/rss').read().split()[-1]) < 200000, open('$work/rss').read()"
# a FIFO without a writer reads as empty instead of hanging
mkfifo "$work/fifo"
run nccl-check "$work/fifo"
check nccl-fifo-no-writer 2 'assert "No NCCL INFO" in err, err'
# ...and says so, and what to do (review T3-12: the help said "pipes work")
check nccl-fifo-no-writer-said 2 'assert "is a named FIFO that had no writer" in err and "start the writer first" in err, err'
# ...and so is one named through a symbolic link (review of the CLI, L3;
# the pipe behind a /dev/fd link is none: nccl-procsub-no-fifo-note)
ln -s fifo "$work/fifo-link"
run nccl-check "$work/fifo-link"
check nccl-fifo-link-no-writer-said 2 'assert "fifo-link\x27 is a named FIFO that had no writer" in err, err'
rm -f "$work/fifo-link"
# a named FIFO whose writer is there first is read whole
rm -f "$work/fifo"
mkfifo "$work/fifo"
cat "$nccl/nccl-2.21-single-process.log" >"$work/fifo" &
cpid=$!
sleep 0.3
run nccl-check "$work/fifo"
check nccl-fifo-writer-first 0 'assert "named FIFO" not in err, err'
kill "$cpid" 2>/dev/null	# a writer still waiting for a reader
wait "$cpid" 2>/dev/null
# a writer that was there but wrote nothing is not "no writer" (admin review
# A5): the note says what happened. The writer opens it read-write (which
# does not wait) before nccl-check starts, and closes it after.
rm -f "$work/fifo" "$work/opened"
mkfifo "$work/fifo"
(exec 3<>"$work/fifo"; : >"$work/opened"; sleep 0.5) &
cpid=$!
for _ in $(seq 50); do [[ -e $work/opened ]] && break; sleep 0.05; done
run nccl-check "$work/fifo"
wait "$cpid" 2>/dev/null
check nccl-fifo-writer-empty 2 'assert "whose writer closed it without writing anything" in err and "had no writer" not in err, err'
# the note is in the JSON document too, the error document included
run nccl-check --json "$work/fifo"
check nccl-fifo-note-json 2 '
assert d["ok"] is False and d["exit"] == 2, d
assert len(d["input_notes"]) == 1 and "had no writer when it was opened" in d["input_notes"][0], d'
run nccl-check --json "$work/fifo" "$nccl/nccl-2.21-single-process.log"
check nccl-fifo-note-json-ok 0 '
assert d["ok"] is True, d
n = d["input_notes"]
assert len(n) == 2 and "had no writer" in n[0] and n[1].startswith("No NCCL INFO or WARN lines in 0 line(s) of"), n'
run nccl-check --json "$nccl/nccl-2.21-single-process.log"
check nccl-no-input-notes 0 'assert d["input_notes"] == [], d'
# <(...) is an anonymous pipe with its writer: no FIFO note
run nccl-check <(cat "$nccl/nccl-2.21-single-process.log")
check nccl-procsub-no-fifo-note 0 'assert "named FIFO" not in err, err'
run nccl-check --help
check nccl-help-fifo 0 'assert "named FIFO whose writer is already there" in out and "pipes and" not in out, out'
# --json failures are one JSON document
run nccl-check --json "$work/none.log"
check nccl-json-error 2 'assert d is not None and d["ok"] is False and d["exit"] == 2 and "none.log" in d["error"], out'

# --- hostile text: escaped on the terminal, valid UTF-8 in JSON -------------------
printf 'no\x1b[31mde\x01:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n' >"$work/evil.log"
printf 'n\xff\xfe\x1b[31mode:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct\x1b]0;owned\x07/direct\n' >>"$work/evil.log"
printf 'host\xc2\x9b:3:3 [0] init.cc:1 NCCL WARN Cuda failure \xff\x1b[2J\n' >>"$work/evil.log"
printf 'host:4:4 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n' >>"$work/evil.log"
run nccl-check "$work/evil.log"
check nccl-evil-text 0 '
assert "\x1b" not in out and "\x07" not in out and "\x01" not in out and "\x9b" not in out, repr(out)
assert "\\x1b[31m" in out and "\\xff" in out, out
'
run nccl-check --json "$work/evil.log"
check nccl-evil-json 0 '
assert d is not None, "not valid UTF-8 JSON"
assert "\ufffd" in json.dumps(d, ensure_ascii=False) and "\x1b" in d["notes"][0]["text"], d["notes"]
'

# --- the same, once, under valgrind -------------------------------------------------
if ! command -v valgrind >/dev/null; then
	t_skip nccl-valgrind "valgrind is not installed (scripts/deps.sh installs it)"
else
	bad=
	for args in "--expect p2p,gdr,dmabuf $nccl/nccl-2.14-mpirun-tag-output.log" \
		"--json $nccl/nccl-2.27-warn-gdr-pci.log" "$nccl/nccl-2.21-truncated.log" \
		"$nccl/binary.log" "--json $work/evil.log"; do
		# shellcheck disable=SC2086
		valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
			"$plain/nvsidecar" nccl-check $args >/dev/null 2>"$work/vg"
		(($? == 99)) && bad+=" [$args]: $(grep -m1 '==' "$work/vg")"
	done
	[[ -z $bad ]] && t_pass nccl-valgrind || t_fail nccl-valgrind "${bad:0:400}"
fi
exit 0
