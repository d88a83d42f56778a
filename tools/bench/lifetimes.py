#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""What exit records cost: the spawn loop under a daemon with exit records
(--exit-events=all, the default) and without (none), rounds interleaved.

    tools/bench/lifetimes.py [--execs N] [--rounds R]

Per round and setting: handle_exit's run time per call (BPF run-time
statistics: run_time_ns / run_cnt) and the daemon's CPU per exec (its CPU
clock, before the loop and after it drained). The difference between the
settings is what an exit record costs the kernel (reserving, filling and
submitting it) and the daemon (naming it after its exec, formatting and
writing it). Medians of the rounds.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import egbench  # noqa: E402


def one(mode, n, cg):
    # host-wide, as a node's agent runs (with --cgroup, handle_exit also walks the
    # exiting task's cgroup ancestors, as handle_exec does: about 0.6 us here)
    d = egbench.Daemon(["--exit-events=" + mode], pin="/sys/fs/bpf/egbench-exit")
    try:
        t0, c0 = egbench.prog_stats("handle_exit")
        cpu0 = d.cpu_ns()
        egbench.spawn(n, 1, preexec=cg.join_fn())
        # drained: every exec of the loop written (and, with exits, every exit)
        want = n
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            c = d.stats()["counters"]
            if c["written_exec"] >= want and (mode == "none" or c.get("written_exit", 0) >= want):
                break
            time.sleep(0.05)
        cpu = d.cpu_ns() - cpu0
        t1, c1 = egbench.prog_stats("handle_exit")
        return (t1 - t0) / max(c1 - c0, 1), cpu / n, d.stats()["counters"]
    finally:
        d.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--execs", type=int, default=int(os.environ.get("ITERATIONS", 3000)))
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", 5)))
    a = ap.parse_args()
    cg = egbench.Cgroup("egbench-exit")
    fd = None
    res = {"all": [], "none": []}
    try:
        egbench.bpf_stats(True)
        for _ in range(a.rounds):
            for mode in ("none", "all"):
                k, u, c = one(mode, a.execs, cg)
                res[mode].append((k, u))
                if mode == "all" and c["lost_exit"]:
                    print("lifetimes: %d exit records lost in a round (ring buffer full)" % c["lost_exit"])
    finally:
        egbench.bpf_stats(False)
        cg.remove()
    med = {m: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for m, v in res.items()}
    print("exit records, %d execs x %d rounds (median):" % (a.execs, a.rounds))
    print("  %-28s %8s %12s" % ("", "none", "all"))
    print("  %-28s %8.0f %12.0f ns" % ("handle_exit per process exit", med["none"][0], med["all"][0]))
    print("  %-28s %8.0f %12.0f ns" % ("daemon CPU per exec", med["none"][1], med["all"][1]))
    print("  an exit record costs the kernel %.0f ns and the daemon %.0f ns" %
          (med["all"][0] - med["none"][0], med["all"][1] - med["none"][1]))
    del fd


if __name__ == "__main__":
    main()
