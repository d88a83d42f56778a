# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# --enforce with BPF LSM: a denied exec fails with EPERM at
# bprm_check_security (the caller sees "Operation not permitted"), the
# exec_failed event says blocked by kernel-lsm and names the rule; a symlink
# or a script does not get around it; an allowed exec runs; a rule reading
# argv is left to the check at exec, which kills; an orderly stop takes the
# rules away.
# egvm-timeout: 120
. "$EG_LIB"

cat > p.yaml <<EOF
default_decision: allow
commands:
  - name: no-marker
    paths: [$EG_HELPERS/marker]
    decision: deny
    message: no markers here
  - name: no-evil-true
    basenames: [static_true]
    args: [EVIL]
    decision: deny
EOF
daemon_start --enforce --policy p.yaml
has_line "$EV" '"event":"start"' '"enforcement":["kernel-lsm"' ||
	fail "start record lacks enforcement kernel-lsm: $(head -n 1 "$EV")"

expect_eperm "$EG_HELPERS/marker" denied || fail "the denied exec was not refused with EPERM"
[ ! -e /tmp/egmarker ] || fail "the denied program ran"
wait_line 20 "$EV" '"type":"exec_failed"' '"action":"blocked"' '"layer":"kernel-lsm"' '"rule":"no-marker"' || {
	daemon_diag; tail -n 3 "$EV"; fail "no exec_failed event with action blocked, layer kernel-lsm, rule no-marker"; }

# spellings: a symlink, a script whose interpreter is the denied file
ln -s "$EG_HELPERS/marker" ./mk
expect_eperm ./mk viasymlink || fail "a symlink to the denied file was not refused"
printf '#!%s\n' "$EG_HELPERS/marker" > ./script
chmod +x ./script
expect_eperm ./script || fail "a script run by the denied interpreter was not refused"
[ ! -e /tmp/egmarker ] || fail "the denied program ran"

expect_runs "$EG_HELPERS/static_true" ok || fail "an allowed exec failed"

# argv is not final at bprm_check: the check at exec decides, and kills
sh -c 'exec "$0" EVIL' "$EG_HELPERS/static_true"
rc=$?
[ "$rc" -eq 137 ] || fail "static_true EVIL: status $rc, expected 137 (killed at exec)"
wait_line 20 "$EV" '"type":"exec"' '"action":"killed"' '"layer":"kernel-kill"' '"rule":"no-evil-true"' ||
	fail "no exec event killed by kernel-kill with rule no-evil-true"
st=$("$EG" stats -j)
case $st in
*'"lsm_deferred":0,'*) fail "stats count no exec left by bprm_check to the check at exec: $st" ;;
esac

# one judgement counted per exec: one that goes on is counted at exec, not
# also at bprm_check (each exec leaves one record, so records bound the count)
for i in 1 2 3 4 5 6 7 8 9 10; do "$EG_HELPERS/static_true" count; done
st=$("$EG" stats -j)
k=$(printf '%s' "$st" | sed -n 's/.*"kernel_judged":\([0-9]*\).*/\1/p')
sleep 1
n=$(grep -c -e '"type":"exec"' -e '"layer":"kernel-lsm"' "$EV")
[ -n "$k" ] && [ "$k" -gt 0 ] && [ "$k" -le "$n" ] ||
	fail "kernel_judged $k for $n exec records: an exec counted twice? $st"

daemon_stop
expect_runs "$EG_HELPERS/marker" after || fail "the rule outlived an orderly stop without --persist"
pass "EPERM at bprm_check_security (path, symlink, script); argv rule killed at exec; removed on stop"
