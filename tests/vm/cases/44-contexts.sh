# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Agent contexts on a BPF LSM kernel: an exec a context's rule denies, from
# a daemonized grandchild of the agent (double fork, setsid), fails with
# EPERM before its image runs; the same program outside the context runs;
# the third shell in a row inside the context is refused too.
# egvm-timeout: 120
. "$EG_LIB"

mkdir -p bin
cp "$EG_HELPERS/marker" bin/denied
cp /bin/bash bin/agent
printf '\n#agent\n' >> bin/agent
cat > p.yaml <<EOF
default_decision: allow
contexts:
  - name: ag
    identities: [{paths: [$PWD/bin/agent]}]
    limits: {max_consecutive_shells: 2}
commands:
  - {name: no-denied-in-ag, paths: [$PWD/bin/denied], contexts: [ag], decision: deny}
EOF

daemon_start --enforce --policy p.yaml
grep -q '"layer":"kernel-lsm"' "$EV" || { daemon_diag; skip "the daemon does not enforce with BPF LSM here"; }
./bin/denied OUTSIDE > /dev/null 2>&1 || fail "outside the context the program was refused (rc $?)"
grep -q OUTSIDE /tmp/egmarker || fail "outside the context the program did not run"
./bin/agent -c "( setsid sh -c './bin/denied INSIDE; echo \$? > rc' & ); sleep 2; exit 0"
sleep 1
if grep -q INSIDE /tmp/egmarker; then
	daemon_diag
	fail "the denied program ran in the agent's daemonized grandchild"
fi
[ "$(cat rc)" = 126 ] || fail "the grandchild's exec: rc $(cat rc), not EPERM (126)"
wait_line 20 "$EV" '"rule":"no-denied-in-ag"' '"name":"ag"' || { daemon_diag; fail "no record of the refusal in the context"; }
out=$(./bin/agent -c "sh -c \"sh -c 'sh -c true; echo third=\\\$?'\"; exit 0" 2>/dev/null)
case "$out" in
*third=0*|"") daemon_diag; fail "a third shell in a row ran inside the context: '$out'" ;;
esac
out=$(sh -c "sh -c 'sh -c true; echo third=\$?'")
[ "$out" = third=0 ] || fail "outside the context shells nest freely: '$out'"
daemon_stop
pass "contexts hold with EPERM: a daemonized grandchild, three shells in a row"
