#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: userspace (tests/vm/lanes.tsv)
#
# Slurm for real: munged, slurmctld and slurmd from Debian run in the guest
# with scripts/slurm/nvsidecar-healthcheck as HealthCheckProgram every 2 s
# and a doctor.conf that expects every simulated GPU and limits the hotspot
# to 100 °C. `scontrol show node' must show the node
#   - IDLE while healthy;
#   - DRAIN with an "nvsidecar:" reason when the hotspot ramps over its
#     limit, when the module is unloaded, when a GPU is removed from the bus;
#   - IDLE again after each recovery (the script resumes what it drained);
#   - still DRAIN, with the admin's reason, when an admin drained it for
#     something else, through a failure and its recovery;
#   - DRAIN "nvsidecar: health check stuck" when doctor does not exit even
#     after SIGKILL (a stand-in `timeout' that never returns, as GNU
#     timeout does not while its child sleeps in the kernel), and IDLE again
#     once that process is gone.
# The excerpts are saved to $NVS_OUT/slurm-*.txt.
#
# Slurm needs a name that resolves to an address getaddrinfo(AI_ADDRCONFIG)
# accepts (loopback alone is not), its config in /etc/slurm and cgroup v2:
# the file re-runs itself in new mount and UTS namespaces, with bind mounts
# over /etc/hosts, /etc/resolv.conf and /etc/slurm and cgroup2 on
# /sys/fs/cgroup, which end with the file, and adds a dummy interface,
# which it removes. Not a network namespace of its own: the module's
# generic netlink family lives in the initial one only, as on a real node.
set -u

for p in munged slurmctld slurmd scontrol unshare; do
	if ! command -v "$p" >/dev/null; then
		t_skip slurm "$p is not installed (scripts/deps.sh installs slurmctld, slurmd, slurm-client and munge)"
		exit 0
	fi
done
if [[ $NVS_LANE == debug ]]; then
	t_skip slurm "Slurm's daemons under KASAN and emulation exceed the debug lane's budget; the module paths this file drives (unload, PCI remove) run there in t-thermal-hotplug and t-netlink-hotplug"
	exit 0
fi
if [[ ! -d /etc/slurm ]]; then
	t_skip slurm "no /etc/slurm on the host root to mount the test's configuration over (install slurm-client)"
	exit 0
fi
if [[ -z ${NVS_SLURM_NS:-} ]]; then
	exec unshare -m -u env NVS_SLURM_NS=1 bash "$0"
fi

node=nvsnode addr=10.254.0.1
run=/run/nvs-slurm
hc_every=2
mkdir -p "$run"/{etc,ctld,spool,munge,log}
chmod 0700 "$run/munge"

# --- the node's network, name and configuration ------------------------------
cleanup() {
	[[ -n ${ramp:-} ]] && kill "$ramp" 2>/dev/null
	scontrol shutdown >/dev/null 2>&1
	for p in "$run/slurmd.pid" "$run/ctld.pid" "$run/munge/munged.pid"; do
		[[ -f $p ]] && kill "$(<"$p")" 2>/dev/null
	done
	nvs_sleep 1
	# slurmd made these in the real cgroup tree, which outlives the namespace.
	rmdir /sys/fs/cgroup/system.slice/*slurmstepd.scope/* /sys/fs/cgroup/system.slice/*slurmstepd.scope 2>/dev/null
	cp "$run"/log/*.log "$NVS_OUT/" 2>/dev/null
	ip link del nvs0 2>/dev/null
}
trap cleanup EXIT
ip link del nvs0 2>/dev/null
if ! { ip link add nvs0 type dummy && ip addr add "$addr/24" dev nvs0 && ip link set nvs0 up; } 2>"$run/log/ip"; then
	t_fail slurm-setup "no dummy interface: $(cat "$run/log/ip")"
	exit 0
fi
hostname "$node"
printf '127.0.0.1 localhost\n%s %s\n' "$addr" "$node" >"$run/hosts"
: >"$run/resolv.conf"
mount --bind "$run/hosts" /etc/hosts &&
	mount --bind "$run/resolv.conf" /etc/resolv.conf &&
	mount --bind "$run/etc" /etc/slurm &&
	mount -t cgroup2 none /sys/fs/cgroup || { t_fail slurm-setup "a bind or cgroup2 mount failed"; exit 0; }
mkdir -p /sys/fs/cgroup/system.slice

ncpu=$(nproc)
cat >"$run/etc/slurm.conf" <<EOC
ClusterName=nvs
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$run/ctld
SlurmdSpoolDir=$run/spool
SlurmctldPidFile=$run/ctld.pid
SlurmdPidFile=$run/slurmd.pid
SlurmctldLogFile=$run/log/slurmctld.log
SlurmdLogFile=$run/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/linear
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdTimeout=60
HealthCheckProgram=$run/healthcheck
HealthCheckInterval=$hc_every
HealthCheckNodeState=ANY
NodeName=$node NodeAddr=$addr CPUs=$ncpu Boards=1 SocketsPerBoard=1 CoresPerSocket=$ncpu ThreadsPerCore=1 State=UNKNOWN
PartitionName=gpu Nodes=$node Default=YES State=UP
EOC
# slurmd's cgroup/v2 plugin talks to systemd over D-Bus unless told not to.
printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n' >"$run/etc/cgroup.conf"
cat >"$run/doctor.conf" <<EOC
# the test's /etc/nvsidecar/doctor.conf
expect-gpus = $NVS_GPUS
limit = hotspot:100
EOC
# What slurmd runs: the shipped script, told where the binary under test
# and this doctor.conf are (slurmd passes it no PATH and no settings). Each
# finished run adds a line to hc.runs, so the test can wait for whole runs.
cat >"$run/healthcheck" <<EOC
#!/bin/sh
NVSIDECAR_BIN=$NVS_BIN NVSIDECAR_HEALTHCHECK_ARGS="--config $run/doctor.conf" NVSIDECAR_DEFAULTS=/dev/null
NVSIDECAR_HEALTHCHECK_TIMEOUT=10 NVSIDECAR_HEALTHCHECK_DIR=$run/hc
export NVSIDECAR_BIN NVSIDECAR_HEALTHCHECK_ARGS NVSIDECAR_DEFAULTS NVSIDECAR_HEALTHCHECK_TIMEOUT NVSIDECAR_HEALTHCHECK_DIR
$NVS_TOP/scripts/slurm/nvsidecar-healthcheck >>$run/log/healthcheck.log 2>&1
echo "\$? \$(date +%s)" >>$run/hc.runs
EOC
chmod 0755 "$run/healthcheck"

# --- the module and GPUs -----------------------------------------------------
sim_fixture_all gb202
nvs_load || { t_fail slurm-load "insmod failed"; exit 0; }
c0=$(sim_class 0) || { t_fail slurm-gpu0 "no class device for simulated GPU0"; exit 0; }
wait_for 5 '[[ $(read_err "$c0/status") == ok ]]'

# The verdict the health check will get, before Slurm is involved.
v=$("$NVS_BIN" doctor --quick --brief --config "$run/doctor.conf" 2>&1)
[[ $? == 0 && $v == OK:* ]] && t_pass slurm-doctor-healthy || t_fail slurm-doctor-healthy "$v"

# --- munge, slurmctld, slurmd -------------------------------------------------
t0=$SECONDS
head -c 1024 /dev/urandom >"$run/munge/munge.key"
chmod 0400 "$run/munge/munge.key"
# Slurm's auth plugin finds munged at libmunge's default socket.
mkdir -p /run/munge
munged --force --key-file="$run/munge/munge.key" --socket=/run/munge/munge.socket.2 \
	--pid-file="$run/munge/munged.pid" --log-file="$run/log/munged.log" --seed-file="$run/munge/seed" \
	2>"$run/log/munged.err" || { t_fail slurm-munge "munged did not start: $(cat "$run/log/munged.err")"; exit 0; }
slurmctld 2>"$run/log/slurmctld.err" || { t_fail slurm-ctld "slurmctld did not start: $(tail -3 "$run/log/slurmctld.err")"; exit 0; }
slurmd 2>"$run/log/slurmd.err" || { t_fail slurm-slurmd "slurmd did not start: $(tail -3 "$run/log/slurmd.err")"; exit 0; }

# state: "STATE|REASON" of the node
state() {
	local line st rs=
	line=$(scontrol show node "$node" -o 2>&1)
	st=${line#* State=}
	st=${st%% *}
	if [[ $line == *" Reason="* ]]; then
		rs=${line#* Reason=}
		rs=${rs%% \[*}
	fi
	echo "$st|$rs"
}
# runs N: waits (60 s at most) until N more health checks have finished
runs() {
	local n0 n i
	n0=$(wc -l <"$run/hc.runs" 2>/dev/null || echo 0)
	for ((i = 0; i < 120; i++)); do
		n=$(wc -l <"$run/hc.runs" 2>/dev/null || echo 0)
		((n >= n0 + $1)) && return 0
		nvs_sleep 0.5
	done
	return 1
}
# capture NAME: `scontrol show node' as an admin reads it, into slurm-NAME.txt
capture() {
	scontrol show node "$node" >"$NVS_OUT/slurm-$1.txt" 2>&1
}
# until_state SECS 'GLOB' NAME: waits for "STATE|REASON" to match GLOB,
# saves the excerpt as NAME
until_state() {
	local end=$((SECONDS + $1)) want=$2 name=$3 s
	while :; do
		s=$(state)
		# shellcheck disable=SC2053 # a glob on purpose
		if [[ $s == $want ]]; then
			capture "$name"
			echo "$s"
			return 0
		fi
		((SECONDS >= end)) && break
		nvs_sleep 0.5
	done
	echo "$s"
	return 1
}

if s=$(until_state 90 'IDLE|' idle-start); then
	t_pass slurm-up
	echo "   slurm up in $((SECONDS - t0)) s"
else
	t_fail slurm-up "the node did not become IDLE in 90 s: $s; health check: $(tail -n 2 "$run/log/healthcheck.log" 2>/dev/null | tr '\n' ' ')"
	exit 0
fi
cp "$NVS_OUT/slurm-idle-start.txt" "$NVS_OUT/slurm-before.txt"

# 1. the hotspot ramps from 95 to 110 °C: over the 100 °C limit
echo "   ramp starts at $(date +%s)"
sim 0 ramp --reg hotspot --from 95 --to 110 --seconds 3 --hz 10 &
ramp=$!
if s=$(until_state 60 '*DRAIN*|nvsidecar: *hotspot*' drain-hotspot); then
	t_pass slurm-drain-hotspot
	cp "$NVS_OUT/slurm-drain-hotspot.txt" "$NVS_OUT/slurm-during.txt"
else
	t_fail slurm-drain-hotspot "state $s"
fi
wait "$ramp" 2>/dev/null
ramp=
sim 0 fixture gb202
if s=$(until_state 30 'IDLE|' idle-hotspot); then
	t_pass slurm-resume-hotspot
	cp "$NVS_OUT/slurm-idle-hotspot.txt" "$NVS_OUT/slurm-after.txt"
else
	t_fail slurm-resume-hotspot "state $s"
fi

# 2. the module is unloaded
nvs_unload || t_fail slurm-unload "rmmod failed"
s=$(until_state 30 '*DRAIN*|nvsidecar: *module*' drain-module) && t_pass slurm-drain-module ||
	t_fail slurm-drain-module "state $s"
nvs_load || t_fail slurm-reload "insmod failed"
s=$(until_state 30 'IDLE|' idle-module) && t_pass slurm-resume-module || t_fail slurm-resume-module "state $s"

# 3. a GPU falls off the bus
b1=$(sim_bdf 1)
echo 1 >"/sys/bus/pci/devices/$b1/remove"
s=$(until_state 30 '*DRAIN*|nvsidecar: *' drain-removed) && [[ $s == *"$NVS_GPUS"* ]] && t_pass slurm-drain-removed ||
	t_fail slurm-drain-removed "state $s (want a reason naming the expected $NVS_GPUS GPUs)"
echo 1 >/sys/bus/pci/rescan
s=$(until_state 30 'IDLE|' idle-rescan) && t_pass slurm-resume-rescan || t_fail slurm-resume-rescan "state $s"

# 4. an admin drains the node for something else: that stays, through a
#    failure and its recovery
admin="fan replacement, ticket 4711"
scontrol update nodename="$node" state=drain reason="$admin"
sim 0 temp hotspot 105
# runs are serialised (the script's lock): of 3 that finish, 2 began after the change
runs 3 || t_fail slurm-admin-runs "no health check finished in 60 s"
s=$(state)
[[ $s == *DRAIN*"|$admin" ]] && t_pass slurm-admin-kept-failing || t_fail slurm-admin-kept-failing "state $s"
sim 0 fixture gb202
runs 3 || t_fail slurm-admin-runs "no health check finished in 60 s"
s=$(state)
capture admin
[[ $s == *DRAIN*"|$admin" ]] && t_pass slurm-admin-kept-healthy || t_fail slurm-admin-kept-healthy "state $s"
scontrol update nodename="$node" state=resume
s=$(until_state 20 'IDLE|' idle-end) && t_pass slurm-admin-resume || t_fail slurm-admin-resume "state $s"

# 5. doctor stuck past SIGKILL: a tmpfs over /usr/local/sbin (first in the
#    script's PATH, and private to this mount namespace) holds a timeout
#    that, for doctor only, never returns; scontrol and logger get the real one
if mount -t tmpfs nvs-stuck /usr/local/sbin; then
	cat >/usr/local/sbin/timeout <<'EOS'
#!/bin/bash
# timeout -k KILL LIMIT NVSIDECAR doctor ...
if [[ ${5:-} == doctor ]]; then
	trap '' TERM INT HUP
	exec -a nvs-stuck-doctor sleep 600
fi
exec /usr/bin/timeout "$@"
EOS
	chmod 0755 /usr/local/sbin/timeout
	s=$(until_state 60 '*DRAIN*|nvsidecar: health check stuck*' drain-stuck) && t_pass slurm-drain-stuck ||
		t_fail slurm-drain-stuck "state $s; health check: $(tail -n 2 "$run/log/healthcheck.log" | tr '\n' ' ')"
	# an admin's drain stays, stuck or not
	scontrol update nodename="$node" state=resume
	scontrol update nodename="$node" state=drain reason="$admin"
	runs 2 || t_fail slurm-admin-runs "no health check finished in 60 s"
	s=$(state)
	[[ $s == *DRAIN*"|$admin" ]] && t_pass slurm-stuck-admin-kept || t_fail slurm-stuck-admin-kept "state $s"
	umount /usr/local/sbin
	for p in /proc/[0-9]*; do
		[[ $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) == "nvs-stuck-doctor "* ]] && kill -9 "${p#/proc/}"
	done
	scontrol update nodename="$node" state=drain reason="nvsidecar: health check stuck (test)"
	s=$(until_state 60 'IDLE|' idle-unstuck) && t_pass slurm-resume-unstuck || t_fail slurm-resume-unstuck "state $s"
else
	t_fail slurm-drain-stuck "no tmpfs over /usr/local/sbin"
fi

# slurmd never had to kill the script, and the script said what it did.
if grep -qi 'health.*\(timed out\|killed\)' "$run/log/slurmd.log"; then
	t_fail slurm-healthcheck-log "slurmd: $(grep -i -m2 'health' "$run/log/slurmd.log" | tr '\n' ' ')"
elif grep -q "node $node is unhealthy: draining it with reason \`nvsidecar:.*: done" "$run/log/healthcheck.log" &&
	grep -q "resuming it" "$run/log/healthcheck.log" && grep -q 'for another reason' "$run/log/healthcheck.log"; then
	t_pass slurm-healthcheck-log
else
	t_fail slurm-healthcheck-log "healthcheck.log: $(tail -n 3 "$run/log/healthcheck.log" | tr '\n' ' ')"
fi
echo "   slurm file: $((SECONDS - t0)) s, $(wc -l <"$run/hc.runs") health checks"
cp "$run/hc.runs" "$NVS_OUT/slurm-hc.runs"
