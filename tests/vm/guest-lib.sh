# SPDX-License-Identifier: GPL-2.0 OR MIT
# shellcheck shell=bash
# Sourced into every tests/vm/t-*.sh (by guest-run.sh, through BASH_ENV).
#
# Environment (set by run-vm, guest-side paths):
#   NVS_LANE   6.1 | 6.12 | debug      NVS_KVER   kernel release
#   NVS_KO     the module to test      NVS_TOOLS  $NVS_BUILD/vmtools (nvsim,
#   NVS_BIN    the CLI                            tests/vm/tools/*.c)
#   NVS_OUT    writable folder shared with the host (results, logs)
#   NVS_GPUS   number of simulated GPUs          NVS_TOP  the source tree
#
# Results: t_pass NAME, t_fail NAME REASON, t_skip NAME REASON, t_run NAME
# CMD... (tests/lib.sh; the host prefixes the lane: "6.12: NAME").
#
# Helpers:
#   nvs_load [PARAM=V...]  insmod $NVS_KO, sim=$NVS_SIM unless a sim= is given
#   nvs_unload             rmmod, fails if it cannot
#   nvs_loaded             true while the module is loaded
#   nvs_sleep SECONDS      sleep without a fork (exec is slow in emulation)
#   sim_bdf N              PCI address of simulated GPU N (see run-vm's layout)
#   sim N CMD...           runs nvsim on GPU N's BAR (nvsim --help: fixture,
#                          set, get, ramp, spike, counter, allones, poison...)
#   sim_file N             its register file in the guest (sysfs resource2)
#   sim_class N            /sys/class/nvsidecar/gpuK of simulated GPU N
#   sim_hwmon N            the nvsidecar hwmon dir of simulated GPU N
#   gpu_class N            /sys/class/nvsidecar/gpuN
#   gpu_hwmon N            the hwmon dir of gpuN (found through its PCI parent)
#   hw_temp DIR LABEL      "DIR/tempK" whose tempK_label is LABEL
#   read_err FILE          reads FILE's first line; prints it or the error
#                          text ("No data available"); fails on an error
#   as_user CMD...         runs CMD as nobody:nogroup without groups
#   wait_until SECS CMD... polls CMD every 0.1 s; fails after SECS (CMD's
#                          arguments are expanded once, by the caller)
#   wait_for SECS 'EXPR'   polls an expression evaluated afresh each time
#   dmesg_mark TEXT        writes a marker into the kernel log
#   dmesg_check NAME       t_pass/t_fail NAME on splats since the last mark
#   kmemleak_check NAME    scans for leaks (debug lane); t_skip elsewhere
#   t_eq NAME GOT WANT     t_pass if GOT == WANT, else t_fail saying both
#   sim_all CMD...         one nvsim run of a one-shot CMD on every GPU
#   sim_fixture_all NAME   writes fixture NAME into every simulated GPU
#   nvs_restore_gpus       rescans removed GPUs, turns memory decoding on,
#                          PMC_BOOT_0 back to 0 (no chip id)
#                          (the runner does this after every file)
#   NVS_SPLATS             the regex dmesg_check fails on
#   vm_qmp JSON            runs one QMP command on this guest's QEMU (the
#                          host relays it: tests/vm/qmp-relay) and prints
#                          the reply; fails on an error reply
#   vm_qmp_event NAME SECS waits for a QMP event (e.g. DEVICE_DELETED);
#                          [MATCH [SKIP]]: in its line, after SKIP lines
#   vm_qmp_events          how many events the relay has logged
#   sim_qdev N             QEMU's id of simulated GPU N (for device_del)
#   sim_unplug N           QEMU removes simulated GPU N (device_del)
#   sim_replug N           puts it back (device_add); nvs_restore_gpus
#                          does this after every file
#   NVS_TESTMODS           the test-only modules built for this kernel
#                          (tests/vm/tools/<name>/ -> NAME.ko)

# shellcheck source=../lib.sh
. "$NVS_TOP/tests/lib.sh"

: "${NVS_SIM:=1af4:1110:2:gb202}"
: "${NVS_OUT:=/run/nvs-out}"
: "${NVS_TOOLS:=$NVS_BUILD/vmtools}"
export NVS_SIM NVS_OUT NVS_TOOLS

# busybox is static: under emulation, where every exec of a dynamic program
# opens its libraries over 9p, it loads and unloads several times faster
# than kmod's insmod (200 load/unload cycles count on that).
if [[ -x /bin/busybox ]]; then
	_nvs_insmod=(/bin/busybox insmod) _nvs_rmmod=(/bin/busybox rmmod)
else
	_nvs_insmod=(insmod) _nvs_rmmod=(rmmod)
fi

nvs_loaded() {
	local m _
	while read -r m _; do
		[[ $m == nvsidecar ]] && return 0
	done </proc/modules
	return 1
}

nvs_load() {
	local a sim=0
	for a in "$@"; do [[ $a == sim=* ]] && sim=1; done
	if ((sim)); then
		"${_nvs_insmod[@]}" "$NVS_KO" "$@"
	else
		"${_nvs_insmod[@]}" "$NVS_KO" "sim=$NVS_SIM" "$@"
	fi
}

nvs_unload() {
	nvs_loaded || return 0
	"${_nvs_rmmod[@]}" nvsidecar
}

# nvs_sleep SECONDS: sleep without starting a process.
nvs_sleep() {
	[[ -n ${_nvs_sleep_fd:-} ]] || exec {_nvs_sleep_fd}<> <(:)
	read -r -t "$1" -u "$_nvs_sleep_fd" _
	return 0
}

# Writes "INDEX BDF PORT" for each simulated GPU, found from its place in
# the topology that run-vm builds (root port 00:10.0 holds the switch with
# GPU0 and GPU1 on downstream ports 0 and 1; 00:11.0..00:16.0 hold GPU2..7).
nvs_write_gpu_map() {
	local d p rest idx port
	local -a c
	for d in /sys/bus/pci/devices/*; do
		[[ $(<"$d/vendor") == 0x1af4 && $(<"$d/device") == 0x1110 ]] || continue
		p=$(readlink -f "$d")
		rest=${p#/sys/devices/pci0000:00/}
		IFS=/ read -ra c <<<"$rest"
		case ${c[0]} in
		0000:00:10.0) idx=$((0x${c[2]:8:2})) port=switch-port$idx ;;
		0000:00:1[1-6].0)
			idx=$((0x${c[0]:8:2} - 0x10 + 1))
			port=root-port-${c[0]#0000:}
			;;
		*) continue ;;
		esac
		echo "$idx ${d##*/} $port"
	done | sort -n
}

# (Builtins only: every helper below calls it, and each exec costs a read
# of the program over 9p.)
sim_bdf() {
	local n b _
	if [[ -r $NVS_OUT/gpus ]]; then
		while read -r n b _; do
			[[ $n == "$1" ]] && { echo "$b"; return 0; }
		done <"$NVS_OUT/gpus"
	fi
	echo "sim_bdf: no simulated GPU $1" >&2
	return 1
}

sim_file() {
	local b
	b=$(sim_bdf "$1") || return 1
	echo "/sys/bus/pci/devices/$b/resource2"
}

sim() {
	local b
	b=$(sim_bdf "$1") || return 1
	shift
	"$NVS_TOOLS/nvsim" -b "$b" "$@"
}

sim_class() {
	local b d
	b=$(sim_bdf "$1") || return 1
	for d in /sys/bus/pci/devices/"$b"/nvsidecar/gpu*; do
		[[ -d $d ]] && { echo "$d"; return 0; }
	done
	for d in /sys/class/nvsidecar/gpu*; do
		[[ $(readlink -f "$d/device") == $(readlink -f "/sys/bus/pci/devices/$b") ]] && { echo "$d"; return 0; }
	done
	echo "sim_class: simulated GPU $1 ($b) has no nvsidecar class device" >&2
	return 1
}

# hwmon_of PCIDIR: the nvsidecar hwmon directory under a PCI device.
hwmon_of() {
	local h
	for h in "$1"/hwmon/hwmon*; do
		[[ -f $h/name && $(<"$h/name") == nvsidecar ]] && { echo "$h"; return 0; }
	done
	echo "no nvsidecar hwmon under $1" >&2
	return 1
}

sim_hwmon() {
	local b
	b=$(sim_bdf "$1") || return 1
	hwmon_of "/sys/bus/pci/devices/$b"
}

gpu_class() {
	[[ -d /sys/class/nvsidecar/gpu$1 ]] || { echo "no /sys/class/nvsidecar/gpu$1" >&2; return 1; }
	echo "/sys/class/nvsidecar/gpu$1"
}

gpu_hwmon() {
	local c
	c=$(gpu_class "$1") || return 1
	hwmon_of "$(readlink -f "$c/device")"
}

hw_temp() {
	local l
	for l in "$1"/temp*_label; do
		[[ -f $l && $(<"$l") == "$2" ]] && { echo "${l%_label}"; return 0; }
	done
	echo "hw_temp: no sensor labelled $2 in $1" >&2
	return 1
}

# genl ARGS: the test netlink client (tests/vm/tools/nvs_genl.py), as root;
# -S skips the site import, a little less per start under emulation
genl() { python3 -S "$NVS_TOP/tests/vm/tools/nvs_genl.py" "$@"; }

# Builtin read in a subshell: no exec (every exec reads its program and
# libraries over 9p, which is slow under emulation).
read_err() {
	local out rc
	out=$(exec 2>&1; _v=''; IFS= read -r _v <"$1" || [[ -n $_v ]] || exit 1; printf '%s' "$_v")
	rc=$?
	if ((rc)); then
		out=${out##*: }
	fi
	echo "$out"
	return $rc
}

as_user() {
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"
}

wait_until() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 10; i++)); do
		"$@" && return 0
		nvs_sleep 0.1
	done
	"$@"
}

# wait_for SECS 'EXPR': like wait_until, but EXPR is evaluated afresh each
# time, e.g. wait_for 5 '[[ $(read_err "$c/status") == ok ]]'.
wait_for() {
	local secs=$1 i
	for ((i = 0; i < secs * 10; i++)); do
		eval "$2" && return 0
		nvs_sleep 0.1
	done
	eval "$2"
}

# The last mark is kept in a file so that the runner and the test files
# (separate processes) share it.
NVS_MARK_FILE=/run/nvs-dmesg-mark
dmesg_mark() {
	local m="nvs-mark $RANDOM$RANDOM ${1:-}"
	echo "$m" >/dev/kmsg
	echo "$m" >"$NVS_MARK_FILE"
}

# Splats that fail a test in every lane; the debug kernel adds KASAN,
# lockdep, UBSAN and kmemleak reports to what can appear.
NVS_SPLATS='WARNING:|BUG:|Oops|general protection fault|sleeping function called from invalid context|KASAN|UBSAN|possible circular locking|possible recursive locking|inconsistent lock state|lock held when returning|suspicious RCU usage|kmemleak:.*suspected|Kernel panic|list_(add|del) corruption|ODEBUG|refcount_t:|blocked for more than|Call Trace:'

# dmesg_since_mark: kernel log lines after the last dmesg_mark (all lines
# if there was none, or it was overwritten).
dmesg_since_mark() {
	local log mark=
	log=$(dmesg 2>/dev/null)
	[[ -f $NVS_MARK_FILE ]] && mark=$(<"$NVS_MARK_FILE")
	if [[ -n $mark ]] && grep -qF "$mark" <<<"$log"; then
		awk -v m="$mark" 'found { print } index($0, m) { found = 1 }' <<<"$log"
	else
		echo "$log"
	fi
}

# The one kernel report that is not ours: when pciehp removes a device it
# drops and re-takes its controller's reset_lock under
# pci_rescan_remove_lock (pciehp_unconfigure_device), and lockdep reports
# that as a possible circular dependency on the first surprise removal of a
# boot, with no other module involved. A report naming exactly those two
# locks and no nvsidecar or nvsowner frame is left out, and said; any other
# report, or this one with our frames in it, still fails. Lockdep turns
# itself off after any report, so the debug lane runs the file that
# triggers it last (NVS_LAST).
_dmesg_not_ours() {
	awk '
	/WARNING: possible circular locking dependency detected/ { inblk = 1; blk = "" }
	inblk {
		blk = blk $0 "\n"
		if ($0 ~ /<\/TASK>/) {
			inblk = 0
			if (blk ~ /ctrl->reset_lock/ && blk ~ /pci_rescan_remove_lock/ &&
			    blk ~ /pciehp_unconfigure_device/ && blk !~ /\[nvsidecar\]|\[nvsowner\]/)
				print "nvs-note: left out pciehp'"'"'s own lockdep report (reset_lock under pci_rescan_remove_lock)" >"/dev/stderr"
			else
				printf "%s", blk
		}
		next
	}
	{ print }
	END { if (inblk) printf "%s", blk }'
}

dmesg_check() {
	local bad
	bad=$(dmesg_since_mark | _dmesg_not_ours | grep -E "$NVS_SPLATS")
	if [[ -n $bad ]]; then
		dmesg_since_mark >"$NVS_OUT/dmesg-$1.txt"
		t_fail "$1" "kernel log: $(head -n 3 <<<"$bad" | tr -s ' \n' ' ')(full log: dmesg-$1.txt)"
		dmesg_mark "after $1"
		return 1
	fi
	t_pass "$1"
	dmesg_mark "after $1"
}

kmemleak_check() {
	local f=/sys/kernel/debug/kmemleak rep
	if [[ ! -e $f ]]; then
		t_skip "$1" "kernel $NVS_KVER has no kmemleak (only the debug lane does)"
		return 0
	fi
	# Objects must survive two scans (and a minimum age) to be reported.
	echo scan >"$f"
	sleep 6
	echo scan >"$f"
	rep=$(cat "$f")
	if [[ -n $rep ]]; then
		echo "$rep" >"$NVS_OUT/kmemleak.txt"
		t_fail "$1" "$(grep -c '^unreferenced object' <<<"$rep") leak(s): $(grep -m3 -E 'nvs|backtrace' -A3 <<<"$rep" | tr -s ' \n' ' ' | cut -c1-300) (full report: kmemleak.txt)"
		return 1
	fi
	t_pass "$1"
}

t_eq() {
	if [[ $2 == "$3" ]]; then
		t_pass "$1"
	else
		t_fail "$1" "got \`$2', want \`$3'"
		return 1
	fi
}

sim_all() {
	local i args=()
	for ((i = 0; i < NVS_GPUS; i++)); do
		args+=(-b "$(sim_bdf "$i")") || return 1
	done
	((NVS_GPUS == 0)) || "$NVS_TOOLS/nvsim" "${args[@]}" "$@"
}

sim_fixture_all() {
	sim_all fixture "$1"
}

# nvs_restore_gpus: brings back simulated GPUs a test removed (PCI rescan)
# and turns memory decoding back on, so that the next file starts clean.
nvs_restore_gpus() {
	local i b missing=0
	for ((i = 0; i < NVS_GPUS; i++)); do
		b=$(sim_bdf "$i") || continue
		[[ -d /sys/bus/pci/devices/$b ]] || missing=1
	done
	((missing)) && echo 1 >/sys/bus/pci/rescan
	# A rescan cannot bring back what QEMU itself removed (device_del).
	for ((i = 0; i < NVS_GPUS; i++)); do
		[[ -f $NVS_OUT/qmp/unplugged-$i ]] && { sim_replug "$i" || return 1; }
	done
	for ((i = 0; i < NVS_GPUS; i++)); do
		b=$(sim_bdf "$i") || continue
		wait_until 10 test -e "/sys/bus/pci/devices/$b/resource2" || return 1
	done
	# one setpci for all of them: exec is slow under emulation
	((NVS_GPUS == 0)) || setpci -d 1af4:1110 COMMAND=2:2
	# PMC_BOOT_0 with no chip id: whatever chip a file's sim= names, the
	# next file starts with a boot0 that agrees (t-chip-boot0.sh)
	sim_all set boot0 0
}

# vm_qmp JSON: one QMP command through the host's relay (tests/vm/qmp-relay
# watches $NVS_OUT/qmp). Prints the reply; fails on an error reply or when
# no reply comes within 40 s.
vm_qmp() {
	local id=$$.$RANDOM.$SECONDS dir=$NVS_OUT/qmp rep i
	rep=$dir/rep-$id.json
	printf '%s\n' "$1" >"$dir/req-$id.tmp" && mv "$dir/req-$id.tmp" "$dir/req-$id.json" || return 1
	for ((i = 0; i < 400; i++)); do
		if [[ -f $rep ]]; then
			local r
			r=$(<"$rep")
			rm -f "$rep"
			echo "$r"
			[[ $r == *'"return"'* ]]
			return
		fi
		nvs_sleep 0.1
	done
	echo "vm_qmp: no reply from the host relay in 40 s (is run-vm's qmp-relay running? see qmp-relay.log)" >&2
	return 1
}

# vm_qmp_event NAME SECS [MATCH [SKIP]]: waits until the relay has logged
# a QMP event NAME (whose line also contains MATCH, e.g. the device id),
# after the first SKIP lines of the log (vm_qmp_events: how many there are).
vm_qmp_event() {
	local name=$1 secs=$2 match=${3:-} skip=${4:-0} i n line
	for ((i = 0; i < secs * 10; i++)); do
		if [[ -f $NVS_OUT/qmp/events ]]; then
			n=0
			while IFS= read -r line; do
				((n++ < skip)) && continue
				[[ $line == *"\"event\": \"$name\""* && $line == *"$match"* ]] && return 0
			done <"$NVS_OUT/qmp/events"
		fi
		nvs_sleep 0.1
	done
	return 1
}

# vm_qmp_events: the number of events logged so far.
vm_qmp_events() {
	local n=0 _
	[[ -f $NVS_OUT/qmp/events ]] && while IFS= read -r _; do n=$((n + 1)); done <"$NVS_OUT/qmp/events"
	echo "$n"
}

# sim_qdev N: the QEMU device id run-vm gave simulated GPU N.
sim_qdev() { echo "gpu$1"; }

# sim_unplug N: surprise-style removal of simulated GPU N by QEMU itself
# (device_del: the slot's hotplug controller tells the guest, which removes
# the device whatever driver holds it). Returns once QEMU reports the
# device deleted; the guest's PCI core may still be tearing it down.
sim_unplug() {
	local id n0
	id=$(sim_qdev "$1")
	# only a DEVICE_DELETED after this request counts (a GPU may be
	# unplugged more than once in a boot)
	n0=$(vm_qmp_events)
	vm_qmp "{\"execute\":\"device_del\",\"arguments\":{\"id\":\"$id\"}}" >/dev/null || return 1
	: >"$NVS_OUT/qmp/unplugged-$1"
	vm_qmp_event DEVICE_DELETED 30 "\"$id\"" "$n0"
}

# The output folder as the host sees it (run-vm writes it to env).
_sim_host_out() { echo "${NVS_HOST_OUT:?run-vm did not export NVS_HOST_OUT}"; }

# sim_replug N: puts simulated GPU N back in its slot (same port, same
# register file) and waits for the guest to see its BAR.
sim_replug() {
	local n=$1 port i b mem
	while read -r i port; do
		[[ $i == "$n" ]] && break
		port=
	done <"$NVS_OUT/layout"
	[[ -n $port ]] || { echo "sim_replug: no port for GPU $n in layout" >&2; return 1; }
	# A fresh memory backend on the same register file: QEMU (7.2) aborts
	# when a deleted ivshmem's own backend is given to a new device.
	_nvs_replugs=$((${_nvs_replugs:-0} + 1))
	mem=gpumem$n-r$_nvs_replugs-$$
	vm_qmp "{\"execute\":\"object-add\",\"arguments\":{\"qom-type\":\"memory-backend-file\",\"id\":\"$mem\",\"mem-path\":\"$(_sim_host_out)/gpu$n.bar\",\"size\":16777216,\"share\":true}}" >/dev/null || return 1
	vm_qmp "{\"execute\":\"device_add\",\"arguments\":{\"driver\":\"ivshmem-plain\",\"id\":\"$(sim_qdev "$n")\",\"memdev\":\"$mem\",\"bus\":\"$port\",\"addr\":\"0x0\"}}" >/dev/null || return 1
	rm -f "$NVS_OUT/qmp/unplugged-$n"
	b=$(sim_bdf "$n") || return 1
	wait_for 30 "[[ -e /sys/bus/pci/devices/$b/resource2 ]]"
}
