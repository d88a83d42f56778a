# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Per-cgroup enforcement with BPF_LSM_CGROUP: the rule applies inside the
# --cgroup subtree (the kernel runs the lsm_cgroup program there only) and
# not beside it.
# egvm-timeout: 120
. "$EG_LIB"

mkdir -p /sys/fs/cgroup/egvm-in /sys/fs/cgroup/egvm-out
cat > p.yaml <<EOF
commands:
  - {name: no-marker, paths: [$EG_HELPERS/marker], decision: deny}
EOF
daemon_start --enforce --policy p.yaml --cgroup /sys/fs/cgroup/egvm-in
has_line "$EV" '"event":"start"' '"per_cgroup":true' ||
	fail "start record: not per cgroup: $(head -n 1 "$EV")"
ls /sys/fs/bpf/execgate/links | grep -q enforce_bprm_cgroup || fail "no pinned lsm_cgroup link"

out=$(in_cgroup egvm-in sh -c 'exec "$0" inside' "$EG_HELPERS/marker" 2>&1)
rc=$?
{ [ "$rc" -eq 126 ] && echo "$out" | grep -q 'Operation not permitted'; } ||
	fail "inside the cgroup: status $rc, expected EPERM: $out"
[ ! -e /tmp/egmarker ] || fail "the denied program ran inside the cgroup"
in_cgroup egvm-out "$EG_HELPERS/marker" beside || fail "beside the cgroup the program did not run"
[ -e /tmp/egmarker ] || fail "the marker did not run beside the cgroup"
wait_line 20 "$EV" '"type":"exec_failed"' '"layer":"kernel-lsm"' '"cgroup":"/egvm-in"' ||
	fail "no blocked exec_failed event in /egvm-in"
daemon_stop
pass "lsm_cgroup: refused inside /egvm-in, ran in /egvm-out"
