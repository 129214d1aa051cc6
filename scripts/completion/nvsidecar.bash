# SPDX-License-Identifier: GPL-2.0 OR MIT
# bash completion for nvsidecar(8): every subcommand and option, file and
# directory names where a path is expected, GPU names and sensor labels
# (from the module, when it is loaded), PCI addresses, RDMA devices.

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

_nvsidecar_bdfs() {
	local d
	for d in /sys/bus/pci/devices/*; do
		[[ -e $d ]] && printf '%s\n' "${d##*/}"
	done
}

_nvsidecar_rdma_devs() {
	local d
	for d in /sys/class/infiniband/*; do
		[[ -e $d ]] && printf '%s\n' "${d##*/}"
	done
}

# _nvsidecar_reply WORDS: the words that start with the current one.
_nvsidecar_reply() {
	mapfile -t COMPREPLY < <(compgen -W "$1" -- "$cur")
}

_nvsidecar_files() {
	compopt -o filenames 2>/dev/null
	mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}

_nvsidecar_dirs() {
	compopt -o filenames 2>/dev/null
	mapfile -t COMPREPLY < <(compgen -d -- "$cur")
}

# A comma-separated list: complete the item after the last comma.
_nvsidecar_list() {
	local head=${cur%,*} w out=()
	[[ $cur == *,* ]] || head=
	for w in $1; do
		[[ -z $head ]] && out+=("$w") || out+=("$head,$w")
	done
	mapfile -t COMPREPLY < <(compgen -W "${out[*]}" -- "$cur")
	compopt -o nospace 2>/dev/null
}

# _nvsidecar_value PREV: completes an option's value; 0 when prev took one.
_nvsidecar_value() {
	case $1 in
	--record | --pci-dump | --nccl-log | --cuda-lib | --config | --nvml | --state)
		_nvsidecar_files
		;;
	--textfile)
		_nvsidecar_files	# a file, or node_exporter's textfile directory
		;;
	--limit)
		_nvsidecar_reply "$(for l in $(_nvsidecar_labels); do echo "$l:"; done)"
		compopt -o nospace 2>/dev/null
		;;
	--lib)
		_nvsidecar_files	# a file, or for verify a directory
		;;
	--out | --state-dir | --patched)
		_nvsidecar_dirs
		;;
	--gpu)
		[[ $sub == rdma ]] || _nvsidecar_reply "$(_nvsidecar_gpus)"
		;;
	--importer)
		_nvsidecar_reply "$(_nvsidecar_bdfs)"
		;;
	--source)
		_nvsidecar_reply "cuda udmabuf dma-heap"
		;;
	--dev | --peer-dev)
		_nvsidecar_reply "$(_nvsidecar_rdma_devs)"
		;;
	--mem | --peer-mem)
		_nvsidecar_reply "host cuda-dmabuf cuda-peermem"
		;;
	--dmabuf-source)
		_nvsidecar_reply "cuda udmabuf"
		;;
	--op)
		_nvsidecar_reply "write read both"
		;;
	--pairs)
		_nvsidecar_reply "all"
		;;
	--expect)
		_nvsidecar_list "p2p direct gdr dmabuf"
		;;
	--duration | --interval | --count | --timeout | --fd | --size | --sizes | --iters | \
		--min-efficiency | --gpu-ids | --cmdline | --device | --client | --port | --bind | \
		--wait | --buffer | --expect-gpus | --driver-version | --threshold | --checks | --log-host)
		;;	# a value the admin types
	*)
		return 1
		;;
	esac
	return 0
}

_nvsidecar() {
	local cur=$2 prev=$3 sub act opts i nargs
	local subs="status thermal set events libcuda dmabuf topo p2p nccl-check rdma doctor idle-fix help"
	COMPREPLY=()

	if ((COMP_CWORD == 1)); then
		_nvsidecar_reply "$subs --help --version"
		return
	fi
	sub=${COMP_WORDS[1]}
	_nvsidecar_value "$prev" && return

	case $sub in
	status)
		opts="--json --help"
		;;
	thermal)
		opts="--gpu --json --dump --watch --interval --count --record --duration --allow-loss --help"
		;;
	events)
		opts="--json --gpu --count --timeout --help"
		;;
	set)
		if ((COMP_CWORD == 2)); then
			_nvsidecar_reply "$(_nvsidecar_gpus) --help --json"
			return
		fi
		# Where are we in "threshold SENSOR C"?
		nargs=0
		for ((i = 2; i < COMP_CWORD; i++)); do
			case ${COMP_WORDS[i]} in
			threshold) nargs=2 ;;
			sample-hz | mem-hz) nargs=1 ;;
			*) ((nargs > 0)) && ((nargs--)) ;;
			esac
		done
		if [[ $prev == threshold ]]; then
			_nvsidecar_reply "$(_nvsidecar_labels)"
			return
		fi
		if ((nargs == 1)) && [[ ${COMP_WORDS[COMP_CWORD - 2]} == threshold ]]; then
			_nvsidecar_reply "clear"
			return
		fi
		((nargs > 0)) && return
		opts="sample-hz mem-hz threshold reset-peaks --json"
		;;
	libcuda)
		if ((COMP_CWORD == 2)); then
			_nvsidecar_reply "status patch verify restore env --help"
			return
		fi
		act=${COMP_WORDS[2]}
		case $act in
		status) opts="--lib --state-dir --json --dump --help" ;;
		patch) opts="--out --in-place --lib --state-dir --json --help" ;;
		verify) opts="--lib --device --size --probe --importer --json --help" ;;
		restore) opts="--lib --state-dir --json --help" ;;
		env) opts="--out --lib --json --help" ;;
		*) return ;;
		esac
		;;
	dmabuf)
		if ((COMP_CWORD == 2)); then
			_nvsidecar_reply "probe --help"
			return
		fi
		opts="--gpu --source --fd --importer --size --lib --json --dump --help"
		;;
	topo)
		opts="--json --dump --pci-dump --gpu-ids --cmdline --help"
		;;
	p2p)
		opts="--size --iters --pairs --lib --nccl-log --log-host --pci-dump --min-efficiency --json --help"
		;;
	nccl-check)
		# options, or the logs themselves
		if [[ $cur == -* ]]; then
			_nvsidecar_reply "--json --expect --help --"
		else
			_nvsidecar_files
		fi
		return
		;;
	rdma)
		opts="--loopback --server --client --dev --peer-dev --mem --peer-mem --dmabuf-source --gpu
		      --cuda-lib --sizes --iters --op --buffer --port --bind --timeout --wait --json --help"
		;;
	doctor)
		opts="--quick --full --json --brief --strict --no-strict --config --expect-gpus --limit --driver-version
		      --patched --nvml --lib --textfile --pci-dump --gpu-ids --help"
		;;
	idle-fix)
		opts="--threshold --checks --dry-run --state --timeout --nvml --lib --json --help"
		;;
	*)
		opts="--help"
		;;
	esac
	_nvsidecar_reply "$opts"
}

# -o default: where nothing above applies, bash still completes file names.
complete -o default -F _nvsidecar nvsidecar
