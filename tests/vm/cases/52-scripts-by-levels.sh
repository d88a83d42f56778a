# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Debian 12's own kernel (6.1) boots without bpf in lsm= and has no
# sched_prepare_exec, where the tracer finds a '#!' exec's scripts: there
# each level of the exec is noted at security_bprm_check (fentry) instead.
# kernel-kill then judges a script by its own file: spelled relative,
# through a symlink or a hard link, it is the file the policy denies; a
# chain's denied middle script too. A session's script is pinned to its
# file and runs. EXECGATE_NO_BPF_LSM=1 makes this guest look like that.
# docs/enforcement.md, "Every program that runs is judged".
# egvm-timeout: 120
. "$EG_LIB"

export EXECGATE_NO_BPF_LSM=1
mkdir -p d
printf '#!/bin/sh\necho ran\n' > d/deny.sh
printf '#!/bin/sh\nexit 0\n' > d/ok.sh
printf '#!/bin/sh\nexit 0\n' > d/mid1.sh
printf '#!%s/d/mid1.sh\n' "$PWD" > d/t0.sh
chmod +x d/deny.sh d/ok.sh d/mid1.sh d/t0.sh
ln -s deny.sh d/link
ln d/deny.sh d/hard
cat > p.yaml <<EOF2
default_decision: allow
commands:
  - {name: no-deny-sh, paths: [$PWD/d/deny.sh], decision: deny}
  - {name: no-mid, paths: ['$PWD/d/mid*.sh'], decision: deny}
EOF2
daemon_start --enforce --policy p.yaml
has_line "$EV" '"event":"start"' '"enforcement":["kernel-kill"' ||
	fail "start record lacks enforcement kernel-kill: $(head -n 1 "$EV")"
for s in ./deny.sh .//deny.sh ./link ./hard; do
	out=$(cd d && "$s" 2>&1)
	rc=$?
	[ "$rc" -eq 137 ] && [ "$out" != ran ] || { daemon_diag; fail "$s: a script denied by its file ran (rc $rc: $out)"; }
done
wait_line 20 "$EV" '"filename":"'"$PWD"'/d/deny.sh"' '"path_requested":"./link"' '"rule":"no-deny-sh"' '"action":"killed"' || {
	daemon_diag; grep -F deny.sh "$EV" | head -n 2; fail "no killed exec naming the script's own path"; }
./d/t0.sh
rc=$?
[ "$rc" -eq 137 ] || fail "a chain with a denied middle script ran (rc $rc)"
"$EG" exec -- ./d/ok.sh || fail "a session's script was refused (rc $?): not pinned to its file?"
daemon_stop
pass "scripts judged by their files without sched_prepare_exec or BPF LSM"
