#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The tracer's direct cost per exec against its floor, by BPF program and daemon stage.

    tools/bench/stages.py [--execs N] [--workers "1 2"] [--rounds R] [--no-floor] [-- DAEMON ARGS...]

For each worker count, R rounds of three runs, interleaved: the floor
(tools/bench/floor: the least a tracer's BPF can do and still build an
exec record of execgate's shape, docs/bench.md), `execgate daemon` as
given, and `execgate daemon --enforce` with 10 kernel rules. Each run
starts its tracer, runs the spawn loop (N posix_spawn of /bin/true per
worker), and stops it. During the loop the kernel's BPF run-time
statistics are on (BPF_ENABLE_STATS, reference counted, held by this
process), which gives run_time_ns and run_cnt of each program; the
daemon's CPU time comes from its CPU-time clock (on-CPU ns, all threads,
exited ones too), read before the loop and after the daemon drained it.
Neither is wall clock, so other load on the machine moves them far less
than it moves elapsed time (docs/bench.md, "Direct cost").

The daemon's stages (decode, judge, format, write) come from the daemon
itself: one more run with EXECGATE_STAGE_STATS=1, which makes it time
each stage of each record with the thread's CPU clock and print the sums
at exit. Timing costs a little itself; the totals are taken from the runs
without it, so the split is a proportion applied to a clean total.

Output: one line per program and stage in ns per exec (median of the
rounds); the BPF time per exec against the floor's, as the median of the
rounds' ratios with their spread (target: at most 1.3x), the kernel
judge's cost with 10 rules beside it; and the daemon's CPU per record
(target: at most 2 us).
"""
import argparse
import ctypes
import json
import os
import re
import shutil
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
FLOOR = os.environ.get("FLOOR", os.path.join(OUT, "bench", "floor"))
FLOOR_RATIO = 1.3           # BPF per traced exec against the floor's
RECORD_NS = 2000            # the daemon's CPU per record in the spawn loop
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
        """(exec records, records of execs and exits) written so far."""
        n = m = 0
        with open(self.out, "rb") as f:
            for line in f:
                head = line[:40]
                if b'"type":"exec' in head:
                    n += 1
                    m += 1
                elif b'"type":"exit"' in head:
                    m += 1
        return n, m

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


def floor_snapshot():
    """{name: (run_time_ns, run_cnt)} of the floor's programs."""
    r = subprocess.run(["bpftool", "-j", "prog", "show"], stdout=subprocess.PIPE, check=True)
    snap = {}
    for p in json.loads(r.stdout):
        if p.get("name", "").startswith("floor_"):
            t, c = snap.get(p["name"], (0, 0))
            snap[p["name"]] = (t + p.get("run_time_ns", 0), c + p.get("run_cnt", 0))
    return snap


def prog_delta(p0, p1, execs):
    progs = {}
    for name, (t, c) in p1.items():
        t0, k0 = p0.get(name, (0, 0))
        progs[name] = ((t - t0) / execs, (c - k0) / execs)
    return progs


def floor_run(n, workers):
    proc = subprocess.Popen([FLOOR], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        line = proc.stdout.readline()
        if line.strip() != b"ready":
            die("floor did not start: " + proc.stderr.read().decode()[-2000:])
        time.sleep(0.3)
        p0 = floor_snapshot()
        res = run_spawn(n, workers)
        execs = int(res["execs"])
        p1 = floor_snapshot()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    lost = re.search(rb"lost=(\d+)", out)
    if proc.returncode or not lost:
        die("floor failed: " + err.decode()[-2000:])
    return {"progs": prog_delta(p0, p1, execs), "lost": int(lost.group(1)), "execs": execs}


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
        time.sleep(0.35)            # past the daemon's drain delay: it has drained
        p1 = prog_snapshot(ids)
        c1 = task_cpu_ns(d.proc.pid)
        r1 = d.records()
    finally:
        err = d.stop()
    stages = {}
    for m in re.finditer(r"stage (\w+): (\d+) ns, (\d+) records", err):
        stages[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return {"progs": prog_delta(p0, p1, execs), "daemon": (c1 - c0) / execs,
            "execs_logged": (r1[0] - r0[0]) / execs, "records": (r1[1] - r0[1]) / execs,
            "stages": stages, "execs": execs}


def med(xs):
    return statistics.median(xs) if xs else 0.0


def bpf_total(run):
    return sum(t for t, _ in run["progs"].values())


def print_progs(runs, prefix="bpf   "):
    names = sorted({n for r in runs for n in r["progs"]},
                   key=lambda n: -med([r["progs"].get(n, (0, 0))[0] for r in runs]))
    for n in names:
        t = med([r["progs"].get(n, (0, 0))[0] for r in runs])
        c = med([r["progs"].get(n, (0, 0))[1] for r in runs])
        if c:
            print("  %s %-22s %7.0f ns  (%.2f runs, %.0f ns a run)" % (prefix, n, t, c, t / c))


def spread(xs):
    return "median x%.2f, min x%.2f, max x%.2f over %d rounds" % (med(xs), min(xs), max(xs), len(xs))


def ten_rules(path):
    """10 kernel rules, none of which names the spawn loop's /bin/true (enforce.py's policy(10))."""
    lines = ["default_decision: allow", "commands:",
             "  - {name: true-evil, basenames: [true], args: [EVIL], decision: deny}",
             "  - {name: scripts, paths: ['/opt/egbench/*.sh'], decision: deny}"]
    for i in range(8):
        lines.append("  - {name: n%d, basenames: [egbench-tool%d], decision: deny}" % (i, i))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--execs", type=int, default=3000, help="spawns per worker and run")
    ap.add_argument("--workers", default="1 2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-stages", action="store_true", help="no run with stage timing")
    ap.add_argument("--no-floor", action="store_true", help="no floor runs, no 10-rule runs")
    ap.add_argument("daemon_args", nargs="*")
    a = ap.parse_args()
    if os.geteuid() != 0:
        die("needs root (CAP_BPF, CAP_PERFMON)")
    fd = enable_stats()
    tmp = tempfile.mkdtemp(prefix="egstages-policy.")
    rules = ["--policy", ten_rules(os.path.join(tmp, "ten.yaml")), "--enforce"]
    ok = True
    try:
        for w in [int(x) for x in a.workers.split()]:
            floors, runs, judged = [], [], []
            for _ in range(a.rounds):
                if not a.no_floor:
                    floors.append(floor_run(a.execs, w))
                runs.append(one_run(a.daemon_args, a.execs, w, False))
                if not a.no_floor:
                    judged.append(one_run(a.daemon_args + rules, a.execs, w, False))
            srun = None if a.no_stages else one_run(a.daemon_args, a.execs, w, True)
            print("P=%d: %d rounds of %d x %d execs (median per exec)" % (w, a.rounds, w, a.execs))
            print_progs(runs)
            bpf = med([bpf_total(r) for r in runs])
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
                print("  daemon %-22s %7.0f ns  (%.1f%%: loop, ring buffer, wakeups, kernel entry)"
                      % ("other", daemon * (1 - timed / scale), 100.0 * (1 - timed / scale)))
            print("  total: BPF %.0f ns + daemon %.0f ns = %.0f ns per exec; %.2f records per exec "
                  "(%.2f exec records)" % (bpf, daemon, bpf + daemon, recs,
                                            med([r["execs_logged"] for r in runs])))
            per_rec = daemon / recs if recs else 0
            met = per_rec <= RECORD_NS
            ok = ok and met
            print("  daemon CPU per record: %.0f ns (target <= %d ns: %s)"
                  % (per_rec, RECORD_NS, "met" if met else "NOT met"))
            if floors:
                print_progs(floors, "floor ")
                fl = med([bpf_total(r) for r in floors])
                ratios = [bpf_total(r) / bpf_total(f) for r, f in zip(runs, floors)]
                met = med(ratios) <= FLOOR_RATIO
                ok = ok and met
                print("  BPF per traced exec: execgate %.0f ns, floor %.0f ns: %s (target <= x%.1f: %s)"
                      % (bpf, fl, spread(ratios), FLOOR_RATIO, "met" if met else "NOT met"))
                jb = med([bpf_total(r) for r in judged])
                jratios = [bpf_total(r) / bpf_total(f) for r, f in zip(judged, floors)]
                print("  with 10 kernel rules (--enforce): %.0f ns (handle_exec %.0f ns), %s; "
                      "the judge's own cost %+.0f ns" %
                      (jb, med([r["progs"].get("handle_exec", (0, 0))[0] for r in judged]),
                       spread(jratios), jb - bpf))
                if any(f["lost"] for f in floors):
                    print("  (the floor's ring buffer lost %d records: its figure is low)"
                          % sum(f["lost"] for f in floors))
            sys.stdout.flush()
    finally:
        os.close(fd)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok or not os.environ.get("STRICT") else 1


if __name__ == "__main__":
    sys.exit(main())
