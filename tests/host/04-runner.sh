#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# tests/run itself, on a stand-in tree: a copy of tests/run and tests/lib.sh
# with a host suite and a VM suite (tests/vm/lanes.sh) that only report, and
# a scripts/kernels.sh with the lanes 6.1, 6.12 and sid. Boots nothing;
# about 20 s.
#  - tally: the VM suite runs in two parts (6.1 and sid in the background,
#    beside the host suite, then 6.12 with NVS_VM_SECOND=1); a line both
#    parts report (a skip that is no lane's) counts once, each lane's own
#    lines count, and the final line is exact.
#  - interrupt: a background lane that keeps forking (a child every 50 ms)
#    while the runner gets SIGTERM, or SIGINT as from a terminal, while it
#    waits for the lanes: nothing of the lanes' session may be left.
set -u
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"

name=runner
for what in setsid pgrep pkill python3; do
	command -v "$what" >/dev/null && continue
	t_skip "$name" "\`$what' is not installed"
	exit 0
done
tmp=$(mktemp -d /tmp/nvs-runner.XXXXXX)
sid_file=$tmp/lane-sid
my_sid=$(ps -o sid= -p $$ | tr -d ' ')
# kill_lane SID: ends what is left of the stand-in lane's session, never
# this suite's own (a runner that does not start the lanes in a session of
# their own leaves them in the caller's)
kill_lane() {
	[[ -n $1 && $1 != "$my_sid" ]] && pkill -KILL -s "$1" 2>/dev/null
}
cleanup() {
	# a failed interrupt test must not leave its forking lane behind
	kill_lane "$(cat "$sid_file" 2>/dev/null)"
	rm -rf "$tmp"
}
trap cleanup EXIT

tree=$tmp/tree
mkdir -p "$tree/tests/host" "$tree/tests/vm" "$tree/scripts"
cp "$NVS_TOP/tests/run" "$NVS_TOP/tests/lib.sh" "$tree/tests/"
echo 'KERN_BOOT_LANES=(6.1 6.12 sid)' >"$tree/scripts/kernels.sh"
cat >"$tree/tests/host/50-stub.sh" <<'EOF'
. "$(dirname "$0")/../lib.sh"
t_pass "stub: host"
t_skip "stub: host-skip" "a host suite's skip"
EOF
# The VM stand-in reports as lanes.sh does: lines that are no lane's (in
# both parts: the second one leaves its passes out) and each lane's own.
cat >"$tree/tests/vm/lanes.sh" <<'EOF'
. "$(dirname "$0")/../lib.sh"
[[ -n ${NVS_VM_SECOND:-} ]] || t_pass vm-classes
t_skip vm-tools "no lane's skip"
for lane in $NVS_LANES; do
	t_pass "$lane: vm-boot"
	t_skip "$lane: t-x" "this lane leaves t-x out"
done
if [[ -n ${STUB_FORK:-} && -z ${NVS_VM_SECOND:-} ]]; then
	ps -o sid= -p $$ | tr -d ' ' >"$STUB_SID"
	# a lane whose processes keep forking, as run-vm, timeout and QEMU do
	# (for 40 s at most: nothing outlives a runner that fails this test
	# long)
	( while ((SECONDS < 40)); do sleep 40 & sleep 0.05; done ) &
	sleep 40
fi
EOF

# --- tally -------------------------------------------------------------------
# tests/run of the stand-in tree, in a clean environment
env -i PATH="$PATH" HOME="$tmp" NVS_BUILD="$tmp/build" bash "$tree/tests/run" >"$tmp/out" 2>&1
# host: 1 pass, 1 skip; 6.1 and sid: vm-classes, and each lane's pass and
# skip; both parts: the vm-tools skip; 6.12: its pass and skip
want="5 passed, 0 failed, 5 skipped"
last=$(tail -n 1 "$tmp/out")
if [[ $last == "$want" ]] &&
	(($(sed -n '/^Skipped:/,/^$/p' "$tmp/out" | grep -c 'SKIP vm-tools') == 1)); then
	t_pass "$name: two VM parts (6.1 sid, then 6.12): a skip both report counts once: $last"
else
	t_fail "$name: two VM parts" "want \`$want', have \`$last'; Skipped: $(sed -n '/^Skipped:/,/^$/p' "$tmp/out" | tr '\n' ' ')"
fi

# --- interrupt ---------------------------------------------------------------
# interrupt SIGNAL: starts the runner with a forking lane, sends SIGNAL to
# the runner alone once the lane runs, and checks that the lane's session
# is empty
interrupt() {
	local sig=$1 pid s i left
	rm -f "$sid_file"
	# SIGINT as from a terminal: a background job of this shell ignores it,
	# so the runner starts with its default action restored
	python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' env -i PATH="$PATH" HOME="$tmp" NVS_BUILD="$tmp/build" \
		STUB_FORK=1 STUB_SID="$sid_file" NVS_LANES="6.1 sid" bash "$tree/tests/run" >"$tmp/out" 2>&1 &
	pid=$!
	for ((i = 0; i < 200; i++)); do
		[[ -s $sid_file ]] && grep -q '^== vm: waiting' "$tmp/out" && break
		sleep 0.1
	done
	s=$(cat "$sid_file" 2>/dev/null)
	if [[ -z $s ]]; then
		t_fail "$name: $sig while the lanes run" "the stand-in lane did not start: $(tail -n 3 "$tmp/out" | tr '\n' ' ')"
		kill -KILL "$pid" 2>/dev/null
		return
	fi
	sleep 1 # let it fork
	kill -"$sig" "$pid"
	for ((i = 0; i < 150; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	wait "$pid" 2>/dev/null
	if [[ $s == "$my_sid" ]]; then
		t_fail "$name: $sig while the lanes run" "the lanes run in the runner's session, not one of their own"
		return
	fi
	left=$(pgrep -s "$s" | wc -l)
	if ((left == 0)) && ! kill -0 "$pid" 2>/dev/null; then
		t_pass "$name: $sig to tests/run while a forking lane runs: its whole session ends"
	else
		t_fail "$name: $sig while the lanes run" "$left processes left in the lanes' session $s: $(pgrep -a -s "$s" | head -n 3 | tr '\n' ' ')"
		kill_lane "$s"
	fi
}
interrupt TERM
interrupt INT
