# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The session boundary on Debian's 6.1 kernel: Landlock ABI 2 (files, no
# truncate limits, no network rules, no scopes). A policy that asks what it
# cannot hold refuses the session, saying what is missing; with
# on_unsupported: allow the session runs with what the kernel holds (file
# rules, and no /proc/PID/mem of a process outside it) and its start record
# says what it runs without. The shell opens /proc/PID/mem itself (busybox
# runs an applet such as cat through /proc/self/exe).
# docs/sessions.md, "The boundary".
# egvm-timeout: 120
. "$EG_LIB"

abi=$("$EG" policy check -j "$EG_POLICIES/host-audit.yaml" | sed -n 's/.*"landlock_abi":\([0-9]*\).*/\1/p' | head -n 1)
[ -n "$abi" ] && [ "$abi" -ge 1 ] || skip "no Landlock in this guest (ABI ${abi:-?})"
note "Landlock ABI $abi"

mkdir -p ws other
# one daemon (its start is what costs under TCG); the policies are the sessions' own
daemon_start
cat > ask.yaml <<EOF
filesystem: {write: [workspace, /dev/null]}
network: {connect_tcp: [443]}
commands: []
EOF
out=$(cd ws && "$EG" exec --policy ../ask.yaml -- /bin/true 2>&1)
rc=$?
echo "refused: rc=$rc $out"
[ "$rc" -eq 1 ] || fail "a session whose policy asks for network rules on ABI $abi started (rc $rc): $out"
echo "$out" | grep -q "network rules (Landlock ABI 4)" || fail "the refusal does not say what is missing: $out"

cat > allow.yaml <<EOF
filesystem: {write: [workspace, /dev/null]}
network: {connect_tcp: [443]}
on_unsupported: allow
commands: []
EOF
sleep 60 &
outside=$!
out=$(cd ws && "$EG" exec --policy ../allow.yaml -- sh -c "echo in > in.txt && echo wrote-in; echo out > ../other/out.txt || echo refused-out; : < /proc/$outside/mem && echo mem-opened" 2>&1)
echo "session: $out"
kill "$outside"
echo "$out" | grep -q wrote-in || fail "the workspace was not writable: $out"
echo "$out" | grep -q refused-out || fail "a write outside the workspace went through: $out"
[ ! -e other/out.txt ] || fail "other/out.txt was written"
echo "$out" | grep "/proc/$outside/mem" | grep -q "Permission denied" ||
	fail "/proc/PID/mem of a process outside the session was not refused: $out"
wait_line 10 "$EV" '"type":"session"' '"event":"start"' 'network rules (Landlock ABI 4)' ||
	fail "the start record does not say the session runs without network rules: $(grep '"type":"session"' "$EV")"
has_line "$EV" '"type":"session"' '"event":"start"' '"in_force":["ptrace","filesystem"]' ||
	fail "the start record does not say what holds: $(grep '"type":"session"' "$EV")"
has_line "$EV" '"type":"session"' '"event":"start"' 'signals and abstract unix sockets kept inside (Landlock ABI 6)' ||
	fail "the start record does not say signals are not kept inside"
daemon_stop
pass "ABI $abi: refused without on_unsupported: allow; with it, files held, network and scopes said missing"
