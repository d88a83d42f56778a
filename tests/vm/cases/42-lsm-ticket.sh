# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# A supervised session on a BPF LSM kernel: the ticket is also checked at
# bprm_check_security, per file. A thread flips the path between an allowed
# and a denied program while its sibling execs: the denied one never runs
# (refused by the supervisor, with EPERM by the LSM, or killed at exec).
# egvm-timeout: 150
. "$EG_LIB"

mkdir -p bin
cp "$EG_HELPERS/static_true" bin/okk
cp "$EG_HELPERS/marker" bin/bad
cat > p.yaml <<EOF
commands:
  - {name: no-bad, basenames: [bad], decision: deny}
EOF
daemon_start --policy p.yaml
tries=${EGVM_RACE_TRIES:-300}
out=$("$EG" exec -- "$EG_HELPERS/racer" path "$tries" "$PWD/bin/okk" "$PWD/bin/bad" 2>/dev/null)
echo "racer: $out"
note "racer in a session: $out"
[ ! -e /tmp/egmarker ] || fail "the denied program ran: $(cat /tmp/egmarker)"
case $out in
allowed*) ;;
*) fail "racer did not report: $out" ;;
esac
daemon_stop
pass "$tries racing execs in a session; the denied program never ran"
