#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# The YNL spec (docs/netlink/nvsidecar.yaml), the uapi header and the
# policies of kmod/genl.c agree (scripts/ynl-check), and the check fails
# when any one of them changes alone: each mutation below is made in a
# temporary copy and must be caught.
set -u
. "$(dirname "$0")/../lib.sh"

chk=$NVS_TOP/scripts/ynl-check
spec=$NVS_TOP/docs/netlink/nvsidecar.yaml
uapi=$NVS_TOP/kmod/uapi/nvsidecar.h
genl=$NVS_TOP/kmod/genl.c
work=$(mktemp -d /tmp/nvs-ynl.XXXXXX)
trap 'rm -rf "$work"' EXIT

if out=$("$chk" 2>&1); then
	t_pass ynl-agree
else
	t_fail ynl-agree "$(head -n 3 <<<"$out" | tr '\n' ' ')"
fi
[[ $out == *"(schema "* ]] && t_pass ynl-schema ||
	t_fail ynl-schema "the spec was not validated against the kernel's genetlink-legacy.yaml: $out"

# mutate NAME FILE SED-EXPR WANT: the check must fail, naming WANT.
mutate() {
	local name=$1 file=$2 expr=$3 want=$4 s=$spec u=$uapi g=$genl
	cp "$file" "$work/m"
	sed -i -e "$expr" "$work/m"
	if cmp -s "$file" "$work/m"; then
		t_fail "ynl-mutation-$name" "the sed expression changed nothing: $expr"
		return
	fi
	case $file in
	"$spec") s=$work/m ;;
	"$uapi") u=$work/m ;;
	*) g=$work/m ;;
	esac
	if out=$("$chk" --no-schema --spec "$s" --uapi "$u" --genl "$g" 2>&1); then
		t_fail "ynl-mutation-$name" "not caught: $expr"
	elif [[ $out != *"$want"* ]]; then
		t_fail "ynl-mutation-$name" "caught, but not as $want: $(head -n 2 <<<"$out" | tr '\n' ' ')"
	else
		t_pass "ynl-mutation-$name"
	fi
}

mutate spec-attr-renamed "$spec" 's/name: gpu-mem-hz/name: gpu-memory-hz/' 'NVS_A_GPU_MEM_HZ'
mutate spec-attr-type "$spec" '/name: gpu-samples$/{n;s/type: u64/type: u32/}' 'NVS_A_GPU_SAMPLES: u32 in the spec, u64'
mutate spec-range "$spec" '/name: gpu-mem-hz/,/max:/s/max: nvs-mem-hz-max/max: nvs-sample-hz-max/' 'gpu-mem-hz checks'
mutate spec-enum "$spec" 's/name: sim-owned/name: sim-owner/' 'NVS_GPU_F_SIM_OWNED'
mutate spec-admin "$spec" '0,/flags: \[ admin-perm \]/{/flags: \[ admin-perm \]/d}' 'gpu-set: admin-perm'
mutate uapi-attr-inserted "$uapi" 's/^\tNVS_A_GPU_MMIO_READS,/\tNVS_A_GPU_NEW,\n&/' 'NVS_A_GPU_MMIO_READS is 32 in the spec, 33'
mutate uapi-const "$uapi" 's/^#define NVS_MEM_HZ_MAX\t\t10/#define NVS_MEM_HZ_MAX\t\t20/' 'NVS_MEM_HZ_MAX'
mutate uapi-cmd-order "$uapi" '/^\tNVS_CMD_GPU_SET,/d; s/^\tNVS_CMD_SAMPLES_GET,/&\n\tNVS_CMD_GPU_SET,/' 'NVS_CMD_GPU_SET'
mutate genl-len "$genl" 's/\.len = NVS_LABEL_LEN - 1/.len = NVS_LABEL_LEN/' 'sensor checks'
mutate genl-type "$genl" 's/\[NVS_A_SAMPLES_SINCE\]\t= { .type = NLA_U64 }/[NVS_A_SAMPLES_SINCE]\t= { .type = NLA_U32 }/' 'samples-since is u64 in the spec, NLA_U32'
mutate genl-extra-attr "$genl" 's/^\t\[NVS_A_GPU_INDEX\]\t= { .type = NLA_U32 },$/&\n\t[NVS_A_GPU_SEQ]\t= { .type = NLA_U64 },/' 'accepts NVS_A_GPU_SEQ'
mutate genl-admin "$genl" '0,/\.flags = GENL_ADMIN_PERM,/{/\.flags = GENL_ADMIN_PERM,/d}' 'gpu-set: admin-perm'
exit 0
