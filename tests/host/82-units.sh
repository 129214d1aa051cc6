#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# What the shipped units and package scripts promise an admin:
#  - nvsidecar-doctor.service still runs when the module failed to load
#    (Wants=, not Requires=), cannot hang forever (TimeoutStartSec=), and
#    takes its arguments from /etc/default/nvsidecar; systemd-analyze
#    verify accepts the units;
#  - an upgrade with an initramfs that holds the previous nvsidecar.ko
#    either rebuilds it (NVSIDECAR_UPDATE_INITRAMFS=yes) or says it must be
#    rebuilt: the Debian postinst, run in a private mount namespace against
#    stand-in dkms, modinfo, lsinitramfs and update-initramfs.
set -u
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

work=$(mktemp -d /tmp/nvs-units.XXXXXX)
trap 'rm -rf "$work"' EXIT
units=$NVS_TOP/scripts/systemd
doctor=$units/nvsidecar-doctor.service

# --- the doctor unit ------------------------------------------------------------
key() { sed -n "s/^$1=//p" "$doctor"; }
if [[ $(key Wants) == nvsidecar.service && -z $(key Requires) && $(key After) == nvsidecar.service ]]; then
	t_pass units-doctor-wants
else
	t_fail units-doctor-wants "Wants=$(key Wants) Requires=$(key Requires) After=$(key After)"
fi
t=$(key TimeoutStartSec)
if [[ $t =~ ^[0-9]+$ ]] && ((t > 0 && t <= 60)); then
	t_pass units-doctor-timeout
else
	t_fail units-doctor-timeout "TimeoutStartSec=$t (want 1 to 60 s, Slurm's limit)"
fi
if [[ $(key EnvironmentFile) == -/etc/default/nvsidecar && $(key ExecStart) == *' doctor $NVSIDECAR_DOCTOR_ARGS' ]] &&
	grep -q '^NVSIDECAR_DOCTOR_ARGS=' "$NVS_TOP/scripts/initramfs-tools/nvsidecar.default"; then
	t_pass units-doctor-args
else
	t_fail units-doctor-args "EnvironmentFile=$(key EnvironmentFile) ExecStart=$(key ExecStart)"
fi
# /etc/default/nvsidecar names every variable a unit or the health check
# reads (T3-14), and reads the same whether sourced by sh (the initramfs
# hook, the package scripts) or taken by systemd: no unquoted value with a
# space, nothing a shell would run.
defaults=$NVS_TOP/scripts/initramfs-tools/nvsidecar.default
missing='' unsafe=''
for v in $(grep -ho 'NVSIDECAR_[A-Z_]\+' "$NVS_TOP"/scripts/systemd/*.service "$NVS_TOP/scripts/slurm/nvsidecar-healthcheck" | sort -u); do
	[[ $v == NVSIDECAR_BIN || $v == NVSIDECAR_DEFAULTS ]] && continue # not settings of the file
	grep -q "^#\{0,1\}$v=" "$defaults" || missing+=" $v"
done
while IFS= read -r l; do
	[[ $l =~ ^NVSIDECAR_[A-Z_]*=(.*)$ ]] || continue
	val=${BASH_REMATCH[1]}
	[[ $val =~ ^\"[^\"\$\`\\]*\"$ || $val =~ ^[^[:space:]\"\'\$\`\\]*$ ]] || unsafe+=" [$l]"
done <"$defaults"
sh_env=$(env -i sh -c 'set -a -u; . "$1" && env' _ "$defaults" 2>&1)
if [[ -z $missing && -z $unsafe ]] && grep -q '^NVSIDECAR_IN_INITRAMFS=yes$' <<<"$sh_env"; then
	t_pass units-defaults-file
else
	t_fail units-defaults-file "not listed:${missing:- none}; unsafe lines:${unsafe:- none}; sh: $(head -c 200 <<<"$sh_env")"
fi
if command -v systemd-analyze >/dev/null; then
	# verify wants ExecStart's program to exist: a stand-in
	mkdir -p "$work/units" "$work/bin"
	printf '#!/bin/sh\nexit 0\n' >"$work/bin/nvsidecar"
	chmod +x "$work/bin/nvsidecar"
	for u in "$units"/*; do
		sed "s|@BINDIR@|$work/bin|g" "$u" >"$work/units/${u##*/}"
	done
	# verify resolves nvsidecar.service through the unit search path
	if out=$(cd "$work/units" && SYSTEMD_UNIT_PATH=$work/units: systemd-analyze verify --man=no \
		"$work/units/nvsidecar-doctor.service" "$work/units/nvsidecar-doctor.timer" \
		"$work/units/nvsidecar.service" 2>&1) && [[ -z $out ]]; then
		t_pass units-verify
	else
		t_fail units-verify "$(head -c 300 <<<"$out")"
	fi
else
	t_skip units-verify "systemd-analyze is not installed"
fi

# --- nodes without systemd: /etc/cron.d/nvsidecar and nvsidecar-cron --------------
# Every line runs one of the three jobs as root and is inert where systemd
# runs; the runner reads /etc/default/nvsidecar as the units do, passes
# the same options, runs one job at a time, and says what to fix when a
# per-node path is not writable. The helper is a recorder here: its own
# behaviour is 45-doctor's and 47-idle-fix's.
cron=$NVS_TOP/scripts/cron
got=$(grep -vE '^[[:space:]]*(#|$|[A-Z]+=)' "$cron/nvsidecar.cron" |
	awk -F'\t' '{ split($1, f, " "); print length(f), $2, $3 }' | sort | tr '\n' ';')
want='5 root test -e /run/systemd/system || @LIBEXECDIR@/nvsidecar-cron doctor;5 root test -e /run/systemd/system || @LIBEXECDIR@/nvsidecar-cron idle-fix;5 root test -e /run/systemd/system || @LIBEXECDIR@/nvsidecar-cron metrics;'
[[ $got == "$want" ]] && t_pass cron-d-lines || t_fail cron-d-lines "$got"
mkdir -p "$work/cron/tf" "$work/cron/sd"
cat >"$work/cron/nvsidecar" <<'EOS'
#!/bin/sh
echo "$*" >>"$CRON_LOG"
exit "${CRON_RC:-0}"
EOS
chmod 755 "$work/cron/nvsidecar"
cat >"$work/cron/defaults" <<EOS
# a settings file as the package ships it, filled in for a diskless node
NVSIDECAR_DOCTOR_ARGS="--strict --expect-gpus 2"
NVSIDECAR_TEXTFILE_DIR=$work/cron/tf
NVSIDECAR_IDLE_FIX_ARGS="--state $work/cron/state/idle-fix.state"
NVSIDECAR_CRON_LOCKDIR=$work/cron/lock
EOS
runner() { # JOB...: the runner under dash, as cron runs it
	NVSIDECAR_DEFAULTS=$work/cron/defaults NVSIDECAR_BIN=$work/cron/nvsidecar CRON_LOG=$work/cron/log \
		NVSIDECAR_SYSTEMD_RUNDIR=${SDDIR:-$work/cron/none} dash "$cron/nvsidecar-cron" "$@"
}
: >"$work/cron/log"
SDDIR=$work/cron/sd runner metrics 2>"$work/cron/err"
rc=$?
[[ $rc == 0 && ! -s $work/cron/log && ! -s $work/cron/err ]] && t_pass cron-inert-under-systemd ||
	t_fail cron-inert-under-systemd "rc $rc: $(cat "$work/cron/log" "$work/cron/err")"
runner doctor && CRON_RC=1 runner metrics && runner idle-fix
rc=$?
got=$(cat "$work/cron/log")
want="doctor --strict --expect-gpus 2
doctor --brief --textfile $work/cron/tf
idle-fix --state $work/cron/state/idle-fix.state"
[[ $rc == 0 && $got == "$want" && -f $work/cron/lock/cron-metrics.lock ]] && t_pass cron-jobs-settings ||
	t_fail cron-jobs-settings "rc $rc: $(tr '\n' '|' <<<"$got")"
# a run still holding the job's lock: the next one does not start
: >"$work/cron/log"
flock "$work/cron/lock/cron-doctor.lock" dash -c '"$@"' _ env NVSIDECAR_DEFAULTS="$work/cron/defaults" \
	NVSIDECAR_BIN="$work/cron/nvsidecar" CRON_LOG="$work/cron/log" NVSIDECAR_SYSTEMD_RUNDIR="$work/cron/none" \
	dash "$cron/nvsidecar-cron" doctor 2>"$work/cron/err"
rc=$?
[[ $rc == 1 && ! -s $work/cron/log ]] && grep -q 'the previous run still holds .*cron-doctor.lock' "$work/cron/err" &&
	t_pass cron-one-at-a-time || t_fail cron-one-at-a-time "rc $rc: $(cat "$work/cron/err")"
# per-node paths that are missing or not writable (a read-only shared root)
sed -i "s|^NVSIDECAR_TEXTFILE_DIR=.*|NVSIDECAR_TEXTFILE_DIR=$work/cron/nope|" "$work/cron/defaults"
runner metrics 2>"$work/cron/err"
rc=$?
[[ $rc == 1 ]] && grep -q "no directory $work/cron/nope; create it, or set NVSIDECAR_TEXTFILE_DIR" "$work/cron/err" &&
	t_pass cron-textfile-dir-missing || t_fail cron-textfile-dir-missing "rc $rc: $(cat "$work/cron/err")"
: >"$work/cron/file"
sed -i "s|^NVSIDECAR_CRON_LOCKDIR=.*|NVSIDECAR_CRON_LOCKDIR=$work/cron/file/lock|" "$work/cron/defaults"
runner idle-fix 2>"$work/cron/err"
rc=$?
[[ $rc == 1 ]] && grep -q "cannot write the lock directory $work/cron/file/lock; set NVSIDECAR_CRON_LOCKDIR" "$work/cron/err" &&
	t_pass cron-lockdir-unwritable || t_fail cron-lockdir-unwritable "rc $rc: $(cat "$work/cron/err")"
runner bogus 2>"$work/cron/err"
[[ $? == 2 ]] && grep -q 'Usage: nvsidecar-cron' "$work/cron/err" && t_pass cron-bad-job || t_fail cron-bad-job "$(cat "$work/cron/err")"

# the doctor job gets the verdict's settings (review A3: `doctor --full' stores
# its verdict where the health check reads it) and a time limit fit for
# --full (A3c); a stand-in doctor and timeout record what they were given
mkdir -p "$work/cron/env-bin"
cat >"$work/cron/envdoc" <<'EOS'
#!/bin/sh
shift # the subcommand, always doctor
echo "args=$*|state=${NVSIDECAR_STATE_DIR-unset}|age=${NVSIDECAR_VERDICT_MAX_AGE-unset}" >>"$CRON_LOG"
EOS
cat >"$work/cron/env-bin/timeout" <<EOS
#!/bin/sh
echo "timeout \$*" >>"$work/cron/tlog"
exec $(command -v timeout) "\$@"
EOS
chmod 755 "$work/cron/envdoc" "$work/cron/env-bin/timeout"
envrunner() { # DEFAULTS JOB: the runner with the recording doctor and timeout
	: >"$work/cron/log"
	: >"$work/cron/tlog"
	PATH=$work/cron/env-bin:$PATH NVSIDECAR_DEFAULTS=$1 NVSIDECAR_BIN=$work/cron/envdoc CRON_LOG=$work/cron/log \
		NVSIDECAR_SYSTEMD_RUNDIR=$work/cron/none dash "$cron/nvsidecar-cron" "$2" 2>"$work/cron/err"
}
cat >"$work/cron/d-full" <<EOS
NVSIDECAR_DOCTOR_ARGS=--full
NVSIDECAR_STATE_DIR=$work/cron/vstate
NVSIDECAR_VERDICT_MAX_AGE=3600
NVSIDECAR_TEXTFILE_DIR=$work/cron/tf
NVSIDECAR_CRON_LOCKDIR=$work/cron/lock2
EOS
envrunner "$work/cron/d-full" doctor
got=$(cat "$work/cron/log")
want="args=--full|state=$work/cron/vstate|age=3600"
envrunner "$work/cron/d-full" metrics
got+=" $(cat "$work/cron/log")"
want+=" args=--brief --textfile $work/cron/tf|state=$work/cron/vstate|age=3600"
[[ $got == "$want" ]] && t_pass cron-doctor-verdict-env || t_fail cron-doctor-verdict-env "got '$got', want '$want'"
# the doctor job's limit: 150 s with --full, 60 s without, NVSIDECAR_DOCTOR_TIMEOUT over both;
# a bad value is logged and the default used
envrunner "$work/cron/d-full" doctor
got=$(cut -d' ' -f2-4 "$work/cron/tlog")
sed -e '/^NVSIDECAR_DOCTOR_ARGS=/d' "$work/cron/d-full" >"$work/cron/d-quick"
envrunner "$work/cron/d-quick" doctor
got+=" $(cut -d' ' -f2-4 "$work/cron/tlog")"
{ cat "$work/cron/d-full"; echo 'NVSIDECAR_DOCTOR_TIMEOUT=300'; } >"$work/cron/d-t300"
envrunner "$work/cron/d-t300" doctor
got+=" $(cut -d' ' -f2-4 "$work/cron/tlog")"
{ cat "$work/cron/d-full"; echo 'NVSIDECAR_DOCTOR_TIMEOUT=2m'; } >"$work/cron/d-tbad"
envrunner "$work/cron/d-tbad" doctor
got+=" $(cut -d' ' -f2-4 "$work/cron/tlog")"
want="-k 5 150 -k 5 60 -k 5 300 -k 5 150"
[[ $got == "$want" ]] && grep -q "NVSIDECAR_DOCTOR_TIMEOUT=\`2m' in $work/cron/d-tbad is not a number of seconds; using 150" \
	"$work/cron/err" && t_pass cron-doctor-timeout || t_fail cron-doctor-timeout "got '$got', want '$want': $(cat "$work/cron/err")"
# one file, read alike by the cron runner and the health check (review A6):
# single quotes, CRLF line ends, leading and trailing blanks
printf '%s\r\n' "  NVSIDECAR_DOCTOR_ARGS='--full --strict'  " "NVSIDECAR_STATE_DIR=\"$work/cron/vstate\"" \
	"	NVSIDECAR_VERDICT_MAX_AGE=600 " "NVSIDECAR_CRON_LOCKDIR=$work/cron/lock2" >"$work/cron/d-odd"
envrunner "$work/cron/d-odd" doctor
got=$(cat "$work/cron/log")
hc=$(bash -c "$(sed -n '/^read_defaults() {/,/^}/p' "$NVS_TOP/scripts/slurm/nvsidecar-healthcheck")"'
read_defaults "$1"
read -ra a <<<"$NVSIDECAR_DOCTOR_ARGS"
echo "args=${a[*]}|state=$NVSIDECAR_STATE_DIR|age=$NVSIDECAR_VERDICT_MAX_AGE"' _ "$work/cron/d-odd")
want="args=--full --strict|state=$work/cron/vstate|age=600"
[[ $got == "$want" && $hc == "$want" ]] && t_pass cron-defaults-same-as-healthcheck ||
	t_fail cron-defaults-same-as-healthcheck "cron '$(cat -A <<<"$got")', health check '$hc', want '$want'"

# --- the postinst and the initramfs ---------------------------------------------------
if ((EUID != 0)) || ! unshare --mount --propagation private true 2>/dev/null; then
	for t in stale refresh not-in-image hook-off rpm-not-in-image; do
		t_skip "units-postinst-$t" "needs root and a private mount namespace"
	done
	exit 0
fi
kver=9.9.9-nvsidecar-test
stub=$work/stub
mkdir -p "$stub"
sed -e "s/@VERSION@/0.0.1/" -e "/#DEBHELPER#/d" "$NVS_TOP/scripts/debian/nvsidecar-dkms.postinst.in" >"$work/postinst"
# dkms: nothing built yet; build and install succeed
cat >"$stub/dkms" <<'EOF'
#!/bin/sh
echo "dkms $*" >>"$NVS_STUB_LOG"
exit 0
EOF
printf '#!/bin/sh\necho /lib/modules/%s/updates/dkms/nvsidecar.ko\n' "$kver" >"$stub/modinfo"
cat >"$stub/lsinitramfs" <<'EOF'
#!/bin/sh
echo usr/lib/modules/test/kernel/fs/ext4.ko
[ -n "$NVS_STUB_STALE" ] && echo usr/lib/modules/test/updates/dkms/nvsidecar.ko
exit 0
EOF
cat >"$stub/update-initramfs" <<'EOF'
#!/bin/sh
echo "update-initramfs $*" >>"$NVS_STUB_LOG"
EOF
chmod +x "$stub"/*

# postinst NAME [VAR=VALUE...]: runs it with /boot, /lib/modules, /var/lib/dkms
# and /etc/default private; output in $work/NAME.out, calls in $work/NAME.log.
postinst() {
	local name=$1
	shift
	: >"$work/$name.log"
	env SCRIPT="$work/postinst" "$@" NVS_STUB_LOG="$work/$name.log" PATH="$stub:$PATH" KVER=$kver \
		unshare --mount --propagation private sh -c '
		for d in /boot /lib/modules /var/lib/dkms /etc/default; do
			mkdir -p "$d" && mount -t tmpfs nvs-test "$d" || exit 90
		done
		mkdir -p "/lib/modules/$KVER/build/include"
		: >"/boot/initrd.img-$KVER"
		: >"/boot/initramfs-$KVER.img"
		[ -n "$NVS_DEFAULT" ] && printf "%s\n" "$NVS_DEFAULT" >/etc/default/nvsidecar
		NVSIDECAR_DKMS_KERNELS=$KVER sh "$SCRIPT" configure 0.0.0' >"$work/$name.out" 2>&1
}

postinst stale NVS_STUB_STALE=1 NVS_DEFAULT=
if grep -q "initramfs of $kver may still hold the previous nvsidecar.ko" "$work/stale.out" &&
	grep -q 'update-initramfs -u -k RELEASE' "$work/stale.out" && ! grep -q update-initramfs "$work/stale.log"; then
	t_pass units-postinst-stale
else
	t_fail units-postinst-stale "$(tail -n 3 "$work/stale.out" | tr '\n' ' ')"
fi
postinst refresh NVS_STUB_STALE=1 NVS_DEFAULT=NVSIDECAR_UPDATE_INITRAMFS=yes
if grep -qx "update-initramfs -u -k $kver" "$work/refresh.log" && ! grep -q "may still hold" "$work/refresh.out"; then
	t_pass units-postinst-refresh
else
	t_fail units-postinst-refresh "$(tail -n 3 "$work/refresh.out" | tr '\n' ' ') / $(cat "$work/refresh.log")"
fi
postinst not-in-image NVS_STUB_STALE= NVS_DEFAULT=
# a first install into an image made before the hook existed (issue 23
# item 8): the image and the one command that adds the module are named
if ! grep -q "may still hold" "$work/not-in-image.out" && grep -q "dkms install" "$work/not-in-image.log" &&
	grep -q "the initramfs of $kver holds no nvsidecar.ko, so it will not load before the root file system is mounted" \
		"$work/not-in-image.out" && grep -qx "  update-initramfs -u -k $kver" "$work/not-in-image.out"; then
	t_pass units-postinst-not-in-image
else
	t_fail units-postinst-not-in-image "$(tail -n 3 "$work/not-in-image.out" | tr '\n' ' ')"
fi
postinst hook-off NVS_STUB_STALE=1 NVS_DEFAULT=NVSIDECAR_IN_INITRAMFS=no
if ! grep -q "may still hold\|holds no nvsidecar.ko" "$work/hook-off.out" && ! grep -q update-initramfs "$work/hook-off.log"; then
	t_pass units-postinst-hook-off
else
	t_fail units-postinst-hook-off "$(tail -n 3 "$work/hook-off.out" | tr '\n' ' ')"
fi

# the RPM's %post dkms, the same first install (dracut's lsinitrd lists no
# nvsidecar.ko): the image and `dracut -f --kver' are named
sed -n '/^%post dkms/,/^%preun dkms/p' "$NVS_TOP/scripts/rpm/nvsidecar.spec" | sed -e '1d;$d' \
	-e 's/%{name}/nvsidecar/g' -e 's/%{version}/0.0.1/g' >"$work/rpm-post"
printf '#!/bin/sh\necho usr/lib/modules/test/kernel/fs/ext4.ko.xz\n' >"$stub/lsinitrd"
chmod +x "$stub/lsinitrd"
postinst rpm-not-in-image SCRIPT="$work/rpm-post" NVS_DEFAULT=
if grep -q "the initramfs of $kver holds no nvsidecar.ko" "$work/rpm-not-in-image.out" &&
	grep -qx "  dracut -f --kver $kver" "$work/rpm-not-in-image.out" && grep -q "dkms install" "$work/rpm-not-in-image.log"; then
	t_pass units-postinst-rpm-not-in-image
else
	t_fail units-postinst-rpm-not-in-image "$(tail -n 3 "$work/rpm-not-in-image.out" | tr '\n' ' ')"
fi
exit 0
