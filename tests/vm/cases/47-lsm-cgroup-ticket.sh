# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# --enforce --cgroup with BPF_LSM_CGROUP (per-cgroup programs) and a session
# outside the scope, on a kernel that cannot name a script at exec (6.1: no
# sched_prepare_exec): the session's script is pinned to its file by the
# host-wide BPF LSM check of tickets, attached for that beside the
# per-cgroup rules. A thread flips the exec'd path between an allowed and a
# denied script with the same interpreter: the denied one never runs.
# egvm-timeout: 150
. "$EG_LIB"

mkdir -p bin /sys/fs/cgroup/egvm-scope
printf '#!/bin/sh\nexit 0\n' > bin/oks
printf '#!/bin/sh\nexec %s bad-script\n' "$EG_HELPERS/marker" > bin/bad
chmod 755 bin/oks bin/bad
cat > p.yaml <<EOF
commands:
  - {name: no-bad, basenames: [bad], decision: deny}
EOF
daemon_start --enforce --policy p.yaml --cgroup /sys/fs/cgroup/egvm-scope
ls /sys/fs/bpf/execgate/links | grep -q enforce_bprm_cgroup || fail "no pinned lsm_cgroup link"
tries=${EGVM_RACE_TRIES:-300}
out=$("$EG" exec -- "$EG_HELPERS/racer" path "$tries" "$PWD/bin/oks" "$PWD/bin/bad" 2>/dev/null)
note "script racer in a session outside the scope: $out"
[ ! -e /tmp/egmarker ] || fail "the denied script ran: $(cat /tmp/egmarker)"
case $out in
allowed*) ;;
*) fail "racer did not report: $out" ;;
esac
daemon_stop
pass "$tries racing script execs in a session beside an lsm_cgroup scope; the denied script never ran"
