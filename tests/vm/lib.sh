# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# shellcheck shell=dash disable=SC2034  # busybox ash (local is fine); variables for the cases
# Helpers for the guest's test cases (busybox sh). A case starts with
#   . "$EG_LIB"
# and ends with pass/fail/skip, which print the reason (the last line of
# stdout is what the host reports) and exit 0/1/77. tests/vm/README.md.
#
# What the guest's /init gives every case:
#   EG           the execgate binary          EG_HELPERS  the test helpers
#   EG_POLICIES  a copy of policy/*.yaml      EG_LIB      this file
#   the working directory: /tmp/<case>, in a /tmp of its own (a tmpfs
#   mounted for the case, empty at its start, gone after it)
#   cgroup v2 alone at /sys/fs/cgroup, bpffs at /sys/fs/bpf, securityfs,
#   tracefs, debugfs, devtmpfs; a tmpfs on /tmp and /run
#   after the case: every process it left is killed, /sys/fs/bpf emptied
#   and the cgroups it made removed

pass() { echo "${1:-ok}"; exit 0; }
fail() { echo "$1"; exit 1; }
skip() { echo "$1"; exit 77; }

# note TEXT: a line the host shows under the result, e.g. a timing.
note() { echo "note: $*"; }

# Milliseconds since boot (busybox date has no sub-second format).
now_ms() {
	local up
	read -r up _ < /proc/uptime
	up=$(echo "$up" | tr -d . | sed 's/^0*//')	# centiseconds
	echo $(( ${up:-0} * 10 ))
}

# has_line FILE TEXT...: whether one line of FILE holds every TEXT, literally.
has_line() {
	local f=$1; shift
	[ -f "$f" ] && grep_all "$@" < "$f" | grep -q .
}

# grep_all TEXT...: the lines of stdin that hold every TEXT, literally.
grep_all() {
	if [ $# -eq 0 ]; then
		cat
	else
		local t=$1; shift
		grep -F -e "$t" | grep_all "$@"
	fi
}

# wait_line SECONDS FILE TEXT...: waits until has_line; 1 on timeout.
wait_line() {
	local secs=$1; shift
	local end=$(( $(now_ms) + secs * 1000 ))
	while ! has_line "$@"; do
		[ "$(now_ms)" -lt "$end" ] || return 1
		sleep 0.1
	done
}

# daemon_start ARGS...: starts `execgate daemon --output $EV ARGS...` in the
# background and waits for its start record (TIMEOUT_START seconds, default
# 90: TCG verifies the tracer slowly). Sets DAEMON_PID, EV (the events file),
# DAEMON_ERR (its stderr) and DAEMON_READY_MS; fails the case if the daemon
# exits or never starts. Pass -v to get the verifier log in $DAEMON_ERR.
daemon_start() {
	local t0
	EV=${EV:-$PWD/ev.jsonl}
	DAEMON_ERR=${DAEMON_ERR:-$PWD/daemon.err}
	t0=$(now_ms)
	"$EG" daemon --output "$EV" "$@" > /dev/null 2> "$DAEMON_ERR" &
	DAEMON_PID=$!
	local end=$(( t0 + ${TIMEOUT_START:-90} * 1000 ))
	while ! has_line "$EV" '"type":"daemon"' '"event":"start"'; do
		if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
			wait "$DAEMON_PID"
			DAEMON_RC=$?
			daemon_diag
			fail "the daemon exited with status $DAEMON_RC before its start record: $(grep -v '^libbpf: ' "$DAEMON_ERR" | tail -n 1)"
		fi
		if [ "$(now_ms)" -ge "$end" ]; then
			daemon_diag
			fail "no start record after ${TIMEOUT_START:-90} s"
		fi
		sleep 0.1
	done
	DAEMON_READY_MS=$(( $(now_ms) - t0 ))
}

# daemon_stop [SIGNAL]: signals the daemon (TERM) and waits up to 30 s for
# it to exit; sets DAEMON_RC. Fails the case if it does not exit.
daemon_stop() {
	local i=0
	kill -"${1:-TERM}" "$DAEMON_PID" 2>/dev/null
	while kill -0 "$DAEMON_PID" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -le 300 ] || fail "the daemon did not exit within 30 s of SIG${1:-TERM}"
		sleep 0.1
	done
	wait "$DAEMON_PID"
	DAEMON_RC=$?
}

# daemon_diag: the daemon's stderr (without libbpf's chatter, and the lines
# around a verifier refusal) to stdout, for the console log.
daemon_diag() {
	echo "--- daemon stderr ($DAEMON_ERR), libbpf lines left out:"
	grep -v '^libbpf: ' "$DAEMON_ERR" | tail -n 40
	if grep -q -e '-- BEGIN PROG LOAD LOG --' "$DAEMON_ERR"; then
		echo "--- verifier log (tail):"
		sed -n '/-- BEGIN PROG LOAD LOG --/,/-- END PROG LOAD LOG --/p' "$DAEMON_ERR" | tail -n 60
	fi
	if grep -q 'combined stack size of' "$DAEMON_ERR"; then
		echo "hint: tools/bpf-stack.py .output/bpf/execgate.bpf.o shows each program's deepest chain as 6.1 counts it"
	fi
	echo "---"
}

# in_cgroup NAME PROGRAM ARGS...: runs PROGRAM in the cgroup v2 directory
# /sys/fs/cgroup/NAME, made if missing (the guest's /init removes it later).
in_cgroup() {
	local cg=/sys/fs/cgroup/$1
	shift
	mkdir -p "$cg" || return 1
	sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}

# expect_runs PROGRAM ARGS...: the exec of PROGRAM must succeed, and
# PROGRAM exit 0. Returns 0 if so; else prints what happened, returns 1.
expect_runs() {
	local out rc
	out=$("$@" 2>&1)
	rc=$?
	[ "$rc" -eq 0 ] && return 0
	echo "$1: status $rc, expected 0; output: $out"
	return 1
}

# expect_eperm PROGRAM ARGS...: the exec of PROGRAM must fail with EPERM
# ("Operation not permitted"), as an LSM denial makes it; a shell reports
# that with status 126. Returns 0 if so; else prints what happened, returns 1.
expect_eperm() {
	local out rc
	out=$(sh -c 'exec "$@"' sh "$@" 2>&1)
	rc=$?
	if [ "$rc" -eq 126 ] && echo "$out" | grep -q 'Operation not permitted'; then
		return 0
	fi
	echo "exec of $1: status $rc, expected 126 and 'Operation not permitted'; output: $out"
	return 1
}
