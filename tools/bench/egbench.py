# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Shared parts of the enforcement and session benchmarks: a daemon on its
own pin path, a cgroup to run the load in, the spawn loop, BPF run-time
statistics. Numbers are ratios of runs interleaved in one invocation
(docs/bench.md): absolute times drift on these VMs by more than the
effects measured."""
import json
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, os.environ.get("OUTPUT", ".output"))
EXECGATE = os.environ.get("EXECGATE", os.path.join(OUT, "execgate"))
SPAWN = os.environ.get("SPAWN", os.path.join(OUT, "bench", "spawn"))
HELPERS = os.path.join(OUT, "tests", "helpers")
CGROUP2 = "/sys/fs/cgroup/unified" if os.path.exists("/sys/fs/cgroup/unified/cgroup.procs") \
    else "/sys/fs/cgroup"


def die(msg):
    raise SystemExit("bench: " + msg)


class Daemon:
    def __init__(self, args, pin="/sys/fs/bpf/egbench"):
        self.pin = pin
        self.dir = tempfile.mkdtemp(prefix="egbench.")
        self.out = os.path.join(self.dir, "events.jsonl")
        self.err = open(os.path.join(self.dir, "stderr"), "wb")
        subprocess.run([EXECGATE, "unload", "-p", pin], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        self.proc = subprocess.Popen([EXECGATE, "daemon", "-p", pin, "--output", self.out] + list(args),
                                     stdout=subprocess.DEVNULL, stderr=self.err, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                die("daemon exited: " + open(self.err.name).read()[-2000:])
            if os.path.exists(self.out) and b'"event":"start"' in open(self.out, "rb").read(65536):
                return
            time.sleep(0.05)
        die("daemon not ready in 60 s")

    def stats(self):
        r = subprocess.run([EXECGATE, "stats", "-j", "-p", self.pin], stdout=subprocess.PIPE, check=True)
        return json.loads(r.stdout)

    def events(self):
        with open(self.out, "rb") as f:
            return [json.loads(l) for l in f.read().split(b"\n")[:-1]]

    def fds(self):
        return len(os.listdir("/proc/%d/fd" % self.proc.pid))

    def cpu_ns(self):
        """CPU time of the daemon so far, in ns: process_cpu_ns()."""
        return process_cpu_ns(self.proc.pid)

    def loop_cpu_ns(self):
        """CPU time of the daemon's main thread so far, in ns: its event loop
        (the ring buffer's records, the log, the verdicts' join), without
        the session receivers and workers."""
        return thread_cpu_ns(self.proc.pid, self.proc.pid)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(120)
        self.err.close()
        subprocess.run([EXECGATE, "unload", "-p", self.pin], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


class Cgroup:
    def __init__(self, name):
        self.path = os.path.join(CGROUP2, "%s-%d" % (name, os.getpid()))
        os.makedirs(self.path, exist_ok=True)
        self.rel = "/" + os.path.relpath(self.path, CGROUP2)

    def join_fn(self):
        procs = os.path.join(self.path, "cgroup.procs")
        return lambda: open(procs, "w").write("0")

    def remove(self):
        try:
            os.rmdir(self.path)
        except OSError:
            pass


def thread_cpu_ns(pid, tid):
    """CPU time of one live thread so far, in ns (its schedstat)."""
    with open("/proc/%d/task/%d/schedstat" % (pid, tid)) as f:
        return int(f.read().split()[0])


def process_cpu_ns(pid):
    """CPU time of process pid so far, in ns, threads that have exited
    included (its CPU-time clock, as clock_getcpuclockid() makes it). The
    sum of the live threads' schedstat would lose an idle worker thread's
    time when it exits between two readings."""
    try:
        return time.clock_gettime_ns(((~pid) << 3) | 2)     # CPUCLOCK_SCHED of the process
    except OSError:
        t = 0
        base = "/proc/%d/task" % pid
        for tid in os.listdir(base):
            try:
                with open(os.path.join(base, tid, "schedstat")) as f:
                    t += int(f.read().split()[0])
            except OSError:
                pass
        return t


class SyscallCount:
    """strace -f -c attached to a running process (an untimed run: strace slows it):
    start it, run the load, then stop() gives {syscall: calls}. None of it where
    strace is not installed (tools/install-deps.sh bench installs it)."""

    def __init__(self, pid, out):
        self.out = out
        self.st = None
        if shutil.which("strace"):
            self.st = subprocess.Popen(["strace", "-f", "-c", "-o", out, "-p", str(pid)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)

    def stop(self):
        if not self.st:
            return None
        time.sleep(0.3)
        self.st.send_signal(signal.SIGINT)
        self.st.wait(30)
        calls = {}
        for line in open(self.out):
            f = line.split()
            if len(f) >= 5 and f[3].isdigit() and f[-1] != "total":
                calls[f[-1]] = int(f[3])
        return calls


def per_unit(calls, n, top=8):
    """Calls per unit of work (n of them): the total, and the most made."""
    most = sorted(((k, v / n) for k, v in calls.items()), key=lambda kv: -kv[1])[:top]
    return sum(calls.values()) / n, most


def spawn_fields(n, workers=1, prefix=(), preexec=None, args=()):
    """Runs the spawn loop (posix_spawn of /bin/true); its result line as a dict of ints."""
    r = subprocess.run(list(prefix) + [SPAWN, "-n", str(n), "-p", str(workers)] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, preexec_fn=preexec)
    if r.returncode:
        die("spawn failed: %s" % r.stderr.decode()[-500:])
    f = {k: int(v) for k, v in (kv.split("=") for kv in r.stdout.decode().split()) if v.isdigit()}
    if "p50_ns" not in f:
        die("%s printed no p50_ns: not this tree's spawn loop? (make bench builds it; SPAWN= names it)" % SPAWN)
    return f


def spawn(n, workers=1, prefix=(), preexec=None):
    """Runs the spawn loop (posix_spawn of /bin/true); its elapsed ns."""
    return spawn_fields(n, workers, prefix, preexec)["elapsed_ns"]


def bpf_stats(on):
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1" if on else "0")


def prog_stats(name):
    """(run_time_ns, run_cnt) summed over the loaded programs called name."""
    r = subprocess.run(["bpftool", "-j", "prog", "show"], stdout=subprocess.PIPE, check=True)
    t = c = 0
    for p in json.loads(r.stdout):
        if p.get("name") == name[:15]:
            t += p.get("run_time_ns", 0)
            c += p.get("run_cnt", 0)
    return t, c


def median_pct(pairs):
    """Median over rounds of (B/A - 1) in percent, and its spread (IQR)."""
    ratios = sorted((b / a - 1) * 100 for a, b in pairs)
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 4 else [ratios[0], 0, ratios[-1]]
    return statistics.median(ratios), q[0], q[-1]


def rss_kb(pid):
    """The process's resident set (VmRSS) in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


TARGETS = []


def target(name, measured, floor, limit, unit="ns", ratio_limit=True, note=""):
    """Prints one target's line and keeps it for the summary:
    target NAME: measured A vs floor B = ratio R (limit L) met|not met.
    With ratio_limit the limit is on the ratio; else on the measured value
    itself (an absolute target, its floor shown beside it)."""
    ratio = measured / floor if floor else float("inf") if measured else 1.0
    met = (ratio <= limit) if ratio_limit else (measured <= limit)
    verdict = "met" if met else "not met"
    if ratio_limit and floor < 0:
        # a difference that came out below zero (noise larger than the effect): no ratio to judge
        ratio, met, verdict = float("inf"), False, "not measurable in this run (the floor came out below 0)"
    lim = ("x%.1f" % limit) if ratio_limit else ("%g %s" % (limit, unit))
    line = "target %s: measured %.0f %s vs floor %.0f %s = ratio %s (limit %s) %s%s" % (
        name, measured, unit, floor, unit, ("%.2f" % ratio) if ratio != float("inf") else "-",
        lim, verdict, ("; " + note) if note else "")
    print(line)
    sys.stdout.flush()
    TARGETS.append(line)
    return met
