# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# A handover on Debian's 6.1 kernel with BPF LSM: `daemon --check` loads
# and attaches the programs, the LSM one too, switched off (a generation
# of their own): while it runs and after it, the running daemon's rules
# alone act (a denied exec stays refused, an allowed one runs). SIGUSR2
# has the binary checked that way, then hands over; the new daemon's
# rules act.
# egvm-timeout: 150
. "$EG_LIB"

printf 'commands:\n  - {name: no-marker, paths: [%s], decision: deny}\n' "$EG_HELPERS/marker" > p.yaml
daemon_start --enforce --policy p.yaml
t0=$(now_ms)
"$EG" daemon --check --enforce --policy p.yaml 2> check.err ||
	fail "daemon --check failed: $(grep -v '^libbpf: ' check.err | tail -n 3)"
check_ms=$(( $(now_ms) - t0 ))
expect_eperm "$EG_HELPERS/marker" after || fail "the denied exec was not refused after a check"
expect_runs "$EG_HELPERS/static_true" after || fail "an allowed exec failed after a check"

# execs while a check's programs are attached
"$EG" daemon --check --enforce --policy p.yaml 2> check2.err &
cp=$!
n=0
while kill -0 "$cp" 2>/dev/null; do
	expect_eperm "$EG_HELPERS/marker" during || fail "the denied exec was not refused during a check"
	expect_runs "$EG_HELPERS/static_true" during || fail "an allowed exec failed during a check"
	n=$((n + 1))
done
wait "$cp" || fail "the second daemon --check failed: $(grep -v '^libbpf: ' check2.err | tail -n 3)"
[ ! -e /tmp/egmarker ] || fail "the denied program ran"

kill -USR2 "$DAEMON_PID"
wait_line 90 "$EV" '"event":"start"' '"takeover":true' || {
	daemon_diag; fail "no takeover start record after SIGUSR2"; }
kill -0 "$DAEMON_PID" || fail "the daemon is gone after the handover"
expect_eperm "$EG_HELPERS/marker" handed || fail "the denied exec was not refused after the handover"
expect_runs "$EG_HELPERS/static_true" handed || fail "an allowed exec failed after the handover"
[ ! -e /tmp/egmarker ] || fail "the denied program ran"
daemon_stop TERM
pass "daemon --check with BPF LSM ($check_ms ms; $n pairs of execs during a second one) changed nothing; the handover it checked went through"
