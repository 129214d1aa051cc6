#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# class: kernel (tests/vm/lanes.tsv)
#
# Issue 12 item 5: the module's own self-tests (kmod/selftest/, WireGuard
# style), built with `make module NVS_SELFTEST=1` into
# $NVS_BUILD/kmod-selftest-<release>/nvsidecar.ko (NVS_SELFTEST_KO
# overrides) and run at load: register decoding (every format), the
# sample ring's overwrite and loss accounting, thresholds and history, PCI
# bus id parsing, the dma-buf walk's run merging (review K5). Each group
# prints "<group> self-tests...: pass"; a failing group prints the case
# and refuses to load.
set -u

ko=${NVS_SELFTEST_KO:-$NVS_BUILD/kmod-selftest-$NVS_KVER/nvsidecar.ko}
if [[ ! -f $ko ]]; then
	t_skip selftest "no self-test build at $ko (make module KVER=$NVS_KVER MODDIR=$NVS_BUILD/kmod-selftest-$NVS_KVER NVS_SELFTEST=1)"
	exit 0
fi
sim_fixture_all gb202
dmesg_mark "selftest load"
if "${_nvs_insmod[@]}" "$ko" "sim=$NVS_SIM"; then
	t_pass selftest-load
else
	t_fail selftest-load "insmod of the self-test build failed: $(dmesg_since_mark | grep nvsidecar | tail -n 5 | tr '\n' ' ')"
fi
log=$(dmesg_since_mark | grep 'nvsidecar: ')
for group in "decode self-tests \([0-9]+ cases\)" "ring self-tests" "threshold self-tests" \
	"bus id self-tests \([0-9]+ cases\)" "walk self-tests \([0-9]+ cases\)"; do
	name=selftest-${group%% self*}
	name=${name// /-}
	if grep -qE "nvsidecar: $group: pass\$" <<<"$log"; then
		t_pass "$name"
	else
		t_fail "$name" "no \"$group: pass\" in the kernel log: $(grep -E 'self-test' <<<"$log" | head -n 3 | tr '\n' ' ')"
	fi
done
if grep -qE 'self-test .*(got|line)|self-test group' <<<"$log"; then
	t_fail selftest-no-failure "$(grep -E 'self-test' <<<"$log" | head -n 5 | tr '\n' ' ')"
else
	t_pass selftest-no-failure
fi
# the self-test build still works as the module
if nvs_loaded; then
	c=$(sim_class 0)
	wait_for 5 '[[ $(read_err "$c/status") == ok ]]'
	t_eq selftest-module-works "$(read_err "$(hw_temp "$(sim_hwmon 0)" ch0)_input")" 90215
	nvs_unload
fi
# and the normal build carries none of it
if grep -qa 'self-tests' "$NVS_KO"; then
	t_fail selftest-not-in-release "$NVS_KO contains the self-tests"
else
	t_pass selftest-not-in-release
fi
