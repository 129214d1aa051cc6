# SPDX-License-Identifier: GPL-2.0 OR MIT
# bash completion for nvsidecar(8): subcommands, their options, GPU names
# and sensor labels (from the module, when it is loaded).

_nvsidecar_gpus() {
	local d
	for d in /sys/class/nvsidecar/gpu*; do
		[[ -e $d ]] && printf '%s\n' "${d##*/}"
	done
}

_nvsidecar_labels() {
	local f
	for f in /sys/class/nvsidecar/gpu*/device/hwmon/hwmon*/temp*_label; do
		[[ -r $f ]] && cat "$f"
	done 2>/dev/null | sort -u
}

_nvsidecar() {
	local cur=$2 prev=$3 sub opts i nargs
	local subs="status thermal set events libcuda dmabuf topo p2p nccl-check rdma doctor help"
	COMPREPLY=()

	if ((COMP_CWORD == 1)); then
		mapfile -t COMPREPLY < <(compgen -W "$subs --help --version" -- "$cur")
		return
	fi
	sub=${COMP_WORDS[1]}

	case $sub in
	status)
		opts="--json --help"
		;;
	thermal)
		case $prev in
		--record)
			mapfile -t COMPREPLY < <(compgen -f -- "$cur")
			return
			;;
		--duration | --interval | --count)
			return
			;;
		--gpu)
			mapfile -t COMPREPLY < <(compgen -W "$(_nvsidecar_gpus)" -- "$cur")
			return
			;;
		esac
		opts="--gpu --json --dump --watch --interval --count --record --duration --allow-loss --help"
		;;
	events)
		case $prev in
		--count | --timeout) return ;;
		--gpu)
			mapfile -t COMPREPLY < <(compgen -W "$(_nvsidecar_gpus)" -- "$cur")
			return
			;;
		esac
		opts="--json --gpu --count --timeout --help"
		;;
	set)
		if ((COMP_CWORD == 2)); then
			mapfile -t COMPREPLY < <(compgen -W "$(_nvsidecar_gpus) --help" -- "$cur")
			return
		fi
		# Where are we in "threshold SENSOR C"?
		nargs=0
		for ((i = 2; i < COMP_CWORD; i++)); do
			case ${COMP_WORDS[i]} in
			threshold) nargs=2 ;;
			sample-hz) nargs=1 ;;
			*) ((nargs > 0)) && ((nargs--)) ;;
			esac
		done
		if [[ $prev == threshold ]]; then
			mapfile -t COMPREPLY < <(compgen -W "$(_nvsidecar_labels)" -- "$cur")
			return
		fi
		if ((nargs == 1)) && [[ ${COMP_WORDS[COMP_CWORD - 2]} == threshold ]]; then
			mapfile -t COMPREPLY < <(compgen -W "clear" -- "$cur")
			return
		fi
		((nargs > 0)) && return
		opts="sample-hz threshold reset-peaks"
		;;
	*)
		opts="--help"
		;;
	esac
	mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
}

complete -F _nvsidecar nvsidecar
