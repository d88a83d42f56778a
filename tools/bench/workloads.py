#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Real workloads under each way of running execgate (issue 20, target 4).

    tools/bench/workloads.py [--rounds R] [--build-rounds B] [--only configure|build] [--setups none,audit,...]

Two workloads: an autoconf ./configure (tools/bench/workload/configure.ac
made into ./configure by autoconf and autoheader, about 1,450 execs and
1,300 failed PATH lookups: compilers, linkers, sed, grep, rm), and this
project's own clean build (make -j2 all into an output directory of its
own). Each runs in a cgroup of its own, under five setups, interleaved
round by round in this order:

  none       nothing traces
  audit      execgate daemon, scoped to the workload's cgroup
  host-audit the same with --policy policy/host-audit.yaml
  session    the audit daemon, and the workload inside
             execgate exec --policy policy/agent-sandbox.yaml
  bare       no daemon: the workload under the least a seccomp supervisor
             does (spawn -S -- CMD: trap execve and execveat, answer
             CONTINUE at once), the floor of the session setup
  enforce    execgate daemon --enforce with 1,000 rules (enforce.py's)

Per setup: wall time and CPU (the workload's user + system time, its
children's rusage) against the same round's `none`, as the median ratio
with min and max over the rounds; the tracer's CPU (the daemon's
process CPU-time clock, all its threads) per exec the daemon recorded.
The daemon is scoped to the cgroup so that a shared host's other execs
are neither recorded nor counted.

Target 3's real build: the daemon's CPU per notification in the session
setup (one per execve or execveat of the tree, found or not: its exec
and exec_failed records) against the bare supervisor's in the same
round, which counts the notifications it answers. Then one more session
run, untimed, with strace -f -c on the daemon: its system calls per
notification (where strace is installed).
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import egbench as eb  # noqa: E402
import enforce  # noqa: E402

ROOT = eb.ROOT
SETUPS = ("none", "audit", "host-audit", "session", "bare", "enforce")
AUX = "/usr/share/autoconf/build-aux"


def prepare_configure(work):
    src = os.path.join(work, "configure-src")
    os.makedirs(src)
    shutil.copy(os.path.join(ROOT, "tools", "bench", "workload", "configure.ac"), src)
    with open(os.path.join(src, "out.txt.in"), "w") as f:
        f.write("@PACKAGE_NAME@\n")
    for n in ("config.guess", "config.sub", "install-sh"):
        if os.path.exists(os.path.join(AUX, n)):
            shutil.copy(os.path.join(AUX, n), src)
    for tool in ("autoconf", "autoheader"):
        r = subprocess.run([tool], cwd=src, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if r.returncode:
            eb.die("%s: %s (tools/install-deps.sh bench installs autoconf)" % (tool, r.stderr.decode()[-500:]))
    return src


def configure_cmd(src, work):
    """A fresh copy each run (config.cache, conftest files): returns the command and its directory."""
    d = tempfile.mkdtemp(prefix="run.", dir=work)
    for n in os.listdir(src):
        p = os.path.join(src, n)
        if os.path.isfile(p):
            shutil.copy(p, d)
    return ["./configure", "-q"], d


def build_cmd(work):
    out = tempfile.mkdtemp(prefix="build.", dir=work)
    return ["make", "-s", "-C", ROOT, "OUTPUT=" + out, "-j2", "all"], work


def run_one(setup, cmd, cwd, cg, pin, pol, count_calls=False):
    args = {"none": None, "audit": [], "host-audit": ["--policy", os.path.join(ROOT, "policy", "host-audit.yaml")],
            "session": [], "bare": None, "enforce": ["--policy", pol, "--enforce"]}[setup]
    d = None
    if args is not None:
        d = eb.Daemon(args + ["--cgroup", cg], pin=pin)
    try:
        prefix = []
        if setup == "session":
            prefix = [eb.EXECGATE, "exec", "-p", pin, "--policy",
                      os.path.join(ROOT, "policy", "agent-sandbox.yaml"), "--"]
        elif setup == "bare":
            prefix = [eb.SPAWN, "-S", "--"]
        sc = eb.SyscallCount(d.proc.pid, os.path.join(d.dir, "strace.txt")) if count_calls else None
        c0 = d.cpu_ns() if d else 0
        l0 = d.loop_cpu_ns() if d else 0
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        r = subprocess.run(prefix + cmd, cwd=cwd, stdout=subprocess.PIPE if setup == "bare" else subprocess.DEVNULL,
                           stderr=subprocess.PIPE,
                           preexec_fn=lambda: open(os.path.join(cg, "cgroup.procs"), "w").write("0"))
        wall = time.monotonic() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r.returncode:
            eb.die("%s under %s failed: %s" % (cmd[0], setup, r.stderr.decode()[-1000:]))
        execs = notes = 0
        tracer = loop = 0
        calls = sc.stop() if sc else None
        if d:
            time.sleep(0.2)             # past the drain delay
            tracer = d.cpu_ns() - c0
            loop = d.loop_cpu_ns() - l0
            with open(d.out, "rb") as f:
                for line in f:
                    if b'"type":"exec"' in line[:40]:
                        execs += 1
                    elif b'"type":"exec_failed"' in line[:48]:
                        notes += 1
            notes += execs
        elif setup == "bare":
            # the bare supervisor's own line, after whatever the command printed
            f = {}
            for line in r.stdout.decode(errors="replace").splitlines():
                if line.startswith("elapsed_ns=") and "notifications=" in line:
                    f = dict(kv.split("=", 1) for kv in line.split())
            if not f:
                eb.die("%s printed no notifications=: not this tree's spawn? (SPAWN= names it)" % eb.SPAWN)
            tracer, notes = int(f["sup_cpu_ns"]), int(f["notifications"])
    finally:
        if d:
            d.stop()
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"wall": wall, "cpu": cpu, "tracer_ns": tracer, "loop_ns": loop, "execs": execs,
            "notifications": notes, "calls": calls}


def spread(xs):
    return "median x%.3f (min x%.3f, max x%.3f)" % (statistics.median(xs), min(xs), max(xs))


def bench(name, make_cmd, rounds, cg, pin, pol, setups=SETUPS):
    runs = {s: [] for s in setups}
    for r in range(rounds):
        for s in setups:
            cmd, cwd = make_cmd()
            runs[s].append(run_one(s, cmd, cwd, cg, pin, pol))
        print("  round %d: %s" % (r + 1, "  ".join("%s %.1f s" % (s, runs[s][-1]["wall"]) for s in setups)))
        sys.stdout.flush()
    print("%s: %d rounds; none took %.1f s wall, %.1f s CPU (medians)"
          % (name, rounds, statistics.median(x["wall"] for x in runs["none"]),
             statistics.median(x["cpu"] for x in runs["none"])))
    for s in setups[1:]:
        walls = [x["wall"] / n["wall"] for x, n in zip(runs[s], runs["none"])]
        cpus = [x["cpu"] / n["cpu"] for x, n in zip(runs[s], runs["none"])]
        if s == "bare":
            per = [x["tracer_ns"] / x["notifications"] / 1e3 for x in runs[s] if x["notifications"]]
            print("  %-10s wall %s; CPU %s; supervisor CPU per notification %.1f us (%d notifications)"
                  % (s, spread(walls), spread(cpus), statistics.median(per) if per else 0,
                     statistics.median(x["notifications"] for x in runs[s])))
            continue
        per = [x["tracer_ns"] / x["execs"] / 1e3 for x in runs[s] if x["execs"]]
        print("  %-10s wall %s; CPU %s; tracer CPU per exec %.1f us (%d execs recorded)"
              % (s, spread(walls), spread(cpus), statistics.median(per) if per else 0,
                 statistics.median(x["execs"] for x in runs[s])))
    if "session" in setups and "bare" in setups:
        # per notification, each round against its own floor
        sess = [x["tracer_ns"] / x["notifications"] for x in runs["session"] if x["notifications"]]
        bare = [x["tracer_ns"] / x["notifications"] for x in runs["bare"] if x["notifications"]]
        ratios = [a / b for a, b in zip(sess, bare) if b]
        # one more session run, untimed, under strace: the daemon's system calls per notification
        cmd, cwd = make_cmd()
        x = run_one("session", cmd, cwd, cg, pin, pol, count_calls=True)
        if x["calls"] and x["notifications"]:
            total, top = eb.per_unit(x["calls"], x["notifications"])
            print("  system calls per notification in a session %s: daemon %.1f (%s); the bare supervisor 2 "
                  "(SECCOMP_IOCTL_NOTIF_RECV, _SEND)" % (name, total, ", ".join("%s %.2f" % kv for kv in top)))
        if sess and bare:
            # what the daemon does that the bare supervisor does not: its event loop writes the records
            loops = [x["loop_ns"] / x["notifications"] for x in runs["session"] if x["notifications"]]
            sup = [a - b for a, b in zip(sess, loops)]
            print("  of the daemon's CPU per notification in a session %s: event loop (records, log) %.1f us, "
                  "supervising threads %.1f us (x%.2f the bare supervisor)"
                  % (name, statistics.median(loops) / 1e3, statistics.median(sup) / 1e3,
                     statistics.median(sup) / statistics.median(bare)))
            eb.target("3 (real build: daemon CPU per notification in a session %s)" % name,
                      statistics.median(sess), statistics.median(bare), 2.0,
                      note="floor: the bare supervisor (spawn -S -- CMD); per round %s; %d and %d "
                           "notifications" % (", ".join("x%.2f" % x for x in ratios),
                                              statistics.median(x["notifications"] for x in runs["session"]),
                                              statistics.median(x["notifications"] for x in runs["bare"])))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds of ./configure")
    ap.add_argument("--build-rounds", type=int, default=1, help="rounds of the clean build")
    ap.add_argument("--only", choices=("configure", "build"))
    ap.add_argument("--setups", default=",".join(SETUPS), help="which setups, none first")
    a = ap.parse_args()
    setups = tuple(a.setups.split(","))
    if setups[0] != "none" or not set(setups) <= set(SETUPS):
        eb.die("--setups: a list of %s, none first" % ", ".join(SETUPS))
    if os.geteuid() != 0:
        eb.die("needs root")
    work = tempfile.mkdtemp(prefix="egbench-workloads.")
    os.chmod(work, 0o755)
    cg = os.path.join(eb.CGROUP2, "egbench-workload")
    os.makedirs(cg, exist_ok=True)
    pin = "/sys/fs/bpf/egbench-workload"
    try:
        pol = enforce.policy(1000, os.path.join(work, "rules1000.yaml"))
        if a.only != "build":
            src = prepare_configure(work)
            print("== workloads: autoconf ./configure (%s)" % ", ".join(setups))
            bench("configure", lambda: configure_cmd(src, work), a.rounds, cg, pin, pol, setups)
        if a.only != "configure" and a.build_rounds:
            print("== workloads: this project's clean build, make -j2 all (%s)" % ", ".join(setups))
            bench("build", lambda: build_cmd(work), a.build_rounds, cg, pin, pol, setups)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        try:
            os.rmdir(cg)
        except OSError:
            pass


if __name__ == "__main__":
    main()
