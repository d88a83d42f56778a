# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# A 32-bit exec (int $0x80) refused by BPF LSM fires no syscall exit, so
# nothing took the refusal's note: the thread's next native exec that
# failed with EPERM (here its own seccomp filter's) was written as that
# LSM refusal (layer kernel-lsm, the rule). The note is not made for a
# compat exec; the seccomp refusal is written as what it is.
# docs/events.md, "32-bit (compat) execs".
# egvm-timeout: 90
. "$EG_LIB"

cp "$EG_HELPERS/static_true" denied
cat > p.yaml <<EOF2
default_decision: allow
commands:
  - {name: no-denied, paths: [$PWD/denied], decision: deny}
EOF2
daemon_start --enforce --policy p.yaml
out=$("$EG_HELPERS/int80_exec" "$PWD/denied" 2>&1)
echo "int80_exec: $out"
case $out in
no-ia32*) skip "no 32-bit system calls from a 64-bit process in this guest" ;;
"EPERM EPERM") ;;
*) daemon_diag; fail "int80_exec: $out (the denied file ran, or /bin/true was not refused by its filter)" ;;
esac
wait_line 20 "$EV" '"type":"exec_failed"' '"path_requested":"/bin/true"' '"error":"EPERM"' || {
	daemon_diag; fail "no record of the seccomp refusal"; }
line=$(grep '"type":"exec_failed"' "$EV" | grep '"path_requested":"/bin/true"' | grep '"error":"EPERM"' | tail -n 1)
echo "$line"
case $line in
*kernel-lsm*|*no-denied*) fail "the seccomp refusal was written as the compat exec's LSM refusal: $line" ;;
esac
daemon_stop
pass "a compat exec's LSM refusal is not lent to the next native exec's failure"
