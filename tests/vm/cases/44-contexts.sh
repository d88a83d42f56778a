# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Agent contexts on a BPF LSM kernel: an exec a context's rule denies, from
# a daemonized grandchild of the agent (double fork, setsid), fails with
# EPERM before its image runs; the same program outside the context runs;
# an exec past the context's max_depth (3) is refused with EPERM too. The agent
# is a '#!' script (the guest has busybox, no bash), an identity by its path.
# egvm-timeout: 120
. "$EG_LIB"

mkdir -p bin
cp "$EG_HELPERS/marker" bin/denied
cp "$EG_HELPERS/static_true" bin/okk
printf '#!/bin/sh\neval "$1"\n' > bin/agent
chmod +x bin/agent
cat > p.yaml <<EOF
default_decision: allow
contexts:
  - name: ag
    identities: [{paths: [$PWD/bin/agent]}]
    limits: {max_depth: 3}
commands:
  - {name: no-denied-in-ag, paths: [$PWD/bin/denied], contexts: [ag], decision: deny}
EOF

daemon_start --enforce --policy p.yaml
grep -q '"layer":"kernel-lsm"' "$EV" || { daemon_diag; skip "the daemon does not enforce with BPF LSM here"; }
./bin/denied OUTSIDE > /dev/null 2>&1 || fail "outside the context the program was refused (rc $?)"
grep -q OUTSIDE /tmp/egmarker || fail "outside the context the program did not run"
"$PWD/bin/agent" "( setsid sh -c '$PWD/bin/denied INSIDE; echo \$? > $PWD/rc' & ); sleep 2"
sleep 1
if grep -q INSIDE /tmp/egmarker; then
	daemon_diag
	fail "the denied program ran in the agent's daemonized grandchild"
fi
[ "$(cat rc)" = 126 ] || { daemon_diag; fail "the grandchild's exec: rc $(cat rc), not EPERM (126)"; }
wait_line 20 "$EV" '"rule":"no-denied-in-ag"' '"name":"ag"' || { daemon_diag; fail "no record of the refusal in the context"; }
# agent (0) -> sh (1) -> sh deep.sh (2) -> sh -c (3) -> okk (4): past max_depth 3
printf 'sh -c %s/bin/okk\necho deep=$?\n' "$PWD" > deep.sh
out=$("$PWD/bin/agent" "sh -c 'sh $PWD/deep.sh'; $PWD/bin/okk; echo shallow=\$?" 2>/dev/null)
case "$out" in
*deep=126*shallow=0*) ;;
*) daemon_diag; fail "max_depth 3: '$out' (want deep=126, shallow=0)" ;;
esac
wait_line 20 "$EV" '"reason":"context-limit"' || { daemon_diag; fail "no context-limit record"; }
daemon_stop
pass "contexts hold with EPERM: a daemonized grandchild, an exec past max_depth"
