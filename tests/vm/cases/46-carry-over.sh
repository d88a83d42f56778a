# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# An upgrade on Debian's 6.1 kernel: the pin directory holds a "tasks" of
# the older layout (96-byte values, as a daemon before 28 November 2026
# left it: tests/helpers/old_tasks); the daemon copies its entries into its
# own map with the carry-over iterator (bpf/migrate.bpf.c), so a running
# process keeps its depth, exec id and session id. 6.1 has no
# PIDFD_THREAD: the entry is a process's. docs/maps.md, "tasks".
# egvm-timeout: 90
. "$EG_LIB"

mkdir -p /sys/fs/bpf/execgate
ln -s /bin/busybox ./sleep
./sleep 60 &
sp=$!
out=$("$EG_HELPERS/old_tasks" /sys/fs/bpf/execgate/tasks "$sp:7:5") || fail "old_tasks: $out"
daemon_start
grep -q 'carried over: 1 entries copied' "$DAEMON_ERR" || { daemon_diag; fail "no carry-over said on stderr"; }
t=$("$EG" task -j "$sp")
case $t in
*'"depth":7,'*"\"exec_id\":\"$sp:$((1000 + sp))\""*'"session":5,'*'"context":null}'*) ;;
*) fail "the entry did not carry over: $t" ;;
esac
kill "$sp"; wait "$sp" 2>/dev/null
daemon_stop TERM
pass "a tasks map of the older layout carried over: depth 7, exec id and session 5 of $sp"
