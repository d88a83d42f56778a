#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Exec overhead of the execgate daemon, next to auditd, on this machine.
#
# For each worker count P, rounds of three runs of the same spawn loop
# (tools/bench/spawn.c: posix_spawn of /bin/true with 4 arguments + waitpid):
#   A  nothing tracing execs (the baseline)
#   B  `execgate daemon` running, events written to a file
#   C  auditd running with an execve/execveat rule (when auditd can run)
# interleaved A B C A B C ... in one invocation, because absolute times drift
# on a shared VM by more than the effect we measure (docs/bench.md). Each B
# and C run is compared with the A of its own round; the daemon's and
# auditd's start and stop are outside the timed region.
#
#   tools/bench/run.sh [-n N] [-r ROUNDS] [-p "1 2"] [--no-auditd] [--keep] [--strict]
#
# Every option has an environment form: ITERATIONS, ROUNDS, PARALLEL,
# AUDITD=0, KEEP=1, STRICT=1. Also EXECGATE (the binary, default
# $OUTPUT/execgate), SPAWN (default $OUTPUT/bench/spawn), OUTPUT (default
# .output), PIN_PATH (default /sys/fs/bpf/execgate-bench), TARGET_SECONDS
# (length of one run when -n is not given, default 1.5), SETTLE (pause
# before each timed run, default 0.2 s), NOISE_LIMIT (a round whose A or B
# run saw other processes use more than this percentage of a CPU is run
# again, up to ROUNDS times, as is a round during which another BPF tracing
# program was loaded; default 10), BPF_STATS=0 (no profile run: after the
# rounds, one untimed B run with BPF run-time statistics on, which gives
# what the daemon's BPF programs and its own CPU cost per exec).
set -euo pipefail

cd "$(dirname "$0")/../.."

OUTPUT=${OUTPUT:-.output}
EXECGATE=${EXECGATE:-$OUTPUT/execgate}
SPAWN=${SPAWN:-$OUTPUT/bench/spawn}
PIN_PATH=${PIN_PATH:-/sys/fs/bpf/execgate-bench}
ITERATIONS=${ITERATIONS:-}
ROUNDS=${ROUNDS:-10}
PARALLEL=${PARALLEL:-"1 2"}
AUDITD=${AUDITD:-1}
KEEP=${KEEP:-0}
STRICT=${STRICT:-0}
TARGET_SECONDS=${TARGET_SECONDS:-1.5}
SETTLE=${SETTLE:-0.2}
BPF_STATS=${BPF_STATS:-1}
DAEMON_START_TIMEOUT=${DAEMON_START_TIMEOUT:-30}
DAEMON_STOP_TIMEOUT=${DAEMON_STOP_TIMEOUT:-60}
AUDIT_KEY=egbench
AUDIT_RULE=("always,exit" -F arch=b64 -S "execve,execveat" -k "$AUDIT_KEY")
NOISE_LIMIT=${NOISE_LIMIT:-10}	# percent of one CPU used by others during A or B
TARGET_OVERHEAD=1.0	# percent, median, at the default settings

usage() {
	sed -n '3,29s/^# \{0,1\}//p' "$0"
}

die() {
	echo "bench: $*" >&2
	exit 1
}

while [ $# -gt 0 ]; do
	case "$1" in
	-n) ITERATIONS=${2:?-n needs a count}; shift 2 ;;
	-r) ROUNDS=${2:?-r needs a count}; shift 2 ;;
	-p) PARALLEL=${2:?-p needs worker counts, e.g. \"1 2\"}; shift 2 ;;
	--no-auditd) AUDITD=0; shift ;;
	--keep) KEEP=1; shift ;;
	--strict) STRICT=1; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done

is_count() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
[ -z "$ITERATIONS" ] || is_count "$ITERATIONS" || die "-n wants a positive count, got '$ITERATIONS'"
is_count "$ROUNDS" || die "-r wants a positive count, got '$ROUNDS'"
for p in $PARALLEL; do is_count "$p" || die "-p wants positive worker counts, got '$p'"; done
[ -n "${PARALLEL// /}" ] || die "-p wants at least one worker count"
defaults=0
[ -z "$ITERATIONS" ] && [ "$ROUNDS" = 10 ] && defaults=1

[ "$(id -u)" -eq 0 ] || die "run as root: the daemon loads BPF programs and auditctl needs CAP_AUDIT_CONTROL"
command -v python3 >/dev/null || die "python3 is needed to read the event log (tools/install-deps.sh)"
[ -x "$SPAWN" ] || die "$SPAWN not found: build it with 'make build-tests' (or set SPAWN=)"
[ -x "$EXECGATE" ] || die "$EXECGATE not found: build it with 'make' (or set EXECGATE=)"
if ! "$EXECGATE" daemon --help >/dev/null 2>&1; then
	die "'$EXECGATE daemon --help' fails: this execgate has no working daemon command"
fi
if [ -e "$PIN_PATH" ]; then
	die "$PIN_PATH exists: another execgate daemon may be using it; stop it or remove the directory"
fi

tmp=$(mktemp -d /tmp/execgate-bench.XXXXXX)
daemon_pid=
audit_rule_installed=0
auditd_started=0
audit_enabled0=

# Whatever happens, leave the machine as we found it: no daemon, no audit
# rule, no auditd of ours, auditing switched back to its former state.
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
		kill -TERM "$daemon_pid" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$daemon_pid" 2>/dev/null || true
		wait "$daemon_pid" 2>/dev/null || true
	fi
	rm -rf "$PIN_PATH" 2>/dev/null || true
	bpf_stats_off 2>/dev/null || true
	audit_stop >/dev/null 2>&1 || true
	if [ "$KEEP" = 1 ]; then
		echo "bench: event logs kept in $tmp"
	else
		rm -rf "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- one timed run of the spawn loop -------------------------------------
# Where the machine's CPU time went during a run: busy time of all CPUs
# from /proc/stat, of the tracer's tasks from their schedstat, of the
# spawner and its children from its own report. What is left is other load,
# which makes a round's ratio noise rather than measurement.
hz=$(getconf CLK_TCK)
machine_busy_ns() {
	local _cpu user nice system _idle _iowait irq softirq steal _rest
	read -r _cpu user nice system _idle _iowait irq softirq steal _rest </proc/stat
	echo $(((user + nice + system + irq + softirq + steal) * 1000000000 / hz))
}
tasks_cpu_ns() {	# pid... (sum over their threads)
	local p f ns sum=0
	for p in "$@"; do
		for f in /proc/"$p"/task/*/schedstat; do
			[ -r "$f" ] && read -r ns _ <"$f" 2>/dev/null && sum=$((sum + ns))
		done
	done
	echo "$sum"
}

# Number of BPF programs of tracing kinds loaded on the host: while our
# daemon is not running, any of them may be someone else's exec tracer,
# which would slow the A runs too.
tracing_progs() {
	command -v bpftool >/dev/null || { echo 0; return; }
	bpftool prog show 2>/dev/null |
		awk '$1 ~ /^[0-9]+:$/ && $2 ~ /^(tracing|tracepoint|raw_tracepoint|kprobe|lsm|perf_event)$/ { n++ }
		     END { print n + 0 }'
}

# run_spawn iterations workers [tracer-pid...]
# Sets run_ns, run_execs, run_rate, run_pid from the spawner's result line,
# run_tracer_ns (CPU time of the tracer pids during the run) and run_bg
# (other load, in per mille of one CPU).
run_spawn() {
	local out n=$1 p=$2 busy0 busy1 tr0 tr1 cpu
	shift 2
	# The same pause before every timed run: lets a daemon that has just
	# started (or stopped) finish its own work before the clock starts.
	sleep "$SETTLE"
	tr0=$(tasks_cpu_ns "$@")
	busy0=$(machine_busy_ns)
	if ! out=$("$SPAWN" -q -n "$n" -p "$p" 2>"$tmp/spawn.err"); then
		cat "$tmp/spawn.err" >&2
		die "the spawner failed (see above)"
	fi
	busy1=$(machine_busy_ns)
	tr1=$(tasks_cpu_ns "$@")
	[[ $out =~ elapsed_ns=([0-9]+)\ execs=([0-9]+)\ rate=([0-9.]+)\ pid=([0-9]+)\ cpu_ns=([0-9]+) ]] ||
		die "unexpected spawner output: $out"
	run_ns=${BASH_REMATCH[1]} run_execs=${BASH_REMATCH[2]}
	run_rate=${BASH_REMATCH[3]} run_pid=${BASH_REMATCH[4]} cpu=${BASH_REMATCH[5]}
	run_cpu=$cpu
	run_tracer_ns=$((tr1 - tr0))
	run_bg=$(((busy1 - busy0 - cpu - run_tracer_ns) * 1000 / run_ns))
	[ "$run_bg" -ge 0 ] || run_bg=0
}

# --- the execgate daemon (B) ----------------------------------------------
daemon_start() {	# events-file
	local events=$1 i rc
	: >"$events"
	"$EXECGATE" daemon --output "$events" --pin-path "$PIN_PATH" \
		>"$tmp/daemon.log" 2>&1 </dev/null &
	daemon_pid=$!
	# The daemon writes its start record once its programs are attached.
	for ((i = 0; i < DAEMON_START_TIMEOUT * 20; i++)); do
		if ! kill -0 "$daemon_pid" 2>/dev/null; then
			wait "$daemon_pid" && rc=0 || rc=$?
			daemon_pid=
			sed 's/^/  daemon: /' "$tmp/daemon.log" >&2
			die "execgate daemon exited (status $rc) before it wrote its start record"
		fi
		if head -n1 "$events" | grep -Eq '"type": *"daemon"' &&
		   head -n1 "$events" | grep -Eq '"event": *"start"'; then
			return 0
		fi
		sleep 0.05
	done
	sed 's/^/  daemon: /' "$tmp/daemon.log" >&2
	die "execgate daemon wrote no start record to $events within ${DAEMON_START_TIMEOUT}s"
}

daemon_stop() {
	local i rc
	kill -TERM "$daemon_pid"
	for ((i = 0; i < DAEMON_STOP_TIMEOUT * 20; i++)); do
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$daemon_pid" 2>/dev/null; then
		kill -KILL "$daemon_pid" 2>/dev/null || true
		wait "$daemon_pid" 2>/dev/null || true
		daemon_pid=
		die "execgate daemon did not exit within ${DAEMON_STOP_TIMEOUT}s of SIGTERM (killed)"
	fi
	wait "$daemon_pid" && rc=0 || rc=$?
	daemon_pid=
	if [ "$rc" -ne 0 ]; then
		sed 's/^/  daemon: /' "$tmp/daemon.log" >&2
		echo "bench: warning: execgate daemon exited with status $rc after SIGTERM" >&2
	fi
	# Pinned objects would outlive the daemon; A runs must see no BPF of ours.
	rm -rf "$PIN_PATH"
}

# Reads an event log; prints "seen other lost stop" for the execs of the
# spawner with pid $2: seen = exec events with our argv and that parent,
# other = exec events with our argv and another or no parent, lost = what
# the daemon says it lost (sum of the "lost" records' counts, or the stop
# record's total if that is larger: the total includes losses not yet
# written as records, and counting both would count twice), stop = 1 if the
# stop record is there.
count_events() {	# events-file spawner-pid
	python3 - "$1" "$2" <<'EOF'
import json, sys
path, pid = sys.argv[1], int(sys.argv[2])
want = ["true", "a", "b", "c", "d"]
seen = other = lost_records = stop_lost = stop = bad = 0
with open(path, "rb") as f:
    for raw in f:
        try:
            ev = json.loads(raw)
        except ValueError:
            bad += 1
            continue
        if not isinstance(ev, dict):
            continue
        t = ev.get("type")
        if t == "exec" and ev.get("argv") == want:
            if ev.get("ppid") == pid:
                seen += 1
            else:
                other += 1
        elif t == "lost":
            lost_records += int(ev.get("count", 0))
        elif t == "daemon" and ev.get("event") == "stop":
            stop = 1
            stop_lost = int(ev.get("lost", 0) or 0)
if bad:
    print("bench: warning: %d lines of %s are not JSON" % (bad, path), file=sys.stderr)
print(seen, other, max(lost_records, stop_lost), stop)
EOF
}

# --- BPF run time of the daemon's programs -----------------------------
# The daemon's BPF programs run in the exec'ing task, so their cost is in
# neither the daemon's CPU time nor anywhere else we sample. The kernel
# counts it per program (run_time_ns) while someone holds a
# BPF_ENABLE_STATS fd; a holder process keeps one open during the B runs
# only. Unlike the kernel.bpf_stats_enabled sysctl it is reference counted,
# so it cannot undo anyone else's setting.
stats_holder=''
bpf_stats_on() {
	local i
	rm -f "$tmp/stats.ready"
	python3 - "$tmp/stats.ready" <<'EOF' &
import ctypes, os, platform, signal, sys
ready = sys.argv[1]
def say(msg):
    with open(ready + ".tmp", "w") as f:
        f.write(msg + "\n")
    os.rename(ready + ".tmp", ready)
if platform.machine() != "x86_64":
    say("error: only x86_64 is known (SYS_bpf number)")
    sys.exit(0)
libc = ctypes.CDLL(None, use_errno=True)
attr = (ctypes.c_char * 16)()   # enable_stats.type = BPF_STATS_RUN_TIME (0)
fd = libc.syscall(321, 32, attr, ctypes.sizeof(attr))   # SYS_bpf, BPF_ENABLE_STATS
if fd < 0:
    say("error: BPF_ENABLE_STATS: " + os.strerror(ctypes.get_errno()))
    sys.exit(0)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
say("ok")
while True:
    signal.pause()
EOF
	stats_holder=$!
	for ((i = 0; i < 100; i++)); do
		[ -e "$tmp/stats.ready" ] && break
		sleep 0.05
	done
	[ "$(cat "$tmp/stats.ready" 2>/dev/null)" = ok ]
}
bpf_stats_off() {
	[ -n "${stats_holder:-}" ] || return 0
	kill -TERM "$stats_holder" 2>/dev/null || true
	wait "$stats_holder" 2>/dev/null || true
	stats_holder=''
}
# The ids of the maps the daemon pinned: its programs are those using them.
pinned_map_ids() {
	local f
	for f in "$PIN_PATH"/*; do
		bpftool -j map show pinned "$f" 2>/dev/null |
			python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])' 2>/dev/null || true
	done
}
# bpf_cost snapshot0 snapshot1 "map ids" daemon-cpu-ns execs "A cpu ns per exec..."
# From two `bpftool -j prog show` snapshots: the run time of the daemon's
# programs per exec, in all and per program, and the tracer's whole cost as
# a share of an exec's CPU time. Prints two lines, or nothing if none of
# the daemon's programs has statistics.
bpf_cost() {
	python3 - "$@" <<'EOF'
import json, statistics, sys
snap0, snap1, ids, dcpu, n, acpu = sys.argv[1:7]
ids = set(int(x) for x in ids.split())
n, dcpu = int(n), int(dcpu)
a = statistics.median(map(int, acpu.split()))
def load(path):
    with open(path) as f:
        return {p["id"]: p for p in json.load(f)
                if ids & set(p.get("map_ids", [])) and "run_time_ns" in p}
p0, p1 = load(snap0), load(snap1)
rows = []
for pid, p in p1.items():
    q = p0.get(pid, {"run_time_ns": 0, "run_cnt": 0})
    rows.append((p["run_time_ns"] - q["run_time_ns"], p.get("run_cnt", 0) - q.get("run_cnt", 0), p["name"]))
if not rows:
    sys.exit(0)
t = sum(r[0] for r in rows)
runs = sum(r[1] for r in rows)
print("daemon CPU %.1f us + BPF %.1f us (%d programs, %.1f runs) per exec = %.2f%% of an exec's CPU time (%.0f us)"
      % (dcpu / n / 1e3, t / n / 1e3, len(rows), runs / n, 100.0 * (dcpu + t) / n / a, a / 1e3))
rows.sort(reverse=True)
print(", ".join("%s %.2f us x%.1f" % (name, tt / n / 1e3, c / n) for tt, c, name in rows))
EOF
}

# --- auditd (C) -----------------------------------------------------------
audit_status() {	# field
	auditctl -s 2>/dev/null | awk -v k="$1" '$1 == k { print $2; exit }'
}

auditd_pid() {
	local p
	p=$(audit_status pid)
	[ -n "$p" ] && [ "$p" != 0 ] && kill -0 "$p" 2>/dev/null && echo "$p"
}

audit_start() {
	local i
	if [ "$auditd_preexisting" = 0 ]; then
		if [ "$auditd_via" = service ]; then
			service auditd start >"$tmp/auditd.log" 2>&1 || return 1
		else
			auditd >"$tmp/auditd.log" 2>&1 || return 1
		fi
		auditd_started=1
		for ((i = 0; i < 200; i++)); do
			auditd_pid >/dev/null && break
			sleep 0.05
		done
		auditd_pid >/dev/null || return 1
	fi
	auditctl -a "${AUDIT_RULE[@]}" >>"$tmp/auditd.log" 2>&1 || return 1
	audit_rule_installed=1
}

audit_stop() {
	local p i
	if [ "$audit_rule_installed" = 1 ]; then
		auditctl -d "${AUDIT_RULE[@]}" >/dev/null 2>&1 || auditctl -D -k "$AUDIT_KEY" >/dev/null 2>&1 || true
		audit_rule_installed=0
	fi
	if [ "$auditd_started" = 1 ]; then
		p=$(auditd_pid || true)
		if [ "$auditd_via" = service ]; then
			service auditd stop >/dev/null 2>&1 || true
		fi
		[ -z "$p" ] || kill -TERM "$p" 2>/dev/null || true
		for ((i = 0; i < 200; i++)); do
			[ -z "$p" ] || ! kill -0 "$p" 2>/dev/null && break
			sleep 0.05
		done
		auditd_started=0
	fi
	# auditd leaves the kernel's audit switched on when it stops: put it back.
	if [ -n "$audit_enabled0" ] && [ "$(audit_status enabled)" != "$audit_enabled0" ]; then
		auditctl -e "$audit_enabled0" >/dev/null 2>&1 || true
	fi
}

# Sets audit_ok=1, or audit_why to the reason auditd cannot be the baseline.
audit_probe() {
	local rules
	audit_ok=0 audit_why='' auditd_preexisting=0 auditd_via=''
	if [ "$AUDITD" = 0 ]; then
		audit_why="skipped (--no-auditd)"; return
	fi
	if ! command -v auditctl >/dev/null || ! command -v auditd >/dev/null; then
		audit_why="not installed (tools/install-deps.sh bench installs it)"; return
	fi
	if ! auditctl -s >"$tmp/audit.status" 2>&1; then
		audit_why="auditctl -s fails: $(head -n1 "$tmp/audit.status")"; return
	fi
	audit_enabled0=$(audit_status enabled)
	if [ "$audit_enabled0" = 2 ]; then
		audit_why="the audit configuration is locked (enabled 2)"; return
	fi
	rules=$(auditctl -l 2>&1)
	if [ "$rules" != "No rules" ]; then
		audit_why="audit rules are already installed; not touching them"; return
	fi
	if auditd_pid >/dev/null; then
		auditd_preexisting=1	# use it as it is; it also runs during A and B
	elif command -v service >/dev/null &&
	     { [ -x /etc/init.d/auditd ] || [ -d /run/systemd/system ]; }; then
		auditd_via=service
	else
		auditd_via=direct
	fi
	# One trial start and stop, so a failure shows here and not mid-run.
	if ! audit_start; then
		audit_why="auditd does not start: $(tail -n1 "$tmp/auditd.log" 2>/dev/null)"
		audit_stop
		return
	fi
	audit_stop
	audit_ok=1
}

# --- statistics -----------------------------------------------------------
# stats "r1 r2 ..." -> "median min max" of the overheads in percent.
stats() {
	python3 - "$@" <<'EOF'
import statistics, sys
v = [(float(x) - 1.0) * 100.0 for x in sys.argv[1].split()]
print("%+.2f %+.2f %+.2f" % (statistics.median(v), min(v), max(v)))
EOF
}
median() {	# "v1 v2 ..." [divisor]
	python3 -c 'import statistics, sys
print("%.0f" % (statistics.median(map(float, sys.argv[1].split())) / float(sys.argv[2])))' "$1" "${2:-1}"
}
ratio() {	# b a
	python3 -c 'import sys; print("%.6f" % (int(sys.argv[1]) / int(sys.argv[2])))' "$1" "$2"
}
pct() {	# ratio
	python3 -c 'import sys; print("%+.2f%%" % ((float(sys.argv[1]) - 1) * 100))' "$1"
}

# --- main -------------------------------------------------------------------
audit_probe
echo "execgate exec-overhead benchmark"
echo "  $(uname -sr), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(tracing_progs) BPF tracing programs loaded"
echo "  daemon:  $EXECGATE daemon --output FILE --pin-path $PIN_PATH"
echo "  spawner: $SPAWN (posix_spawn /bin/true a b c d + waitpid)"
if [ "$audit_ok" = 1 ]; then
	if [ "$auditd_preexisting" = 1 ]; then
		echo "  auditd:  already running (pid $(auditd_pid)); it runs during A and B too, the rule only during C"
	else
		echo "  auditd:  started ($auditd_via) for each C run, rule: auditctl -a ${AUDIT_RULE[*]}"
	fi
else
	echo "auditd: unavailable ($audit_why)"
fi
echo "  rounds:  $ROUNDS, each A B$([ "$audit_ok" = 1 ] && echo " C"), per worker count in: $PARALLEL"

summary=()
costs=()
targets=()
miss=0
noisy_any=0

for P in $PARALLEL; do
	echo
	n=$ITERATIONS
	if [ -z "$n" ]; then
		# Size a run to about TARGET_SECONDS from a short warm-up run.
		run_spawn 300 "$P"
		n=$(python3 -c 'import sys; ns, t = int(sys.argv[1]), float(sys.argv[2])
n = int(t * 1e9 / (ns / 300) / 100) * 100
print(min(max(n, 200), 100000))' "$run_ns" "$TARGET_SECONDS")
	fi
	echo "P=$P: $n iterations x $P workers per run"

	ratios_b='' ratios_c='' rates_a='' rates_b='' rates_c='' cpu_b='' cpu_c='' cpu_a=''
	expected=0 seen=0 other=0 lost=0 nostop=0 audit_lost=0 redone=0 noisy=0
	r=1
	while [ "$r" -le "$ROUNDS" ]; do
		ft=$(tracing_progs)
		run_spawn "$n" "$P"
		a_ns=$run_ns a_rate=$run_rate bg=$run_bg a_cpu=$((run_cpu / run_execs))
		f=$(tracing_progs)
		[ "$f" -le "$ft" ] || ft=$f
		line=$(printf '  round %2d/%d: A %6.0f/s' "$r" "$ROUNDS" "$run_rate")

		ev="$tmp/events.P$P.r$r.jsonl"
		daemon_start "$ev"
		run_spawn "$n" "$P" "$daemon_pid"
		daemon_stop
		[ "$run_bg" -le "$bg" ] || bg=$run_bg
		b_rate=$run_rate b_cpu=$((run_tracer_ns / run_execs))
		x=$(count_events "$ev" "$run_pid") || die "cannot read the event log $ev"
		read -r s o l st <<<"$x"
		[ "$KEEP" = 1 ] || rm -f "$ev"
		b_ratio=$(ratio "$run_ns" "$a_ns")
		line+=$(printf '  B %6.0f/s %8s %3dus/exec  events %d/%d lost %d' "$run_rate" \
			"$(pct "$b_ratio")" $((b_cpu / 1000)) "$s" "$run_execs" "$l")
		# Events are checked in every round, redone or not: a loss is a loss.
		expected=$((expected + run_execs)) seen=$((seen + s)) other=$((other + o))
		lost=$((lost + l))
		[ "$st" = 1 ] || nostop=$((nostop + 1))

		if [ "$audit_ok" = 1 ]; then
			l0=$(audit_status lost)
			audit_start || die "auditd failed to start in round $r: $(tail -n1 "$tmp/auditd.log")"
			# shellcheck disable=SC2046  # pids are words
			run_spawn "$n" "$P" $(auditd_pid || true) $(pgrep -x kauditd || true)
			l1=$(audit_status lost)
			audit_stop
			c_ratio=$(ratio "$run_ns" "$a_ns")
			c_rate=$run_rate c_cpu=$((run_tracer_ns / run_execs))
			audit_lost=$((audit_lost + ${l1:-0} - ${l0:-0}))
			line+=$(printf '  C %6.0f/s %8s %3dus/exec' "$run_rate" "$(pct "$c_ratio")" $((c_cpu / 1000)))
		fi
		line+=$(printf '  other load %d.%d%%' $((bg / 10)) $((bg % 10)))
		[ "$ft" -eq 0 ] || line+=" + $ft BPF tracing programs"

		# Other load in the A or B run of a round makes its ratio noise,
		# and so does another exec tracer, which slows A as much as B:
		# run the round again (at most ROUNDS times in all for this P).
		quiet=1
		{ [ "$bg" -le $((NOISE_LIMIT * 10)) ] && [ "$ft" -eq 0 ]; } || quiet=0
		if [ "$quiet" = 0 ] && [ "$redone" -lt "$ROUNDS" ]; then
			redone=$((redone + 1))
			echo "$line  -> noisy, redone"
			continue
		fi
		[ "$quiet" = 1 ] || noisy=$((noisy + 1))
		echo "$line"
		rates_a+=" $a_rate" rates_b+=" $b_rate" ratios_b+=" $b_ratio" cpu_b+=" $b_cpu"
		cpu_a+=" $a_cpu"
		if [ "$audit_ok" = 1 ]; then
			rates_c+=" $c_rate" ratios_c+=" $c_ratio" cpu_c+=" $c_cpu"
		fi
		r=$((r + 1))
	done

	# One more, untimed, B run with BPF run-time statistics on: what the
	# daemon's programs cost inside each exec (kept out of the timed runs,
	# whose programs would pay for the statistics).
	cost='' per_prog=''
	if [ "$BPF_STATS" != 0 ]; then
		if bpf_stats_on; then
			ev="$tmp/events.P$P.profile.jsonl"
			daemon_start "$ev"
			map_ids=$(pinned_map_ids | tr '\n' ' ')
			bpftool -j prog show >"$tmp/progs0.json" 2>/dev/null || echo '[]' >"$tmp/progs0.json"
			run_spawn "$n" "$P" "$daemon_pid"
			bpftool -j prog show >"$tmp/progs1.json" 2>/dev/null || echo '[]' >"$tmp/progs1.json"
			daemon_stop
			bpf_stats_off
			x=$(count_events "$ev" "$run_pid") || die "cannot read the event log $ev"
			read -r s o l st <<<"$x"
			[ "$KEEP" = 1 ] || rm -f "$ev"
			expected=$((expected + run_execs)) seen=$((seen + s)) other=$((other + o))
			lost=$((lost + l))
			x=$(bpf_cost "$tmp/progs0.json" "$tmp/progs1.json" "$map_ids" \
				"$run_tracer_ns" "$run_execs" "$cpu_a") || true
			cost=$(head -n1 <<<"$x") per_prog=$(sed -n 2p <<<"$x")
			[ -n "$cost" ] || cost="unknown (no run-time statistics for the daemon's programs)"
		else
			cost="unknown ($(cat "$tmp/stats.ready" 2>/dev/null || echo "BPF_ENABLE_STATS holder did not start"))"
			bpf_stats_off
		fi
		echo "  profile run (untimed, $run_execs execs): $cost"
		[ -z "${per_prog:-}" ] || echo "    per exec: $per_prog"
		costs+=("P=$P execgate: $cost")
	fi

	read -r bmed bmin bmax < <(stats "$ratios_b")
	echo "  execgate: overhead median $bmed% (min $bmin%, max $bmax%); rate $(median "$rates_b")/s vs $(median "$rates_a")/s without;" \
		"daemon CPU $(median "$cpu_b" 1000) us/exec"
	echo "            events_expected=$expected events_seen=$seen lost=$lost$([ "$other" -gt 0 ] && echo " (+$other with our argv but another ppid)")"
	[ "$nostop" -eq 0 ] || echo "  bench: warning: $nostop event logs have no daemon stop record" >&2
	[ "$redone" -eq 0 ] || echo "  $redone rounds redone (other load above $NOISE_LIMIT% of a CPU, or another BPF tracer loaded)"
	if [ "$noisy" -gt 0 ]; then
		echo "  bench: warning: $noisy of $ROUNDS rounds kept although noisy: these figures are not reliable" >&2
		noisy_any=1
	fi
	summary+=("$(printf '%-2s %-9s %9s %9s %9s %8s/s %8s/s %s' "$P" execgate "$bmed%" "$bmin%" "$bmax%" \
		"$(median "$rates_a")" "$(median "$rates_b")" "$((expected - seen)) missing, $lost lost")")
	if [ "$audit_ok" = 1 ]; then
		read -r cmed cmin cmax < <(stats "$ratios_c")
		echo "  auditd:   overhead median $cmed% (min $cmin%, max $cmax%); rate $(median "$rates_c")/s;" \
			"auditd+kauditd CPU $(median "$cpu_c" 1000) us/exec; kernel audit lost $audit_lost"
		summary+=("$(printf '%-2s %-9s %9s %9s %9s %8s/s %8s/s %s' "$P" auditd "$cmed%" "$cmin%" "$cmax%" \
			"$(median "$rates_a")" "$(median "$rates_c")" "$audit_lost lost (kernel)")")
		if python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))' "$bmed" "$cmed"; then
			targets+=("P=$P: execgate below auditd ($bmed% < $cmed%): met")
		else
			targets+=("P=$P: execgate below auditd ($bmed% vs $cmed%): NOT met"); miss=1
		fi
	fi
	if python3 -c 'import sys; sys.exit(not float(sys.argv[1]) <= float(sys.argv[2]))' "$bmed" "$TARGET_OVERHEAD"; then
		targets+=("P=$P: median overhead <= $TARGET_OVERHEAD% ($bmed%): met")
	else
		targets+=("P=$P: median overhead <= $TARGET_OVERHEAD% ($bmed%): NOT met"); miss=1
	fi
	if [ "$seen" -eq "$expected" ] && [ "$lost" -eq 0 ]; then
		targets+=("P=$P: 0 events lost at $(median "$rates_b") execs/s: met")
	else
		targets+=("P=$P: 0 events lost at $(median "$rates_b") execs/s ($((expected - seen)) missing, $lost lost): NOT met"); miss=1
	fi
done

echo
echo "Summary (overhead = time with / time without - 1, per round; rates in execs/s)"
printf '%-2s %-9s %9s %9s %9s %10s %10s %s\n' P tracer median min max "rate A" "rate B/C" events
for s in "${summary[@]}"; do echo "$s"; done
for s in "${costs[@]}"; do echo "$s"; done
[ "$audit_ok" = 1 ] || echo "auditd: unavailable ($audit_why)"
[ "$noisy_any" = 0 ] || echo "Some rounds ran under other load or beside another BPF tracer: rerun on an idle machine."
echo
[ "$defaults" = 1 ] || echo "Targets (they are set for the default settings; these are not):"
[ "$defaults" = 0 ] || echo "Targets:"
for t in "${targets[@]}"; do echo "  $t"; done

rc=0
if [ -x tools/bench/policy.sh ]; then
	echo
	EXECGATE=$EXECGATE SPAWN=$SPAWN OUTPUT=$OUTPUT tools/bench/policy.sh || rc=$?
	[ "$rc" -eq 0 ] || echo "bench: tools/bench/policy.sh failed (status $rc)" >&2
fi
if [ "$STRICT" = 1 ] && [ "$miss" = 1 ]; then
	echo "bench: a target was not met (--strict)" >&2
	rc=1
fi
exit "$rc"
