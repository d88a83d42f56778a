#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Cost of kernel enforcement (execgate daemon --enforce) on this kernel.

1. The BPF run time per exec of handle_exec (where the kernel judges, on
   kernels without BPF LSM), read with kernel.bpf_stats_enabled, with no
   rules (audit) and with 10, 100, 1000 and 10000 compiled rules. Rules
   are found by hash lookups (a name, a file), so the cost must grow much
   slower than the rule count.
2. The spawn loop with an audit daemon (A) and with --enforce and 1000
   rules (B), interleaved A B A B ...: the median extra time per round.

The load runs in a cgroup of its own and the daemons are scoped to it
(--cgroup): the host's other execs are never judged.

  tools/bench/enforce.py [--execs N] [--rounds R] [--rules "10 100 1000 10000"]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import egbench as eb  # noqa: E402

TARGET_PCT = 1.0


def policy(n, path):
    lines = ["default_decision: allow", "commands:"]
    # a few rules the load meets: true is a candidate, its argv is read
    lines.append("  - {name: true-evil, basenames: [true], args: [EVIL], decision: deny}")
    lines.append("  - {name: scripts, paths: ['/opt/egbench/*.sh'], decision: deny}")
    for i in range(n):
        k = i % 20
        if k < 15:
            lines.append("  - {name: n%d, basenames: [tool%d], decision: deny}" % (i, i))
        elif k < 18:
            lines.append("  - {name: p%d, paths: [/opt/egbench/bin%d], decision: deny}" % (i, i))
        elif k < 19:
            lines.append("  - {name: a%d, basenames: [tool%d], args: ['--force|-f'], decision: deny}" % (i, i))
        else:
            lines.append("  - {name: u%d, basenames: [tool%d], uids: [65534], context: [nested], "
                         "decision: deny}" % (i, i))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


# one kind of rule, n of them: what each costs an exec it does not name
KINDS = {
    "names": lambda i: "basenames: [tool%d]" % i,
    "paths": lambda i: "paths: [/opt/egbench/bin%d]" % i,
    "path-globs": lambda i: "paths: ['/opt/egbench/d%d/*']" % i,
    "path-tails": lambda i: "paths: ['*.egx%d']" % i,
    "args": lambda i: "basenames: [tool%d], args: ['--force|-f']" % i,
}


def kind_policy(kind, n, path):
    lines = ["default_decision: allow", "commands:"]
    for i in range(n):
        lines.append("  - {name: r%d, %s, decision: deny}" % (i, KINDS[kind](i)))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def bpf_cost(cg, args, execs):
    d = eb.Daemon(args + ["--cgroup", cg.path])
    try:
        eb.bpf_stats(True)
        t0, c0 = eb.prog_stats("handle_exec")
        eb.spawn(execs, preexec=cg.join_fn())
        t1, c1 = eb.prog_stats("handle_exec")
        eb.bpf_stats(False)
        st = d.stats()["counters"]
    finally:
        d.stop()
    if c1 - c0 < execs:
        eb.die("handle_exec ran %d times for %d execs" % (c1 - c0, execs))
    return (t1 - t0) / (c1 - c0), st


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--execs", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--rules", default="10 100 1000 10000")
    o = ap.parse_args()
    cg = eb.Cgroup("egbench")
    tmp = os.path.join("/tmp", "egbench-policy-%d" % os.getpid())
    os.makedirs(tmp, exist_ok=True)
    try:
        print("== kernel enforcement: BPF run time of handle_exec per exec (%d execs each)" % o.execs)
        base, _ = bpf_cost(cg, [], o.execs)
        print("  %-22s %8.0f ns" % ("audit (no rules)", base))
        costs = {}
        for n in [int(x) for x in o.rules.split()]:
            p = policy(n, os.path.join(tmp, "p%d.yaml" % n))
            ns, st = bpf_cost(cg, ["--policy", p, "--enforce"], o.execs)
            costs[n] = ns
            if st["kernel_judged"] < o.execs or st["kernel_errors"]:
                eb.die("with %d rules: %d judged, %d errors" % (n, st["kernel_judged"], st["kernel_errors"]))
            print("  %-22s %8.0f ns  (+%.0f ns for the judgement)" % ("%d rules" % n, ns, ns - base))
        ns_list = sorted(costs)
        if len(ns_list) >= 2:
            lo, hi = ns_list[0], ns_list[-1]
            print("  handle_exec x%.2f per exec for x%d rules (%d -> %d); a scan would grow with the rules"
                  % (costs[hi] / costs[lo], hi // lo, lo, hi))

        # each kind alone: names, literal paths, path globs by their directory or tail, argv words
        print("== kernel enforcement: handle_exec per exec by rule kind (%d execs each)" % o.execs)
        for kind in KINDS:
            row = {}
            for n in [int(x) for x in o.rules.split()]:
                p = kind_policy(kind, n, os.path.join(tmp, "k-%s-%d.yaml" % (kind, n)))
                row[n], st = bpf_cost(cg, ["--policy", p, "--enforce"], o.execs)
                if st["kernel_errors"]:
                    eb.die("%s x%d: %d kernel errors" % (kind, n, st["kernel_errors"]))
            lo, hi = min(row), max(row)
            print("  %-11s " % kind + "  ".join("%5d: %6.0f ns" % (n, row[n]) for n in sorted(row)) +
                  "   x%.2f for x%d rules" % (row[hi] / row[lo], hi // lo))
        # the figure: 2,500 path globs against 10 rules (target: at most 1.5x)
        ten = bpf_cost(cg, ["--policy", policy(10, os.path.join(tmp, "p10.yaml")), "--enforce"], o.execs)[0]
        globs = bpf_cost(cg, ["--policy", kind_policy("path-globs", 2500, os.path.join(tmp, "g2500.yaml")),
                              "--enforce"], o.execs)[0]
        print("  2,500 path globs: %.0f ns against %.0f ns with 10 rules: x%.2f (target <= 1.5: %s)"
              % (globs, ten, globs / ten, "met" if globs / ten <= 1.5 else "NOT met"))

        # agent contexts: every exec is looked up against the contexts' identities
        print("== agent contexts: handle_exec per exec, 10 rules (A) and the same with 4 contexts of "
              "2 identities each (B), 3 interleaved runs")
        pa = policy(10, os.path.join(tmp, "ca.yaml"))
        pb = os.path.join(tmp, "cb.yaml")
        with open(pa) as f:
            body = f.read()
        ctxs = ["contexts:"]
        for i in range(4):
            ctxs.append("  - name: agent%d" % i)
            ctxs.append("    identities: [{paths: [/opt/agent%d/cli.js]}, {paths: [/opt/agent%d/bin/agent]}]" % (i, i))
            ctxs.append("    limits: {max_depth: 20, max_consecutive_shells: 4}")
        with open(pb, "w") as f:
            f.write("\n".join(ctxs) + "\n" + body)
        ca, cb = [], []
        for r in range(3):
            ca.append(bpf_cost(cg, ["--policy", pa, "--enforce"], o.execs)[0])
            cb.append(bpf_cost(cg, ["--policy", pb, "--enforce"], o.execs)[0])
        ma, mb = sorted(ca)[1], sorted(cb)[1]
        print("  A %.0f ns  B %.0f ns per exec: contexts cost %+.0f ns (%+.1f%%); an exec inside a "
              "context adds two map reads to that" % (ma, mb, mb - ma, (mb / ma - 1) * 100))

        print("== kernel enforcement: spawn loop, audit (A) vs --enforce with 1000 rules (B), "
              "%d rounds of %d execs" % (o.rounds, o.execs))
        p = policy(1000, os.path.join(tmp, "p1000.yaml"))
        pairs = []
        for r in range(o.rounds):
            times = []
            for args in ([], ["--policy", p, "--enforce"]):
                d = eb.Daemon(args + ["--cgroup", cg.path])
                try:
                    times.append(eb.spawn(o.execs, preexec=cg.join_fn()))
                finally:
                    d.stop()
            pairs.append(tuple(times))
            print("  round %2d: A %.1f ms  B %.1f ms  B/A %+.2f%%" %
                  (r + 1, times[0] / 1e6, times[1] / 1e6, (times[1] / times[0] - 1) * 100))
        med, q1, q3 = eb.median_pct(pairs)
        print("  median extra time with --enforce: %+.2f%% (quartiles %+.2f%% .. %+.2f%%); target <= %.1f%%: %s"
              % (med, q1, q3, TARGET_PCT, "met" if med <= TARGET_PCT else "NOT met"))
    finally:
        cg.remove()
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)


if __name__ == "__main__":
    main()
