# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# What really runs, on a BPF LSM kernel without sched_prepare_exec (6.1):
# the dynamic loader run as a command maps a denied program: killed before
# the loader jumps to it (--enforce, and in a session by its ticket); a
# '#!' chain whose scripts are all allowed runs in a session (each script
# checked at its own bprm_check_security, none refused falsely); a denied
# middle script is refused.
# egvm-timeout: 150
. "$EG_LIB"

LDSO=/lib64/ld-linux-x86-64.so.2
[ -x "$LDSO" ] || skip "no $LDSO in the guest"
mkdir -p bin
cp "$EG_HELPERS/marker" bin/denied
cp "$EG_HELPERS/static_true" bin/okk
cat > p.yaml <<EOF
default_decision: allow
commands:
  - {name: no-denied, paths: [$PWD/bin/denied], decision: deny}
  - {name: no-mid, paths: ['$PWD/mid*.sh'], decision: deny}
EOF
printf '#!%s\nexit 0\n' /bin/sh > s2.sh
printf '#!%s/s2.sh\n' "$PWD" > s1.sh
printf '#!%s/s1.sh\n' "$PWD" > s0.sh
printf '#!/bin/sh\nexit 0\n' > mid1.sh
printf '#!%s/mid1.sh\n' "$PWD" > t0.sh
chmod +x s0.sh s1.sh s2.sh mid1.sh t0.sh

# sessions (no --enforce: the LSM program is there for the tickets)
daemon_start --policy p.yaml
"$EG" exec -- ./s0.sh > /dev/null 2>&1 || fail "an allowed 3-level chain was refused in a session (rc $?)"
"$EG" exec -- ./t0.sh > /dev/null 2>&1 && fail "a chain with a denied middle script ran in a session"
"$EG" exec -- "$LDSO" "$PWD/bin/denied" SESSION > /dev/null 2>&1
[ ! -e /tmp/egmarker ] || fail "the denied program ran through the loader in a session"
"$EG" exec -- "$LDSO" "$PWD/bin/okk" > /dev/null 2>&1 || fail "an allowed program through the loader was refused"
daemon_stop

# host-wide, BPF LSM (a log of its own: daemon_start waits for its start record)
EV=$PWD/ev2.jsonl DAEMON_ERR=$PWD/daemon2.err
daemon_start --enforce --policy p.yaml
"$LDSO" "$PWD/bin/denied" HOST > /dev/null 2>&1
rc=$?
if [ -e /tmp/egmarker ]; then
	sleep 1
	grep -F HOST "$EV"
	daemon_diag
	fail "the denied program ran through the loader: $(cat /tmp/egmarker)"
fi
[ "$rc" -eq 137 ] || fail "the loader's denied program: rc $rc, not killed"
wait_line 20 "$EV" '"loader":true' '"action":"killed"' '"rule":"no-denied"' || {
	daemon_diag; fail "no killed loader exec naming no-denied"; }
./t0.sh > /dev/null 2>&1 && fail "a chain with a denied middle script ran (--enforce)"
./s0.sh > /dev/null 2>&1 || fail "an allowed chain was refused (--enforce)"
daemon_stop
pass "loader and chains judged: the denied program never ran"
