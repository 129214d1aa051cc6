#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: userspace (tests/vm/lanes.tsv)
#
# Issue 7: `nvsidecar rdma' on soft-RoCE. Two rxe devices on the two ends
# of a veth pair are two RDMA hosts:
#
#   rxe0 ── vA 10.77.0.1 ═══ veth ═══ vB 10.77.0.2 ── rxe1
#
# Both ends stay in the initial network namespace: on 6.1 and 6.12 rxe
# sends and receives through UDP sockets of the initial namespace only, so
# an rxe on a veth inside another namespace never hears its peer (tried:
# ib_write_bw fails with retry errors). Policy routing makes traffic
# between the two local addresses go over the wire instead of lo (local
# table moved below rules that send traffic between the two addresses out
# of the other end, and deliver what arrives on vA or vB locally).
#
# Tests: host memory, loopback and two-node, every transfer verified over
# a size sweep; bandwidth against ib_write_bw on the same link and size in
# the same run ($NVS_OUT/rdma-bench.txt); a dma-buf MR from udmabuf, and
# from a fake libcuda exporting a udmabuf, refused by rxe with a named
# error (6.12 and debug; 6.1 has no udmabuf); faults: server killed, link
# down, wrong address, no listener, port in use, corrupted data.
set -u

A=10.77.0.1 B=10.77.0.2 PORT=18621
log=$NVS_OUT/rdma
mkdir -p "$log"
py=/usr/bin/python3
[[ -x $py ]] || py=python3
bin=$NVS_BIN
pids=()

cleanup() {
	local p
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rdma link delete rxe0 2>/dev/null
	rdma link delete rxe1 2>/dev/null
	ip link del vA 2>/dev/null
	ip rule del pref 5 2>/dev/null
	ip rule del pref 6 2>/dev/null
	ip rule del pref 10 2>/dev/null
	ip rule del pref 11 2>/dev/null
	ip rule add pref 0 lookup local 2>/dev/null
	ip rule del pref 100 2>/dev/null
	ip route flush table 77 2>/dev/null
}
trap cleanup EXIT

setup() {
	local d
	modprobe rdma_rxe 2>/dev/null
	modprobe veth 2>/dev/null
	modprobe rdma_ucm 2>/dev/null
	ip link add vA type veth peer name vB || return 1
	for d in all default vA vB lo; do
		sysctl -qw "net.ipv4.conf.$d.rp_filter=0" "net.ipv4.conf.$d.accept_local=1" || return 1
	done
	sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
	ip addr add $A/32 dev vA && ip addr add $B/32 dev vB || return 1
	ip link set vA up && ip link set vB up || return 1
	ip rule add pref 100 lookup local && ip rule del pref 0 || return 1
	ip route add $B/32 dev vA src $A table 77 && ip route add $A/32 dev vB src $B table 77 || return 1
	# Arriving packets are delivered locally; leaving ones between the two
	# addresses go out of the other end (rdma_cm checks that reverse route).
	ip rule add pref 5 iif vA lookup local && ip rule add pref 6 iif vB lookup local || return 1
	ip rule add pref 10 from $A to $B lookup 77 && ip rule add pref 11 from $B to $A lookup 77 || return 1
	rdma link add rxe0 type rxe netdev vA && rdma link add rxe1 type rxe netdev vB || return 1
	wait_until 10 port_active rxe0 && wait_until 10 port_active rxe1
}

port_active() {
	[[ $(cat "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null) == *ACTIVE* ]]
}

# jcheck NAME FILE CODE: CODE (python, the JSON as d) must print "ok".
jcheck() {
	local name=$1 file=$2 code=$3 msg
	msg=$("$py" -c "import json,sys
d=json.load(open(sys.argv[1]))
$code" "$file" 2>&1)
	if [[ $msg == ok ]]; then t_pass "$name"; else t_fail "$name" "${msg:0:300}"; fi
}

# The JSON test for a fully verified run of N transfers per row at least.
verified_all='r=d["results"]
assert d["ok"] and d["exit"] == 0, d.get("error")
assert r, "no results"
for x in r:
    assert x["transfers"] > 0 and x["verified"] == x["transfers"], x'

# The debug kernel (KASAN, lockdep) moves data several times slower.
slow=1
[[ $NVS_LANE == debug ]] && slow=4

# bounded SECS OUT CMD...: runs CMD with a hard limit (SECS, scaled for the
# debug lane); sets rc and took (s).
bounded() {
	local secs=$(($1 * slow)) out=$2 t0=$SECONDS
	shift 2
	timeout -k 3 "$secs" "$@" >"$out" 2>"$out.err"
	rc=$? took=$((SECONDS - t0))
}

if ! setup >"$log/setup.log" 2>&1; then
	t_fail rdma-setup "soft-RoCE on a veth pair could not be set up: $(tail -n 3 "$log/setup.log" | tr '\n' ' ')"
	exit 0
fi
t_pass rdma-setup
[[ -x $bin ]] || { t_fail rdma-bin "no CLI at $bin"; exit 0; }

# --- host memory, loopback ---
bounded 120 "$log/loop1.json" "$bin" rdma --loopback --dev rxe0 --sizes 1,13,4K,64K,256K --iters 20 --timeout 20 --json
if ((rc == 0)); then jcheck rdma-loopback-host "$log/loop1.json" "$verified_all
print('ok')"; else
	t_fail rdma-loopback-host "exit $rc: $(head -c 300 "$log/loop1.json.err")"; fi

bounded 120 "$log/loop2.json" "$bin" rdma --loopback --dev rxe0 --peer-dev rxe1 --sizes 4K,64K --iters 20 --timeout 20 --json
if ((rc == 0)); then jcheck rdma-loopback-two-devices "$log/loop2.json" "$verified_all
assert d['device'] == 'rxe0' and d['peer_device'] == 'rxe1', d
print('ok')"; else
	t_fail rdma-loopback-two-devices "exit $rc: $(head -c 300 "$log/loop2.json.err")"; fi

# No --dev and no GPU: the first active port, and it says why.
bounded 60 "$log/loop3.json" "$bin" rdma --loopback --sizes 4K --iters 5 --timeout 20 --json
if ((rc == 0)); then jcheck rdma-default-device "$log/loop3.json" "assert d['device'] in ('rxe0', 'rxe1'), d['device']
assert 'no GPU in use' in d['device_why'], d['device_why']
print('ok')"; else t_fail rdma-default-device "exit $rc: $(head -c 300 "$log/loop3.json.err")"; fi

# Human output names the device and the verdict.
bounded 60 "$log/loop4.txt" env NO_COLOR=1 "$bin" rdma --loopback --dev rxe1 --sizes 64K --iters 5 --timeout 20
if ((rc == 0)) && grep -q "^Device: *rxe1 port 1" "$log/loop4.txt" && grep -q "All .* transfers verified" "$log/loop4.txt"; then
	t_pass rdma-human
else
	t_fail rdma-human "exit $rc: $(head -c 300 "$log/loop4.txt")"
fi

# --- two nodes over rdma_cm ---
two_node() {
	local name=$1 port=$2
	shift 2
	env ${srv_env:-} "$bin" rdma --server --bind $B --port "$port" --timeout 20 --wait 60 --json >"$log/$name-srv.json" 2>"$log/$name-srv.err" &
	spid=$!
	pids+=("$spid")
	listening "$log/$name-srv.err"
	bounded 180 "$log/$name-cli.json" "$bin" rdma --client $B --bind $A --port "$port" --timeout 20 --json "$@"
	crc=$rc
	wait_pid "$spid" $((crc ? 3 : 30))
	src=$?
}

# srv_error NAME: the error a two_node server put in its JSON.
srv_error() {
	"$py" -c "import json,sys; d=json.load(open(sys.argv[1])); print(d.get('error') or d.get('errors') or '')" "$log/$1-srv.json" 2>/dev/null
}

# listening ERRFILE: waits until a server says it is listening.
listening() {
	wait_until 20 grep -q "^Waiting up to" "$1"
}

# wait_pid PID SECS: waits for a background child; kills it after SECS.
wait_pid() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$1" 2>/dev/null; then
		kill -KILL "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		return 124
	fi
	wait "$1"
}

two_node tn $PORT --sizes 1,4K,64K,256K --iters 20
if ((crc == 0 && src == 0)); then
	jcheck rdma-two-node-host "$log/tn-cli.json" "$verified_all
assert d['device'] == 'rxe0', d['device']
print('ok')"
	jcheck rdma-two-node-server "$log/tn-srv.json" "assert d['ok'] and d['device'] == 'rxe1', d
w = [x for x in d['results'] if x['op'] == 'write']
assert w and all(x['verified'] == x['transfers'] > 0 for x in w), w
print('ok')"
else
	t_fail rdma-two-node-host "client exit $crc, server exit $src: $(head -c 200 "$log/tn-cli.json.err") / $(head -c 200 "$log/tn-srv.err") $(srv_error tn)"
fi

# Regression (a CI flake): the client sends BYE and disconnects at once; a
# server that wakes late finds both pending and must take the BYE first,
# not report "disconnected in the middle of the test". The hook sleeps
# before each wait so that they are always pending together.
srv_env=NVS_RDMA_WAKE_DELAY_MS=400
two_node bye $((PORT + 8)) --sizes 4K,64K --iters 3
srv_env=
if ((crc == 0 && src == 0)); then
	t_pass rdma-two-node-late-wake
else
	t_fail rdma-two-node-late-wake "client exit $crc, server exit $src: $(srv_error bye)"
fi

# --- peer comparison: ib_write_bw on the same link and size, same run ---
bench_size=65536 bench_iters=400
ibw() {
	local s i
	timeout -k 3 120 ib_write_bw -d rxe1 -x "$gidx1" -s $bench_size -n $bench_iters -F -p $((PORT + 7)) >"$log/ibw-srv.txt" 2>&1 &
	s=$!
	pids+=("$s")
	# perftest has no "listening" message: retry while the server starts.
	for i in 1 2 3 4 5 6 7 8 9 10; do
		nvs_sleep 1
		timeout -k 3 120 ib_write_bw -d rxe0 -x "$gidx0" -s $bench_size -n $bench_iters -F -p $((PORT + 7)) $B >"$log/ibw-cli-$1.txt" 2>&1
		grep -q "Couldn't connect" "$log/ibw-cli-$1.txt" || break
	done
	wait_pid "$s" 20
	# MB/sec in perftest is MiB/s: the average column of the result row.
	awk -v s=$bench_size '$1 == s && NF >= 4 { printf "%.6f\n", $4 * 1048576 / 1e9 }' "$log/ibw-cli-$1.txt"
}
gid4() {
	local g
	for g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		[[ $(<"$g") == 0000:0000:0000:0000:0000:ffff:* ]] || continue
		[[ $(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/${g##*/}" 2>/dev/null) == "RoCE v2" ]] || continue
		echo "${g##*/}"
		return 0
	done
	echo 1
}
if [[ ${NVS_LANE:-} == debug ]]; then
	# 90 s of transfers that measure KASAN, not the tools; the
	# two-node runs above already drive the same code.
	t_skip rdma-vs-ib_write_bw "a bandwidth comparison under KASAN measures the debug kernel; the 6.1 and 6.12 lanes run it"
elif command -v ib_write_bw >/dev/null; then
	gidx0=$(gid4 rxe0) gidx1=$(gid4 rxe1)
	best_p=0 best_n=0
	for round in 1 2; do
		p=$(ibw "$round")
		two_node "bench$round" $((PORT + 1)) --op write --sizes $bench_size --iters $bench_iters
		n=$("$py" -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['results'][0]['gbps'] if d['ok'] else 0)" "$log/bench$round-cli.json" 2>/dev/null)
		echo "round $round: ib_write_bw ${p:-?} GB/s, nvsidecar ${n:-?} GB/s" >>"$log/bench.txt"
		best_p=$("$py" -c "print(max($best_p, ${p:-0}))") best_n=$("$py" -c "print(max($best_n, ${n:-0}))")
	done
	if [[ $best_p != 0 && $best_n != 0 ]]; then
		ratio=$("$py" -c "print('%.3f' % ($best_n / $best_p))")
		line="$NVS_LANE: RDMA WRITE ${bench_size} B x $bench_iters on rxe over veth: nvsidecar $best_n GB/s, ib_write_bw $best_p GB/s, ratio $ratio (best of 2 rounds each, interleaved)"
		echo "$line" | tee -a "$NVS_OUT/rdma-bench.txt"
		# The 0.9 target is a benchmark figure (docs/benchmarks.md): under
		# TCG each tool's rounds vary up to 2x (0.83 to 1.51 seen), so the
		# test fails only on a gross regression, below half of perftest.
		if "$py" -c "import sys; sys.exit(0 if $ratio >= 0.5 else 1)"; then
			t_pass rdma-vs-ib_write_bw
			"$py" -c "import sys; sys.exit(0 if $ratio >= 0.9 else 1)" ||
				echo "note: ratio $ratio is below the 0.9 benchmark target in this run" | tee -a "$NVS_OUT/rdma-bench.txt"
		else
			t_fail rdma-vs-ib_write_bw "ratio $ratio is below half of ib_write_bw ($line)"
		fi
	else
		t_fail rdma-vs-ib_write_bw "no bandwidth from one side: ib_write_bw '$best_p', nvsidecar '$best_n' (see $log)"
	fi
else
	t_skip rdma-vs-ib_write_bw "ib_write_bw (perftest) is not installed"
fi

# --- dma-buf MRs: rxe has no reg_user_mr_dmabuf ---
if [[ -c /dev/udmabuf ]]; then
	bounded 60 "$log/dmabuf.txt" "$bin" rdma --loopback --dev rxe0 --mem cuda-dmabuf --dmabuf-source udmabuf --sizes 4K --iters 1
	if ((rc == 7)) && grep -q "ibv_reg_dmabuf_mr on rxe0" "$log/dmabuf.txt.err" &&
		grep -q "EOPNOTSUPP" "$log/dmabuf.txt.err" && grep -q "cannot take dma-buf MRs" "$log/dmabuf.txt.err"; then
		t_pass rdma-dmabuf-udmabuf-refused
	else
		t_fail rdma-dmabuf-udmabuf-refused "exit $rc: $(head -c 300 "$log/dmabuf.txt.err")"
	fi
	# The CUDA path: a stand-in libcuda whose cuMemGetHandleForAddressRange
	# exports a udmabuf (or refuses, as unpatched GeForce libcuda does).
	fake=$log/libcuda-fake.so
	if gcc -shared -fPIC -DFAKECUDA_LIB -o "$fake" "$NVS_TOP/tests/vm/tools/dmabuf_fakecuda.c" 2>"$log/fake.log"; then
		bounded 60 "$log/fcuda.txt" env FAKECUDA_MODE=udmabuf "$bin" rdma --loopback --dev rxe0 --mem cuda-dmabuf --cuda-lib "$fake" --sizes 4K --iters 1 --json
		jmsg=$(grep -o '"error":"[^"]*"' "$log/fcuda.txt")
		if ((rc == 7)) && [[ $jmsg == *ibv_reg_dmabuf_mr* && $jmsg == *EOPNOTSUPP* ]]; then
			t_pass rdma-dmabuf-cuda-refused
		else
			t_fail rdma-dmabuf-cuda-refused "exit $rc: $(head -c 300 "$log/fcuda.txt.err") $jmsg"
		fi
		bounded 60 "$log/fgate.txt" env FAKECUDA_MODE=gate "$bin" rdma --loopback --dev rxe0 --mem cuda-dmabuf --cuda-lib "$fake" --sizes 4K --iters 1
		if ((rc == 6)) && grep -q "CUDA_ERROR_NOT_SUPPORTED" "$log/fgate.txt.err" && grep -q "libcuda patch" "$log/fgate.txt.err"; then
			t_pass rdma-dmabuf-cuda-gate
		else
			t_fail rdma-dmabuf-cuda-gate "exit $rc: $(head -c 300 "$log/fgate.txt.err")"
		fi
	else
		t_fail rdma-dmabuf-cuda-refused "cannot build the fake libcuda: $(head -c 200 "$log/fake.log")"
	fi
else
	t_skip rdma-dmabuf-udmabuf-refused "$NVS_LANE has no /dev/udmabuf (Debian's 6.1 kernel is built without CONFIG_UDMABUF)"
fi

# --- faults ---
# Corrupted data: the test hook flips one received byte; verification must say where.
for op in write read; do
	bounded 60 "$log/corrupt-$op.txt" env NVS_RDMA_TEST_CORRUPT=1 "$bin" rdma --loopback --dev rxe0 --op $op --sizes 4K --iters 4 --timeout 20
	if ((rc == 1)) && grep -q "arrived corrupted: byte 2048 is" "$log/corrupt-$op.txt.err"; then
		t_pass "rdma-fault-corrupt-$op"
	else
		t_fail "rdma-fault-corrupt-$op" "exit $rc (want 1): $(head -c 300 "$log/corrupt-$op.txt.err")"
	fi
done
# ... and across two nodes, where the server verifies the WRITEs.
NVS_RDMA_TEST_CORRUPT=1 "$bin" rdma --server --bind $B --port $((PORT + 2)) --timeout 10 --wait 60 >"$log/cs-srv.txt" 2>"$log/cs-srv.err" &
spid=$!
pids+=("$spid")
listening "$log/cs-srv.err"
bounded 60 "$log/cs-cli.txt" "$bin" rdma --client $B --bind $A --port $((PORT + 2)) --op write --sizes 64K --iters 8 --timeout 10
wait_pid "$spid" 30
src=$?
if ((rc == 1 && src == 1)) && grep -q "arrived corrupted" "$log/cs-cli.txt.err" && grep -q "arrived corrupted" "$log/cs-srv.err"; then
	t_pass rdma-fault-corrupt-two-node
else
	t_fail rdma-fault-corrupt-two-node "client exit $rc, server exit $src (want 1, 1): $(head -c 200 "$log/cs-cli.txt.err") / $(head -c 200 "$log/cs-srv.err")"
fi

# Wrong address: nothing routes there.
bounded 40 "$log/wrong.txt" "$bin" rdma --client 10.77.9.9 --port $PORT --timeout 5 --sizes 4K --iters 1
if ((rc == 10 && took < 20)) && [[ -s $log/wrong.txt.err ]]; then
	t_pass rdma-fault-wrong-address
else
	t_fail rdma-fault-wrong-address "exit $rc after ${took}s (want 10 within 20 s): $(head -c 300 "$log/wrong.txt.err")"
fi

# The right host but nobody listening on the port.
bounded 40 "$log/nolisten.txt" "$bin" rdma --client $B --bind $A --port $((PORT + 3)) --timeout 5 --sizes 4K --iters 1
if ((rc == 10 && took < 20)) && [[ -s $log/nolisten.txt.err ]]; then
	t_pass rdma-fault-no-listener
else
	t_fail rdma-fault-no-listener "exit $rc after ${took}s (want 10 within 20 s): $(head -c 300 "$log/nolisten.txt.err")"
fi

# Port already in use.
"$bin" rdma --server --bind $B --port $((PORT + 4)) --wait 30 >/dev/null 2>"$log/inuse-1.err" &
spid=$!
pids+=("$spid")
listening "$log/inuse-1.err"
bounded 20 "$log/inuse-2.txt" "$bin" rdma --server --bind $B --port $((PORT + 4)) --wait 5
kill -TERM "$spid" 2>/dev/null
wait_pid "$spid" 10
if ((rc == 10)) && grep -q "another server uses this port" "$log/inuse-2.txt.err"; then
	t_pass rdma-fault-port-in-use
else
	t_fail rdma-fault-port-in-use "exit $rc (want 10): $(head -c 300 "$log/inuse-2.txt.err")"
fi

# qp_rts DEV PID: PID has a connected (RTS) queue pair on DEV.
qp_rts() {
	rdma res show qp link "$1/1" 2>/dev/null | grep -qE "state RTS .*pid $2( |$)"
}

# mid_run NAME ACTION PORT: a long transfer, ACTION 3 s after the server's
# QP is connected; both sides must end with a clear error within their
# timeouts, and nothing may be left running.
mid_run() {
	local name=$1 action=$2 port=$3 cpid t0
	"$bin" rdma --server --bind $B --port "$port" --timeout 5 --wait 30 >"$log/$name-srv.txt" 2>"$log/$name-srv.err" &
	spid=$!
	pids+=("$spid")
	listening "$log/$name-srv.err"
	t0=$SECONDS
	"$bin" rdma --client $B --bind $A --port "$port" --timeout 5 --op write --sizes 64K --iters 1000000 \
		>"$log/$name-cli.txt" 2>"$log/$name-cli.err" &
	cpid=$!
	pids+=("$cpid")
	# Counting from the connection, not from the start: a fixed 3 s was
	# too short for the debug kernel's handshake, and the kill then hit
	# the connection setup (exit 10), not a transfer. The 3 s after it let
	# at least one batch complete on the Debian kernels, so the summary
	# has rows (rdma-fault-server-killed checks it).
	wait_until 30 qp_rts rxe1 "$spid" || rdma res show qp >"$log/$name-qp.txt" 2>&1
	nvs_sleep 3
	$action
	wait_pid "$cpid" 40
	crc=$?
	took=$((SECONDS - t0))
	wait_pid "$spid" 40
	src=$?
}

kill_server() { kill -KILL "$spid"; }
mid_run killsrv kill_server $((PORT + 5))
# Batches that completed before the kill are in the table; the summary
# line must still say that the run failed.
if ((crc == 11 && took < 40)) && [[ -s $log/killsrv-cli.err ]] &&
	{ ! grep -q '^write ' "$log/killsrv-cli.txt" || grep -q '^FAILED (exit 11)' "$log/killsrv-cli.txt"; } &&
	! grep -q 'transfers verified$' "$log/killsrv-cli.txt"; then
	t_pass rdma-fault-server-killed
else
	t_fail rdma-fault-server-killed "client exit $crc after ${took}s (want 11 within 40 s, and a FAILED summary): $(head -c 300 "$log/killsrv-cli.err") / $(tail -n 1 "$log/killsrv-cli.txt")"
fi

link_down() { ip link set vB down; }
mid_run linkdown link_down $((PORT + 6))
ip link set vB up
wait_until 10 port_active rxe1 >/dev/null
if ((crc == 11 && src == 11 && took < 50)) && [[ -s $log/linkdown-cli.err && -s $log/linkdown-srv.err ]]; then
	t_pass rdma-fault-link-down
else
	t_fail rdma-fault-link-down "client exit $crc, server exit $src after ${took}s (want 11, 11 within 50 s): $(head -c 200 "$log/linkdown-cli.err") / $(head -c 200 "$log/linkdown-srv.err")"
fi

# Nothing left behind.
left=$(pgrep -f "nvsidecar rdma" | tr '\n' ' ')
if [[ -z $left ]]; then t_pass rdma-no-hung-process; else t_fail rdma-no-hung-process "still running: $left"; fi
