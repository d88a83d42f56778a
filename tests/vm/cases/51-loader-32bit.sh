# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# A 32-bit dynamic loader run as the command maps its program with mmap2,
# a compat call; where it fires no syscall tracepoint, the program it maps
# is never judged. Such a loader run as the command is refused (an error
# verdict: what runs cannot be told), on the BPF LSM kernel too.
# docs/enforcement.md, "the dynamic loader".
# egvm-timeout: 90
. "$EG_LIB"

LD32=/lib32/ld-linux.so.2
[ -x "$LD32" ] || skip "no $LD32 in the guest (libc6-i386 on the host)"
"$EG_HELPERS/elf32_exit" "$PWD/denied32" "$LD32" || fail "cannot write the 32-bit program"
"$LD32" "$PWD/denied32" || skip "this guest runs no 32-bit programs"
cat > p.yaml <<EOF2
default_decision: allow
commands:
  - {name: no-denied32, paths: [$PWD/denied32], decision: deny}
EOF2
daemon_start --enforce --policy p.yaml
"$LD32" "$PWD/denied32" HOST32
rc=$?
[ "$rc" -eq 137 ] || { daemon_diag; fail "a program denied by path ran through the 32-bit loader (rc $rc)"; }
wait_line 20 "$EV" '"loader":true' '"loader_32bit":true' '"action":"killed"' || {
	daemon_diag; fail "no killed 32-bit loader exec"; }
daemon_stop
pass "the 32-bit loader run as the command refused"
