#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# The verdict cache (check/vcache.c, issue 22 item 4): `doctor --full'
# stores what it verified with the key of what changes it; a later doctor
# (--quick, as Slurm's health check runs it) uses the result while the key
# is unchanged and says its age, calls it stale after a driver-version,
# BIOS or BAR1 change, and too old past NVSIDECAR_VERDICT_MAX_AGE; the next
# --full verifies again. The driver is a /proc/driver/nvidia/version line
# as the open module prints it (NVS_NVIDIA_VERSION_FILE), BIOS and GPUs a
# sysfs tree under NVS_DOCTOR_ROOT, CUDA the tests' fake (tests/p2p).
set -u
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

top=$NVS_TOP
bld=$NVS_BUILD/doctor-u
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
state=$work/state
mkdir -p "$root/sys/class/dmi/id" "$root/sys/bus/pci/devices/0000:01:00.0"
echo "2.10.AS03" >"$root/sys/class/dmi/id/bios_version"
echo "05/14/2025" >"$root/sys/class/dmi/id/bios_date"
# a GPU's sysfs: class, vendor, and `resource' (BAR0, then a 32 GiB BAR1)
gpu=$root/sys/bus/pci/devices/0000:01:00.0
echo 0x030000 >"$gpu/class"
echo 0x10de >"$gpu/vendor"
bar1() {
	printf '0x00000000fa000000 0x00000000faffffff 0x0000000000040200\n0x%016x 0x%016x 0x000000000014220c\n0x0000000000000000 0x0000000000000000 0x0000000000000000\n' \
		$((0x3800000000)) $((0x3800000000 + $1 - 1)) >"$gpu/resource"
}
bar1 $((32 << 30))
driver() {
	echo "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  $1  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Oct 30 10:23:41 UTC 2025" >"$work/version"
}
driver 590.48.01
export NVS_NVIDIA_VERSION_FILE=$work/version NVS_LIBCUDA_STATE=$work/lcstate NVS_DOCTOR_ROOT=$root \
	NVSIDECAR_STATE_DIR=$state FAKE_CUDA_DEVICES=2
unset LD_LIBRARY_PATH NO_COLOR NVSIDECAR_VERDICT_MAX_AGE

if ! make -s -C "$top/user" O="$bld" WERROR=1 -j2 >"$work/build" 2>&1; then
	t_fail verdict-build "$(tail -5 "$work/build" | tr '\n' ' ')"
	exit 0
fi
bin=$bld/nvsidecar
if ! gcc -shared -fPIC -O2 -o "$work/libcuda.so.1" "$top/tests/p2p/fakecuda.c" 2>"$work/err"; then
	t_fail verdict-fakecuda "$(head -3 "$work/err")"
	exit 0
fi
full() { "$bin" doctor --full --lib "$work/libcuda.so.1" >"$work/full" 2>&1; }
quick() { "$bin" doctor --quick >"$work/out" 2>&1; rc=$?; }
show() { grep -E 'full|libcuda|gdr' "$1" | head -c 400 | tr '\n' ' '; }

# --- stored with its key, reused while the key holds ---------------------
full
v=$state/verdict
if grep -q '^OK   full     full-cache: verdict stored in '"$v" "$work/full" && grep -qx 'key driver 590.48.01' "$v" &&
	grep -qx 'key flavour open' "$v" && grep -qx 'key bios-version 2.10.AS03' "$v" &&
	grep -qx "key bar1 0000:01:00.0=$((32 << 30))" "$v" && grep -q '^check OK [0-9]* full full-p2p ' "$v"; then
	t_pass verdict-stored
else
	t_fail verdict-stored "$(show "$work/full") file: $(head -c 300 "$v" 2>/dev/null | tr '\n' ' ')"
fi
quick
grep -q "^OK   full     full-p2p: .*(verified [0-9]* s ago by \`doctor --full', key unchanged)$" "$work/out" &&
	grep -q '^SKIP full     full-rdma: .*key unchanged' "$work/out" && grep -q '^OK   libcuda  libcuda: .*key unchanged' "$work/out" &&
	! grep -q full-cache "$work/out" && t_pass verdict-reused || t_fail verdict-reused "$(show "$work/out")"
# the default mode judges libcuda itself, and takes only --full's own runs
"$bin" doctor >"$work/out" 2>&1
[[ $(grep -c '^[A-Z]* *libcuda  libcuda: ' "$work/out") == 1 ]] && grep -q '^OK   full     full-p2p: .*key unchanged' "$work/out" &&
	t_pass verdict-default-mode || t_fail verdict-default-mode "$(show "$work/out")"

# --- a driver upgrade makes it stale; --full verifies again -----------------
driver 595.10.02
quick
grep -q "^WARN full     full-cache: stale: .* verified with driver \`590.48.01', now \`595.10.02': its results are not used" "$work/out" &&
	! grep -q full-p2p "$work/out" && t_pass verdict-stale-driver || t_fail verdict-stale-driver "$(show "$work/out")"
full
quick
grep -q '^OK   full     full-p2p: .*key unchanged' "$work/out" && grep -qx 'key driver 595.10.02' "$v" &&
	t_pass verdict-rerun-after-driver || t_fail verdict-rerun-after-driver "$(show "$work/out")"

# --- the other key fields: BIOS, BAR1 -------------------------------------
echo "2.11.AS01" >"$root/sys/class/dmi/id/bios_version"
quick
grep -q "stale: .* bios-version \`2.10.AS03', now \`2.11.AS01'" "$work/out" && t_pass verdict-stale-bios ||
	t_fail verdict-stale-bios "$(show "$work/out")"
echo "2.10.AS03" >"$root/sys/class/dmi/id/bios_version"
bar1 $((256 << 20))
quick
grep -q "stale: .* bar1 \`0000:01:00.0=$((32 << 30))', now \`0000:01:00.0=$((256 << 20))'" "$work/out" &&
	t_pass verdict-stale-bar1 || t_fail verdict-stale-bar1 "$(show "$work/out")"
bar1 $((32 << 30))

# --- a failure verified by --full is the quick check's failure, while fresh --
# (a cached FAIL, written into the file: cheaper than another 6 s --full run)
sed -i 's/^check OK \([0-9]*\) full full-p2p .*/check FAIL \1 full full-p2p (test fixture) a copy arrived wrong\nfix `nvsidecar p2p'"'"' shows which pair/' "$v"
quick
grep -q '^FAIL full     full-p2p: (test fixture) a copy arrived wrong (verified [0-9]* s ago' "$work/out" &&
	grep -q "fix: \`nvsidecar p2p' shows which pair" "$work/out" && [[ $rc == 1 ]] && t_pass verdict-fail-carried ||
	t_fail verdict-fail-carried "rc $rc: $(show "$work/out")"
# A version 1 file (before the end line) is still read: refusing it would
# turn this FAIL into a WARN at the upgrade, and the health check would
# resume the drained node (review of admin finding A5).
sed -i '1s/.*/nvsidecar-verdict 1/; /^end /d' "$v"
quick
grep -q '^FAIL full     full-p2p: (test fixture) a copy arrived wrong' "$work/out" && [[ $rc == 1 ]] &&
	t_pass verdict-v1-fail-carried || t_fail verdict-v1-fail-carried "rc $rc: $(show "$work/out")"
# ...and not once it is older than NVSIDECAR_VERDICT_MAX_AGE
sed -i "s/^written .*/written $(($(date +%s) - 600))/" "$v"
NVSIDECAR_VERDICT_MAX_AGE=300 quick
grep -q "^WARN full     full-cache: the last \`doctor --full' verdict is 10 min old, older than 300 s (NVSIDECAR_VERDICT_MAX_AGE)" "$work/out" &&
	! grep -q full-p2p "$work/out" && t_pass verdict-too-old || t_fail verdict-too-old "$(show "$work/out")"

# --- a GPU another process holds (issue 23 item 3) ------------------------------
# --full meets CUDA_ERROR_DEVICE_UNAVAILABLE (46) on a GPU a job holds in
# exclusive-process mode (FAKE_CUDA_BUSY): the check is SKIP, and the verdict
# stores that SKIP, never a FAIL and never an OK the run did not earn (here
# full-rdma has no RDMA path either: nothing GPU-side is claimed). The quick
# check reading it is as healthy as with a passing verdict: this host has no
# module, so the exit is compared with the quick run after a clean --full.
full
quick
base=$rc
FAKE_CUDA_BUSY=1 full
if grep -q '^check SKIP [0-9]* full full-p2p GPU 1 in use by another process (exclusive-process mode' "$v" &&
	! grep -q '^check FAIL ' "$v" && ! grep -qE '^check OK [0-9]* full full-(p2p|rdma) ' "$v" &&
	grep -q '^OK   full     full-cache: verdict stored' "$work/full"; then
	t_pass verdict-busy-stored-skip
else
	t_fail verdict-busy-stored-skip "$(show "$work/full") file: $(grep '^check' "$v" | head -c 400 | tr '\n' ' ')"
fi
quick
grep -q "^SKIP full     full-p2p: GPU 1 in use by another process .*: the check did not run (recorded [0-9]* s ago by \`doctor --full', key unchanged; last verified [0-9]* s ago (OK))$" "$work/out" &&
	! grep -qE '^FAIL +(full|libcuda|gdr) ' "$work/out" && [[ $rc == "$base" ]] && t_pass verdict-busy-quick-healthy ||
	t_fail verdict-busy-quick-healthy "rc $rc (want $base): $(show "$work/out")"
# A FAIL the verdict in force holds is kept when the GPU is busy: a job
# holding the GPU proves no repair, and dropping the FAIL would let the
# health check resume the node it drained.
full
sed -i 's/^check OK \([0-9]*\) full full-p2p .*/check FAIL \1 full full-p2p (test fixture) a copy arrived wrong/' "$v"
FAKE_CUDA_BUSY=1 full
quick
if grep -q '^check FAIL [0-9]* full full-p2p (test fixture) a copy arrived wrong$' "$v" &&
	grep -q "^WARN full     full-cache: verdict stored in .*, keeping the last verdict's FAIL of full-p2p ([0-9]* s old)" "$work/full" &&
	grep -q '^SKIP full     full-p2p: GPU 1 in use' "$work/full" &&
	grep -q '^FAIL full     full-p2p: (test fixture) a copy arrived wrong (verified [0-9]* s ago' "$work/out"; then
	t_pass verdict-busy-keeps-fail
else
	t_fail verdict-busy-keeps-fail "$(show "$work/full") quick: $(show "$work/out")"
fi
# ...but not one no longer in force (too old): that one the quick check
# would not use either
sed -i "s/^written .*/written $(($(date +%s) - 600))/" "$v"
NVSIDECAR_VERDICT_MAX_AGE=300 FAKE_CUDA_BUSY=1 full
grep -q '^check SKIP [0-9]* full full-p2p GPU 1 in use' "$v" && ! grep -q '^check FAIL ' "$v" &&
	t_pass verdict-busy-old-fail-dropped || t_fail verdict-busy-old-fail-dropped "$(grep '^check' "$v" | head -c 300 | tr '\n' ' ')"
# A busy SKIP carries the last real verification, and never makes the
# verdict fresh: a node whose GPU is always busy goes stale once that
# verification is older than NVSIDECAR_VERDICT_MAX_AGE, however often
# --full recorded a SKIP since (review M2)
full
t=$(($(date +%s) - 600))
sed -i "s/^written .*/written $t/; s/^check \([A-Z]*\) [0-9]* /check \1 $t /" "$v"
NVSIDECAR_VERDICT_MAX_AGE=3000 FAKE_CUDA_BUSY=1 full
NVSIDECAR_VERDICT_MAX_AGE=3000 FAKE_CUDA_BUSY=1 full
NVSIDECAR_VERDICT_MAX_AGE=3000 quick
cp "$work/out" "$work/out-fresh"
NVSIDECAR_VERDICT_MAX_AGE=300 quick
if grep -qx "last OK $t" "$v" && grep -q '^check SKIP [0-9]* full full-p2p GPU 1 in use' "$v" &&
	grep -q "^SKIP full     full-p2p: GPU 1 in use.*key unchanged; last verified 10 min ago (OK))$" "$work/out-fresh" &&
	grep -q "^WARN full     full-cache: stale: full-p2p was last verified 10 min ago (OK), longer than 300 s (NVSIDECAR_VERDICT_MAX_AGE); every \`doctor --full' since skipped it" "$work/out" &&
	! grep -q '^SKIP full     full-p2p' "$work/out"; then
	t_pass verdict-busy-skip-not-fresh
else
	t_fail verdict-busy-skip-not-fresh "file: $(grep -E '^(check|last)' "$v" | head -c 300 | tr '\n' ' ') quick: $(show "$work/out")"
fi
# ...and with no verification at all under this key, it carries the first skip
rm -f "$v"
FAKE_CUDA_BUSY=1 full
sed -i "s/^last SKIP .*/last SKIP $t/" "$v"
NVSIDECAR_VERDICT_MAX_AGE=300 quick
grep -q "^WARN full     full-cache: stale: full-p2p was not verified in the 10 min since it was first skipped" "$work/out" &&
	t_pass verdict-busy-never-verified-stale || t_fail verdict-busy-never-verified-stale "$(show "$work/out")"
# A full-rdma pass on a free GPU while GPU 0 is busy says nothing of GPU 0:
# GPU 0's FAIL is kept until GPU 0 itself passes (review M1). RDMA runs
# through a stand-in (NVS_TEST_FULL_RUNNER) that answers as `rdma --loopback'
# would, with nvidia-peermem "loaded" under NVS_DOCTOR_ROOT.
cat >"$work/runner" <<EOF
#!/bin/bash
if [[ \$1 != rdma ]]; then exec "$bin" "\$@"; fi
while (( \$# )); do [[ \$1 == --gpu ]] && g=\$2; shift; done
echo "loopback on GPU \$g: \${RUNNER_RDMA:-ok}"
[[ \${RUNNER_RDMA:-ok} == ok ]]
EOF
chmod +x "$work/runner"
mkdir -p "$root/sys/module/nvidia_peermem"
rdma() { env NVS_TEST_FULL_RUNNER="$work/runner" "$@" "$bin" doctor --full --lib "$work/libcuda.so.1" >"$work/full" 2>&1; }
rdma RUNNER_RDMA=wrong-data
f0=$(grep -c '^check FAIL [0-9]* full full-rdma loopback on GPU 0: wrong-data' "$v")
rdma FAKE_CUDA_BUSY=0
quick
kept=$(grep -c '^check FAIL [0-9]* full full-rdma loopback on GPU 0: wrong-data' "$v")
grep -q "keeping the last verdict's FAIL of full-rdma ([0-9]* s old, on GPU 0; this run verified GPU 1 only)" "$work/full" &&
	grep -q '^FAIL full     full-rdma: loopback on GPU 0: wrong-data' "$work/out" && [[ $rc == 1 ]] || kept="$kept but: $(show "$work/full")"
rdma
quick
if [[ $f0 == 1 && $kept == 1 ]] && grep -q '^check OK [0-9]* full full-rdma loopback on GPU 0: ok' "$v" &&
	grep -qx 'gpu 0' "$v" && grep -q '^OK   full     full-rdma: loopback on GPU 0: ok' "$work/out"; then
	t_pass verdict-rdma-other-gpu-keeps-fail
else
	t_fail verdict-rdma-other-gpu-keeps-fail "stored $f0, kept $kept: $(grep -A2 full-rdma "$v" | head -c 300 | tr '\n' ' ')"
fi
rm -r "$root/sys/module"
# control: a GPU that answers another error is broken: stored as FAIL
FAKE_CUDA_RETAIN_ERROR=1:999 full
quick
grep -q '^check FAIL [0-9]* full full-p2p .*(999)' "$v" && grep -q '^FAIL full     full-p2p: .*(999)' "$work/out" &&
	[[ $rc == 1 ]] && t_pass verdict-broken-gpu-stored-fail || t_fail verdict-broken-gpu-stored-fail "rc $rc: $(show "$work/out")"

# --- garbage, no file, a state directory that cannot be written ----------------
printf 'nvsidecar-verdict 1\nwritten 1\ncheck OK 1 full full-p2p \377\n' >"$v"
quick
grep -q "^WARN full     full-cache: the last \`doctor --full' verdict is unusable: $v:3: not printable text" "$work/out" &&
	! grep -q full-p2p "$work/out" && t_pass verdict-garbage || t_fail verdict-garbage "$(show "$work/out")"
# A file cut short (a crash, a damaged file system; admin review A5): no
# end line, so it is refused, not read as a shorter, healthier verdict.
full
sed -i '/^check .* full-p2p /,$d' "$v"	# cut at a line boundary, before a check
quick
grep -q "^WARN full     full-cache: the last \`doctor --full' verdict is unusable: $v:[0-9]*: incomplete: no end line" "$work/out" &&
	! grep -q full-p2p "$work/out" && t_pass verdict-cut-short || t_fail verdict-cut-short "$(show "$work/out")"
# The count on the end line is the one save writes: a leading zero or a
# sign is a malformed file, not the same count (admin review, small items f)
full
n=$(sed -n 's/^end //p' "$v")
bad=
for e in "0$n" "+$n" "$n " ""; do
	sed -i "s/^end .*/end $e/" "$v"
	quick
	grep -q "^WARN full     full-cache: the last \`doctor --full' verdict is unusable: $v:[0-9]*: malformed end line" "$work/out" &&
		! grep -q full-p2p "$work/out" || bad+=" [end $e] $(show "$work/out")"
done
sed -i "s/^end .*/end $n/" "$v"
quick
grep -q '^OK   full     full-p2p: .*key unchanged' "$work/out" || bad+=" [end $n] $(show "$work/out")"
[[ -n $n && -z $bad ]] && t_pass verdict-end-count-canonical || t_fail verdict-end-count-canonical "n=$n:$bad"
rm -f "$v"
quick
! grep -qE 'full-(cache|p2p)' "$work/out" && t_pass verdict-none-quiet || t_fail verdict-none-quiet "$(show "$work/out")"
# A verdict path that is not a regular file: a FIFO that something holds
# open kept the health check waiting for its end (admin review of this
# stop); a directory sent the admin between two wrong fixes. Both are
# refused at once, with the one fix that works.
mkfifo "$v"
sleep 30 <>"$v" &
holder=$!
t0=$SECONDS
timeout 20 "$bin" doctor --quick >"$work/out-fifo" 2>&1
rc=$?
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
rm -f "$v"
mkdir "$v"
quick
rmdir "$v"
want="^WARN full     full-cache: .*$v:0: not a regular file: remove it, then run \`nvsidecar doctor --full'"
if ((rc != 124 && SECONDS - t0 < 15)) && grep -q "$want" "$work/out-fifo" && grep -q "$want" "$work/out"; then
	t_pass verdict-not-regular-refused
else
	t_fail verdict-not-regular-refused "exit $rc after $((SECONDS - t0)) s with a held FIFO: $(show "$work/out-fifo"); directory: $(show "$work/out")"
fi
: >"$work/file"
NVSIDECAR_STATE_DIR=$work/file/sub full
grep -q "^WARN full     full-cache: the verdict was not stored: Unable to create the state directory \`$work/file/sub': \`$work/file' is not a directory" "$work/full" &&
	grep -q 'NVSIDECAR_STATE_DIR' "$work/full" && t_pass verdict-unwritable || t_fail verdict-unwritable "$(show "$work/full")"

# --- findings of the new-admin review (H1, M1, M4, M2) -------------------------
# a state of their own, the driver back at 590.48.01, the BIOS and BAR1 as above
export NVSIDECAR_STATE_DIR=$work/state2
v=$work/state2/verdict
driver 590.48.01
# M1: the stored FAIL is the ladder's first line marked fail (level 2, the
# wrong byte), not the last line p2p printed (level 4, "not run")
FAKE_CUDA_CORRUPT=0-1@0 full
grep -q '^FAIL full     full-p2p: ladder level 2 (CUDA peer copies verified) failed: .*0->1 P2P on: 1 wrong byte(s)' "$work/full" &&
	grep -q '^check FAIL [0-9]* full full-p2p ladder level 2 (CUDA peer copies verified) failed: .*0->1 P2P on: 1 wrong byte' "$v" &&
	t_pass verdict-fail-first-ladder-line || t_fail verdict-fail-first-ladder-line "$(show "$work/full")"
# H1: CUDA not usable (cuInit 100, a driver/library mismatch) verifies
# nothing: the FAIL stays, and on a node whose sysfs lists GPUs the run's
# own line is a WARN, not a SKIP that looks healthy
FAKE_CUDA_INIT_ERROR=100 full
quick
if grep -q '^WARN full     full-p2p: CUDA is not usable, but sysfs lists 1 NVIDIA GPU(s): P2P was not verified: ' "$work/full" &&
	grep -q "keeping the last verdict's FAIL of full-p2p ([0-9]* s old)" "$work/full" &&
	grep -q '^check FAIL [0-9]* full full-p2p ladder level 2 ' "$v" &&
	grep -q '^FAIL full     full-p2p: ladder level 2 ' "$work/out" && [[ $rc == 1 ]]; then
	t_pass verdict-cuda-unusable-keeps-fail
else
	t_fail verdict-cuda-unusable-keeps-fail "rc $rc: $(show "$work/full") quick: $(show "$work/out")"
fi
# M4: after a driver change, a busy SKIP with no verification under the new
# driver is a WARN that names the change and the FAIL before it, in the run,
# in the verdict and in the quick check, and stays so while GPUs are busy
driver 595.10.02
FAKE_CUDA_BUSY=1 full
quick
cp "$work/out" "$work/out1"
FAKE_CUDA_BUSY=1 full
quick
want="^WARN full     full-p2p: not verified since the driver changed (\`590.48.01', now \`595.10.02'); the previous verdict had a FAIL: ladder level 2 .*: GPU 1 in use by another process"
if grep -q "$want" "$work/out1" && grep -q "$want" "$work/out" && ! grep -q '^SKIP full     full-p2p' "$work/out" &&
	grep -q '^check WARN [0-9]* full full-p2p not verified since the driver changed' "$v" &&
	grep -q "keeping the last verdict's WARN of full-p2p" "$work/full"; then
	t_pass verdict-key-change-unverified-warns
else
	t_fail verdict-key-change-unverified-warns "quick 1: $(show "$work/out1") quick 2: $(show "$work/out")"
fi
# ...and a real verification under the new driver ends it
full
quick
grep -q '^OK   full     full-p2p: ' "$work/out" && t_pass verdict-key-change-verified ||
	t_fail verdict-key-change-verified "$(show "$work/out")"
# M2: with GPU 2 busy, --full runs p2p on the pairs among the free GPUs
# (--pairs 0-1) and says which GPU it left out. The stand-in drops
# FAKE_CUDA_BUSY for p2p --pairs, as p2p does once it opens contexts only
# on the GPUs --pairs names (branch vstate); the real one is tried below.
cat >"$work/runner2" <<EOF
#!/bin/bash
[[ \$1 == p2p ]] && echo "\$*" >>"$work/p2p-args"
if [[ \$1 == p2p && " \$* " == *" --pairs "* ]]; then exec env -u FAKE_CUDA_BUSY "$bin" "\$@"; fi
exec "$bin" "\$@"
EOF
chmod +x "$work/runner2"
: >"$work/p2p-args"
NVS_TEST_FULL_RUNNER=$work/runner2 FAKE_CUDA_DEVICES=3 FAKE_CUDA_BUSY=2 FAKE_CUDA_CORRUPT=0-1@0 full
fail_ok=$(grep -c '^FAIL full     full-p2p: ladder level 2 .*(pairs 0-1; left out: GPU 2 in use by another process' "$work/full")
NVS_TEST_FULL_RUNNER=$work/runner2 FAKE_CUDA_DEVICES=3 FAKE_CUDA_BUSY=2 full
quick
if [[ $fail_ok == 1 ]] && grep -q -- ' --pairs 0-1' "$work/p2p-args" &&
	grep -q '^OK   full     full-p2p: .*(pairs 0-1 only; left out: GPU 2 in use by another process' "$work/full" &&
	grep -q "keeping the last verdict's FAIL of full-p2p ([0-9]* s old; this run left out GPU 2 in use" "$work/full" &&
	grep -q '^FAIL full     full-p2p: ladder level 2 ' "$work/out"; then
	t_pass verdict-busy-free-pairs
else
	t_fail verdict-busy-free-pairs "fail $fail_ok, args: $(tr '\n' ' ' <"$work/p2p-args") full: $(show "$work/full")"
fi
# ...fewer than two free GPUs: SKIP as before
: >"$work/p2p-args"
NVS_TEST_FULL_RUNNER=$work/runner2 FAKE_CUDA_DEVICES=3 FAKE_CUDA_BUSY=1,2 full
grep -q '^SKIP full     full-p2p: GPUs 1, 2 in use by another process .*: the check did not run' "$work/full" &&
	[[ ! -s $work/p2p-args ]] && t_pass verdict-busy-one-free-skips || t_fail verdict-busy-one-free-skips "$(show "$work/full")"
# ...and with the real p2p, once `p2p --pairs' leaves the other GPUs alone
if FAKE_CUDA_DEVICES=3 FAKE_CUDA_BUSY=2 "$bin" p2p --pairs 0-1 --size 4M --iters 2 --lib "$work/libcuda.so.1" >/dev/null 2>&1; then
	FAKE_CUDA_DEVICES=3 FAKE_CUDA_BUSY=2 FAKE_CUDA_CORRUPT=0-1@0 full
	grep -q '^FAIL full     full-p2p: ladder level 2 .*(pairs 0-1; left out: GPU 2 in use by another process' "$work/full" &&
		t_pass verdict-busy-free-pairs-real || t_fail verdict-busy-free-pairs-real "$(show "$work/full")"
else
	t_skip verdict-busy-free-pairs-real "p2p --pairs 0-1 still opens a context on busy GPU 2 (needs branch vstate's p2p change)"
fi
