# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The daemon on Debian's 6.1 kernel: its BPF programs load and verify (CO-RE
# against a BTF older than the one they were built with), an exec of a
# helper shows up with its argv and resolved filename, and SIGTERM ends it
# with a stop record and status 0. TCG makes the verifier slow: the note
# says how long loading took.
# egvm-timeout: 90
. "$EG_LIB"

TIMEOUT_START=60 daemon_start -v
note "daemon ready in $((DAEMON_READY_MS / 1000)).$((DAEMON_READY_MS % 1000 / 100)) s; verified instructions:" \
	"$(sed -n 's/.*program \([a-z_]*\): \([0-9]*\) instructions verified/\1 \2/p' "$DAEMON_ERR" | paste -s -d, | sed 's/,/, /g')"
grep -o '"mode":{[^}]*}' "$EV" | head -n 1
has_line "$EV" '"event":"start"' '"tracer":"tp_btf"' ||
	fail "start record without tracer tp_btf: $(head -n 1 "$EV")"

# The helper runs under a spelling of its path that is not its file's name.
ln -s "$EG_HELPERS/marker" ./mk
token=vm$$-$(now_ms)
./mk "$token" "two words" || fail "the marker helper failed"
wait_line 20 "$EV" '"type":"exec"' "\"$token\"" || {
	daemon_diag; tail -n 5 "$EV"; fail "no exec record with $token within 20 s"; }
rec=$(grep_all '"type":"exec"' "\"$token\"" < "$EV" | head -n 1)
echo "$rec"
case $rec in
*"\"argv\":[\"./mk\",\"$token\",\"two words\"],\"argc\":3,"*) ;;
*) fail "exec record has the wrong argv: $rec" ;;
esac
case $rec in
*"\"filename\":\"$EG_HELPERS/marker\","*) ;;
*) fail "exec record's filename is not the resolved $EG_HELPERS/marker: $rec" ;;
esac
case $rec in
*'"path_requested":"./mk",'*) ;;
*) fail "exec record's path_requested is not ./mk: $rec" ;;
esac
case $rec in
*'"comm":"mk",'*) ;;
*) fail "exec record's comm is not mk: $rec" ;;
esac

# cgroup attribution: the record names the cgroup v2 path the exec ran in.
in_cgroup egvm-30 ./mk "$token-cg" || fail "the marker helper failed in a cgroup"
wait_line 20 "$EV" '"type":"exec"' "\"argv\":[\"./mk\",\"$token-cg\"]" ||
	fail "no exec record of ./mk $token-cg within 20 s"
rec=$(grep_all '"type":"exec"' "\"argv\":[\"./mk\",\"$token-cg\"]" < "$EV" | head -n 1)
case $rec in
*'"cgroup":"/egvm-30",'*) ;;
*) fail "exec record in cgroup /egvm-30 names another cgroup: $rec" ;;
esac

# The procs view (a task iterator over task storage) on 6.1: a process
# exec'd under the daemon has its line, with its depth and comm.
ln -s /bin/busybox ./sleep	# the guest is busybox: the link's name is the applet and the comm
./sleep 30 &
sp=$!
wait_line 20 "$EV" '"type":"exec"' "\"pid\":$sp," '"comm":"sleep"' || fail "no exec record of sleep ($sp): $(grep -F sleep "$EV" | tail -n 2)"
depth=$(grep_all '"type":"exec"' "\"pid\":$sp," '"comm":"sleep"' < "$EV" | head -n 1 | sed -n 's/.*"depth":\([0-9]*\),.*/\1/p')
view=$(cat /sys/fs/bpf/execgate/procs) || fail "cannot read the procs view"
hdr=$(printf '%s\n' "$view" | head -n 1)
[ "$hdr" = "tgid depth ppid uid session exec_ktime parent_tgid parent_ktime flags cgroup_id comm" ] ||
	fail "the procs view's header: $hdr"
row=$(printf '%s\n' "$view" | awk -v p="$sp" '$1 == p')
set -- $row
[ "$1" = "$sp" ] && [ "$2" = "$depth" ] && [ "${11}" = "sleep" ] ||
	fail "the procs view's line for sleep $sp (depth $depth): '$row'"
# execgate task --set-depth on 6.1: made by a task iterator (bpf/amend.bpf.c),
# the depth alone; the exec id stays the image's.
ktime=$6
"$EG" task "$sp" --set-depth 9 || fail "execgate task $sp --set-depth 9 failed"
row=$(awk -v p="$sp" '$1 == p' /sys/fs/bpf/execgate/procs)
set -- $row
[ "$2" = 9 ] && [ "$6" = "$ktime" ] ||
	fail "after --set-depth 9 the procs view's line for sleep $sp (exec id $ktime): '$row'"
kill "$sp"; wait "$sp" 2>/dev/null

# Audit only: the daemon traces, it blocks nothing (and expect_eperm, which
# the enforcement cases rely on, does not take a run for a denial).
if expect_eperm ./mk SAFE; then
	fail "an exec failed with EPERM under a daemon without --enforce"
fi

daemon_stop TERM
[ "$DAEMON_RC" -eq 0 ] || { daemon_diag; fail "daemon exited with status $DAEMON_RC on SIGTERM"; }
last=$(tail -n 1 "$EV")
case $last in
*'"type":"daemon"'*'"event":"stop"'*) ;;
*) fail "last record is not a stop record: $last" ;;
esac
case $last in
*'"lost":0,'*) ;;
*) fail "stop record counts lost records: $last" ;;
esac
pass "exec of ./mk traced with argv, resolved filename and cgroup; the procs view; stop record on SIGTERM"
