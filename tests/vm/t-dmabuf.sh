# SPDX-License-Identifier: GPL-2.0 OR MIT
# shellcheck shell=bash
# class: kernel (tests/vm/lanes.tsv)
#
# The dma-buf capability shim (issue 5), in every lane. Sourced with
# guest-lib.sh. Layout (run-vm): GPU0 and GPU1 behind one PCIe switch,
# GPU2 on its own root port; every GPU is a simulated GB202 (ivshmem) and
# doubles as an importer device.
#
#   pcie.0 ─┬─ rp0 ── switch ─┬─ GPU0  (compared GPU, default importer)
#           │                 └─ GPU1  (importer "behind the same switch")
#           └─ rp1 ── GPU2            (importer "on another root port")
#
# 6.1 has neither /dev/udmabuf nor the dma-heap: the tests that need a real
# dma-buf skip there; the error paths, permissions and leak checks of the
# error path still run.

probe=$NVS_TOOLS/dmabuf_probe
bufinfo=/sys/kernel/debug/dma_buf/bufinfo

# field NAME LINE: the value of NAME=... in a dmabuf_probe line
field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }

# expect NAME LINE KEY=VALUE...: pass if every key has that value
expect() {
	local name=$1 line=$2 kv k v got
	shift 2
	for kv in "$@"; do
		k=${kv%%=*} v=${kv#*=}
		got=$(field "$k" "$line")
		if [[ $got != "$v" ]]; then
			t_fail "$name" "$k=$got, expected $v (${line:0:300})"
			return 1
		fi
	done
	t_pass "$name"
}

mem_kb() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }

if ! nvs_load sample_hz=0; then
	t_fail dmabuf-load "insmod $NVS_KO failed"
	exit 0
fi
gpu0=$(sim_bdf 0) && gpu1=$(sim_bdf 1) && gpu2=$(sim_bdf 2) || {
	t_fail dmabuf-layout "needs simulated GPUs 0, 1 and 2 (run-vm -g 3 or more)"
	exit 0
}
have_udmabuf=0 have_heap=0
[[ -c /dev/udmabuf ]] && have_udmabuf=1
[[ -c /dev/dma_heap/system ]] && have_heap=1
no_udmabuf="kernel $NVS_KVER has no /dev/udmabuf (CONFIG_UDMABUF, 6.12 lanes only)"
no_heap="kernel $NVS_KVER has no /dev/dma_heap/system (CONFIG_DMABUF_HEAPS_SYSTEM, 6.12 lanes only)"
p2pdma=0
grep -q ' pci_p2pdma_distance_many$' /proc/kallsyms 2>/dev/null && p2pdma=1

# --- correct reports -------------------------------------------------------
# The report must add up to the buffer: nents entries of seg_min..seg_max
# bytes, page multiples, mapping exactly size bytes. udmabuf up to 6.12
# exports one entry per 4 KiB page (dma-direct never merges them: nents =
# size / 4096); newer udmabuf builds its table from the memfd's folios, so
# contiguous pages arrive as longer entries. The system heap builds its
# table from 1 MiB, 64 KiB and 4 KiB chunks; dma-direct (pass-through)
# keeps them, but a translating domain (the 6.1 and sid lanes' vIOMMU)
# maps through drivers/iommu/dma-iommu.c, whose iommu_dma_map_sg()
# allocates one IOVA range for the whole list and joins the chunks into
# IOVA-contiguous entries up to the importer's max segment size, which
# sysfs does not show: there an entry may be as long as the buffer (sid
# 7.2 gave one 64 MiB entry).
segs_add_up() {
	local name=$1 out=$2 size=$3 max=$4 n lo hi
	n=$(field nents "$out") lo=$(field seg_min "$out") hi=$(field seg_max "$out")
	if ((n >= (size + max - 1) / max && n <= size / 4096 && lo >= 4096 && lo % 4096 == 0 &&
		hi <= max && lo <= hi && n * lo <= size && n * hi >= size)); then
		t_pass "$name"
	else
		t_fail "$name" "nents=$n seg=$lo..$hi do not add up to $size in page-multiple entries of at most $max bytes"
	fi
}
# Sizes: 4 KiB, 2 MiB, 32 MiB and the largest of 1 GiB, 512 MiB, ... that
# leaves the guest half its memory, each at most NVS_DMABUF_MAX_MB (the
# debug lane: KASAN poisons and checks every page under emulation, and the
# larger buffers take the same path, which the Debian lanes probe).
avail=$(($(mem_kb MemAvailable) * 1024))
big=$((1 << 30))
while ((big > 32 << 20 && (big * 2 > avail || big > ${NVS_DMABUF_MAX_MB:-1024} << 20))); do big=$((big / 2)); done
sizes=()
for size in 4096 $((2 << 20)) $((32 << 20)); do
	((size <= ${NVS_DMABUF_MAX_MB:-1024} << 20 || size == 4096)) && sizes+=("$size")
done
((big > 32 << 20)) && sizes+=("$big")
if ((have_udmabuf)); then
	limit=/sys/module/udmabuf/parameters/size_limit_mb
	old_limit=$(cat $limit 2>/dev/null)
	[[ -w $limit ]] && echo $((big >> 20)) >$limit
	for size in "${sizes[@]}"; do
		out=$("$probe" --gpu 0 udmabuf $size 2>&1)
		name=udmabuf-$((size >> 10))k-report
		expect "$name" "$out" ret=0 step=4 err=0 exporter=udmabuf \
			importer="$gpu0" size=$size mapped=$size verdict=system-ram || continue
		segs_add_up "$name-entries" "$out" $size $size
	done
	[[ -n $old_limit && -w $limit ]] && echo "$old_limit" >$limit
	if ((big != 1 << 30)); then
		if ((${NVS_DMABUF_MAX_MB:-1024} < 1024)); then
			t_skip udmabuf-1g "NVS_DMABUF_MAX_MB=${NVS_DMABUF_MAX_MB:-} in this lane: the largest buffer probed was $((${sizes[-1]} >> 20)) MiB"
		else
			t_skip udmabuf-1g "only $((avail >> 20)) MiB available: the largest buffer probed was $((big >> 20)) MiB"
		fi
	fi
else
	t_skip udmabuf-reports "$no_udmabuf"
fi

if ((have_heap)); then
	case $(cat /sys/bus/pci/devices/"$gpu0"/iommu_group/type 2>/dev/null) in
	DMA | DMA-FQ) heap_max=0 ;;	# the buffer's size: chunks joined
	*) heap_max=$((1 << 20)) ;;	# the heap's largest chunk
	esac
	for size in "${sizes[@]}"; do
		out=$("$probe" --gpu 0 heap $size 2>&1)
		name=heap-$((size >> 10))k-report
		expect "$name-fields" "$out" ret=0 step=4 err=0 exporter=system importer="$gpu0" \
			size=$size mapped=$size verdict=system-ram || continue
		segs_add_up "$name-entries" "$out" $size $((heap_max ? heap_max : size))
	done
else
	t_skip heap-reports "$no_heap"
fi

echo "nvs-time dmabuf nvsexp" >/dev/kmsg	# where the lane's time goes (dmesg)
# --- NVIDIA's two export paths, through the stand-in exporter -------------
# nvsexp (tools/nvsexp/) exports a range of GPU0's BAR the way nv-dmabuf.c
# does: mapped for the importer with dma_map_resource() (its default), or,
# as for CUDA's FORCE_PCIE mapping type, the raw BAR address with no
# bus-address mark. Either way the bytes are BAR1's; what differs is the
# address kind, which depends on the importer's IOMMU domain, read here
# from sysfs: "identity" (pass-through) gives direct addresses everywhere;
# "DMA" (strict) or "DMA-FQ" (lazy) gives IOVAs for everything mapped
# through the IOMMU, and the raw export stays an untranslated BAR address.
# Before the verdict knew about that, a raw BAR address behind a
# translating domain was fed to iommu_iova_to_phys() and reported as
# "elsewhere" (review N4). NVS_IOMMU is the lane's requested mode
# (lanes.tsv, run-vm); the group type is what the guest kernel made of it.
dom=$(cat /sys/bus/pci/devices/"$gpu0"/iommu_group/type 2>/dev/null)
case $dom in
identity) translating=0 ;;
DMA | DMA-FQ) translating=1 ;;
*) translating=-1 ;;
esac
case ${NVS_IOMMU:-pt}:$dom in
pt:identity | strict:DMA | lazy:DMA-FQ) t_pass dmabuf-iommu-mode ;;
*) t_fail dmabuf-iommu-mode "the lane asks for NVS_IOMMU=${NVS_IOMMU:-pt} but $gpu0's IOMMU group is of type \`$dom'" ;;
esac
if ((translating < 0)); then
	t_skip dmabuf-nvsexp "no IOMMU group type for $gpu0 (\`$dom'): the address kind cannot be predicted"
elif [[ ! -f $NVS_TESTMODS/nvsexp.ko ]]; then
	t_fail dmabuf-nvsexp "no $NVS_TESTMODS/nvsexp.ko: the stand-in exporter did not build for $NVS_KVER (see the run-vm output)"
elif ! "${_nvs_insmod[@]}" "$NVS_TESTMODS/nvsexp.ko"; then
	t_fail dmabuf-nvsexp "insmod nvsexp.ko failed"
else
	if ((translating)); then mapped_kind=iova raw_kind=untranslated; else mapped_kind=direct raw_kind=direct; fi
	# The debug lane (NVS_DMABUF_FEW_INPUTS=1) probes 64 KiB only: KASAN
	# checks every page under TCG, and 2 MiB takes the same path, which
	# the Debian lanes probe (CI time).
	sizes=(65536 $((2 << 20)))
	((${NVS_DMABUF_FEW_INPUTS:-0})) && sizes=(65536)
	for imp in "$gpu0" "$gpu1"; do
		for size in "${sizes[@]}"; do
			out=$("$probe" --gpu 0 --importer "$imp" --from "$gpu0" nvsexp-iommu $size 2>&1)
			expect "nvsexp-mapped-$((size >> 10))k-$imp" "$out" ret=0 step=4 err=0 exporter=nvsexp \
				size=$size mapped=$size verdict=bar1 addr=$mapped_kind moved=0
			out=$("$probe" --gpu 0 --importer "$imp" --from "$gpu0" nvsexp-pcie $size 2>&1)
			expect "nvsexp-raw-$((size >> 10))k-$imp" "$out" ret=0 step=4 err=0 exporter=nvsexp \
				size=$size mapped=$size verdict=bar1 addr=$raw_kind moved=0
		done
	done
	# GPU1's BAR is not GPU0's BAR1: the same raw export compared with
	# GPU0 is somewhere else, and stays so (an untranslated address is
	# only taken for BAR1 inside BAR1's window).
	out=$("$probe" --gpu 0 --from "$gpu1" nvsexp-pcie 65536 2>&1)
	expect nvsexp-raw-other-bar "$out" ret=0 step=4 err=0 verdict=elsewhere
	# The address kind is the last key of the sysfs summary (appended:
	# older readers of the line keep working).
	last=$(cat "$(sim_class 0)/dmabuf_last_probe" 2>&1)
	[[ $last == *" ok exporter=nvsexp "*" verdict=elsewhere p2p="*" addr=$mapped_kind" ]] &&
		t_pass nvsexp-sysfs-addr || t_fail nvsexp-sysfs-addr "$last"
	# Review N7: a static exporter is mapped inside the attach, under a
	# reservation lock the core takes uninterruptibly. With someone
	# holding that lock (here for 4 s) the probe says EBUSY at step
	# attach at once instead of waiting, unkillable, for the holder.
	out=$("$probe" --gpu 0 --hold 4000 --from "$gpu0" nvsexp-iommu 65536 2>&1)
	ms=$(sed -n 's/^elapsed_ms=//p' <<<"$out")
	if [[ "$(field ret "$out") $(field step "$out") $(field err "$out")" != "0 1 16" ]]; then
		t_fail nvsexp-resv-held-ebusy "expected EBUSY (err=16) at step attach (1): ${out:0:300}"
	elif ((ms >= 4000)); then
		t_fail nvsexp-resv-held-ebusy "EBUSY only after ${ms} ms: the probe waited for the holder"
	else
		t_pass nvsexp-resv-held-ebusy
	fi
	# Reviews N8, K1, K2: mapping a dynamic exporter's buffer may move it
	# (a pin without move_notify; amdgpu's and xe's map_dma_buf with it).
	# The probe refuses every dynamic exporter before it attaches: no pin,
	# no map, whatever the kernel's configuration.
	p0="$(cat /sys/module/nvsexp/parameters/pins) $(cat /sys/module/nvsexp/parameters/dynamic_maps)"
	out=$("$probe" --gpu 0 --from "$gpu0" nvsexp-dynamic 65536 2>&1)
	p1="$(cat /sys/module/nvsexp/parameters/pins) $(cat /sys/module/nvsexp/parameters/dynamic_maps)"
	if [[ $p0 != "$p1" ]]; then
		t_fail nvsexp-dynamic-refused "the probe pinned or mapped the dynamic exporter's buffer (pins, maps: $p0 -> $p1): ${out:0:300}"
	elif [[ $(field ret "$out") == -95 && $out == *"exporter is dynamic"* ]]; then
		t_pass nvsexp-dynamic-refused
	else
		t_fail nvsexp-dynamic-refused "want ret=-95 and \"exporter is dynamic\": ${out:0:300}"
	fi
	"${_nvs_rmmod[@]}" nvsexp || t_fail dmabuf-nvsexp-unload "rmmod nvsexp failed"
fi
if ((have_udmabuf && translating >= 0)); then
	out=$("$probe" --gpu 0 udmabuf 65536 2>&1)
	if ((translating)); then kind=iova; else kind=direct; fi
	expect udmabuf-addr-kind "$out" ret=0 step=4 verdict=system-ram addr=$kind moved=0
fi

echo "nvs-time dmabuf bad fds" >/dev/kmsg	# where the lane's time goes (dmesg)
# --- bad file descriptors ---------------------------------------------------
# Each is refused before anything is attached, with its own errno and message.
# NVS_DMABUF_FEW_INPUTS=1 (the debug lane) keeps one input of each kind:
# under KASAN what matters is the error path's references, the same for
# every input of a kind; the Debian lanes run the whole list.
few=${NVS_DMABUF_FEW_INPUTS:-0}
fdkinds=(pipe eventfd memfd) badfd9=(closed huge)
badids=(serial8250 ttyS0 0000:00:1f 0000:00:20.0 00:1f.8 " 0000:00:01.0" 0000:00:01.0x 000:00:01.0 +0000:00:01.0)
if ((few)); then
	fdkinds=(pipe) badfd9=(closed) badids=(0000:00:01.0x)
	t_skip dmabuf-inputs-all "NVS_DMABUF_FEW_INPUTS=1 in this lane: one bad fd and one malformed bus id of each kind (the Debian lanes try them all)"
fi
for kind in "${fdkinds[@]}"; do
	out=$("$probe" --gpu 0 $kind 2>&1)
	expect "badfd-$kind" "$out" ret=-22 step=0 msg=The
	grep -q 'not a dma-buf' <<<"$out" || t_fail "badfd-$kind-message" "no \"not a dma-buf\": $out"
done
for kind in "${badfd9[@]}"; do
	out=$("$probe" --gpu 0 $kind 2>&1)
	expect "badfd-$kind" "$out" ret=-9 step=0
	grep -q 'Not an open file descriptor' <<<"$out" || t_fail "badfd-$kind-message" "no \"Not an open file descriptor\": $out"
done

# --- bad importers ----------------------------------------------------------
out=$("$probe" --importer 0000:7f:1f.7 pipe 2>&1)
expect importer-nonexistent "$out" ret=-19 msg=No
# the policy (15 characters) and the parser agree (review N21): a 7-digit
# domain parses and is looked up; an 8-digit one is refused before that
out=$("$probe" --importer 1234567:7f:1f.7 pipe 2>&1)
expect importer-domain-7-digits "$out" ret=-19
out=$("$probe" --importer 12345678:7f:1f.7 pipe 2>&1)
expect importer-domain-8-digits "$out" ret=-22
for bad in "${badids[@]}"; do
	out=$("$probe" --importer "$bad" pipe 2>&1)
	if [[ $(field ret "$out") == -22 ]] && grep -q 'PCI bus id' <<<"$out"; then
		t_pass "importer-malformed-${bad// /_}"
	else
		t_fail "importer-malformed-${bad// /_}" "expected -EINVAL naming a PCI bus id: $out"
	fi
done
out=$("$probe" pipe 2>&1)
expect importer-none "$out" ret=-22

echo "nvs-time dmabuf permissions" >/dev/kmsg	# where the lane's time goes (dmesg)
# --- permissions ------------------------------------------------------------
out=$("$probe" --user --gpu 0 pipe 2>&1)
expect probe-unprivileged-eperm "$out" ret=-1
as_user "$NVS_BIN" dmabuf probe --gpu 0 --fd 0 >/dev/null 2>&1
rc=$?
((rc == 4)) && t_pass cli-unprivileged-exit4 || t_fail cli-unprivileged-exit4 "exit $rc, expected 4 (permission denied)"

# The CLI sections are userspace over the same DMABUF_PROBE the probe tool
# drives above and below; under KASAN and TCG each exec and the stand-in
# libcuda's compile cost seconds, so the debug lane leaves them out
# (NVS_DMABUF_CLI=0) and the Debian lanes run them.
if [[ ${NVS_DMABUF_CLI:-1} == 0 ]]; then
	t_skip dmabuf-cli "NVS_DMABUF_CLI=0 in this lane: the CLI and stand-in libcuda sections are userspace on the probe this lane drives with the probe tool; the Debian lanes run them"
else

# --- the CLI and the sysfs summary -----------------------------------------
if ((have_udmabuf)); then
	"$NVS_BIN" dmabuf probe --gpu 0 --source udmabuf --size 2M >"$NVS_OUT/dmabuf-sample-udmabuf.txt" 2>&1
	rc=$?
	((rc == 0)) && grep -q 'verdict     system-ram' "$NVS_OUT/dmabuf-sample-udmabuf.txt" &&
		t_pass cli-udmabuf || t_fail cli-udmabuf "exit $rc: $(tr '\n' ' ' <"$NVS_OUT/dmabuf-sample-udmabuf.txt")"
	# udmabuf builds its table with sg_alloc_table_from_pages(), which
	# merges physically adjacent pages: 64 KiB of shmem pages is 1..16
	# entries depending on where the pages fell (CI once saw 15), so the
	# tests check the bounds and that every byte was mapped, never a count.
	json=$("$NVS_BIN" dmabuf probe --gpu 0 --source udmabuf --size 64K --json 2>&1)
	[[ $(jq -r '"\(.exporter) \(.size) \(.mapped) \(.nents >= 1 and .nents <= 16) \(.seg_min >= 4096) \(.verdict) \(.ok)"' <<<"$json" 2>&1) == "udmabuf 65536 65536 true true system-ram true" ]] &&
		t_pass cli-json || t_fail cli-json "$(tr '\n' ' ' <<<"$json")"
	dump=$("$NVS_BIN" dmabuf probe --importer "$gpu1" --source udmabuf --size 8K --dump 2>&1)
	IFS=$'\t' read -ra f <<<"$dump"
	[[ ${#f[@]} == 15 && ${f[0]} == udmabuf && ${f[2]} == "$gpu1" && ${f[3]} == 8192 && ${f[4]} =~ ^[12]$ &&
		${f[11]} == not-applicable && ${f[13]} == done ]] &&
		t_pass cli-dump || t_fail cli-dump "$dump"
	# CUDA's zero-padded form (16 characters) reaches the module as
	# pci_name() writes it, which its 15-character policy takes (review N21)
	dump=$("$NVS_BIN" dmabuf probe --importer "0000${gpu1^^}" --source udmabuf --size 8K --dump 2>&1)
	IFS=$'\t' read -ra f <<<"$dump"
	[[ ${#f[@]} == 15 && ${f[2]} == "$gpu1" && ${f[13]} == done ]] &&
		t_pass cli-importer-cuda-form || t_fail cli-importer-cuda-form "$dump"
	last=$(cat "$(sim_class 0)/dmabuf_last_probe" 2>&1)
	[[ $last =~ \ ok\ exporter=udmabuf\ importer=$gpu0\ size=65536\ nents=([0-9]+)\  && ${BASH_REMATCH[1]} -ge 1 &&
		${BASH_REMATCH[1]} -le 16 && $last == *"verdict=system-ram"* ]] &&
		t_pass sysfs-last-probe || t_fail sysfs-last-probe "$last"
else
	t_skip cli-udmabuf "$no_udmabuf"
fi
if ((have_heap)); then
	"$NVS_BIN" dmabuf probe --gpu 0 --source dma-heap --size 2M >"$NVS_OUT/dmabuf-sample-heap.txt" 2>&1
	rc=$?
	((rc == 0)) && grep -q 'exporter    system' "$NVS_OUT/dmabuf-sample-heap.txt" &&
		t_pass cli-heap || t_fail cli-heap "exit $rc: $(tr '\n' ' ' <"$NVS_OUT/dmabuf-sample-heap.txt")"
else
	t_skip cli-heap "$no_heap"
fi
exec 3< <(sleep 60)
spid=$!
"$NVS_BIN" dmabuf probe --gpu 0 --fd 3 >/tmp/o 2>&1
rc=$?
((rc == 1)) && grep -q 'not a dma-buf' /tmp/o && t_pass cli-fd-pipe || t_fail cli-fd-pipe "exit $rc: $(tr '\n' ' ' </tmp/o)"
exec 3<&-
kill "$spid" 2>/dev/null
"$NVS_BIN" dmabuf probe --importer nonsense --fd 0 >/tmp/o 2>&1
rc=$?
((rc == 2)) && grep -q 'PCI bus id' /tmp/o && t_pass cli-bad-importer || t_fail cli-bad-importer "exit $rc: $(tr '\n' ' ' </tmp/o)"
for bad in "--size 3" "--size -4096" "--size 4096x" "--source nfs" "--fd -1" "--fd 1x" "--json --dump --fd 0 --gpu 0" ""; do
	# shellcheck disable=SC2086 # word splitting is the point
	"$NVS_BIN" dmabuf probe $bad >/tmp/o 2>&1
	rc=$?
	((rc == 2)) && [[ -s /tmp/o ]] && t_pass "cli-usage-${bad// /_}" || t_fail "cli-usage-${bad// /_}" "exit $rc: $(tr '\n' ' ' </tmp/o)"
done

echo "nvs-time dmabuf cuda path" >/dev/kmsg	# where the lane's time goes (dmesg)
# --- the CUDA path through a stand-in libcuda ------------------------------
fake=/tmp/libcuda-fake.so
if gcc -shared -fPIC -DFAKECUDA_LIB -o $fake "$NVS_TOP/tests/vm/tools/dmabuf_fakecuda.c" 2>/tmp/o; then
	FAKECUDA_BUSID=$gpu0 FAKECUDA_MODE=gate "$NVS_BIN" dmabuf probe --gpu 0 --lib $fake >/tmp/o 2>&1
	rc=$?
	((rc == 6)) && grep -q 'nvsidecar libcuda patch' /tmp/o && grep -q '801' /tmp/o &&
		t_pass cli-cuda-gate-801 || t_fail cli-cuda-gate-801 "exit $rc: $(tr '\n' ' ' </tmp/o)"
	if ((have_udmabuf)); then
		FAKECUDA_BUSID=$gpu0 FAKECUDA_MODE=udmabuf "$NVS_BIN" dmabuf probe --gpu 0 --lib $fake --size 4M >/tmp/o 2>&1
		rc=$?
		((rc == 8)) && grep -q 'not inside BAR1' /tmp/o && t_pass cli-cuda-not-bar1 ||
			t_fail cli-cuda-not-bar1 "exit $rc: $(tr '\n' ' ' </tmp/o)"
		# libcuda verify hands its exported fd to the same kernel probe.
		FAKECUDA_BUSID=$gpu0 FAKECUDA_MODE=udmabuf "$NVS_BIN" libcuda verify --lib $fake --probe \
			--size 4194304 >/tmp/o 2>&1
		rc=$?
		((rc == 0)) && grep -qE 'kernel dma-buf probe: exporter udmabuf.* [0-9]+ entries, 4194304 bytes mapped, verdict system-ram' /tmp/o &&
			t_pass libcuda-verify-probe || t_fail libcuda-verify-probe "exit $rc: $(tr '\n' ' ' </tmp/o)"
	else
		t_skip cli-cuda-not-bar1 "$no_udmabuf (the stand-in libcuda exports a udmabuf)"
		t_skip libcuda-verify-probe "$no_udmabuf (the stand-in libcuda exports a udmabuf)"
	fi
else
	t_fail cli-cuda-fake "cannot build the stand-in libcuda: $(head -c 300 /tmp/o)"
fi

fi # NVS_DMABUF_CLI

echo "nvs-time dmabuf p2p" >/dev/kmsg	# where the lane's time goes (dmesg)
# --- P2P distance -----------------------------------------------------------
# Expected values come from the topology and the kernel's rule
# (drivers/pci/p2pdma.c): a pair below a common switch is allowed unless a
# bridge on the way redirects P2P with ACS; a pair that only meets at the
# host bridge is allowed only on AMD Zen (family >= 0x17) or a whitelisted
# Intel host bridge. TCG's "-cpu max" is AMD family 15 and the q35 host
# bridge is 8086:29c0: refused.
acs_redirects() {
	local b c
	for b in "$@"; do
		c=$(setpci -s "$b" ECAP0d+6.w 2>/dev/null) || continue
		[[ -n $c ]] && (((0x$c & 0x2c) != 0)) && return 0 # RR | CR | EC
	done
	return 1
}
if ((p2pdma && !have_udmabuf)); then
	t_skip p2p-distance "$no_udmabuf: the P2P fields come with a probe of a real dma-buf"
elif ((p2pdma)); then
	# Same switch: GPU0 and GPU1 meet at the switch's upstream port, two
	# hops up from each.
	p0=$(readlink -f /sys/bus/pci/devices/$gpu0) p1=$(readlink -f /sys/bus/pci/devices/$gpu1)
	common=$p0
	while [[ $p1 != "$common"/* ]]; do common=${common%/*}; done
	d0=$(($(tr -cd / <<<"${p0#"$common"}" | wc -c))) d1=$(($(tr -cd / <<<"${p1#"$common"}" | wc -c)))
	bridges=$(for p in "$p0" "$p1"; do while [[ $p != "$common" ]]; do p=${p%/*}; basename "$p"; done; done | grep -v pci0000 | sort -u)
	# shellcheck disable=SC2086
	if acs_redirects $bridges; then exp_sw="p2p=refused dist=-1"; else exp_sw="p2p=allowed dist=$((d0 + d1))"; fi
	vendor=$(awk -F': ' '/^vendor_id/ { print $2; exit }' /proc/cpuinfo)
	family=$(awk -F': ' '/^cpu family/ { print $2; exit }' /proc/cpuinfo)
	hb=$(cat /sys/bus/pci/devices/0000:00:00.0/vendor /sys/bus/pci/devices/0000:00:00.0/device 2>/dev/null | tr '\n' :)
	case $hb in
	0x8086:0x3c0[01]: | 0x8086:0x2f0[01]: | 0x8086:0x203[0-3]: | 0x8086:0x2020: | 0x8086:0x09a2: | 0x8086:0x0b25:) wl=1 ;;
	*) wl=0 ;;
	esac
	if [[ $vendor == AuthenticAMD ]] && ((family >= 0x17)) || ((wl)); then
		exp_rp="p2p=allowed"
	else
		exp_rp="p2p=refused dist=-1"
	fi
	echo "p2p expectations: switch [$exp_sw] root ports [$exp_rp] (cpu $vendor family $family, host bridge $hb)"
	# Only a probe that got past the fd lookup returns the p2p field.
	sw=$("$probe" --gpu 0 --importer "$gpu1" udmabuf 2>&1)
	rp=$("$probe" --gpu 0 --importer "$gpu2" udmabuf 2>&1)
	echo "switch: $sw"
	echo "root ports: $rp"
	# shellcheck disable=SC2086
	expect p2p-same-switch "$sw" $exp_sw
	# shellcheck disable=SC2086
	expect p2p-root-ports "$rp" $exp_rp
	if [[ $(field p2p "$sw") != "$(field p2p "$rp")" ]]; then
		t_pass p2p-one-allowed-one-refused
	else
		t_fail p2p-one-allowed-one-refused "both layouts gave p2p=$(field p2p "$sw"): choose a CPU model and host bridge for which the kernel refuses the cross-root-port pair"
	fi
	self=$("$probe" --gpu 0 udmabuf 2>&1)
	expect p2p-self "$self" p2p=allowed dist=0
elif ((have_udmabuf)); then
	out=$("$probe" --gpu 0 --importer "$gpu1" udmabuf 2>&1)
	expect p2p-unknown-without-p2pdma "$out" ret=0 step=4 p2p=unknown
	out=$("$probe" --importer "$gpu1" udmabuf 2>&1)
	expect p2p-not-applicable-without-gpu "$out" ret=0 step=4 p2p=not-applicable
	t_skip p2p-distance "kernel $NVS_KVER is built without CONFIG_PCI_P2PDMA (the debug lane has it)"
else
	t_skip p2p-distance "$no_udmabuf, and no CONFIG_PCI_P2PDMA: the P2P fields come with a probe of a real dma-buf"
fi

# --- leaks: 10,000 probes ----------------------------------------------------
cycles=${NVS_DMABUF_CYCLES:-10000}
if ((have_udmabuf)); then
	kind=udmabuf size=65536
else
	kind=pipe size=0 # the error path still takes and drops every reference
fi
"$probe" --gpu 0 --count 200 $kind $size >/dev/null 2>&1 # warm the caches
sync
echo 3 >/proc/sys/vm/drop_caches
slab0=$(mem_kb SUnreclaim) avail0=$(mem_kb MemAvailable)
dmesg_mark "dmabuf leak loop"
bi=()
[[ -r $bufinfo ]] && bi=(--bufinfo "$bufinfo")
t0=$SECONDS
out=$("$probe" --gpu 0 --count "$cycles" "${bi[@]}" $kind $size 2>&1)
secs=$((SECONDS - t0))
echo "$cycles probes of $kind in ${secs}s: $out"
sync
echo 3 >/proc/sys/vm/drop_caches
slab1=$(mem_kb SUnreclaim) avail1=$(mem_kb MemAvailable)
if ((have_udmabuf)); then
	expect leak-loop-results "$out" probes="$cycles" done="$cycles" einval=0 other=0
	if ((${#bi[@]})); then
		expect leak-no-attachment-left "$out" attached=0
	else
		t_skip leak-no-attachment-left "no $bufinfo (debugfs not mounted)"
	fi
else
	expect leak-loop-results "$out" probes="$cycles" done=0 enodev=0 einval="$cycles" other=0
fi
# A leaked attachment + table per probe would be >= 1.5 KiB (16 entries):
# 15 MiB over 10,000 probes. Allow 2 MiB of slab noise. Under KASAN the
# quarantine keeps freed objects in slab (2.8 MiB after 2000 probes was
# seen), so SUnreclaim measures nothing there; that lane's leak check is
# kmemleak's scan at the end of the boot (kmemleak-scan).
if [[ -e /sys/kernel/debug/kmemleak ]] && grep -q 'KernelAddressSanitizer initialized' <<<"$(dmesg)"; then
	t_skip leak-slab-meminfo-flat "KASAN's quarantine holds freed objects in slab ($slab0->$slab1 kB SUnreclaim after $cycles probes); kmemleak-scan checks this lane for leaks"
elif ((slab1 - slab0 < 2048 && avail0 - avail1 < 16384)); then
	t_pass leak-slab-meminfo-flat
else
	t_fail leak-slab-meminfo-flat "SUnreclaim ${slab0}->${slab1} kB, MemAvailable ${avail0}->${avail1} kB after $cycles probes"
fi
dmesg_check leak-no-warn

# GPU1 removed and rescanned N times, a second apart, gone for S seconds
# each time: the importer of the two hot-removal tests below.
replug_gpu1() {
	local i
	for ((i = 0; i < $1; i++)); do
		sleep 1
		echo 1 >/sys/bus/pci/devices/"$gpu1"/remove
		sleep "$2"
		echo 1 >/sys/bus/pci/rescan
		wait_until 10 test -e /sys/bus/pci/devices/"$gpu1"
	done
}

# --- the importer deleted and added again while probes map for it ---------
# A free sim has no driver, so no bind or unbind orders it against the
# probe. Being added, it is on the bus before the IOMMU core sets its DMA
# up: a probe that found it then mapped through dma-direct and unmapped
# through the IOMMU, and the sid lane warned in __iommu_dma_unmap() (the
# race below hit it now and then). Being deleted, it is marked dead, then
# released by the IOMMU core, while still registered: a probe could map in
# between. Here three probe loops map for GPU1 through nvsexp, which keeps
# each fresh mapping 50 ms (map_delay_ms), while GPU1 is deleted and
# rescanned five times. nvsexp counts the unmaps made through another
# IOMMU domain than their map (switched: both windows, any IOMMU mode) and
# those after their importer was deleted (outlived); the translating lanes
# (6.1, sid) also show a wrong unmap as a WARN.
echo "nvs-time dmabuf importer deleted under probes" >/dev/kmsg	# where the lane's time goes (dmesg)
dmesg_mark "dmabuf importer deleted under probes"
if [[ ! -f $NVS_TESTMODS/nvsexp.ko ]]; then
	t_fail del-no-switched-mapping "no $NVS_TESTMODS/nvsexp.ko: the stand-in exporter did not build for $NVS_KVER"
elif ! "${_nvs_insmod[@]}" "$NVS_TESTMODS/nvsexp.ko" map_delay_ms=50; then
	t_fail del-no-switched-mapping "insmod nvsexp.ko failed"
else
	mpids=()
	for j in 1 2 3; do
		"$probe" --gpu 0 --importer "$gpu1" --from "$gpu0" --count 1000000 --seconds 9 \
			nvsexp-iommu 65536 >/tmp/dmabuf-mid$j 2>&1 &
		mpids+=($!)
	done
	replug_gpu1 5 0.3
	if wait_until 60 bash -c "for p in ${mpids[*]}; do kill -0 \$p 2>/dev/null && exit 1; done; exit 0"; then
		wait "${mpids[@]}"
		done_all=0 bad=
		for j in 1 2 3; do
			out=$(</tmp/dmabuf-mid$j)
			echo "deleted under probes ($j): $(tail -n 1 <<<"$out")"
			[[ $(field einval "$out") == 0 && $(field other "$out") == 0 ]] || bad+=" loop $j: ${out:0:300}"
			done_all=$((done_all + $(field done "$out")))
		done
		[[ -z $bad ]] && t_pass del-probes-clean || t_fail del-probes-clean "want einval=0 other=0:$bad"
		((done_all > 0)) && t_pass del-probes-mapped ||
			t_fail del-probes-mapped "no probe completed: the test exercised nothing"
	else
		kill -KILL "${mpids[@]}" 2>/dev/null
		t_fail del-probes-clean "the probe loops hung while their importer was deleted: $(tail -c 300 /tmp/dmabuf-mid1)"
	fi
	for c in switched outlived; do
		n=$(cat /sys/module/nvsexp/parameters/$c)
		if [[ $n == 0 ]]; then
			t_pass del-no-$c-mapping
		else
			t_fail del-no-$c-mapping "$n probe mapping(s) for $gpu1 were $c (nvsexp): a probe mapped while $gpu1 was being added or deleted"
		fi
	done
	echo 0 >/sys/module/nvsexp/parameters/map_delay_ms
	"${_nvs_rmmod[@]}" nvsexp || t_fail del-nvsexp-unload "rmmod nvsexp failed"
fi
[[ -e /sys/bus/pci/devices/$gpu1 ]] || t_fail del-importer-back "$gpu1 did not come back after rescan"
dmesg_check del-no-warn

# --- probes racing with hot-removal of the importer --------------------------
# The importer (GPU1) is removed and rescanned while probes naming it run.
# Every probe must either complete or fail cleanly with -ENODEV.
dmesg_mark "dmabuf hot-remove race"
race=/tmp/dmabuf-race
"$probe" --gpu 0 --importer "$gpu1" --count 1000000 --seconds 8 $kind $size >$race 2>&1 &
rpid=$!
replug_gpu1 3 0.5
if wait_until 60 bash -c "! kill -0 $rpid 2>/dev/null"; then
	wait $rpid
	out=$(<$race)
	echo "race: $out"
	n=$(field probes "$out")
	if ((have_udmabuf)); then
		expect race-probes-clean "$out" einval=0 other=0
	else
		# A pipe fails at the fd step (-EINVAL) or, while GPU1 is gone, at
		# the importer (-ENODEV): nothing else.
		expect race-probes-clean "$out" done=0 other=0
	fi
else
	kill -KILL $rpid 2>/dev/null
	t_fail race-probes-clean "the probe loop hung while its importer was hot-removed: $(tail -c 300 $race)"
fi
if [[ -e /sys/bus/pci/devices/$gpu1 ]]; then
	t_pass race-importer-back
else
	t_fail race-importer-back "$gpu1 did not come back after rescan"
fi
# The tally prints only when the loop finishes; a killed loop still must not
# have crashed or hung: one more probe after the race must work.
out=$("$probe" --gpu 0 --importer "$gpu1" $kind $size 2>&1)
if ((have_udmabuf)); then
	expect race-probe-after "$out" ret=0 step=4 err=0 importer="$gpu1"
else
	expect race-probe-after "$out" ret=-22 importer=-
fi
dmesg_check race-no-warn

nvs_unload || t_fail dmabuf-unload "rmmod failed after the dma-buf tests"
exit 0
