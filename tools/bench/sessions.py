#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Cost and scale of supervised sessions (execgate exec).

1. The spawn loop outside a session (A) and inside one with an allow-all
   policy (B), a daemon running for both, interleaved A B A B ...: the
   median extra time per round (target <= 3%), and the supervisor's own
   latency per exec (receipt of the notification to the answer, p50 and
   p99 in microseconds, from the daemon's stats). Also CPU time per exec,
   which other load on the machine moves far less than elapsed time: the
   daemon's (all its threads, its CPU-time clock) in A and B, the difference being
   what supervising costs it, and the spawn loop's own (the exec'ing
   tasks: the trap, the BPF ticket check). A third loop (C), interleaved
   with the others, supervises its own execs with the least a seccomp
   supervisor can do (spawn -S: trap execve, answer CONTINUE at once,
   nothing read, resolved or logged): C/A is the floor under B/A on this
   machine. The bare supervisor is a process of its own, as a
   session's supervisor is: the loop's children trap before their exec,
   while they still share the loop's memory, so a supervising thread of
   the loop itself (spawn -s, shown beside it) is spared the switch of
   address space at each hand-over, which no supervisor of another
   program is. A fourth (D) is that bare supervisor taking as long to
   answer as the daemon's did so far (spawn -S -w P50, a busy spin): what
   a supervisor's latency costs here, whatever its work. A fifth (F) is
   the bare supervisor making, once each before it answers, the system
   calls the daemon makes for an allowed exec (spawn -F): the floor of
   the same facts, the figure 3a is also shown against.
2. 50 sessions at once, 200 execs each, with mixed decisions (allowed,
   denied, audited): every verdict right, every exec logged exactly once,
   and the daemon's open file descriptors back to where they were once the
   sessions ended.

  tools/bench/sessions.py [--execs N] [--rounds R] [--sessions S] [--per-session E] [--no-scale]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import egbench as eb  # noqa: E402

TARGET_PCT = 3.0

SCALE_POLICY = """
commands:
  - {name: no-denyme, basenames: [denyme], decision: deny}
  - {name: flag-auditme, basenames: [auditme], decision: audit}
"""


def overhead(o, work):
    allow = os.path.join(work, "allow.yaml")
    with open(allow, "w") as f:
        f.write("default_decision: allow\n")
    d = eb.Daemon([])
    try:
        pairs, dcpu, scpu, floor, slow, bare, lat, lcpu = [], [], [], [], [], [], [], []
        bare_thread, facts = [], []
        for r in range(o.rounds):
            c0, l0 = d.cpu_ns(), d.loop_cpu_ns()
            a = eb.spawn_fields(o.execs)
            c1, l1 = d.cpu_ns(), d.loop_cpu_ns()
            b = eb.spawn_fields(o.execs, prefix=[eb.EXECGATE, "exec", "-p", d.pin, "--policy", allow, "--"])
            c2, l2 = d.cpu_ns(), d.loop_cpu_ns()
            lcpu.append(((l1 - l0) / o.execs / 1e3, (l2 - l1) / o.execs / 1e3))
            c = eb.spawn_fields(o.execs, args=["-S"])
            t = eb.spawn_fields(o.execs, args=["-s"])
            f = eb.spawn_fields(o.execs, args=["-F"])
            facts.append(f.get("sup_cpu_ns", 0) / o.execs / 1e3)
            p50 = d.stats()["counters"]["sessions"]["supervisor_latency_p50_us"]
            e = eb.spawn_fields(o.execs, args=["-S", "-w", str(p50)])
            bare.append(c.get("sup_cpu_ns", 0) / o.execs / 1e3)
            bare_thread.append(t.get("sup_cpu_ns", 0) / o.execs / 1e3)
            lat.append(((b["p50_ns"] - a["p50_ns"]) / 1e3, (c["p50_ns"] - a["p50_ns"]) / 1e3))
            pairs.append((a["elapsed_ns"], b["elapsed_ns"]))
            floor.append((a["elapsed_ns"], c["elapsed_ns"]))
            slow.append((a["elapsed_ns"], e["elapsed_ns"]))
            dcpu.append(((c1 - c0) / o.execs / 1e3, (c2 - c1) / o.execs / 1e3))
            scpu.append((a.get("cpu_ns", 0) / o.execs / 1e3, b.get("cpu_ns", 0) / o.execs / 1e3))
            print("  round %2d: A %.1f ms  B %.1f ms  B/A %+.2f%%  C/A %+.2f%%  D/A %+.2f%% (%d us)  "
                  "daemon CPU/exec A %.1f us B %.1f us  bare supervisor CPU/exec %.1f us (a thread "
                  "of the loop: %.1f us; making the daemon's system calls: %.1f us)  spawn CPU/exec A %.0f us "
                  "B %.0f us"
                  % (r + 1, a["elapsed_ns"] / 1e6, b["elapsed_ns"] / 1e6,
                     (b["elapsed_ns"] / a["elapsed_ns"] - 1) * 100,
                     (c["elapsed_ns"] / a["elapsed_ns"] - 1) * 100,
                     (e["elapsed_ns"] / a["elapsed_ns"] - 1) * 100, p50, dcpu[-1][0], dcpu[-1][1],
                     bare[-1], bare_thread[-1], facts[-1], scpu[-1][0], scpu[-1][1]))
        s = d.stats()["counters"]["sessions"]
        calls = syscalls_per_exec(d, allow, min(o.execs, 300))
    finally:
        d.stop()
    med, q1, q3 = eb.median_pct(pairs)
    print("  median extra time in a session: %+.2f%% (quartiles %+.2f%% .. %+.2f%%); target <= %.1f%%: %s"
          % (med, q1, q3, TARGET_PCT, "met" if med <= TARGET_PCT else "NOT met"))
    fmed, fq1, fq3 = eb.median_pct(floor)
    print("  floor: a bare supervisor (trap, answer at once) adds %+.2f%% (quartiles %+.2f%% .. %+.2f%%)"
          % (fmed, fq1, fq3))
    smed, sq1, sq3 = eb.median_pct(slow)
    print("  a bare supervisor that answers after as long as the daemon (its p50, spinning) adds %+.2f%% "
          "(quartiles %+.2f%% .. %+.2f%%)" % (smed, sq1, sq3))
    print("  CPU per exec (medians): daemon %.1f us in a session, %.1f us outside (supervising: %+.1f us); "
          "spawn loop %.0f us in a session, %.0f us outside (%+.1f us)"
          % (statistics.median(b for _, b in dcpu), statistics.median(a for a, _ in dcpu),
             statistics.median(b - a for a, b in dcpu), statistics.median(b for _, b in scpu),
             statistics.median(a for a, _ in scpu), statistics.median(b - a for a, b in scpu)))
    print("  of the daemon's CPU in a session, its event loop (the tracer's records, the log, the verdicts' "
          "join) %.1f us per exec (%.1f us outside), the supervising threads (receive, read, resolve, "
          "judge, ticket, answer) %.1f us" %
          (statistics.median(b for _, b in lcpu), statistics.median(a for a, _ in lcpu),
           statistics.median(b - lb for (_, b), (_, lb) in zip(dcpu, lcpu))))
    print("  supervisor latency per exec: p50 %d us, p99 %d us, max %d us (%d execs; bucket low ends)"
          % (s["supervisor_latency_p50_us"], s["supervisor_latency_p99_us"],
             s["supervisor_latency_max_us"], s["supervisor_latency_count"]))
    med = statistics.median
    eb.target("3a (daemon CPU per session exec)", med(b for _, b in dcpu) * 1e3, med(bare) * 1e3, 2.0,
              note="floor: the bare supervisor, a process of its own; the daemon's supervising alone "
              "(B - A) %.1f us; a bare supervising thread of the loop itself (which shares the trapped "
              "task's memory) %.1f us" % (med(b - a for a, b in dcpu), med(bare_thread)))
    print("  3a against the same facts: the daemon's %.1f us per session exec is x%.2f a bare supervisor "
          "that makes the daemon's system calls for an allowed exec, once each, before it answers (spawn -F: "
          "the facts program's run, process_vm_readv, openat2, fstat, readlinkat, close, the ticket: "
          "%.1f us, x%.2f the bare supervisor); the rest is the daemon's own code and its event loop"
          % (med(b for _, b in dcpu), med(b for _, b in dcpu) / max(med(facts), 1e-9), med(facts),
             med(facts) / max(med(bare), 1e-9)))
    eb.target("3b (extra p50 latency of an exec in a session)", med(x for x, _ in lat) * 1e3,
              med(y for _, y in lat) * 1e3, 2.0, note="floor: under the bare supervisor")
    if calls:
        total, top = calls
        print("  system calls per session exec: daemon %.1f (%s); the bare supervisor 2 "
              "(SECCOMP_IOCTL_NOTIF_RECV, _SEND)" % (total, ", ".join("%s %.1f" % kv for kv in top)))


def syscalls_per_exec(d, allow, n):
    """The daemon's system calls per session exec (strace -c, an untimed run), and the most made."""
    sc = eb.SyscallCount(d.proc.pid, os.path.join(os.path.dirname(d.out), "strace.txt"))
    if not sc.st:
        return None
    eb.spawn_fields(n, prefix=[eb.EXECGATE, "exec", "-p", d.pin, "--policy", allow, "--"])
    # the session's own setup and end (exec, its listener, the control calls) are a few dozen
    return eb.per_unit(sc.stop(), n)


def scale(o, work):
    bindir = os.path.join(work, "bin")
    os.makedirs(bindir)
    os.chmod(work, 0o755)
    for n in ("okme", "denyme", "auditme"):
        shutil.copy("/bin/true", os.path.join(bindir, n))
    pf = os.path.join(work, "scale.yaml")
    with open(pf, "w") as f:
        f.write(SCALE_POLICY)
    d = eb.Daemon(["--policy", pf])
    try:
        time.sleep(0.5)
        base_fds = d.fds()
        script = ("for i in $(seq %d); do case $((i %% 3)) in 0) %s/denyme x ;; 1) %s/okme x ;; "
                  "2) %s/auditme x ;; esac; echo \"$i $?\"; done" % (o.per_session, bindir, bindir, bindir))
        results = {}

        def one(k):
            r = subprocess.run([eb.EXECGATE, "exec", "-p", d.pin, "--session", "bench%d" % k, "--",
                                "/bin/sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               timeout=900)
            results[k] = r

        t0 = time.monotonic()
        threads = [threading.Thread(target=one, args=(k,)) for k in range(o.sessions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - t0
        wrong = 0
        for k, r in results.items():
            for line in r.stdout.decode().split("\n"):
                if not line:
                    continue
                i, rc = (int(x) for x in line.split())
                want = 126 if i % 3 == 0 else 0
                wrong += rc != want
        total = o.sessions * o.per_session
        got = sum(len([l for l in r.stdout.decode().split("\n") if l]) for r in results.values())
        time.sleep(2)
        evs = [e for e in d.events() if e.get("session") and e.get("type") in ("exec", "exec_failed")]
        seen = {}
        for e in evs:
            base = os.path.basename(e.get("filename") or e.get("path_requested") or "")
            if base in ("okme", "denyme", "auditme") and "x" in e.get("argv", []):
                key = (e["session"], e["exec_id"] if e["type"] == "exec" else e["time"])
                seen[key] = seen.get(key, 0) + 1
        logged = len(seen)
        dup = sum(1 for v in seen.values() if v > 1)
        decisions = {}
        for e in evs:
            base = os.path.basename(e.get("filename") or e.get("path_requested") or "")
            if base in ("okme", "denyme", "auditme"):
                decisions.setdefault(base, set()).add(e.get("decision"))
        deadline = time.monotonic() + 10
        while d.fds() != base_fds and time.monotonic() < deadline:
            time.sleep(0.2)
        fds = d.fds()
    finally:
        d.stop()
    print("  %d sessions x %d execs in %.1f s: %d results, %d wrong verdicts; %d execs logged, %d twice; "
          "decisions %s; daemon fds %d before, %d after"
          % (o.sessions, o.per_session, elapsed, got, wrong, logged, dup,
             {k: sorted(v) for k, v in decisions.items()}, base_fds, fds))
    ok = (got == total and not wrong and logged == total and not dup and fds == base_fds and
          decisions.get("denyme") == {"deny"} and decisions.get("okme") == {"allow"} and
          decisions.get("auditme") == {"audit"})
    print("  scale: %s" % ("every verdict right, every exec logged once, fds back" if ok else "FAILED"))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--execs", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--per-session", type=int, default=200)
    ap.add_argument("--no-scale", action="store_true", help="only the overhead (1.)")
    o = ap.parse_args()
    work = tempfile.mkdtemp(prefix="egbench-sessions.")
    try:
        print("== sessions: spawn loop outside (A) and inside (B) a session, %d rounds of %d execs"
              % (o.rounds, o.execs))
        overhead(o, work)
        ok = True
        if not o.no_scale:
            print("== sessions: %d at once, %d execs each, mixed decisions" % (o.sessions, o.per_session))
            ok = scale(o, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
