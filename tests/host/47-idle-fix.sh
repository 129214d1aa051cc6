#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# nvsidecar idle-fix with a fake NVML (tests/nvml/fakenvml.c, from nvml.h's
# signatures) and the repo's fake libcuda (tests/p2p/fakecuda.c, which logs
# every context it creates and destroys). Three GPUs: one stuck at 100 %
# with no process gets its context after --checks runs, in a child process,
# and a NOTICE in syslog; one at 100 % with a process and one that flaps
# between 100 % and idle are left alone. Then --dry-run, a failing and a
# hanging cuCtxCreate, no NVML, a second run holding the state, a --state
# that is not a state file (refused, never replaced), bad arguments, JSON,
# and a fix cycle under ASan/UBSan.
set -u
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

top=$NVS_TOP
bld=$NVS_BUILD/idlefix-u
asan=$NVS_ASAN
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH NO_COLOR

if ! make -s -C "$top/user" O="$bld" WERROR=1 -j2 >"$work/build" 2>&1; then
	t_fail idle-fix-build "$(tail -5 "$work/build" | tr '\n' ' ')"
	exit 0
fi
bin=$bld/nvsidecar
if ! gcc -shared -fPIC -O2 -Wall -Werror -o "$work/libnvidia-ml.so.1" "$top/tests/nvml/fakenvml.c" 2>"$work/err" ||
	! gcc -shared -fPIC -O2 -Wall -Werror -o "$work/libcuda.so.1" "$top/tests/p2p/fakecuda.c" 2>>"$work/err"; then
	t_fail idle-fix-fakes "$(head -3 "$work/err" | tr '\n' ' ')"
	exit 0
fi
t_pass idle-fix-build

A=0000:03:00.0 B=0000:04:00.0 C=0000:05:00.0
export FAKE_NVML_STATE=$work/nvml.state FAKE_CUDA_LOG=$work/ctx.log FAKE_CUDA_DEVICES=3 FAKE_CUDA_BUSIDS=$A,$B,$C
# nvml UTIL_A UTIL_C: A has no process, B always has one, C is as given
nvml() {
	printf '%s %s 0 61 310\n%s 100 1 70 300\n%s %s 0 40 %s\n' "$A" "$1" "$B" "$C" "$2" "$(($2 ? 305 : 30))" >"$FAKE_NVML_STATE"
}
# STATE= another state file: --state may be given once (review T3-20)
fix() { "$bin" idle-fix --nvml "$work/libnvidia-ml.so.1" --lib "$work/libcuda.so.1" --state "${STATE:-$work/run/state}" "$@"; }
: >"$work/ctx.log"

# Three runs: A stuck all along, C at 100 % then idle then 100 % (flapping).
nvml 100 100; fix >"$work/out1" 2>&1; r1=$?
nvml 100 0;   fix >"$work/out2" 2>&1; r2=$?
nvml 100 100
# this run's own pid, to tell the context's process apart from it
bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$work/pid" "$bin" idle-fix --nvml "$work/libnvidia-ml.so.1" \
	--lib "$work/libcuda.so.1" --state "$work/run/state" >"$work/out3" 2>&1
r3=$?
if [[ $r1$r2$r3 == 000 ]] && grep -q "^$A .*stuck 1/3" "$work/out1" && grep -q "^$A .*stuck 2/3" "$work/out2" &&
	grep -q "^$A .*fixed: created and destroyed a CUDA context" "$work/out3"; then
	t_pass idle-fix-stuck-fixed
else
	t_fail idle-fix-stuck-fixed "exit $r1$r2$r3: $(grep "^$A" "$work"/out? | tr '\n' ' ')"
fi
# the context: created and destroyed on A only, in one process that is not idle-fix's
mapfile -t ctx <"$work/ctx.log"
if [[ ${#ctx[@]} == 2 && ${ctx[0]} == "ctx-create $A pid "* && ${ctx[1]} == "ctx-destroy $A pid ${ctx[0]##* }" &&
	${ctx[0]##* } != "$(<"$work/pid")" ]]; then
	t_pass idle-fix-context
else
	t_fail idle-fix-context "$(tr '\n' ' ' <"$work/ctx.log")"
fi
grep -q "^$B .*busy: left alone" "$work/out3" && ! grep -q "$B" "$work/ctx.log" && t_pass idle-fix-busy-left ||
	t_fail idle-fix-busy-left "$(grep "^$B" "$work/out3")"
grep -q "^$C .*stuck 1/3" "$work/out3" && grep -q "^$C .*idle" "$work/out2" && ! grep -q "$C" "$work/ctx.log" &&
	t_pass idle-fix-flapping-left || t_fail idle-fix-flapping-left "$(grep "^$C" "$work"/out? | tr '\n' ' ')"
# after a fix A counts from zero; the state names only what is counting
[[ $(<"$work/run/state") == "$C 1" ]] && t_pass idle-fix-state || t_fail idle-fix-state "$(tr '\n' ' ' <"$work/run/state")"
left=$(shopt -s dotglob nullglob; f=("$work"/run/*); echo "${f[*]##*/}")
[[ $left == "state state.lock" ]] && t_pass idle-fix-state-atomic || t_fail idle-fix-state-atomic "holds: $left"

# --dry-run: reports from the saved counts and writes nothing. Two real runs
# with --checks 5 leave A at 2; a dry run with --checks 3 would fix it, makes
# no context, and leaves the state byte for byte, with no lock or temp file.
rm -rf "$work/run"; : >"$work/ctx.log"
nvml 100 0
fix --checks 5 >/dev/null 2>&1; fix --checks 5 >/dev/null 2>&1
cp "$work/run/state" "$work/state.before"
: >"$work/run/marker"
for _ in 1 2; do fix --dry-run --json >"$work/json" 2>&1; done
got=$("$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["dry_run"], [(g["busid"], g["action"], g["count"]) for g in d["gpus"]])' "$work/json" 2>&1)
left=$(cd "$work/run" && find . -newer marker ! -name marker | sort | tr '\n' ' ')
[[ $got == "True [('$A', 'would-fix', 3), ('$B', 'busy', 0), ('$C', 'idle', 0)]" && ! -s $work/ctx.log ]] &&
	cmp -s "$work/state.before" "$work/run/state" && [[ -z $left ]] &&
	t_pass idle-fix-dry-run || t_fail idle-fix-dry-run "$got; ctx: $(cat "$work/ctx.log"); changed: $left"
# a dry run against a path that does not exist creates neither it, nor its
# directory, nor a lock
STATE=$work/new/dir/state fix --dry-run >"$work/out" 2>&1
rc=$?
[[ $rc == 0 && ! -e $work/new ]] && grep -q "^$A .*stuck 1/3" "$work/out" && t_pass idle-fix-dry-run-creates-nothing ||
	t_fail idle-fix-dry-run-creates-nothing "rc $rc: $(find "$work/new" 2>&1 | tr '\n' ' ')"

# a --state that is not a state file (a system file, a garbled or binary
# file, an oversized one, a FIFO, a directory) is refused with exit 2 before
# anything is written, dry run or not: the file is unchanged, no lock beside it
mkdir "$work/nots"
cp /etc/services "$work/nots/services" 2>/dev/null || seq 1000 >"$work/nots/services"
printf '%s 2\n%s x\n' "$A" "$C" >"$work/nots/garbled"
printf '%s 2\n\0\n' "$A" >"$work/nots/binary"
printf '%s 1 extra\n' "$A" >"$work/nots/extra"
head -c 1048576 /dev/zero | tr '\0' '\n' >"$work/nots/big"
mkfifo "$work/nots/fifo"
mkdir "$work/nots/dir"
(cd "$work/nots" && sha256sum services garbled binary extra big) >"$work/sums"
bad=
for f in services garbled binary extra big fifo dir; do
	for d in --dry-run ""; do
		# shellcheck disable=SC2086
		timeout 10 "$bin" idle-fix --nvml "$work/libnvidia-ml.so.1" --lib "$work/libcuda.so.1" \
			--state "$work/nots/$f" $d >"$work/out" 2>"$work/err"
		rc=$?
		[[ $rc == 2 && ! -s $work/out ]] && grep -q "is not an idle-fix state file.*refusing" "$work/err" ||
			bad+=" [$f $d] rc $rc: $(head -c 120 "$work/err")"
	done
done
(cd "$work/nots" && sha256sum -c --quiet "$work/sums" >/dev/null 2>&1) || bad+=" a refused file changed"
locks=$(cd "$work/nots" && find . -name '*.lock' -o -name '.*' ! -name . | tr '\n' ' ')
[[ -z $locks ]] || bad+=" left beside: $locks"
[[ -z $bad ]] && t_pass idle-fix-state-not-ours || t_fail idle-fix-state-not-ours "$bad"
# a FIFO or a device as --nvml would block or feed dlopen() (T3-11): refused
# with exit 2 before it, nothing written
bad=
for f in "$work/nots/fifo" /dev/zero; do
	timeout 20 "$bin" idle-fix --dry-run --nvml "$f" --state "$work/nvml-fifo.state" >"$work/out" 2>"$work/err"
	rc=$?
	[[ $rc == 2 && ! -s $work/out && ! -e $work/nvml-fifo.state ]] &&
		grep -q "Unable to load $f: not a regular file.*pass the NVML shared library itself" "$work/err" ||
		bad+=" [$f] rc $rc: $(head -c 160 "$work/err")"
done
[[ -z $bad ]] && t_pass idle-fix-nvml-not-a-file || t_fail idle-fix-nvml-not-a-file "$bad"
# an empty file is a state where nothing counts: accepted, and replaced
: >"$work/nots/empty"
STATE=$work/nots/empty fix >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 0 && $(<"$work/nots/empty") == "$A 1" ]] && t_pass idle-fix-state-empty-ok ||
	t_fail idle-fix-state-empty-ok "rc $rc: $(head -1 "$work/err")"

# cuCtxCreate fails (exit 1, the reason), or hangs (killed after --timeout)
rm -rf "$work/run"
FAKE_CUDA_CTX_ERROR=2 fix --checks 1 >"$work/out" 2>&1
rc=$?
[[ $rc == 1 ]] && grep -q "^$A .*fix-failed: cuCtxCreate: CUDA_ERROR_OUT_OF_MEMORY (2)" "$work/out" &&
	t_pass idle-fix-ctx-error || t_fail idle-fix-ctx-error "rc $rc: $(grep "^$A" "$work/out")"
t0=$SECONDS
FAKE_CUDA_CTX_HANG=1 fix --checks 1 --timeout 2 >"$work/out" 2>&1
rc=$?
[[ $rc == 1 && $((SECONDS - t0)) -lt 10 ]] && grep -q "^$A .*fix-failed: creating the context did not finish in 2 s" "$work/out" &&
	t_pass idle-fix-ctx-hang || t_fail idle-fix-ctx-hang "rc $rc after $((SECONDS - t0)) s: $(grep "^$A" "$work/out")"

# an --nvml that is not there or not a library: exit 2, about the path (not
# "is the driver installed?"); no NVML at all: exit 3; another run holds the
# state: exit 2
nb=
for l in "$work/none.so" /etc/passwd; do
	"$bin" idle-fix --nvml "$l" --state "$work/run/state" >/dev/null 2>"$work/err"
	rc=$?
	[[ $rc == 2 ]] && grep -q "Unable to load $l.*check the path given" "$work/err" &&
		! grep -q 'driver installed' "$work/err" || nb+=" [$l] rc $rc: $(head -1 "$work/err")"
done
[[ -z $nb ]] && t_pass idle-fix-nvml-bad-path || t_fail idle-fix-nvml-bad-path "$nb"
if ldconfig -p | grep -q 'libnvidia-ml\.so\.1 '; then
	t_skip idle-fix-no-nvml "this machine has an NVML in the loader cache"
else
	"$bin" idle-fix --state "$work/run/state" >/dev/null 2>"$work/err"
	rc=$?
	[[ $rc == 3 ]] && grep -q 'Unable to load libnvidia-ml.so.1.*driver installed' "$work/err" &&
		t_pass idle-fix-no-nvml || t_fail idle-fix-no-nvml "rc $rc: $(head -1 "$work/err")"
fi
# a state directory this user cannot write: exit 4, run as root or --state
if command -v setpriv >/dev/null && ((EUID == 0)); then
	pub=$(mktemp -d /tmp/nvs-idlefix-pub.XXXXXX)
	chmod 755 "$pub"
	mkdir -m 555 "$pub/locked"
	cp "$work/libnvidia-ml.so.1" "$work/libcuda.so.1" "$pub/"
	printf '%s 0 0 40 30\n' "$A" >"$pub/nvml.state"
	chmod 644 "$pub"/*.so.1 "$pub/nvml.state"
	nvs_world_copy "$bin"
	FAKE_NVML_STATE=$pub/nvml.state FAKE_CUDA_LOG=/dev/null setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		"$NVS_WORLD_COPY" idle-fix --nvml "$pub/libnvidia-ml.so.1" --lib "$pub/libcuda.so.1" --state "$pub/locked/state" \
		>/dev/null 2>"$work/err"
	rc=$?
	[[ $rc == 4 ]] && grep -q 'Permission denied; run as root, or pass --state' "$work/err" &&
		t_pass idle-fix-state-eacces || t_fail idle-fix-state-eacces "rc $rc: $(head -1 "$work/err")"
	# a state directory that cannot be created (as /run/nvsidecar for a non-root
	# user): the mkdir's EACCES, exit 4, not the lock file's ENOENT (finding 12)
	FAKE_NVML_STATE=$pub/nvml.state FAKE_CUDA_LOG=/dev/null setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		"$NVS_WORLD_COPY" idle-fix --nvml "$pub/libnvidia-ml.so.1" --lib "$pub/libcuda.so.1" --state "$pub/locked/sub/state" \
		>/dev/null 2>"$work/err"
	rc=$?
	[[ $rc == 4 ]] && grep -q "Unable to create the directory \`$pub/locked/sub' for the state file .*: Permission denied; run as root, or pass --state" "$work/err" &&
		t_pass idle-fix-state-mkdir-eacces || t_fail idle-fix-state-mkdir-eacces "rc $rc: $(head -1 "$work/err")"
	rm -rf "$pub"
else
	t_skip idle-fix-state-eacces "needs root and setpriv to try as an unprivileged user"
	t_skip idle-fix-state-mkdir-eacces "needs root and setpriv to try as an unprivileged user"
fi
# a read-only or full file system under --state (private mounts): each says
# what happened and what to do; counts that cannot be saved are an I/O
# failure (exit 1), not a usage error (finding 12)
cat >"$work/fs.sh" <<'EOF'
mkdir -p "$WORK/ro" "$WORK/full"
mount -t tmpfs -o ro,size=64k nvs-ro "$WORK/ro" || exit 90
mount -t tmpfs -o size=16k nvs-full "$WORK/full" || exit 90
head -c 1M /dev/zero >"$WORK/full/filler" 2>/dev/null
fix() { "$BIN" idle-fix --nvml "$WORK/libnvidia-ml.so.1" --lib "$WORK/libcuda.so.1" "$@"; }
fix --state "$WORK/ro/x.state" >"$WORK/ro.out" 2>"$WORK/ro.err"
echo "ro $?"
fix --state "$WORK/full/x.state" >"$WORK/full.out" 2>"$WORK/full.err"
echo "full $?"
# no inode left: the lock file itself cannot be created
mkdir -p "$WORK/noino"
mount -t tmpfs -o size=64k,nr_inodes=2 nvs-noino "$WORK/noino" || exit 90
: >"$WORK/noino/filler"
fix --state "$WORK/noino/x.state" >"$WORK/noino.out" 2>"$WORK/noino.err"
echo "noino $?"
EOF
nvml 100 0
if ((EUID == 0)) && WORK=$work BIN=$bin unshare -m bash "$work/fs.sh" >"$work/fs.rc" 2>&1; then
	rc=$(awk '$1 == "ro" { print $2 }' "$work/fs.rc")
	[[ $rc == 2 && ! -s $work/ro.out ]] &&
		grep -q "Unable to open $work/ro/x.state.lock: Read-only file system; pass --state FILE on a writable file system" "$work/ro.err" &&
		t_pass idle-fix-state-erofs || t_fail idle-fix-state-erofs "rc $rc: $(head -1 "$work/ro.err")"
	rc=$(awk '$1 == "full" { print $2 }' "$work/fs.rc")
	[[ $rc == 1 ]] && grep -q "No space left on device; this run's counts were not saved.*; free space there, or pass --state" "$work/full.err" &&
		t_pass idle-fix-state-enospc || t_fail idle-fix-state-enospc "rc $rc: $(head -1 "$work/full.err")"
	# finding 12: a state place that cannot take a write is an I/O failure
	# (exit 1) with the next step, not a usage error (was exit 2)
	rc=$(awk '$1 == "noino" { print $2 }' "$work/fs.rc")
	[[ $rc == 1 ]] && grep -q "Unable to open $work/noino/x.state.lock: No space left on device; free space there, or pass --state" "$work/noino.err" &&
		t_pass idle-fix-lock-enospc || t_fail idle-fix-lock-enospc "rc $rc: $(head -1 "$work/noino.err")"
else
	t_skip idle-fix-state-erofs "needs root and a private mount namespace (unshare -m): $(tail -1 "$work/fs.rc" 2>/dev/null)"
	t_skip idle-fix-lock-enospc "needs root and a private mount namespace (unshare -m)"
	t_skip idle-fix-state-enospc "needs root and a private mount namespace (unshare -m)"
fi
# finding 6: a report that cannot be written (stdout full) is exit 1, as
# for topo and doctor, in text and JSON; the state is still saved
bad=
for a in "" "--json" "--dry-run"; do
	# shellcheck disable=SC2086
	fix $a >/dev/full 2>"$work/err"
	rc=$?
	[[ $rc == 1 ]] && grep -q 'write error: No space left on device' "$work/err" || bad+=" [$a] rc $rc: $(head -c 120 "$work/err")"
done
[[ -z $bad ]] && t_pass idle-fix-stdout-full || t_fail idle-fix-stdout-full "$bad"
FAKE_NVML_INIT_ERROR=9 fix >/dev/null 2>"$work/err"
rc=$?
[[ $rc == 3 ]] && grep -q 'nvmlInit failed: Driver Not Loaded' "$work/err" && t_pass idle-fix-nvml-init ||
	t_fail idle-fix-nvml-init "rc $rc: $(head -1 "$work/err")"
mkdir -p "$work/run"
exec {lk}>>"$work/run/state.lock"
flock -n "$lk"
fix >/dev/null 2>"$work/err"
rc=$?
exec {lk}>&-
[[ $rc == 2 ]] && grep -q 'Another idle-fix holds' "$work/err" && t_pass idle-fix-locked || t_fail idle-fix-locked "rc $rc: $(head -1 "$work/err")"

# bad arguments: exit 2, nothing on stdout
bad=
for a in "--threshold 0" "--threshold 101" "--checks x" "--timeout" "--state ''" "--bogus"; do
	# shellcheck disable=SC2086
	out=$(eval "\"$bin\" idle-fix $a" 2>"$work/err")
	rc=$?
	[[ $rc == 2 && -z $out && -s $work/err ]] || bad+=" [$a] rc $rc"
done
[[ -z ${bad:-} ]] && t_pass idle-fix-bad-args || t_fail idle-fix-bad-args "$bad"
"$bin" idle-fix --help | grep -q 'Exit status' && t_pass idle-fix-help || t_fail idle-fix-help "no exit status in --help"

# syslog: in a mount namespace of its own, /dev is a tmpfs holding the
# real null device and a /dev/log datagram socket that Python listens on
cat >"$work/syslog.sh" <<'EOF'
set -e
old=$(mktemp -d)
mount --rbind /dev "$old"
mount -t tmpfs tmpfs /dev
for n in null zero urandom; do : >"/dev/$n"; mount --bind "$old/$n" "/dev/$n"; done
"$PY" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
print("ready", flush=True)
s.settimeout(20)
with open(sys.argv[1], "w") as f:
    while True:
        try:
            m = s.recv(4096).decode(errors="replace")
        except socket.timeout:
            break
        f.write(m + "\n")
        f.flush()
' "$WORK/syslog.txt" >"$WORK/listener" &
for i in $(seq 100); do grep -q ready "$WORK/listener" 2>/dev/null && break; sleep 0.1; done
rm -rf "$WORK/run"
printf '%s 100 0 61 310\n' "$A" >"$FAKE_NVML_STATE"
"$BIN" idle-fix --nvml "$WORK/libnvidia-ml.so.1" --lib "$WORK/libcuda.so.1" --state "$WORK/run/state" --checks 1 >/dev/null
sleep 0.5
kill %1
EOF
: >"$work/syslog.txt"
if WORK=$work BIN=$bin PY=$py A=$A unshare -m bash "$work/syslog.sh" >"$work/out" 2>&1; then
	# <29>: LOG_DAEMON (3 << 3) | LOG_NOTICE (5)
	grep -q "^<29>.*nvsidecar-idle-fix\[[0-9]*\]: $A at 100% utilisation and 310 W with no process for 1 checks: created and destroyed a CUDA context" "$work/syslog.txt" &&
		t_pass idle-fix-syslog || t_fail idle-fix-syslog "$(head -c 300 "$work/syslog.txt") $(tail -2 "$work/out")"
else
	t_fail idle-fix-syslog "the private /dev could not be set up: $(tail -2 "$work/out" | tr '\n' ' ')"
fi

# ASan/UBSan: a whole fix cycle, the child included
if ! why=$(nvs_asan_build); then
	t_fail idle-fix-asan-build "$why"
	exit 0
fi
export ASAN_OPTIONS=detect_leaks=1:exitcode=99 UBSAN_OPTIONS=halt_on_error=1:exitcode=98
rm -rf "$work/run"
nvml 100 100
bad=
for a in "" "" "--json" "--dry-run" "--checks 1 --timeout 5"; do
	# shellcheck disable=SC2086
	"$asan/nvsidecar" idle-fix --nvml "$work/libnvidia-ml.so.1" --lib "$work/libcuda.so.1" --state "$work/run/state" $a \
		>/dev/null 2>"$work/err"
	rc=$?
	{ [[ $rc == 98 || $rc == 99 ]] || grep -q 'Sanitizer' "$work/err"; } && bad+=" [$a] rc $rc"
done
[[ -z $bad ]] && t_pass idle-fix-asan || t_fail idle-fix-asan "$bad: $(grep -m2 Sanitizer "$work/err")"
