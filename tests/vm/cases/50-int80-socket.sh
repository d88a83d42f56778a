# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# A session's filter refuses sockets of transports Landlock's TCP rules do
# not look at (Multipath TCP, SCTP, DCCP) by their protocol; a 32-bit
# system call's arguments are in memory, out of the filter's sight, so a
# 64-bit process's socketcall through int $0x80 is refused whole. This
# machine's kernel has no 32-bit system calls; Debian's 6.1 has them.
# docs/sessions.md, "The boundary".
# egvm-timeout: 90
. "$EG_LIB"

out=$("$EG_HELPERS/int80_socket" 0 2>&1)
[ "$out" = ok ] || skip "no 32-bit system calls from a 64-bit process in this guest: $out"
daemon_start
out=$("$EG" exec -- "$EG_HELPERS/int80_socket" 0 2>&1)
echo "in a session: $out"
[ "$out" = ENOSYS ] || fail "a 32-bit socketcall in a session was not refused: $out"
out=$("$EG" exec -- "$EG_HELPERS/int80_socket" 262 2>&1)
[ "$out" = ENOSYS ] || fail "a 32-bit socketcall for Multipath TCP in a session was not refused: $out"
pass "socketcall refused in a session, made outside one"
