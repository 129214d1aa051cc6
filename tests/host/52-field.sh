#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# What breaks P2P and Slurm on real nodes, detected by doctor on a node
# built under NVS_DOCTOR_ROOT (each rule with a node that matches and one
# that does not), under ASan/UBSan:
#  - display: a GPU with a connected DRM connector, beside a second NVIDIA
#    GPU (check/doctor_display.c);
#  - the Slurm port-6000 hang: hwloc's gl plugin, slurmd's environment
#    (/proc/PID/environ, the unit, its drop-ins and EnvironmentFile), X
#    sockets and listeners on TCP 6000-6009 (check/doctor_slurm.c). One
#    node's /proc/net/tcp is this host's, taken while a real socket
#    listens on a port in 6000-6009.
# The chipset slot class is topo's (60-p2p.sh).
set -u
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

work=$(mktemp -d /tmp/nvs-field.XXXXXX)
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=exitcode=97:detect_leaks=1:abort_on_error=0
export LSAN_OPTIONS=exitcode=97
export UBSAN_OPTIONS=halt_on_error=1:exitcode=97:print_stacktrace=1
export NVS_NVIDIA_VERSION_FILE=$work/no-driver NVS_LIBCUDA_STATE=$work/state
dump=$NVS_TOP/tests/topo/5090-clean.dump

if ! why=$(nvs_asan_build); then
	t_fail field-build-asan "$why"
	exit 0
fi
bin=$NVS_ASAN/nvsidecar

# doctor ROOT: the JSON run of a node. The exit status belongs to the other
# layers (no nvsidecar module here), so 0 or 1 both count as a verdict; a
# sanitizer's 97 or a crash does not. --lib spares each run `ldconfig -p'.
doctor() {
	NVS_DOCTOR_ROOT=$1 t_cmd "$work" 120 "$bin" doctor --json --pci-dump "$dump" --lib "$work/no-libcuda.so.1"
	((rc == 1)) && rc=0
}
check() { t_judge "$work" "$@"; }
# the record named $1 (python, after `rec = ...')
pick='def rec(name):
    r = [c for c in d["checks"] if c["name"] == name]
    assert len(r) == 1, [c["name"] for c in d["checks"]]
    return r[0]
'

# ---------------------------------------------------------------- display
# card N of GPU BDF: the device link DRM makes, the PCI vendor file
card() {
	local root=$1 n=$2 bdf=$3 vendor=$4
	mkdir -p "$root/sys/devices/pci0000:00/$bdf" "$root/sys/class/drm/card$n"
	echo "$vendor" >"$root/sys/devices/pci0000:00/$bdf/vendor"
	ln -s "../../../devices/pci0000:00/$bdf" "$root/sys/class/drm/card$n/device"
}
connector() {
	mkdir -p "$1/sys/class/drm/card$2-$3"
	echo "$4" >"$1/sys/class/drm/card$2-$3/status"
}
d=$work/disp
card "$d" 0 0000:01:00.0 0x10de
card "$d" 1 0000:02:00.0 0x10de
connector "$d" 0 DP-1 connected
connector "$d" 0 HDMI-A-1 disconnected
connector "$d" 1 DP-2 disconnected
doctor "$d"
check field-display-two-gpus 0 "$pick"'
r = rec("display@0000:01:00.0")
assert r["result"] == "WARN" and "DP-1 connected" in r["message"] and "#11" in r["message"], r
assert "HDMI" not in r["message"] and "0000:01:00.0" in r["fix"], r
assert not [c for c in d["checks"] if c["name"] == "display@0000:02:00.0"]
'
echo disconnected >"$d/sys/class/drm/card0-DP-1/status"
doctor "$d"
check field-display-none 0 "$pick"'
r = rec("display")
assert r["result"] == "OK" and "2 NVIDIA GPU(s)" in r["message"], r
'
# one NVIDIA GPU with a monitor, the other card is not NVIDIA's
d=$work/disp1
card "$d" 0 0000:01:00.0 0x10de
card "$d" 1 0000:00:02.0 0x8086
connector "$d" 0 DP-1 connected
connector "$d" 1 eDP-1 connected
doctor "$d"
check field-display-one-gpu 0 "$pick"'
r = rec("display@0000:01:00.0")
assert r["result"] == "OK" and "no second NVIDIA GPU" in r["message"], r
assert not [c for c in d["checks"] if "0000:00:02.0" in c["name"]]
'
mkdir -p "$work/empty"
doctor "$work/empty"
check field-display-no-drm 0 "$pick"'
assert rec("display")["result"] == "SKIP"
assert rec("slurm-hwloc-gl")["result"] == "SKIP"
'

# ---------------------------------------------------------------- slurm
# node ROOT: slurmd as pid 4242 with the environment in $2 (NUL-separated),
# hwloc's gl plugin where Debian's libhwloc-plugins puts it, empty TCP tables
node() {
	local r=$1
	mkdir -p "$r/proc/4242" "$r/proc/net" "$r/usr/lib/x86_64-linux-gnu/hwloc"
	echo slurmd >"$r/proc/4242/comm"
	printf '%b' "$2" >"$r/proc/4242/environ"
	: >"$r/usr/lib/x86_64-linux-gnu/hwloc/hwloc_gl.so"
	head -n 1 /proc/net/tcp >"$r/proc/net/tcp"
	head -n 1 /proc/net/tcp6 >"$r/proc/net/tcp6" 2>/dev/null || cp "$r/proc/net/tcp" "$r/proc/net/tcp6"
}
# this host's /proc/net/tcp while a socket listens on 127.0.0.1:600N
real_listener() {
	/usr/bin/python3 - "$1" <<'PY'
import shutil, socket, sys
s = socket.socket()
for port in range(6000, 6010):
    try:
        s.bind(("127.0.0.1", port))
        break
    except OSError:
        continue
else:
    sys.exit("no free port in 6000-6009")
s.listen(1)
shutil.copyfile("/proc/net/tcp", sys.argv[1])
print(port)
PY
}

s=$work/hang
node "$s" 'PATH=/usr/bin\0HOME=/\0'
if port=$(real_listener "$s/proc/net/tcp" 2>"$work/py"); then
	doctor "$s"
	check field-slurm-hang 0 "$pick"'
r = rec("slurm-hwloc-gl")
assert r["result"] == "FAIL" and "will hang" in r["message"] and "'"$port"'" in r["message"], r
assert r["message"].count("/usr/lib/x86_64-linux-gnu/hwloc/hwloc_gl.so") == 1 and "'"$s"'" not in r["message"], r
assert "Environment=HWLOC_COMPONENTS=-gl" in r["fix"] and "slurmd.service.d/" in r["fix"], r
assert d["healthy"] is False
'
	# an X server on that display answers the probe first: no hang yet
	mkdir -p "$s/tmp/.X11-unix" && : >"$s/tmp/.X11-unix/X$((port - 6000))"
	doctor "$s"
	check field-slurm-x-socket 0 "$pick"'
r = rec("slurm-hwloc-gl")
assert r["result"] == "WARN" and "6000-6009" in r["message"], r
'
	rm -rf "$s/tmp"
else
	t_fail field-slurm-hang "$(cat "$work/py")"
fi
# an IPv6 listener on [::]:6003, as the kernel prints it (tcp6_seq_show)
printf '%s\n' '   0: 00000000000000000000000000000000:1773 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4321 1 0000000000000000 100 0 0 10 0' >>"$s/proc/net/tcp6"
head -n 1 /proc/net/tcp >"$s/proc/net/tcp"
doctor "$s"
check field-slurm-hang-tcp6 0 "$pick"'
r = rec("slurm-hwloc-gl")
assert r["result"] == "FAIL" and "TCP 6003 listens" in r["message"], r
'
# bound to another address only: localhost:6000 does not reach it
printf '%s\n' '   1: 0500000A:1770 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4322 1 0000000000000000 100 0 0 10 0' >>"$s/proc/net/tcp"
head -n 1 /proc/net/tcp6 >"$s/proc/net/tcp6"
doctor "$s"
check field-slurm-other-address 0 "$pick"'
r = rec("slurm-hwloc-gl")
assert r["result"] == "WARN" and "6000-6009" in r["message"], r
'
printf '%s\n' '   0: 00000000000000000000000000000000:1773 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4321 1 0000000000000000 100 0 0 10 0' >>"$s/proc/net/tcp6"
# the fix, live in slurmd's environment, with other components around it
s=$work/fixed
node "$s" 'PATH=/usr/bin\0HWLOC_COMPONENTS=linux,-gl\0'
cp "$work/hang/proc/net/tcp6" "$s/proc/net/tcp6"
doctor "$s"
check field-slurm-fixed 0 "$pick"'
r = rec("slurm-hwloc-gl")
assert r["result"] == "OK" and "its environment" in r["message"], r
'
# -glx is not -gl
node "$s" 'HWLOC_COMPONENTS=-glx\0'
cp "$work/hang/proc/net/tcp6" "$s/proc/net/tcp6"
doctor "$s"
check field-slurm-not-gl 0 "$pick"'
assert rec("slurm-hwloc-gl")["result"] == "FAIL"
'
# a drop-in written but slurmd not restarted
mkdir -p "$s/etc/systemd/system/slurmd.service.d"
printf '[Service]\nEnvironment=HWLOC_COMPONENTS=-gl\n' >"$s/etc/systemd/system/slurmd.service.d/nvsidecar-hwloc.conf"
doctor "$s"
check field-slurm-not-restarted 0 "$pick"'
r = rec("slurm-hwloc-gl")
assert r["result"] == "WARN" and "started without it" in r["message"] and "restart slurmd" in r["fix"], r
'
# slurmd's environment unreadable (not root): Debian's unit reads
# /etc/default/slurmd, where the fix was put
s=$work/envfile
mkdir -p "$s/lib/systemd/system" "$s/etc/default" "$s/usr/lib64/hwloc"
printf '[Service]\nEnvironmentFile=-/etc/default/slurmd\nExecStart=/usr/sbin/slurmd -D $SLURMD_OPTIONS\n' >"$s/lib/systemd/system/slurmd.service"
printf 'SLURMD_OPTIONS=\nHWLOC_COMPONENTS=-gl\n' >"$s/etc/default/slurmd"
: >"$s/usr/lib64/hwloc/hwloc_gl.so"
doctor "$s"
check field-slurm-envfile 0 "$pick"'
r = rec("slurm-hwloc-gl")
assert r["result"] == "OK" and "/etc/default/slurmd" in r["message"] and "/usr/lib64/hwloc" in r["message"], r
'
sed -i '/HWLOC/d' "$s/etc/default/slurmd"
doctor "$s"
check field-slurm-unit-only 0 "$pick"'
r = rec("slurm-hwloc-gl")
assert r["result"] == "WARN" and "6000-6009" in r["message"], r
'
rm "$s/usr/lib64/hwloc/hwloc_gl.so"
doctor "$s"
check field-slurm-no-plugin 0 "$pick"'
r = rec("slurm-hwloc-gl")
assert r["result"] == "OK" and "not installed" in r["message"], r
'

# --- the GB20x list the doctor's predicates use (user/sys/pci.c,
# nvs_gpu_gb20x: gpus:gb20x, p2p-static-bar1) holds every GB20x id the
# module knows (kmod/chips.c); a new id in one list only would make the
# doctor skip the static-BAR1 check on that card.
kern=$(sed -n 's/^[[:space:]]*NV(0x\([0-9a-f]*\), chip_gb20[0-9][a-z]*,.*/\1/p' "$NVS_TOP/kmod/chips.c" | sort -u)
userids=$(sed -n '/^bool nvs_gpu_gb20x(/,/^}/s/.*ids\[\] = {\(.*\)};.*/\1/p' "$NVS_TOP/user/sys/pci.c" |
	tr -d ' ' | tr ',' '\n' | sed -n 's/^0x//p' | sort -u)
missing=$(comm -23 <(echo "$kern") <(echo "$userids") | tr '\n' ' ')
if [[ -z $kern || -z $userids ]]; then
	t_fail field-gb20x-ids "could not read the id lists (kmod/chips.c: \`$kern', user/sys/pci.c: \`$userids')"
elif [[ -n $missing ]]; then
	t_fail field-gb20x-ids "kmod/chips.c's GB20x ids $missing are not in user/sys/pci.c nvs_gpu_gb20x()"
else
	t_pass "field-gb20x-ids ($(echo $kern | wc -w) module ids, all known to the doctor)"
fi
