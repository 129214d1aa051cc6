# SPDX-License-Identifier: GPL-2.0 OR MIT
# shellcheck shell=bash
# Sourced by tests/vm/t-owned-*.sh (after guest-lib.sh): the driver-owned
# path. nvsidecar is loaded with sim=...:owned, under which a simulated GPU
# follows the rules a real one does (read only while a driver other than
# vfio-pci owns it, never woken from runtime suspend, not read in a reset),
# and the stand-in owner driver nvsowner (nvsowner.c beside this file)
# binds the simulated GPUs the way nvidia binds a GPU.
#
#   own_load [PARAM=V...]  insmod nvsowner (built for this kernel by vmlib)
#   own_cleanup            unbinds every GPU, clears driver_override, puts
#                          the parameters back, unloads both modules
#   own_dev N              /sys/bus/pci/devices/BDF of simulated GPU N
#   own_bind N             binds nvsowner to GPU N (driver_override)
#   own_unbind N           unbinds it (returns when remove() has finished)
#   own_bound N            true while nvsowner owns GPU N
#   own_set NAME VALUE     sets an nvsowner module parameter
#   own_attr N NAME        reads GPU N's nvsowner/NAME (hold, runtime_resumes...)
#   own_hold N 0|1         takes or drops a runtime PM reference (hold)
#   own_trap N             arms the trap on GPU N's ch0 (99 °C, see nvsowner.c)
#   rpm N                  power/runtime_status of GPU N
#   st N                   status of GPU N as nvsidecar reports it
#   state N                its first word (ok, no-driver, asleep, ...)
#   reads N                its mmio_reads counter
#   peak_ch0 N             the ch0 peak (m°C) that netlink reports, "null"
#                          when there is none
#   load_owned [PARAM=V..] loads nvsidecar with every simulated GPU owned
#   own_hotplug_slot N     true when a hotplug driver manages GPU N's slot
#                          (sim_unplug needs one: QEMU asks the guest to
#                          eject, and nothing happens without a driver)
#   OWN_DEBUG              1 in the debug lane, where KASAN, lockdep and TCG
#                          make every step several times slower: the files
#                          run fewer cycles and leave out their controls
#   own_dmesg_check NAME   dmesg_check after a section; in the debug lane
#                          the runner's check of the whole file does it
#                          (three programs less to start per section)

NVS_OWNED_SIM=1af4:1110:2:gb202:owned
OWN_PARAMS=/sys/module/nvsowner/parameters
# What the gb202 fixture holds in ch0, and the trap's reading (nvsim).
OWN_CH0_MC=90215
OWN_TRAP_MC=99000
OWN_DEBUG=0
[[ ${NVS_LANE:-} == debug ]] && OWN_DEBUG=1

own_load() {
	[[ -d /sys/module/nvsowner ]] && return 0
	if [[ ! -f $NVS_TESTMODS/nvsowner.ko ]]; then
		echo "no $NVS_TESTMODS/nvsowner.ko: the stand-in owner driver did not build for $NVS_KVER (see the run-vm output)" >&2
		return 1
	fi
	"${_nvs_insmod[@]}" "$NVS_TESTMODS/nvsowner.ko" "$@"
}

own_dev() {
	local b
	b=$(sim_bdf "$1") || return 1
	echo "/sys/bus/pci/devices/$b"
}

own_bound() {
	local l
	# cd -P in a subshell rather than readlink: no exec
	l=$(cd -P "$(own_dev "$1")/driver" 2>/dev/null && echo "$PWD") || return 1
	[[ $l == */nvsowner ]]
}

own_bind() {
	local d b
	d=$(own_dev "$1") && b=${d##*/} || return 1
	echo nvsowner >"$d/driver_override" || return 1
	echo "$b" >/sys/bus/pci/drivers_probe
	own_bound "$1"
}

own_unbind() {
	local b
	b=$(sim_bdf "$1") || return 1
	echo "$b" >/sys/bus/pci/drivers/nvsowner/unbind
}

own_set() { echo "$2" >"$OWN_PARAMS/$1"; }

own_attr() { read_err "$(own_dev "$1")/nvsowner/$2"; }

own_hold() { echo "$2" >"$(own_dev "$1")/nvsowner/hold"; }

rpm() { read_err "$(own_dev "$1")/power/runtime_status"; }

st() { read_err "$(sim_class "$1")/status"; }

state() {
	local s
	s=$(st "$1") || return 1
	echo "${s%%:*}"
}

reads() { read_err "$(sim_class "$1")/mmio_reads"; }

peak_ch0() {
	"$NVS_BIN" thermal --json 2>/dev/null |
		jq -r --arg b "$(sim_bdf "$1")" \
			'.gpus[] | select(.busid == $b) | .sensors[] | select(.label == "ch0") | .peak_mc'
}

load_owned() { nvs_load "sim=$NVS_OWNED_SIM" "$@"; }

own_dmesg_check() {
	((OWN_DEBUG)) || dmesg_check "$1"
}

own_hotplug_slot() {
	local b s
	b=$(sim_bdf "$1") || return 1
	for s in /sys/bus/pci/slots/*/address; do
		[[ -f $s && $(<"$s") == "${b%.*}" ]] && return 0
	done
	return 1
}

# own_trap_raw: the raw ch0 word that reads as OWN_TRAP_MC, as nvsim
# encodes it. The last simulated GPU's register file is borrowed for it and
# put back (no owned-path test binds that one).
own_trap_raw() {
	local last=$((NVS_GPUS - 1))
	if [[ -z ${OWN_TRAP_RAW:-} ]]; then
		sim $last temp ch0 $((OWN_TRAP_MC / 1000)) >/dev/null &&
			OWN_TRAP_RAW=$(sim $last get ch0) &&
			sim $last fixture gb202 >/dev/null || return 1
	fi
	echo "$OWN_TRAP_RAW"
}

# own_trap N: nvsowner's reset_prepare() and remove() write OWN_TRAP_MC
# into GPU N's ch0 (BAR2); any reading of it afterwards shows as the peak.
own_trap() {
	local raw
	own_trap_raw >/dev/null || return 1
	raw=$OWN_TRAP_RAW
	own_set trap_off 0xad0a90 && own_set trap_val "$raw" && own_set trap_bar 2
}

own_cleanup() {
	local i d
	for ((i = 0; i < NVS_GPUS; i++)); do
		d=$(own_dev "$i" 2>/dev/null) || continue
		[[ -d $d ]] || continue
		if [[ -e $d/driver ]]; then
			echo "${d##*/}" >"$d/driver/unbind" 2>/dev/null
		fi
		[[ -e $d/driver_override ]] && echo >"$d/driver_override"
	done
	if [[ -d /sys/module/nvsowner ]]; then
		own_set probe_delay_ms 0
		own_set remove_delay_ms 0
		own_set reset_delay_ms 0
		own_set trap_bar -1
		"${_nvs_rmmod[@]}" nvsowner
	fi
	nvs_unload
}
