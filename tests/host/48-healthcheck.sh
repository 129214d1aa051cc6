#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# scripts/slurm/nvsidecar-healthcheck against a stand-in scontrol and
# doctor, in a private mount namespace where a tmpfs over /usr/local/sbin
# (first in the PATH the script sets) holds the stand-ins. What the review
# (T3-02, T3-13, T3-14) found silent must now leave a trace:
#   - the doctor does not inherit the lock;
#   - a doctor that outlives SIGKILL (stuck in the kernel on a wedged GPU;
#     here a stand-in `timeout' that, like GNU timeout waiting on such a
#     child, never returns) drains the node "nvsidecar: health check
#     stuck", and so does the next run, which starts no second doctor;
#   - a run that finds the previous one holding the lock past its budget
#     drains the same way; a young one is logged and left to finish;
#   - an admin's own drain is never touched, stuck or not;
#   - stderr never becomes the reason; a hanging scontrol is bounded; a
#     failed update is logged as failed; a doctor.conf error is "unknown"
#     (no drain, exit 3, Nagios UNKNOWN);
#   - /etc/default/nvsidecar is read as systemd reads it, never executed.
# Real Slurm runs the script in tests/vm/t-slurm.sh.
set -u
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

if ((EUID != 0)) || ! command -v unshare >/dev/null || ! command -v flock >/dev/null; then
	t_skip healthcheck "needs root, unshare and flock for the private mount namespace"
	exit 0
fi
if [[ -z ${NVS_HC_NS:-} ]]; then
	exec unshare -m env NVS_HC_NS=1 bash "$0"
fi

hc=$NVS_TOP/scripts/slurm/nvsidecar-healthcheck
work=$(mktemp -d /tmp/nvs-hc.XXXXXX)
fakes=/usr/local/sbin
cleanup() {
	[[ -n ${holder:-} ]] && kill "$holder" 2>/dev/null
	pkill_ours
	rm -rf "$work"
}
trap cleanup EXIT
mount -t tmpfs nvs-hc "$fakes" || { t_fail healthcheck-setup "no tmpfs over $fakes"; exit 0; }

# The node as slurmctld holds it: "STATE|REASON" in $work/node.
# `scontrol show node N -o' prints one line whose State= and Reason= fields
# are what the script reads ("Reason=TEXT [user@time]" as Slurm prints it);
# `scontrol update' sets them as slurmctld would for drain and resume.
# FAKE_SCONTROL=hang|fail-update makes it hang or refuse the update.
cat >"$fakes/scontrol" <<'EOF'
#!/bin/bash
echo "scontrol $*" >>"$HC_WORK/calls"
IFS='|' read -r st rs <"$HC_WORK/node"
case ${1:-} in
show)
	[[ ${FAKE_SCONTROL:-} == hang ]] && exec sleep 300
	printf 'NodeName=%s Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 State=%s ThreadsPerCore=1 Partitions=gpu%s\n' \
		"$3" "$st" "${rs:+ Reason=$rs [root@2026-12-04T10:00:00]}"
	;;
update)
	if [[ ${FAKE_SCONTROL:-} == fail-update ]]; then
		echo "slurm_update error: Invalid node state specified" >&2
		exit 1
	fi
	for a in "${@:2}"; do
		case $a in
		state=drain) st=IDLE+DRAIN ;;
		state=resume) st=IDLE rs= ;;
		reason=*) rs=${a#reason=} ;;
		esac
	done
	echo "$st|$rs" >"$HC_WORK/node"
	;;
esac
EOF
# logger -t TAG -- MESSAGE: into $work/log instead of the host's journal
cat >"$fakes/logger" <<'EOF'
#!/bin/bash
echo "$2: $4" >>"$HC_WORK/log"
EOF
# the doctor: FAKE_DOCTOR picks the verdict; every start is counted, and
# its open descriptors are noted
mkdir "$work/bin"
cat >"$work/bin/nvsidecar" <<'EOF'
#!/bin/bash
echo "$*" >>"$HC_WORK/doctor-runs"
ls /proc/$$/fd >"$HC_WORK/doctor-fds"
env | grep '^NVSIDECAR_' | sort >"$HC_WORK/doctor-env"
case ${FAKE_DOCTOR:-ok} in
ok) echo "OK: 2 GPU(s), module 0.4.0"; exit 0 ;;
esc) printf 'FAIL: gpus: \e[31mred\e[0m \xff\xfe bad\n'; exit 1 ;;
bracket) echo "FAIL: gpu0: 0000:03:00.0 [gb202] fell off the bus"; exit 1 ;;
fail) echo "FAIL: gpus: 1 GPU(s), 2 expected"; exit 1 ;;
noisy) echo "nvsidecar: warning: NVML is older than the driver" >&2; echo "FAIL: gpus: 1 GPU(s), 2 expected"; exit 1 ;;
conf) echo "nvsidecar: /etc/nvsidecar/doctor.conf:3: Unknown setting \`expect-gpu'" >&2; exit 2 ;;
hang) exec sleep 300 ;;
# the real doctor, on the verdict a real `doctor --full' cached (issue 23
# item 3); this host has no nvsidecar module, so its module layer is left
# out and --brief's line is made from the rest
real) "$HC_REAL" doctor --quick --json >"$HC_WORK/real.json" 2>/dev/null; exec python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
bad = [k for k in d["checks"] if k["result"].strip() == "FAIL" and k["layer"] != "module"]
if bad:
    print("FAIL: %s: %s" % (bad[0]["name"], bad[0]["message"]))
    sys.exit(1)
print("OK: %d checks (module layer left out)" % len(d["checks"]))' "$HC_WORK/real.json" ;;
esac
EOF
chmod 0755 "$fakes/scontrol" "$fakes/logger" "$work/bin/nvsidecar"
export HC_WORK=$work NVSIDECAR_BIN=$work/bin/nvsidecar NVSIDECAR_DEFAULTS=/dev/null \
	NVSIDECAR_HEALTHCHECK_DIR=$work/run SLURMD_NODENAME=gpu07
# processes this file started that may outlive a run: the stuck stand-ins
pkill_ours() {
	local p
	for p in /proc/[0-9]*; do
		[[ " $({ tr "\0" " " <"$p/environ"; } 2>/dev/null) " == *" HC_WORK=$work "* ]] && kill -9 "${p#/proc/}" 2>/dev/null
	done
	rm -f "$fakes/timeout"
}

# node STATE REASON; hc: one run, rc in $rc, its output in $work/out
node() { echo "$1|${2:-}" >"$work/node"; : >"$work/calls"; : >"$work/log"; : >"$work/doctor-runs"; }
hc() {
	"$hc" "$@" >"$work/out" 2>&1
	rc=$?
	# its logger calls run in the background: let them land in $work/log
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		pgrep -f "^/bin/bash $fakes/logger" >/dev/null || break
		sleep 0.2
	done
}
st() { cat "$work/node"; }
check() { # NAME CONDITION...
	local name=$1
	shift
	if eval "$*"; then
		t_pass "$name"
	else
		t_fail "$name" "rc $rc, node $(st), log: $(tr '\n' ' ' <"$work/log" | head -c 300)"
	fi
}

# --- the basic verdicts ----------------------------------------------------
node IDLE
FAKE_DOCTOR=ok hc
check hc-healthy-quiet '[[ $rc == 0 && $(st) == "IDLE|" ]] && ! grep -q update "$work/calls" && grep -q "is healthy" "$work/log"'
FAKE_DOCTOR=fail hc
check hc-drain '[[ $rc == 1 && $(st) == "IDLE+DRAIN|nvsidecar: gpus: 1 GPU(s), 2 expected" ]] && grep -q "draining it.*: done" "$work/log"'
# the doctor does not hold the lock (fd 9) the script took
check hc-lock-not-inherited '[[ -s $work/doctor-fds ]] && ! grep -qx 9 "$work/doctor-fds"'
FAKE_DOCTOR=ok hc
check hc-resume-ours '[[ $rc == 0 && $(st) == "IDLE|" ]] && grep -q "resuming it.*: done" "$work/log"'
admin="fan replacement, ticket 4711"
node IDLE+DRAIN "$admin"
FAKE_DOCTOR=fail hc
# shellcheck disable=SC2034 # read in the check below
a1=$(st)
FAKE_DOCTOR=ok hc
check hc-admin-drain-kept '[[ $a1 == "IDLE+DRAIN|$admin" && $(st) == "IDLE+DRAIN|$admin" ]] && ! grep -q update "$work/calls"'

# stderr is logged, never the reason
node IDLE
FAKE_DOCTOR=noisy hc
check hc-stderr-not-reason '[[ $(st) == "IDLE+DRAIN|nvsidecar: gpus: 1 GPU(s), 2 expected" ]] && grep -q "stderr.*NVML is older" "$work/log"'

# a doctor.conf error: unknown, the node is left as it is
node IDLE
FAKE_DOCTOR=conf hc
check hc-settings-unknown '[[ $rc == 3 && $(st) == "IDLE|" ]] && ! grep -q update "$work/calls" && grep -q "unknown.*Unknown setting" "$work/log"'
node IDLE+DRAIN "nvsidecar: gpus: 1 GPU(s), 2 expected"
FAKE_DOCTOR=conf hc
check hc-settings-unknown-no-resume '[[ $rc == 3 && $(st) == "IDLE+DRAIN|nvsidecar: gpus: 1 GPU(s), 2 expected" ]]'

# --nagios: the plugin API's 0/2/3, no scontrol
bad=
for v in ok:0:OK fail:2:CRITICAL conf:3:UNKNOWN; do
	node IDLE
	FAKE_DOCTOR=${v%%:*} hc --nagios
	w=${v#*:}
	[[ $rc == "${w%%:*}" ]] && grep -q "^NVSIDECAR ${w#*:} - " "$work/out" && [[ ! -s $work/calls ]] ||
		bad+=" [$v] rc $rc: $(head -1 "$work/out")"
done
[[ -z $bad ]] && t_pass hc-nagios || t_fail hc-nagios "$bad"

# --- scontrol bounded, failures logged as failures -------------------------
node IDLE
t0=$SECONDS
FAKE_DOCTOR=fail FAKE_SCONTROL=hang hc
check hc-scontrol-hang-bounded '[[ $rc == 2 ]] && ((SECONDS - t0 < 25)) && grep -q "unable to read node gpu07 from slurmctld (scontrol did not answer within 10 s)" "$work/log"'
node IDLE
FAKE_DOCTOR=fail FAKE_SCONTROL=fail-update hc
check hc-update-failure-logged '[[ $rc == 2 ]] && grep -q "draining it.*failed (scontrol: slurm_update error" "$work/log" && ! grep -q ": done" "$work/log"'

# --- stuck -----------------------------------------------------------------
# A doctor that timed out normally is a plain drain reason.
node IDLE
NVSIDECAR_HEALTHCHECK_TIMEOUT=1 FAKE_DOCTOR=hang hc
check hc-doctor-timeout '[[ $(st) == "IDLE+DRAIN|nvsidecar: doctor timed out after 1s" ]]'
# One that SIGKILL cannot end: GNU timeout then waits for it for ever. The
# stand-in timeout does exactly that for the doctor (and passes scontrol's
# and logger's runs to the real one).
cat >"$fakes/timeout" <<'EOF'
#!/bin/bash
# timeout -k KILL LIMIT NVSIDECAR doctor ...
if [[ ${5:-} == doctor ]]; then
	echo "$*" >>"$HC_WORK/doctor-runs"
	trap '' TERM INT HUP
	exec sleep 600
fi
exec /usr/bin/timeout "$@"
EOF
chmod 0755 "$fakes/timeout"
node IDLE
t0=$SECONDS
NVSIDECAR_HEALTHCHECK_TIMEOUT=1 hc
# shellcheck disable=SC2034 # read in the check below
took=$((SECONDS - t0))
check hc-stuck-drains '[[ $rc == 1 && $(st) == "IDLE+DRAIN|nvsidecar: health check stuck: doctor did not exit"* ]] && ((took < 20))'
# the next run starts no second doctor, and drains (here: keeps) the node
: >"$work/doctor-runs"
NVSIDECAR_HEALTHCHECK_TIMEOUT=1 hc
check hc-stuck-next-run '[[ $rc == 1 && ! -s $work/doctor-runs && $(st) == "IDLE+DRAIN|nvsidecar: health check stuck: doctor (pid "* ]]'
node IDLE+DRAIN "$admin"
NVSIDECAR_HEALTHCHECK_TIMEOUT=1 hc
check hc-stuck-admin-kept '[[ $(st) == "IDLE+DRAIN|$admin" ]] && grep -q "health check stuck.*for another reason" "$work/log"'
# once it is gone, the node is judged afresh and resumed
pkill_ours
node IDLE+DRAIN "nvsidecar: health check stuck: doctor (pid 1) started 99s ago has not exited"
FAKE_DOCTOR=ok hc
check hc-stuck-recovers '[[ $rc == 0 && $(st) == "IDLE|" && ! -e $work/run/healthcheck.doctor ]]'
# A doctor that has exited but is not yet reaped (a zombie, as the stuck
# one is for a moment after SIGKILL, until init collects it) is not stuck.
zpid=$(python3 -c '
import os, sys, time
pid = os.fork()
if pid == 0:
    os._exit(0)
print(pid, flush=True)
os.close(1)
time.sleep(20)' &)
for _ in 1 2 3 4 5 6 7 8 9 10; do
	[[ $(awk '{print $3}' "/proc/$zpid/stat" 2>/dev/null) == Z ]] && break
	sleep 0.2
done
zticks=$(awk '{print $22}' "/proc/$zpid/stat")
printf '%s %s %s\n' "$zpid" "$zticks" "$(date +%s)" >"$work/run/healthcheck.doctor"
node IDLE+DRAIN "nvsidecar: health check stuck: doctor (pid $zpid) started 99s ago has not exited"
FAKE_DOCTOR=ok hc
check hc-stuck-zombie-is-gone '[[ $rc == 0 && $(st) == "IDLE|" && ! -e $work/run/healthcheck.doctor ]]'
kill "$(ps -o ppid= -p "$zpid" 2>/dev/null)" 2>/dev/null

# The run before still holds the lock: young, this run leaves it be; past
# its budget (limit 15 + kill 5 + 3 + 30), it is a drain reason.
mkdir -p "$work/run"
flock -o "$work/run/healthcheck.lock" sleep 300 &
holder=$!
for _ in $(seq 50); do flock -n "$work/run/healthcheck.lock" true || break; sleep 0.1; done
printf -v now '%(%s)T' -1
# the holder's line, as a run writes it into healthcheck.run: pid, start ticks, time
hticks=$(awk '{print $22}' "/proc/$holder/stat")
echo "$holder $hticks $((now - 10))" >"$work/run/healthcheck.run"
node IDLE
FAKE_DOCTOR=fail hc
check hc-lock-young-skip '[[ $rc == 0 && $(st) == "IDLE|" && ! -s $work/doctor-runs ]] && grep -q "started 1[0-9]s ago (pid $holder) is still running" "$work/log"'
echo "$holder $hticks $((now - 120))" >"$work/run/healthcheck.run"
FAKE_DOCTOR=ok hc
check hc-lock-stuck-drains '[[ $rc == 1 && $(st) == "IDLE+DRAIN|nvsidecar: health check stuck: the run started 1"*"s ago (pid $holder) has not finished" ]]'
# Review finding 8: the lock was just taken by a new run, and the line is
# still the previous, finished run's (one HealthCheckInterval old). That
# run is gone: not stuck, and no drain.
dead=$(bash -c 'echo $$')
echo "$dead 12345 $((now - 300))" >"$work/run/healthcheck.run"
node IDLE
FAKE_DOCTOR=fail hc
check hc-lock-old-line-no-drain '[[ $rc == 0 && $(st) == "IDLE|" && ! -s $work/doctor-runs ]] && grep -q "another check has just started" "$work/log"'
kill "$holder"
wait "$holder" 2>/dev/null
holder=

# --- /etc/default/nvsidecar: read, never run --------------------------------
# The review's line: unquoted, with a space. bash would run the second word
# as a command; systemd's EnvironmentFile keeps the whole value.
printf '#!/bin/sh\ntouch %s/executed\n' "$work" >"$work/gpu.conf"
chmod 0755 "$work/gpu.conf"
cat >"$work/defaults" <<EOF
# comment
NVSIDECAR_HEALTHCHECK_ARGS=--config $work/gpu.conf
NVSIDECAR_DOCTOR_ARGS="--patched /opt/libcuda-gdr/590 --strict"
NVSIDECAR_HEALTHCHECK_TIMEOUT='7'
EOF
node IDLE
NVSIDECAR_DEFAULTS=$work/defaults hc
check hc-defaults-not-executed '[[ ! -e $work/executed && $(<"$work/doctor-runs") == "doctor --quick --brief --config $work/gpu.conf" ]]'

# --- review findings 9, 10, 11: the reason read back, arguments, quoting ------
# 9: an escape sequence goes whole, and a reason with " [" is read back as
# it was written, so an unchanged failure is not drained again every run
for v in esc bracket; do
	node IDLE
	FAKE_DOCTOR=$v hc
	r1=$(st)
	: >"$work/calls"
	FAKE_DOCTOR=$v hc
	if [[ $v == esc ]]; then
		[[ $r1 == "IDLE+DRAIN|nvsidecar: gpus: red    bad" ]] || r1="reason: $r1"
	else
		[[ $r1 == "IDLE+DRAIN|nvsidecar: gpu0: 0000:03:00.0 [gb202] fell off the bus" ]] || r1="reason: $r1"
	fi
	check "hc-reason-read-back-$v" '[[ $r1 != reason:* && $rc == 1 ]] && ! grep -q update "$work/calls" && grep -q "still unhealthy and drained" "$work/log"'
done
# 10: every argument counts
node IDLE
FAKE_DOCTOR=ok hc --dry-run --nagios
check hc-args-all-parsed '[[ $rc == 0 && ! -s $work/calls ]] && grep -q "^NVSIDECAR OK - " "$work/out"'
: >"$work/doctor-runs"
FAKE_DOCTOR=ok hc --nagios --bogus
check hc-args-unknown-second '[[ $rc == 2 && ! -s $work/doctor-runs ]] && grep -q "unknown argument .--bogus" "$work/out"'
# 11: quotes or a comment in NVSIDECAR_HEALTHCHECK_ARGS cannot work (the
# value is split at blanks, as systemd splits it): unknown, not a drain
for v in '--config "/etc/nvsidecar/my gpu.conf" --expect-gpus 8' '--expect-gpus 8 # the gpu config'; do
	printf 'NVSIDECAR_HEALTHCHECK_ARGS=%s\n' "$v" >"$work/defaults"
	node IDLE
	NVSIDECAR_DEFAULTS=$work/defaults hc
	check "hc-args-quote-unknown-${v:2:6}" '[[ $rc == 3 && $(st) == "IDLE|" && ! -s $work/doctor-runs ]] && grep -q "holds a quote or a .#.*rename the file, or put the options into doctor.conf" "$work/log"'
done

# --- issue 23 item 3: the cached --full verdict's settings reach doctor ---------
printf 'NVSIDECAR_VERDICT_MAX_AGE=900\nNVSIDECAR_STATE_DIR="%s/state"\n' "$work" >"$work/defaults"
node IDLE
NVSIDECAR_DEFAULTS=$work/defaults hc
check hc-verdict-settings '[[ $rc == 0 ]] && grep -qx "NVSIDECAR_VERDICT_MAX_AGE=900" "$work/doctor-env" && grep -qx "NVSIDECAR_STATE_DIR=$work/state" "$work/doctor-env"'

# --- issue 23 item 3: a GPU a job holds does not drain the node ------------------
# The real `doctor --full' against the fake libcuda (tests/p2p), GPU 1 held in
# exclusive-process mode (CUDA_ERROR_DEVICE_UNAVAILABLE, FAKE_CUDA_BUSY): its
# verdict is read by the real `doctor --quick' the script runs. Control: a
# GPU that answers 999 drains the node with the p2p failure as the reason,
# and a busy GPU afterwards does not resume it.
bld=$NVS_BUILD/doctor-u
if ! make -s -C "$NVS_TOP/user" O="$bld" WERROR=1 -j2 >"$work/build" 2>&1 ||
	! gcc -shared -fPIC -O2 -o "$work/libcuda.so.1" "$NVS_TOP/tests/p2p/fakecuda.c" 2>>"$work/build"; then
	t_fail hc-busy-gpu-build "$(tail -5 "$work/build" | tr '\n' ' ')"
	exit 0
fi
export HC_REAL=$bld/nvsidecar NVSIDECAR_STATE_DIR=$work/vstate NVS_DOCTOR_ROOT=$work/noroot \
	NVS_NVIDIA_VERSION_FILE=$work/no-driver NVS_LIBCUDA_STATE=$work/lcstate FAKE_CUDA_DEVICES=2
mkdir -p "$work/noroot"
full() { "$HC_REAL" doctor --full --lib "$work/libcuda.so.1" >"$work/full" 2>&1; }
FAKE_CUDA_BUSY=1 full
node IDLE
FAKE_DOCTOR=real hc
check hc-busy-gpu-not-drained '[[ $rc == 0 && $(st) == "IDLE|" ]] && grep -q "^check SKIP [0-9]* full full-p2p GPU 1 in use" "$NVSIDECAR_STATE_DIR/verdict" && grep -q "is healthy" "$work/log"'
FAKE_CUDA_RETAIN_ERROR=1:999 full
FAKE_DOCTOR=real hc
check hc-broken-gpu-drained '[[ $rc == 1 && $(st) == "IDLE+DRAIN|nvsidecar: full-p2p: "* ]] && grep -q "^check FAIL [0-9]* full full-p2p .*(999)" "$NVSIDECAR_STATE_DIR/verdict"'
FAKE_CUDA_BUSY=1 full
FAKE_DOCTOR=real hc
check hc-busy-gpu-keeps-drain '[[ $rc == 1 && $(st) == "IDLE+DRAIN|nvsidecar: full-p2p: "* ]] && ! grep -q resuming "$work/log" && grep -q "^check FAIL [0-9]* full full-p2p .*(999)" "$NVSIDECAR_STATE_DIR/verdict"'
# CUDA not usable at the next --full (p2p exits 3: cuInit fails, as after a
# half-done driver upgrade) verified nothing either: the FAIL stays, the
# node stays drained (admin review H1; no GPU in this sysfs, so it is SKIP)
FAKE_CUDA_INIT_ERROR=100 full
FAKE_DOCTOR=real hc
check hc-cuda-unusable-keeps-drain '[[ $rc == 1 && $(st) == "IDLE+DRAIN|nvsidecar: full-p2p: "* ]] && ! grep -q resuming "$work/log" && grep -q "^SKIP full     full-p2p: CUDA is not usable here" "$work/full" && grep -q "^check FAIL [0-9]* full full-p2p .*(999)" "$NVSIDECAR_STATE_DIR/verdict"'
# A GPU busy at every --full since its last real verification: once that
# verification is older than NVSIDECAR_VERDICT_MAX_AGE the SKIP is stale,
# as a verdict that old is: a WARN that says so, and the node is neither
# drained nor reported freshly verified (review M2; nvsidecar(8) doctor)
rm -f "$NVSIDECAR_STATE_DIR/verdict"
FAKE_CUDA_BUSY=1 full
sed -i "s/^last SKIP .*/last SKIP $(($(date +%s) - 600))/" "$NVSIDECAR_STATE_DIR/verdict"
printf 'NVSIDECAR_VERDICT_MAX_AGE=300\n' >"$work/defaults"
node IDLE
NVSIDECAR_DEFAULTS=$work/defaults FAKE_DOCTOR=real hc
check hc-busy-gpu-stale-warns '[[ $rc == 0 && $(st) == "IDLE|" ]] && python3 -c "import json, re, sys
c = json.load(open(sys.argv[1]))[\"checks\"]
sys.exit(not (any(k[\"name\"] == \"full-cache\" and k[\"result\"].strip() == \"WARN\" and re.match(r\"stale: full-p2p was not verified in the 1[0-9] min since it was first skipped\", k[\"message\"]) for k in c) and
              not any(k[\"name\"] == \"full-p2p\" for k in c)))" "$work/real.json"'
