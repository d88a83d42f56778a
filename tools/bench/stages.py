#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The tracer's direct cost per exec, split by BPF program and daemon stage.

    tools/bench/stages.py [--execs N] [--workers "1 2"] [--rounds R] [-- DAEMON ARGS...]

For each worker count, R runs of: start `execgate daemon` on its own pin
path, run the spawn loop (N posix_spawn of /bin/true), stop the daemon.
During the spawn loop the kernel's BPF run-time statistics are on
(BPF_ENABLE_STATS, reference counted, held by this process), which gives
run_time_ns and run_cnt of each of the daemon's programs; the daemon's CPU
time comes from its CPU-time clock (on-CPU ns, all threads, exited ones too), read
before the loop and after the daemon drained it. Neither is wall clock, so
other load on the machine moves them far less than it moves elapsed time
(docs/bench.md, "Direct cost").

The daemon's stages (decode, judge, format, write) come from the daemon
itself: it is started with EXECGATE_STAGE_STATS=1, which makes it time
each stage of each record with the thread's CPU clock and print the sums
at exit. Timing costs a little itself; the totals above are taken from a
run without it, so the split is a proportion applied to a clean total.

Output: one line per program and stage in ns per exec (median of the
runs), and the total against the 3 us goal.
"""
import argparse
import ctypes
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, os.environ.get("OUTPUT", ".output"))
EXECGATE = os.environ.get("EXECGATE", os.path.join(OUT, "execgate"))
SPAWN = os.environ.get("SPAWN", os.path.join(OUT, "bench", "spawn"))
PIN = os.environ.get("PIN_PATH", "/sys/fs/bpf/execgate-stages")
GOAL_NS = 3000
STAGES = ("decode", "judge", "format", "write")


def die(msg):
    raise SystemExit("stages: " + msg)


def enable_stats():
    """A BPF_ENABLE_STATS fd: statistics stay on while it is open."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = (ctypes.c_char * 16)()        # enable_stats.type = BPF_STATS_RUN_TIME
    fd = libc.syscall(321, 32, attr, ctypes.sizeof(attr))   # SYS_bpf (x86_64), BPF_ENABLE_STATS
    if fd < 0:
        die("BPF_ENABLE_STATS: " + os.strerror(ctypes.get_errno()))
    return fd


def pinned_map_ids():
    ids = set()
    for name in os.listdir(PIN):
        r = subprocess.run(["bpftool", "-j", "map", "show", "pinned", os.path.join(PIN, name)],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        if r.returncode == 0:
            ids.add(json.loads(r.stdout)["id"])
    return ids


def prog_snapshot(map_ids):
    """{name: (run_time_ns, run_cnt)} of the programs using the daemon's maps."""
    r = subprocess.run(["bpftool", "-j", "prog", "show"], stdout=subprocess.PIPE, check=True)
    snap = {}
    for p in json.loads(r.stdout):
        if map_ids & set(p.get("map_ids", [])):
            t, c = snap.get(p["name"], (0, 0))
            snap[p["name"]] = (t + p.get("run_time_ns", 0), c + p.get("run_cnt", 0))
    return snap


def task_cpu_ns(pid):
    """The process's CPU time in ns, exited threads included (its CPU-time
    clock); the live threads' schedstat where that clock cannot be read."""
    try:
        return time.clock_gettime_ns(((~pid) << 3) | 2)     # CPUCLOCK_SCHED of the process
    except OSError:
        pass
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


class Daemon:
    def __init__(self, args, stage_stats=False):
        self.dir = tempfile.mkdtemp(prefix="egstages.")
        self.out = os.path.join(self.dir, "events.jsonl")
        self.errpath = os.path.join(self.dir, "stderr")
        subprocess.run([EXECGATE, "unload", "-p", PIN], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        env = dict(os.environ)
        if stage_stats:
            env["EXECGATE_STAGE_STATS"] = "1"
        with open(self.errpath, "wb") as err:
            self.proc = subprocess.Popen([EXECGATE, "daemon", "-p", PIN, "--output", self.out] + args,
                                         stdout=subprocess.DEVNULL, stderr=err, env=env,
                                         start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                die("daemon exited: " + open(self.errpath).read()[-2000:])
            if os.path.exists(self.out) and b'"event":"start"' in open(self.out, "rb").read(65536):
                return
            time.sleep(0.05)
        die("daemon not ready in 60 s")

    def records(self):
        n = 0
        with open(self.out, "rb") as f:
            for line in f:
                if line.startswith(b'{"v":1,"type":"exec') or b'"type":"exec' in line[:40]:
                    n += 1
        return n

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(120)
        err = open(self.errpath).read()
        subprocess.run([EXECGATE, "unload", "-p", PIN], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        return err


def run_spawn(n, workers):
    r = subprocess.run([SPAWN, "-n", str(n), "-p", str(workers)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if r.returncode:
        die("spawn failed: " + r.stderr.decode()[-500:])
    return dict(kv.split("=") for kv in r.stdout.decode().split())


def one_run(args, n, workers, stage_stats):
    d = Daemon(args, stage_stats)
    try:
        ids = pinned_map_ids()
        time.sleep(0.3)
        p0 = prog_snapshot(ids)
        c0 = task_cpu_ns(d.proc.pid)
        r0 = d.records()
        res = run_spawn(n, workers)
        execs = int(res["execs"])
        time.sleep(0.35)            # past the daemon's flush timer: it has drained
        p1 = prog_snapshot(ids)
        c1 = task_cpu_ns(d.proc.pid)
        r1 = d.records()
    finally:
        err = d.stop()
    progs = {}
    for name, (t, c) in p1.items():
        t0, k0 = p0.get(name, (0, 0))
        progs[name] = ((t - t0) / execs, (c - k0) / execs)
    stages = {}
    for m in re.finditer(r"stage (\w+): (\d+) ns, (\d+) records", err):
        stages[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return {"progs": progs, "daemon": (c1 - c0) / execs, "records": (r1 - r0) / execs,
            "stages": stages, "execs": execs}


def med(xs):
    return statistics.median(xs) if xs else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--execs", type=int, default=3000, help="spawns per worker and run")
    ap.add_argument("--workers", default="1 2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-stages", action="store_true", help="no run with stage timing")
    ap.add_argument("daemon_args", nargs="*")
    a = ap.parse_args()
    if os.geteuid() != 0:
        die("needs root (CAP_BPF, CAP_PERFMON)")
    fd = enable_stats()
    worst = 0.0
    try:
        for w in [int(x) for x in a.workers.split()]:
            runs = [one_run(a.daemon_args, a.execs, w, False) for _ in range(a.rounds)]
            srun = None if a.no_stages else one_run(a.daemon_args, a.execs, w, True)
            names = sorted({n for r in runs for n in r["progs"]},
                           key=lambda n: -med([r["progs"].get(n, (0, 0))[0] for r in runs]))
            print("P=%d: %d runs of %d x %d execs (median per exec)" % (w, a.rounds, w, a.execs))
            bpf = med([sum(t for t, _ in r["progs"].values()) for r in runs])
            for n in names:
                t = med([r["progs"].get(n, (0, 0))[0] for r in runs])
                c = med([r["progs"].get(n, (0, 0))[1] for r in runs])
                if c:
                    print("  bpf    %-22s %7.0f ns  (%.2f runs, %.0f ns a run)" % (n, t, c, t / c))
            daemon = med([r["daemon"] for r in runs])
            recs = med([r["records"] for r in runs])
            if srun and srun["stages"]:
                st = srun["stages"]
                timed = sum(v[0] for v in st.values())
                scale = srun["daemon"] * srun["execs"]
                for s in STAGES:
                    if s in st:
                        ns, cnt = st[s]
                        print("  daemon %-22s %7.0f ns  (%.0f ns a record, %.1f%% of the daemon's CPU)"
                              % (s, daemon * ns / scale, ns / max(cnt, 1), 100.0 * ns / scale))
                print("  daemon %-22s %7.0f ns  (%.1f%%: loop, ring buffer, timer, kernel entry)"
                      % ("other", daemon * (1 - timed / scale), 100.0 * (1 - timed / scale)))
            total = bpf + daemon
            worst = max(worst, total)
            print("  total: BPF %.0f ns + daemon %.0f ns = %.0f ns per exec (goal %d ns: %s); "
                  "%.2f records per exec" % (bpf, daemon, total, GOAL_NS,
                                             "met" if total <= GOAL_NS else "NOT met", recs))
            sys.stdout.flush()
    finally:
        os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
