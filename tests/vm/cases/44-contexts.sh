# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Agent contexts on a BPF LSM kernel: an exec a context's rule denies, from
# a daemonized grandchild of the agent (double fork, setsid), fails with
# EPERM before its image runs; the same program outside the context runs;
# an exec past the context's max_depth (3) is refused with EPERM too. The agent
# is a '#!' script (the guest has busybox, no bash), an identity by its path.
# Every thread of an agent is in its context: what a worker thread forks
# and execs is refused too, for an agent started before the daemon and for
# one a reload brings a context to (tests/helpers/thread_fork: its worker
# thread starts with it).
# egvm-timeout: 150
. "$EG_LIB"

mkdir -p bin
cp "$EG_HELPERS/marker" bin/denied
cp "$EG_HELPERS/static_true" bin/okk
printf '#!/bin/sh\neval "$1"\n' > bin/agent
chmod +x bin/agent
cp "$EG_HELPERS/thread_fork" bin/early
cp "$EG_HELPERS/thread_fork" bin/later
printf '\0later' >> bin/later	# a file of its own: not the identity bin/early is by content
# policy [CONTEXT [CONTEXTS]]: a context added after ag, and the rule's contexts after ag
policy() {
	cat <<EOF
default_decision: allow
contexts:
  - name: ag
    identities: [{paths: [$PWD/bin/agent, $PWD/bin/early]}]
    limits: {max_depth: 3}
$1
commands:
  - {name: no-denied-in-ag, paths: [$PWD/bin/denied], contexts: [ag$2], decision: deny}
EOF
}
policy > p.yaml

# thread_go FD OUT WORD: the agent's worker thread forks and execs bin/denied WORD: refused, never run
thread_go() {
	echo "thread $3" >&"$1"
	wait_line 20 "$2" "thread $3 " || { daemon_diag; fail "the worker thread's child ($3) did not end"; }
	if grep -q "$3" /tmp/egmarker; then
		daemon_diag
		fail "the denied program ran from an agent's worker thread ($3)"
	fi
	has_line "$2" "thread $3 127" || { daemon_diag; fail "the worker thread's exec ($3): $(grep "$3" "$2"), not EPERM"; }
	wait_line 20 "$EV" '"rule":"no-denied-in-ag"' "$3" || { daemon_diag; fail "no record of the refusal ($3)"; }
}

mkfifo early.in later.in
./bin/early "$PWD/bin/denied" < early.in > early.out &
exec 3> early.in
wait_line 10 early.out ready || fail "bin/early did not start its worker thread"
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
thread_go 3 early.out EARLY
./bin/later "$PWD/bin/denied" < later.in > later.out &
exec 4> later.in
wait_line 10 later.out ready || fail "bin/later did not start its worker thread"
policy "  - {name: ag2, identities: [{paths: [$PWD/bin/later]}]}" ", ag2" > p.yaml
"$EG" policy reload > /dev/null || { daemon_diag; fail "policy reload: status $?"; }
wait_line 60 "$EV" '"event":"policy"' '"reload":true' || { daemon_diag; fail "no record of the reload"; }
thread_go 4 later.out LATER
daemon_stop
pass "contexts hold with EPERM: a daemonized grandchild, an exec past max_depth, agents' worker threads"
