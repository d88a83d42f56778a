# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Supervised sessions: `execgate exec -- CMD` on this kernel.

Every exec in a session's tree goes through the policy before it happens;
these tests run real commands in real sessions and check what ran, what
was refused (EACCES and the line on stderr), what waited for an approval,
and what the kernel killed because it was not what the supervisor allowed.
Each attack is tried: a racing thread rewriting argv or the path, nested
sessions with a laxer policy, restricted sessions through every way a
shell or a program can spawn, self-approval, a dead daemon."""
import json
import os
import shlex
import signal
import shutil
import socket
import struct
import subprocess
import threading
import select
import time

import eg
from eg import token

POLICY = """
sandbox: {seccomp: {execve: {approval_timeout: 4s}}}
commands:
  - {name: no-net, basenames: [curl, wget], decision: deny, message: "no network tools"}
  - {name: ask-touch, basenames: [touch], context: [nested], decision: approval, message: "touch needs a yes"}
  - {name: marker-evil, basenames: [marker], args: [EVIL], decision: deny}
"""


def write(ctx, text, name="policy.yaml"):
    path = os.path.join(ctx.tmpdir(), name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    os.chmod(os.path.dirname(path), 0o755)
    return path


def session(ctx, d, cmd, *opts, user=None, timeout=60, check_rc=None, env=None):
    argv = [ctx.execgate, "exec", "-p", d.pin_path] + list(opts) + ["--"] + cmd
    kw = {}
    if user:
        kw.update(user=user, group="nogroup" if user == "nobody" else user, extra_groups=[])
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                       env=env, **kw)
    if check_rc is not None:
        assert r.returncode == check_rc, (r.returncode, r.stderr.decode()[-800:])
    return r


def evs(d, tok, typ=None):
    """Events of execs inside sessions with tok as one of their arguments."""
    return [e for e in d.events() if (not typ or e.get("type") == typ) and e.get("session") and
            tok in e.get("argv", [])]


def need_fuse(ctx):
    """Skips the test (saying why) where FUSE cannot be served here."""
    if not os.path.exists("/dev/fuse"):
        ctx.skip("no /dev/fuse on this machine")
    with open("/proc/filesystems") as f:
        if not any(l.split()[-1] == "fuse" for l in f if l.strip()):
            ctx.skip("the kernel has no FUSE")


def wait(pred, timeout=10, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("no %s within %ss" % (what, timeout))


def daemon(ctx, policy=POLICY, *args):
    return ctx.daemon("--policy", write(ctx, policy), *args)


# ---- starting a session -----------------------------------------------------

def test_exit_status_depth_and_argv0(ctx):
    d = daemon(ctx)
    t = token()
    r = session(ctx, d, ["sh", "-c", 'echo "$0"; /bin/true %s; exit 7' % t], "--argv0", "myname-" + t)
    assert r.returncode == 7, r.stderr
    assert r.stdout.decode().strip() == "myname-" + t, "--argv0 sets $0"
    sh = wait(lambda: [e for e in d.events() if e.get("type") == "exec" and e.get("session") and
                       e["argv"][0] == "myname-" + t], what="the direct exec")[0]
    # the command is the session's depth 0; the host's depth is never reset by a launcher
    assert sh["session_depth"] == 0 and sh["depth"] >= 1 and sh["session"], sh
    assert sh["filename"] == os.path.realpath("/bin/sh") and sh["layer"] == "seccomp", sh
    child = wait(lambda: evs(d, t, "exec"), what="the nested exec")[0]
    assert child["session_depth"] == 1 and child["depth"] == sh["depth"] + 1, child
    assert child["session"] == sh["session"], child
    assert child["action"] == "allowed" and child["decision"] == "allow", child
    start = [e for e in d.events() if e.get("type") == "session" and e.get("event") == "start"]
    assert start and start[-1]["session"] == sh["session"], start
    assert "seccomp" in d.events()[0]["enforcement"], d.events()[0]
    # the listener hands the CPU over synchronously where the kernel can (6.6+)
    st = json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)["counters"]["sessions"]
    if tuple(int(x) for x in os.uname().release.split(".")[:2]) >= (6, 6):
        assert st["sync_wakeups"] >= 1, st


def test_a_failed_exec_left_unrecorded_lends_no_verdict(ctx):
    """A verdict whose record never comes (a failed exec with --exec-failed=none) is no later
    exec's. The daemon matched a record with its thread's oldest waiting verdict of the same
    file: the next exec of that file, allowed by no rule, was written with the failed exec's
    audit rule. Now a record takes its thread's newest verdict issued before it."""
    pol = POLICY + "  - {name: audit-marker-x, basenames: [marker], args: [X], decision: audit}\n"
    d = daemon(ctx, pol, "--exec-failed", "none")
    t = token()
    # one thread: the exec that fails, then the one that runs
    code = ("import os, sys\n"
            "m, t = sys.argv[1], sys.argv[2]\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    try:\n"
            "        os.execve(m, [m, 'X', t], {'A': 'y' * 200000})\n"
            "    except OSError as e:\n"
            "        print('failed', e.errno, flush=True)\n"
            "    os.execv(m, [m, t])\n"
            "os.waitpid(pid, 0)\n")
    m = ctx.helper("marker")
    r = session(ctx, d, ["python3", "-c", code, m, t], check_rc=0)
    assert r.stdout.decode().strip() == "failed 7", r.stdout     # E2BIG: one string past 128 KiB
    rec = wait(lambda: [e for e in evs(d, t, "exec") if e["argv"] == [m, t]], what="the exec of marker")[0]
    assert rec["decision"] == "allow" and rec["action"] == "allowed" and not rec.get("rule"), rec
    assert not [e for e in evs(d, t) if "X" in e["argv"]], "--exec-failed=none writes no failed exec"


def test_a_session_policy_is_bounded(ctx):
    """A session's own policy comes from any user and is read in the thread that serves every
    session: up to the daemon's own bound (16 MiB) it held every supervised exec for seconds.
    A session's policy is at most 1 MiB, said in one line; one under it starts."""
    d = daemon(ctx)
    rule = "  - {name: no-curl, basenames: [curl], decision: deny}\n"
    small = write(ctx, "commands:\n" + rule, "small.yaml")
    big = write(ctx, "commands:\n" + rule + "# padding\n" * 120000, "big.yaml")
    assert os.path.getsize(big) > 1 << 20
    r = session(ctx, d, ["true"], "--policy", big)
    err = r.stderr.decode()
    assert r.returncode != 0 and "a session's policy is at most 1048576" in err, (r.returncode, err)
    assert len(err.strip().splitlines()) == 1, err
    session(ctx, d, ["true"], "--policy", small, check_rc=0)


def test_no_daemon_is_one_line_exit_2(ctx):
    r = subprocess.run([ctx.execgate, "exec", "-p", "/sys/fs/bpf/egtest-nodaemon", "--", "true"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode == 2, r.returncode
    err = r.stderr.decode()
    assert len(err.splitlines()) == 1 and err.startswith("execgate exec: no daemon"), err


def test_deny_eacces_and_stderr_line(ctx):
    d = daemon(ctx)
    t = token()
    path = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
    r = session(ctx, d, ["sh", "-c", "wget %s; echo rc=$?" % t],
                env=dict(os.environ, PATH=":".join(path)))
    err = r.stderr.decode()
    assert "rc=126" in r.stdout.decode(), r.stdout
    assert "execgate: denied: no network tools (rule no-net)" in err, err
    # dash tries every PATH entry: one question, one line, every attempt logged
    assert err.count("execgate: denied:") == 1, err
    # three attempts (/usr/bin, /sbin, /bin): once the third is recorded, a fourth would have been too
    failed = wait(lambda: len(evs(d, t, "exec_failed")) >= 3 and evs(d, t, "exec_failed"), what="three failed execs")
    blocked = [e for e in failed if e["errno"] == 13]
    assert blocked and all(e["action"] == "blocked" and e["layer"] == "seccomp" and
                           e["rule"] == "no-net" for e in blocked), failed
    # dash finds it in /usr/bin, is refused, and goes on through the rest of PATH: /sbin has
    # none (the kernel's own ENOENT, recorded by the tracer), /bin is /usr/bin (refused again)
    missing = [e for e in failed if e["errno"] == 2]
    assert [e["filename"] for e in missing] == ["/sbin/wget"], \
        [(e["filename"], e["errno"], e["action"]) for e in failed]
    assert all(e["layer"] == "seccomp" and e["action"] == "allowed" and e["exec_id"] is None
               for e in missing), missing
    assert len(failed) == 3 and len(blocked) == 2, failed
    assert not evs(d, t, "exec"), "wget never ran"


def test_the_teller_holds_nothing_of_the_tracer(ctx):
    """The helper that writes a refused task's stderr line is forked at the
    daemon's start, before the tracer loads: it maps none of the tracer's BPF
    maps (the ring buffer, the maps the daemon reads), and holds less than
    half the daemon's memory (each page it shares costs the daemon a copy at
    its first write). Forked later, it mapped four BPF maps and shared 2.2
    MB here."""
    d = daemon(ctx)
    t = token()
    r = session(ctx, d, ["sh", "-c", "wget %s; echo rc=$?" % t])
    assert "execgate: denied:" in r.stderr.decode(), r.stderr
    tellers = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and open("/proc/%s/comm" % p).read().strip() == "execgate-tell" and \
                    os.getsid(int(p)) == os.getsid(d.proc.pid):
                tellers.append(p)
        except OSError:
            pass
    assert len(tellers) == 1, tellers
    maps = open("/proc/%s/maps" % tellers[0]).read()
    assert not [l for l in maps.splitlines() if "bpf-map" in l], maps
    def rss(pid):
        return [int(l.split()[1]) for l in open("/proc/%s/status" % pid) if l.startswith("VmRSS:")][0]
    # forked later it was 12.7 of the daemon's 16.3 MB here; now 2.9 (under ASan both are
    # mostly shadow memory, made before any fork: the maps above are what is compared there)
    if not os.environ.get("EG_ASAN"):
        assert rss(tellers[0]) * 2 < rss(d.proc.pid), (rss(tellers[0]), rss(d.proc.pid))


def test_file_that_appears_after_the_lookup_never_runs(ctx):
    """An exec of a missing file is let through for the kernel to fail (its
    record then comes from the tracer), with a ticket that names no file: a
    denied script that appears between the supervisor's lookup and the
    kernel's is killed before it runs, or refused, never run unjudged."""
    d = daemon(ctx, POLICY + "  - {name: no-racy, basenames: [egt-racy], decision: deny}\n")
    work = ctx.tmpdir()
    os.chmod(work, 0o777)
    marker = os.path.join(work, "ran")
    tmpl = os.path.join(work, "tmpl")
    with open(tmpl, "w") as f:
        f.write("#!/bin/sh\necho ran >> %s\n" % marker)
    os.chmod(tmpl, 0o755)
    racy = os.path.join(work, "egt-racy")
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            try:
                os.link(tmpl, racy)
                os.unlink(racy)
            except OSError:
                pass

    racer = threading.Thread(target=flip)
    racer.start()
    t = token()
    try:
        r = session(ctx, d, ["sh", "-c", 'i=0; while [ $i -lt 3000 ]; do %s %s 2>/dev/null; '
                             'i=$((i+1)); done; echo done' % (racy, t)], timeout=300)
    finally:
        stop.set()
        racer.join()
    assert r.stdout.decode().strip() == "done", (r.returncode, r.stderr[-500:])
    assert not os.path.exists(marker), "the denied script ran %d times" % len(open(marker).read().split())
    time.sleep(0.5)
    failed = evs(d, t, "exec_failed")
    enoent = [e for e in failed if e["errno"] == 2]
    blocked = [e for e in failed if e.get("action") == "blocked"]
    killed = [e for e in evs(d, t, "exec") if e.get("action") == "killed"]
    print("    3000 tries: %d not found, %d refused, %d killed, %d other failures" %
          (len(enoent), len(blocked), len(killed), len(failed) - len(enoent) - len(blocked)))
    assert enoent and blocked, "the race was not exercised both ways"
    assert all(e.get("layer") == "seccomp" for e in enoent), enoent[:3]
    assert all(e.get("reason") == "ticket-mismatch" for e in killed), killed[:3]


def test_resolution_from_the_tasks_cwd_mounts_and_cgroup(ctx):
    """What an exec names is found where the task stands: a relative path from
    its own cwd, an absolute one through its own mount namespace; a rule on
    cgroups sees the task's cgroup (the supervisor reads these only when needed)."""
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o755)
    for sub in ("d1", "d2", "bin"):
        os.makedirs(os.path.join(tmp, sub))
    for dst in ("d1/prog", "d2/prog", "bin/curl", "bin/cgprog", "bin/okprog"):
        subprocess.run(["cp", "/bin/true", os.path.join(tmp, dst)], check=True)
    pol = POLICY + ("  - {name: no-d1, paths: [\"%s/d1/*\"], decision: deny}\n"
                    "  - {name: cg-all, basenames: [cgprog], cgroups: [\"/\"], decision: deny}\n" % tmp)
    d = daemon(ctx, pol)
    t = token()
    script = ("cd %(t)s/d1 && ./prog %(k)s; echo a=$?; cd ../d2 && ./prog %(k)s; echo b=$?; "
              "unshare -m sh -c '%(t)s/bin/okprog %(k)s; echo c=$?; %(t)s/bin/curl %(k)s; echo d=$?'; "
              "%(t)s/bin/cgprog %(k)s; echo e=$?" % {"t": tmp, "k": t})
    r = session(ctx, d, ["sh", "-c", script], check_rc=0)
    out = r.stdout.decode().split()
    assert out == ["a=126", "b=0", "c=0", "d=126", "e=126"], (out, r.stderr.decode()[-800:])
    blocked = wait(lambda: len(evs(d, t, "exec_failed")) >= 3 and evs(d, t, "exec_failed"),
                   what="three refusals")
    rules = sorted(e["rule"] for e in blocked)
    assert rules == ["cg-all", "no-d1", "no-net"], blocked
    assert all(e["cgroup"] for e in blocked), blocked
    ran = [e["filename"] for e in evs(d, t, "exec")]
    assert os.path.join(tmp, "d2/prog") in ran and os.path.join(tmp, "bin/okprog") in ran, ran


def test_namespaces_are_the_tasks_own(ctx):
    """The supervisor judges by the trapped task's own namespaces (the facts
    program reads them where it loads, /proc where it does not): an
    internal_bypass holds only in the daemon's mount namespace, and a rule
    scoped to cgroups judges the depth inside a new pid namespace from its
    first process. Each namespace is made by the task just before the exec
    the rule looks at. Both ways: with the facts program, and with
    EXECGATE_NO_FACTS_PROG=1 as on a kernel where it does not load."""
    for no_prog in ("0", "1"):
        namespaces_judged(ctx, no_prog)


def namespaces_judged(ctx, no_prog):
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o755)
    os.makedirs(os.path.join(tmp, "bin"))
    subprocess.run(["cp", "/bin/true", os.path.join(tmp, "bin", "cgprog")], check=True)
    pol = ("sandbox: {seccomp: {execve: {internal_bypass: [/usr/bin/printf]}}}\n"
           "commands:\n"
           "  - {name: no-printf, basenames: [printf], decision: deny}\n"
           "  - {name: cg-direct, basenames: [cgprog], cgroups: [\"/\"], context: [direct], decision: deny}\n")
    d = ctx.daemon("--policy", write(ctx, pol), env=dict(os.environ, EXECGATE_NO_FACTS_PROG=no_prog))
    t = token()
    script = ("/usr/bin/printf %(k)s; echo a=$?; "
              "unshare -m /usr/bin/printf %(k)s; echo b=$?; "
              "%(t)s/bin/cgprog %(k)s; echo c=$?; "
              "unshare -pf %(t)s/bin/cgprog %(k)s; echo d=$?" % {"t": tmp, "k": t})
    r = session(ctx, d, ["sh", "-c", script])
    out = r.stdout.decode().replace(t, "").split()
    assert out == ["a=0", "b=126", "c=0", "d=126"], (no_prog, out, r.stderr.decode()[-800:])
    refused = wait(lambda: len(evs(d, t, "exec_failed")) >= 2 and evs(d, t, "exec_failed"),
                   what="two refusals")
    assert sorted(e["rule"] for e in refused) == ["cg-direct", "no-printf"], refused
    ran = wait(lambda: len(evs(d, t, "exec")) >= 4 and evs(d, t, "exec"), what="four execs")
    rules = sorted((os.path.basename(e["filename"]), e.get("rule") or "") for e in ran)
    assert rules == [("cgprog", ""), ("printf", "internal_bypass"), ("unshare", ""), ("unshare", "")], ran


def test_a_cgroup_rule_sees_the_cgroup_of_each_exec(ctx):
    """A rule on cgroups judges each exec by the cgroup its task is in at
    that exec (the facts program's id, its path from the daemon's cache of
    cgroup ids, or /proc/TID/cgroup): the same shell moves itself from a
    cgroup the rule names to one it does not, and back, between execs; a
    refusal's record names the cgroup it was refused in. Both ways, as
    test_namespaces_are_the_tasks_own."""
    for no_prog in ("0", "1"):
        cgroup_judged(ctx, no_prog)


def cgroup_judged(ctx, no_prog):
    rel_a, abs_a, _ = ctx.cgroup()
    rel_b, abs_b, _ = ctx.cgroup()
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o755)
    prog = os.path.join(tmp, "cgprog")
    subprocess.run(["cp", "/bin/true", prog], check=True)
    pol = POLICY + "  - {name: cg-a, basenames: [cgprog], cgroups: [\"%s\"], decision: deny}\n" % rel_a
    d = ctx.daemon("--policy", write(ctx, pol), env=dict(os.environ, EXECGATE_NO_FACTS_PROG=no_prog))
    t = token()
    script = ("echo $$ > %(a)s/cgroup.procs; %(p)s %(k)s; echo a=$?; "
              "echo $$ > %(b)s/cgroup.procs; %(p)s %(k)s; echo b=$?; "
              "echo $$ > %(a)s/cgroup.procs; %(p)s %(k)s; echo c=$?; "
              "echo $$ > %(b)s/cgroup.procs" % {"a": abs_a, "b": abs_b, "p": prog, "k": t})
    r = session(ctx, d, ["sh", "-c", script])
    out = r.stdout.decode().split()
    assert out == ["a=126", "b=0", "c=126"], (no_prog, out, r.stderr.decode()[-800:])
    refused = wait(lambda: len(evs(d, t, "exec_failed")) >= 2 and evs(d, t, "exec_failed"),
                   what="two refusals")
    assert [(e["rule"], e["cgroup"]) for e in refused] == [("cg-a", rel_a)] * 2, refused
    ran = wait(lambda: evs(d, t, "exec"), what="the exec in b")
    assert len(ran) == 1 and ran[0]["cgroup"] == rel_b, ran


def test_a_chrooted_task_is_judged_in_its_own_root(ctx):
    """A task in a chroot names programs from its own root. The supervisor
    asks the kernel whether a task's root is the daemon's (one syscall
    program run per exec) and, when it is not, looks the program up from
    the task's root: the jail's /bin/true is a busybox, the host's is not,
    and judging the host's would get the exec killed by its ticket."""
    if not os.path.exists("/bin/busybox"):
        ctx.skip("no /bin/busybox (busybox-static) to build a jail with")
    jail = ctx.tmpdir()
    os.chmod(jail, 0o755)
    os.makedirs(os.path.join(jail, "bin"))
    shutil.copy("/bin/busybox", os.path.join(jail, "bin", "busybox"))
    for applet in ("sh", "true"):
        os.symlink("busybox", os.path.join(jail, "bin", applet))
    shutil.copy("/bin/busybox", os.path.join(jail, "bin", "wget"))
    d = daemon(ctx)
    t = token()
    r = session(ctx, d, ["chroot", jail, "/bin/sh", "-c",
                         "/bin/true %s; echo a=$?; /bin/wget %s; echo b=$?" % (t, t)])
    out = r.stdout.decode().split()
    assert out == ["a=0", "b=126"], (out, r.returncode, r.stderr.decode()[-600:])
    ran = wait(lambda: evs(d, t, "exec"), what="the jail's true")[0]
    assert ran["action"] == "allowed" and ran["filename"] == os.path.join(jail, "bin", "busybox"), ran
    assert not [e for e in evs(d, t) if e.get("action") == "killed"], evs(d, t)
    refused = wait(lambda: evs(d, t, "exec_failed"), what="the jail's wget refused")[0]
    assert refused["rule"] == "no-net", refused


def test_signals_at_the_receiver_lose_no_answer(ctx):
    """A session's receiver sleeps in a blocking receive that the loop cuts
    short with a signal (SIGURG) when the thread is to leave. The same
    signal sent to the daemon as fast as a loop can, while a session runs
    400 execs, reaches the receiver wherever it is: in its receive, while
    it reads the task, while it answers or checks a request (calls that
    fail with EINTR when a signal is pending and the listener's lock is
    taken). Every exec still gets its answer (none hangs, none is refused)
    and is recorded once; the daemon lives on. (Not a real-time signal:
    those queue, and a flood of them starved the receiver.)"""
    d = ctx.daemon("--policy", write(ctx, POLICY))
    t = token()
    stop = threading.Event()
    sent = [0]

    def pester():
        while not stop.is_set():
            try:
                os.kill(d.proc.pid, signal.SIGURG)
                sent[0] += 1
            except OSError:
                pass

    th = threading.Thread(target=pester)
    th.start()
    try:
        r = session(ctx, d, ["sh", "-c", 'i=0; while [ $i -lt 400 ]; do /bin/true %s $i || exit 9; '
                             'i=$((i+1)); done; echo done' % t], timeout=120)
    finally:
        stop.set()
        th.join()
    assert r.returncode == 0 and r.stdout.decode().split() == ["done"], (r.returncode, r.stderr.decode()[-600:])
    assert sent[0] > 400, sent
    ran = wait(lambda: len(evs(d, t, "exec")) >= 400 and evs(d, t, "exec"), what="400 execs recorded")
    assert sorted(int(e["argv"][2]) for e in ran) == list(range(400)), len(ran)
    assert all(e["action"] == "allowed" for e in ran), [e for e in ran if e["action"] != "allowed"][:3]
    assert d.proc.poll() is None, d.err()


def test_an_idle_session_gives_its_thread_back(ctx):
    """A session's receiver thread leaves once it had nothing to do for a
    while (EXECGATE_RECEIVER_IDLE_MS here; 10 s by default): the event loop
    takes the tree's next exec, judged like any other, and starts a new
    receiver for the ones after it."""
    def receivers():
        return json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)[
            "counters"]["sessions"]["receivers"]

    d = ctx.daemon("--policy", write(ctx, POLICY), env=dict(os.environ, EXECGATE_RECEIVER_IDLE_MS="1500"))
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o755)
    go, end = os.path.join(tmp, "go"), os.path.join(tmp, "end")
    os.mkfifo(go)
    os.mkfifo(end)
    t = token()
    # `read` is a builtin: no exec while the session waits
    script = ("/bin/true %s; read x < %s; wget %s; echo w=$?; /bin/true %s; echo t=$?; read x < %s"
              % (t, go, t, t, end))
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c", script],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ctx.on_cleanup(lambda: p.poll() is None and p.kill())
    wait(lambda: receivers() == 1, what="the session's receiver")
    wait(lambda: receivers() == 0, what="the idle receiver gone")
    with open(go, "w") as f:
        f.write("x\n")
    # the loop took wget, and a receiver came back for what follows
    wait(lambda: receivers() == 1, timeout=5, what="a receiver again")
    with open(end, "w") as f:
        f.write("x\n")
    out, err = p.communicate(timeout=30)
    assert out.decode().split() == ["w=126", "t=0"], (out, err)
    assert b"execgate: denied: no network tools (rule no-net)" in err, err
    ran = wait(lambda: len(evs(d, t, "exec")) == 2 and evs(d, t, "exec"), what="both trues")
    assert all(e["action"] == "allowed" for e in ran), ran
    refused = wait(lambda: [e for e in evs(d, t, "exec_failed") if e["errno"] == 13], what="wget refused")
    assert {e["rule"] for e in refused} == {"no-net"}, refused


def test_unprivileged_user_and_policy_fd(ctx):
    d = daemon(ctx)
    t = token()
    r = session(ctx, d, ["sh", "-c", "id -u; wget %s; true" % t], user="nobody")
    assert r.returncode == 0 and r.stdout.decode().split()[0] == "65534", r.stderr
    assert "rule no-net" in r.stderr.decode()
    # the session policy is opened by the launcher with the user's rights
    r = session(ctx, d, ["true"], "--policy", "/etc/shadow", user="nobody")
    assert r.returncode == 1 and "Permission denied" in r.stderr.decode(), r.stderr
    # setuid does not raise privileges inside a session (no_new_privs)
    r = session(ctx, d, ["sh", "-c", "/usr/bin/passwd -S nobody; true"], user="nobody")
    ev = wait(lambda: [e for e in d.events() if e.get("type") == "exec" and
                       e.get("filename") == "/usr/bin/passwd" and e.get("uid") == 65534], what="passwd")[-1]
    assert ev["euid"] == 65534 and ev["secureexec"] is False, ev


def test_not_a_launcher_refused(ctx):
    d = daemon(ctx)
    s = socket.socket(socket.AF_UNIX)
    sock = json.loads(open(d.output).readline())["socket"]
    s.connect(sock)
    s.sendall(b'{"op":"session_open"}\n')
    reply = json.loads(s.makefile().readline())
    assert reply["ok"] is False and "not an execgate launcher" in reply["error"], reply
    s.close()


def test_threads_start_sessions(ctx):
    """Sessions started from several threads of one process each get a direct exec."""
    d = daemon(ctx)
    toks = [token() for _ in range(6)]

    def run(t):
        session(ctx, d, ["/bin/true", t], check_rc=0)
    threads = [threading.Thread(target=run, args=(t,)) for t in toks]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for t in toks:
        e = wait(lambda: evs(d, t, "exec"), what="exec " + t)[0]
        assert e["session_depth"] == 0, e


def test_on_truncated_in_sessions(ctx):
    pol = "sandbox: {seccomp: {execve: {max_argv_bytes: 1000}}}\ncommands: []\n"
    d = daemon(ctx, pol)
    t = token()
    r = session(ctx, d, ["sh", "-c", '/bin/true %s "$(printf "%%02000d" 0)"; echo rc=$?' % t])
    assert "rc=126" in r.stdout.decode() and "rule on_truncated" in r.stderr.decode(), r.stderr


# ---- TOCTOU ---------------------------------------------------------------------

# each run hits the window a few hundred times (the "killed" count); make soak: 50,000
RACE = int(os.environ.get("EG_RACE_TRIES", "1200"))
# /var/tmp: not the session's tmpfs; one directory a lane of tests/run.sh
RACE_DIR = "/var/tmp/egrace" + os.environ.get("EG_LANE", "")


def test_racing_thread_rewrites_argv(ctx):
    d = daemon(ctx)
    marker = eg.MARKER
    if os.path.exists(marker):
        os.unlink(marker)
    racer, prog = ctx.helper("racer"), ctx.helper("marker")
    r = session(ctx, d, [racer, "argv", str(RACE), prog], timeout=600)
    counts = r.stdout.decode().split()
    print("    argv race, %d tries: %s" % (RACE, r.stdout.decode().strip()))
    n = dict(zip(counts[0::2], map(int, counts[1::2])))
    assert sum(n.values()) == RACE, n
    assert not os.path.exists(marker), "the denied command ran: " + open(marker).read()[:200]
    # the kernel's own check fired: flips the supervisor never saw were caught at the exec
    assert n["killed"] > 0, n
    st = json.loads(ctx.run([ctx.execgate, "stats", "--json", "-p", d.pin_path]).stdout)["counters"]
    assert st["killed"] == n["killed"], (st["killed"], n)


def test_racing_thread_rewrites_long_argv(ctx):
    """The same race with an argv too long for the small ticket map: the
    ticket goes to the large one, and is checked as strictly."""
    d = daemon(ctx)
    marker = eg.MARKER
    if os.path.exists(marker):
        os.unlink(marker)
    racer, prog = ctx.helper("racer"), ctx.helper("marker")
    r = session(ctx, d, [racer, "argv", str(RACE), prog, "3000"], timeout=600)
    counts = r.stdout.decode().split()
    print("    long argv race, %d tries: %s" % (RACE, r.stdout.decode().strip()))
    n = dict(zip(counts[0::2], map(int, counts[1::2])))
    assert sum(n.values()) == RACE, n
    assert not os.path.exists(marker), "the denied command ran: " + open(marker).read()[:200]
    assert n["allowed"] > 0 and n["killed"] > 0, n
    st = json.loads(ctx.run([ctx.execgate, "stats", "--json", "-p", d.pin_path]).stdout)["counters"]
    assert st["killed"] == n["killed"], (st["killed"], n)


def test_argv_at_a_page_edge(ctx):
    """The supervisor reads an argv array that starts near the end of a
    page with the page after it, in one call: an array that goes on into
    that page is read whole, one that ends with its page (the next one not
    mapped) too, and one whose end is in the unmapped page fails with
    EFAULT, as outside a session."""
    d = daemon(ctx)
    t = token()
    words = [t, "alpha", "b" * 40, "gamma"]
    for mode, want in (("cross", " ".join(words)), ("end", " ".join(words)), ("fault", "EFAULT")):
        r = session(ctx, d, [ctx.helper("pageedge"), mode] + words, check_rc=0)
        assert r.stdout.decode().strip() == want, (mode, r.stdout, r.stderr)
        outside = subprocess.run([ctx.helper("pageedge"), mode] + words, stdout=subprocess.PIPE)
        assert outside.stdout.decode().strip() == want, (mode, outside.stdout)
    def echoes():
        return [e for e in evs(d, t, "exec") if e["argv"][0] == "echo"]
    ran = wait(lambda: len(echoes()) == 2 and echoes(), what="two echoes")
    assert all(e["argv"] == ["echo"] + words and e["action"] == "allowed" for e in ran), ran


def test_ticket_sizes_in_one_thread(ctx):
    """One thread execs again and again (the same tid), its argv on both
    sides of the small tickets' size and far above it: the ticket is in
    one map or the other, never a stale one in the map looked at first,
    and every exec is the one allowed (none killed)."""
    d = daemon(ctx)
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o755)
    chain = os.path.join(tmp, "chain.sh")
    sizes = [1, 470, 20000, 480, 485, 490, 495, 3000, 497, 498, 499, 500, 501, 502, 503, 504, 505,
             506, 40000, 507, 508, 510, 520, 530, 600, 2, 9000, 9001, 3]
    with open(chain, "w") as f:
        f.write("#!/bin/sh\n"
                "n=$1\n"
                "set -- %s\n"
                "shift $n 2>/dev/null || { echo \"chain done $$\"; exit 0; }\n"
                "[ $# -gt 0 ] || { echo \"chain done $$\"; exit 0; }\n"
                "echo \"$$\"\n"
                "exec /bin/sh %s $((n + 1)) \"$(printf \"%%${1}s\" \"\" | tr \" \" x)\"\n"
                % (" ".join(map(str, sizes)), chain))
    os.chmod(chain, 0o755)
    r = session(ctx, d, ["/bin/sh", chain, "0"], timeout=60)
    out = r.stdout.decode().split("\n")
    pids = [l for l in out if l.strip()]
    assert r.returncode == 0 and pids and pids[-1].startswith("chain done"), (r.returncode, out[-3:],
                                                                             r.stderr[-500:])
    assert len(pids) == len(sizes) + 1 and len(set(l.split()[-1] for l in pids)) == 1, pids
    st = json.loads(ctx.run([ctx.execgate, "stats", "--json", "-p", d.pin_path]).stdout)["counters"]
    assert st["killed"] == 0, st


def test_racing_thread_rewrites_path(ctx):
    d = daemon(ctx, POLICY + "  - {name: no-no, paths: [" + RACE_DIR + "/no], decision: deny}\n")
    os.makedirs(RACE_DIR, exist_ok=True)
    ctx.on_cleanup(lambda: subprocess.run(["rm", "-rf", RACE_DIR]))
    subprocess.run(["cp", ctx.helper("marker"), RACE_DIR + "/no"], check=True)
    subprocess.run(["cp", "/usr/bin/true", RACE_DIR + "/ok"], check=True)
    marker = eg.MARKER
    if os.path.exists(marker):
        os.unlink(marker)
    r = session(ctx, d, [ctx.helper("racer"), "path", str(RACE), RACE_DIR + "/ok",
                         RACE_DIR + "/no"], timeout=600)
    print("    path race, %d tries: %s" % (RACE, r.stdout.decode().strip()))
    counts = r.stdout.decode().split()
    n = dict(zip(counts[0::2], map(int, counts[1::2])))
    assert sum(n.values()) == RACE, n
    assert not os.path.exists(marker), "the denied program ran: " + open(marker).read()[:200]
    assert n["killed"] > 0, n   # the kernel's check fired
    st = json.loads(ctx.run([ctx.execgate, "stats", "--json", "-p", d.pin_path]).stdout)["counters"]
    assert st["killed"] == n["killed"], (n, st["killed"])
    # every kill is on record, with its reason
    killed = wait(lambda: [e for e in d.events() if e.get("action") == "killed"][n["killed"] - 1:] and
                  [e for e in d.events() if e.get("action") == "killed"], what="every killed record")
    assert len(killed) == n["killed"], (len(killed), n)
    assert all(e["reason"] in ("ticket-mismatch", "no-ticket") for e in killed), killed[:2]


# ---- approvals -----------------------------------------------------------------

def approvals(ctx, d):
    r = ctx.run([ctx.execgate, "approvals", "--json", "-p", d.pin_path])
    return [json.loads(l) for l in r.stdout.decode().splitlines()]


def test_records_of_waiting_execs_are_written(ctx):
    """A session whose every exec waits for an answer brings no tracer
    record to flush the output: its approval record is written within the
    drain delay all the same (it sat in the buffer until the next traced
    exec). The daemon traces only an empty cgroup, so no exec on the host
    (this test's own neither) brings a record that would flush it."""
    scope = os.path.join(eg.CGROUP2, "egtest-quiet-" + token())
    os.mkdir(scope)
    ctx.on_cleanup(lambda: os.rmdir(scope))
    d = daemon(ctx, POLICY.replace("approval_timeout: 4s", "approval_timeout: 60s"), "--cgroup", scope)
    f = os.path.join(ctx.tmpdir(), "waits-" + token())
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c", "exec touch %s" % f],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        e = wait(lambda: [e for e in d.events() if e.get("type") == "approval" and
                          f in e.get("argv", [])], timeout=5, what="the approval's record")[0]
        assert e.get("event") == "requested", e
        ctx.run([ctx.execgate, "deny", e["approval_id"], "-p", d.pin_path])
        wait(lambda: [x for x in d.events() if x.get("type") == "approval" and
                      x.get("approval_id") == e["approval_id"] and x.get("event") == "denied"],
             timeout=5, what="the denial's record")
        p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    assert not os.path.exists(f)


def test_approve_deny_timeout_cancel(ctx):
    d = daemon(ctx)
    tmp = ctx.tmpdir()
    # approved
    f1 = os.path.join(tmp, "yes-" + token())
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c", "touch %s; echo rc=$?" % f1],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pend = wait(lambda: approvals(ctx, d), what="a pending approval")
    a = pend[0]
    assert a["argv"] == ["touch", f1] and a["session_depth"] == 1 and a["rule"] == "ask-touch", a
    assert 0 < a["seconds_left"] <= 4, a
    r = ctx.run([ctx.execgate, "approve", a["approval_id"], "--reason", "fine", "-p", d.pin_path])
    out, err = p.communicate(timeout=20)
    assert b"rc=0" in out and os.path.exists(f1), (out, err)
    ev = wait(lambda: [e for e in d.events() if e.get("type") == "approval" and
                       e["approval_id"] == a["approval_id"]][1:] and
              [e for e in d.events() if e.get("type") == "approval" and e["approval_id"] == a["approval_id"]],
              what="the approved record")
    assert [e["event"] for e in ev] == ["requested", "approved"], ev
    assert ev[1]["answered_by"]["uid"] == 0 and ev[1]["reason"] == "fine", ev[1]
    ran = wait(lambda: [e for e in d.events() if e.get("type") == "exec" and e.get("argv") == ["touch", f1]])
    assert ran[0]["action"] == "approved", ran[0]
    # denied
    f2 = os.path.join(tmp, "no-" + token())
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c", "touch %s; echo rc=$?" % f2],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    a = wait(lambda: approvals(ctx, d), what="a pending approval")[0]
    ctx.run([ctx.execgate, "deny", a["approval_id"], "-p", d.pin_path])
    out, err = p.communicate(timeout=20)
    assert b"rc=126" in out and not os.path.exists(f2), out
    assert b"the approval was refused" in err and err.count(b"execgate: denied") == 1, err
    # timeout (default deny)
    f3 = os.path.join(tmp, "late-" + token())
    t0 = time.monotonic()
    r = session(ctx, d, ["sh", "-c", "touch %s; echo rc=$?" % f3])
    assert b"rc=126" in r.stdout and not os.path.exists(f3), r.stdout
    assert 3.5 < time.monotonic() - t0 < 12, "one approval_timeout, not one per PATH entry"
    assert b"no answer to the approval request in time" in r.stderr, r.stderr
    # cancelled: the waiting process dies
    f4 = os.path.join(tmp, "gone-" + token())
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "touch", "-c", f4],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # touch is the direct exec here (context nested does not ask): use a nested one
    p.wait(10)
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c", "touch %s" % f4],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    # this one's approval (not one the timeout above may still be ending)
    a = wait(lambda: [x for x in approvals(ctx, d) if x["argv"] == ["touch", f4]], what="its pending approval")[0]
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    ev = wait(lambda: [e for e in d.events() if e.get("type") == "approval" and
                       e["approval_id"] == a["approval_id"] and e["event"] == "cancelled"], what="cancelled")
    assert ev, ev
    wait(lambda: not approvals(ctx, d), what="no approval left")


def test_watching_twice_on_one_connection(ctx):
    """A second `approvals --watch` on the same connection is answered and
    changes nothing: each event comes once, and once the connection is
    closed nothing is sent where it was (a connection opened later, by
    another user, gets no approval records; the daemon stays up)."""
    d = daemon(ctx)
    sock = json.loads(open(d.output).readline())["socket"]
    watch = b'{"op":"approvals","watch":true}\n' * 2
    gone = socket.socket(socket.AF_UNIX)
    gone.connect(sock)
    gone.sendall(watch)
    kept = socket.socket(socket.AF_UNIX)
    kept.connect(sock)
    kept.sendall(watch)
    kf = kept.makefile("rb")
    for c in (gone.makefile("rb"), kf):
        for _ in range(2):
            reply = json.loads(c.readline())
            assert reply["ok"] is True and reply["approvals"] == [], reply
    gone.close()
    time.sleep(0.3)
    code = ("import socket, sys, time\n"
            "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
            "s.sendall(b'{\"op\":\"whoami\"}\\n'); time.sleep(float(sys.argv[2])); s.settimeout(0.5)\n"
            "d = b''\n"
            "try:\n"
            "    while True:\n"
            "        x = s.recv(65536)\n"
            "        if not x: break\n"
            "        d += x\n"
            "except OSError: pass\n"
            "sys.stdout.write(d.decode())\n")
    other = subprocess.Popen(["python3", "-c", code, sock, "3"], user="nobody", group="nogroup", extra_groups=[],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.5)
    f = os.path.join(ctx.tmpdir(), "watched-" + token())
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c", "touch %s" % f],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    a = wait(lambda: approvals(ctx, d), what="a pending approval")[0]
    ctx.run([ctx.execgate, "deny", a["approval_id"], "-p", d.pin_path])
    p.communicate(timeout=20)
    out, err = other.communicate(timeout=20)
    lines = out.decode().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["uid"] == 65534, (lines, err)
    assert d.proc.poll() is None, "the daemon died: %s" % d.err()[-500:]
    kept.settimeout(5)
    got = [json.loads(kf.readline()) for _ in range(2)]
    assert [e["event"] for e in got] == ["requested", "denied"], got
    kept.settimeout(0.5)
    try:
        more = kf.readline()
    except OSError:
        more = b""
    assert not more, "an event came twice: %r" % more
    kept.close()


def test_approvals_per_session_tree(ctx):
    """One session tree cannot fill the daemon's pool of approvals: past 64
    pending, its requests are refused at once; another session still asks.
    The approvals wait long enough for a loaded machine to bring all 70
    (4 s ran out before the last came), and are denied at the end."""
    d = daemon(ctx, POLICY.replace("approval_timeout: 4s", "approval_timeout: 60s"))
    tmp = ctx.tmpdir()
    script = ('i=0; while [ $i -lt 70 ]; do /usr/bin/touch %s/f$i & i=$((i+1)); done; wait' % tmp)
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c", script],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait(lambda: len([e for e in d.events() if e.get("type") == "exec_failed" and
                          e.get("message") == "too many approvals pending in this session tree"]) >= 6,
             what="6 refusals")
        assert len(approvals(ctx, d)) == 64, len(approvals(ctx, d))
        # another tree is not refused
        f = os.path.join(tmp, "other")
        q = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c", "touch %s" % f],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait(lambda: len(approvals(ctx, d)) == 65, what="a 65th approval, from another session")
        for a in approvals(ctx, d):
            ctx.run([ctx.execgate, "deny", a["approval_id"], "-p", d.pin_path])
        q.communicate(timeout=20)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert err.count(b"too many approvals pending in this session tree") == 6, err[-600:]
    assert not os.listdir(tmp), os.listdir(tmp)


def fill_map(path):
    """Fills the pinned hash map at path with zeroed entries under keys no
    thread has (bpf(2) through ctypes: 8192 bpftool runs would take long)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)

    def bpf(cmd, attr):
        buf = ctypes.create_string_buffer(attr, 128)
        rc = libc.syscall(321, cmd, buf, 128)
        return rc if rc >= 0 else -ctypes.get_errno()
    name = ctypes.create_string_buffer(path.encode())
    fd = bpf(7, struct.pack("QI", ctypes.addressof(name), 0))  # BPF_OBJ_GET
    assert fd >= 0, fd
    info = ctypes.create_string_buffer(80)
    assert bpf(15, struct.pack("IIQ", fd, 80, ctypes.addressof(info))) == 0  # BPF_OBJ_GET_INFO_BY_FD
    value = ctypes.create_string_buffer(struct.unpack_from("IIII", info.raw)[3])
    key = ctypes.c_uint32()
    n = 0
    for k in range(0x40000000, 0x40100000):
        key.value = k
        rc = bpf(2, struct.pack("IIQQQ", fd, 0, ctypes.addressof(key), ctypes.addressof(value), 1))
        if rc == -7:    # E2BIG: full
            break
        assert rc == 0, rc
        n += 1
    os.close(fd)
    return n


def test_approved_without_a_ticket_is_a_refusal(ctx):
    """An approved exec that cannot get its ticket is refused, and recorded
    as such (denied, with the reason), not as cancelled."""
    d = daemon(ctx)
    f = os.path.join(ctx.tmpdir(), "noticket-" + token())
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c", "touch %s; echo rc=$?" % f],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    a = wait(lambda: approvals(ctx, d), what="a pending approval")[0]
    assert fill_map(os.path.join(d.pin_path, "tickets_small")) > 0
    ctx.run([ctx.execgate, "approve", a["approval_id"], "--reason", "fine", "-p", d.pin_path])
    out, err = p.communicate(timeout=20)
    assert b"rc=126" in out and not os.path.exists(f), (out, err)
    assert b"no ticket" in err, err
    ev = wait(lambda: [e for e in d.events() if e.get("type") == "approval" and
                       e["approval_id"] == a["approval_id"] and e["event"] != "requested"], what="the outcome")
    assert ev[0]["event"] == "denied" and "no ticket" in ev[0]["reason"], ev
    assert ev[0]["answered_by"]["uid"] == 0 and ev[0]["reason"].startswith("fine; "), ev
    blocked = wait(lambda: [e for e in d.events() if e.get("type") == "exec_failed" and
                            e.get("argv") == ["touch", f]], what="the refusal")
    assert blocked[0]["decision"] == "error" and blocked[0]["approval_id"] == a["approval_id"], blocked


def test_signal_while_waiting_asks_once(ctx):
    d = daemon(ctx)
    f = os.path.join(ctx.tmpdir(), "sig-" + token())
    # the shell gets SIGCHLD-like noise: a trapped signal while touch's exec waits
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c",
                          "trap 'echo got' USR1; (sleep 0.3; kill -USR1 $$) & exec touch %s" % f],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    a = wait(lambda: approvals(ctx, d), what="a pending approval")[0]

    def parked():
        """SIGUSR1 has come and waits behind the exec, which waits for its answer (killable only: D)."""
        with open("/proc/%d/status" % p.pid) as fs:
            st = dict(l.split(":", 1) for l in fs)
        pending = int(st["SigPnd"], 16) | int(st["ShdPnd"], 16)
        return st["State"].split()[0] == "D" and pending & (1 << (signal.SIGUSR1 - 1))
    # the signal sent, and still pending: the exec was not restarted, so it cannot have asked again
    wait(lambda: parked() or len(approvals(ctx, d)) > 1, what="SIGUSR1 pending while touch's exec waits")
    assert len(approvals(ctx, d)) == 1, "a signal must not make a second request"
    ctx.run([ctx.execgate, "approve", a["approval_id"], "-p", d.pin_path])
    p.communicate(timeout=20)
    wait(lambda: [e for e in d.events() if e.get("type") == "approval" and e["event"] == "approved"])
    req = [e for e in d.events() if e.get("type") == "approval" and e["event"] == "requested"]
    assert len(req) == 1, req


# The exec, with SIGUSR1 caught and the call restarted after it (SA_RESTART)
REASK = """
import os, signal, sys
prog, f = sys.argv[1:3]
signal.signal(signal.SIGUSR1, lambda *a: None)
signal.siginterrupt(signal.SIGUSR1, False)
try:
    os.execv(prog, ["touch", f])
except OSError as e:
    print("exec-failed", e.errno, flush=True)
    sys.exit(3)
"""


def test_a_signal_that_withdraws_the_wait_rejoins_the_approval(ctx):
    """On a kernel before 5.19 (no WAIT_KILLABLE_RECV: EXECGATE_NO_WAIT_KILLABLE=1
    stands in for one) a caught signal withdraws an exec that waits for a
    person; restarted, the exec asks again and rejoins the same approval,
    not a second one. So it does when its program was taken away meanwhile
    and the second lookup fails: the thread still waits for the answer
    (argv is read for the rejoin), and once approved, the kernel fails the
    exec (ENOENT)."""
    for gone in (False, True):
        reask_rejoins(ctx, gone)


def reask_rejoins(ctx, gone):
    d = daemon(ctx, POLICY.replace("approval_timeout: 4s", "approval_timeout: 60s"))
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o755)
    prog, f, script = (os.path.join(tmp, n) for n in ("touch", "made", "reask.py"))
    shutil.copy("/usr/bin/touch", prog)
    with open(script, "w") as fs:
        fs.write(REASK)

    def asked():
        return json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)["counters"]["sessions"]["execs"]
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "python3", script, prog, f],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, EXECGATE_NO_WAIT_KILLABLE="1"))
    ctx.on_cleanup(lambda: p.poll() is None and p.kill())
    a = wait(lambda: approvals(ctx, d), what="a pending approval")[0]
    if gone:
        os.rename(prog, prog + ".away")
    before = asked()
    os.kill(p.pid, signal.SIGUSR1)
    wait(lambda: asked() > before, what="the exec asked again (its wait withdrawn by the signal)")
    time.sleep(0.3)
    pending = approvals(ctx, d)
    assert p.poll() is None, (gone, "the exec did not wait for its answer again", p.communicate())
    assert [x["approval_id"] for x in pending] == [a["approval_id"]], (gone, pending)
    ctx.run([ctx.execgate, "approve", a["approval_id"], "-p", d.pin_path])
    out, err = p.communicate(timeout=20)
    if gone:
        assert p.returncode == 3 and out.decode().split() == ["exec-failed", "2"], (out, err[-300:])
        assert not os.path.exists(f)
    else:
        assert p.returncode == 0 and os.path.exists(f), (p.returncode, out, err[-300:])
    req = [e for e in d.events() if e.get("type") == "approval" and e["event"] == "requested"]
    assert len(req) == 1, (gone, req)


def test_no_self_approval(ctx):
    d = daemon(ctx)
    f = os.path.join(ctx.tmpdir(), "self-" + token())
    # the agent asks, then tries to approve its own request from inside its session
    pol = POLICY + "  - {name: tools, paths: [\"%s\"], decision: allow}\n" % ctx.execgate
    d.stop()
    d = daemon(ctx, pol)
    script = ('touch %s & sleep 1; id=$(%s approvals -j -p %s | sed -n \'s/.*"approval_id":"\\([^"]*\\)".*/\\1/p\'); '
              '%s approve "$id" -p %s; echo approve-rc=$?; wait' % (f, ctx.execgate, d.pin_path, ctx.execgate, d.pin_path))
    r = session(ctx, d, ["sh", "-c", script], timeout=30)
    out, err = r.stdout.decode(), r.stderr.decode()
    assert "approve-rc=1" in out, (out, err)
    assert "inside session" in err, err
    assert not os.path.exists(f), "the request was not approved"
    # and a non-root user outside any session may not answer either
    a_proc = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c", "touch %s" % f],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    a = wait(lambda: approvals(ctx, d), what="pending")[0]
    r = subprocess.run([ctx.execgate, "approve", a["approval_id"], "-p", d.pin_path], user="nobody",
                       group="nogroup", extra_groups=[], capture_output=True)
    assert r.returncode == 1 and b"permission denied" in r.stderr, r.stderr
    ctx.run([ctx.execgate, "deny", a["approval_id"], "-p", d.pin_path])
    a_proc.communicate(timeout=20)


def test_no_head_of_line_blocking(ctx):
    d = daemon(ctx)
    f = os.path.join(ctx.tmpdir(), "wait-" + token())
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c", "touch %s" % f],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait(lambda: approvals(ctx, d), what="a pending approval")
    t0 = time.monotonic()
    # the same session's other processes and another session go on meanwhile
    r = session(ctx, d, ["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do /bin/true; done; echo done"])
    assert r.stdout.decode().strip() == "done", r.stderr
    assert time.monotonic() - t0 < 3, "execs waited behind an approval"
    assert approvals(ctx, d), "the approval still waits"
    p.kill()
    p.wait()


# The start of a FUSE server in a session (the scripts below): a mount
# namespace of its own, /dev/fuse mounted at mnt (sys.argv[1]).
FUSE_MOUNT = r"""libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x00020000):                                   # CLONE_NEWNS
    sys.exit("unshare: %d" % ctypes.get_errno())
if libc.mount(None, b"/", None, 0x4000 | 0x40000, None):      # MS_REC | MS_PRIVATE
    sys.exit("make-private: %d" % ctypes.get_errno())
fd = os.open("/dev/fuse", os.O_RDWR)
opts = ("fd=%d,rootmode=40000,user_id=0,group_id=0" % fd).encode()
if libc.mount(b"stallfs", mnt.encode(), b"fuse.stallfs", 0, opts):
    sys.exit("mount: %d" % ctypes.get_errno())
"""


# A FUSE file system whose server answers INIT and then never answers a
# lookup: what a session process that may mount FUSE can put in front of
# the supervisor. It runs in the session, in a mount namespace of its own,
# and execs a program inside its mount, then tries once more from a second
# thread (the tree's second worker) and a third time (the tree's backlog).
STALLFS = r"""
import ctypes, os, struct, sys, threading, time
mnt, mark = sys.argv[1], sys.argv[2]
""" + FUSE_MOUNT + r"""rd, wr = os.pipe()
server = os.fork()
if server == 0:                          # the server: INIT, then silence
    os.close(rd)
    null = os.open("/dev/null", os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    while True:
        buf = os.read(fd, 1 << 20)
        length, opcode, unique = struct.unpack("<IIQ", buf[:16])
        if opcode == 26:                 # FUSE_INIT
            out = struct.pack("<IIIIHHI", 7, 31, 0, 0, 16, 12, 65536)
            os.write(fd, struct.pack("<IiQ", 16 + len(out), 0, unique) + out)
        elif opcode == 1:                # FUSE_LOOKUP: never answered
            os.write(wr, b"L")
        else:                            # anything else: ENOSYS
            os.write(fd, struct.pack("<IiQ", 16, -38, unique))
os.close(wr)
results = {}
def attempt(k):
    try:
        pid = os.fork()
        if pid == 0:
            try:
                os.execv(os.path.join(mnt, "prog%d" % k), ["prog"])
            except OSError as e:
                os._exit(e.errno)
        results[k] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    except Exception as e:
        results[k] = repr(e)
ts = [threading.Thread(target=attempt, args=(k,)) for k in range(3)]
for t in ts:
    t.start()
    time.sleep(0.2)
open(mark, "w").write("stuck\n")
for t in ts:
    t.join()
print(" ".join("%d=%s" % (k, results[k]) for k in sorted(results)), flush=True)
os.kill(server, 9)                       # the lookups still waiting fail: ENOTCONN
os.waitpid(server, 0)
"""


def test_stalled_file_system_stalls_only_its_session(ctx):
    """A session process that mounts a FUSE file system it serves itself
    and names a program inside it makes the lookup wait for ever. Other
    sessions go on meanwhile; the stuck execs are refused (EACCES) after
    the lookup timeout, counted, and nothing of them runs."""
    need_fuse(ctx)
    d = daemon(ctx)
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o755)
    mnt, mark = os.path.join(tmp, "mnt"), os.path.join(tmp, "stuck")
    os.mkdir(mnt)
    script = os.path.join(tmp, "stallfs.py")
    with open(script, "w") as f:
        f.write(STALLFS)
    t0 = time.monotonic()
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "python3", script, mnt, mark],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ctx.on_cleanup(lambda: p.poll() is None and p.kill())
    wait(lambda: os.path.exists(mark) or p.poll() is not None, timeout=20, what="stuck execs")
    assert p.poll() is None, p.communicate()
    st = json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)["counters"]["sessions"]
    assert st["lookups_waiting"] == 3, st
    # the session's own thread is stuck in the first lookup: the loop took its listener over
    assert st["receivers"] == 1 and st["receiver_stalls"] >= 1, st
    # another session, and a new session from the same user, go on
    r = session(ctx, d, ["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do /bin/true; done; echo done"])
    assert r.stdout.decode().strip() == "done", r.stderr
    assert p.poll() is None, "the stuck execs were answered before the others ran"
    assert time.monotonic() - t0 < 4.5, "the other session waited (%.1fs)" % (time.monotonic() - t0)
    # the stuck ones: refused once the lookup timeout passes
    out, err = p.communicate(timeout=30)
    got = dict(x.split("=") for x in out.decode().split())
    assert got == {"0": "13", "1": "13", "2": "13"}, (out, err)
    assert err.decode().count("execgate: denied:") == 3, err
    recs = wait(lambda: [e for e in d.events() if e.get("rule") == "lookup-timeout"][2:] and
                [e for e in d.events() if e.get("rule") == "lookup-timeout"], what="3 records")
    assert len(recs) == 3 and all(e["action"] == "blocked" for e in recs), recs
    st = json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)["counters"]["sessions"]
    assert st["lookup_timeouts"] == 3, st
    # the session ended, the server died with it: its workers came back
    wait(lambda: json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)
         ["counters"]["sessions"]["lookups_waiting"] == 0, what="workers back")
    r = session(ctx, d, ["/bin/true"])
    assert r.returncode == 0, r.stderr


def test_one_user_cannot_take_every_lookup_worker(ctx):
    """Sixteen sessions of one user (root) stall their own lookups on FUSE
    servers that never answer and are held: that user's trees share a
    bounded number of workers, so another user's session is still served
    at once (before, 16 such sessions took all 32 workers and every other
    session's execs were refused after the lookup timeout)."""
    need_fuse(ctx)
    d = daemon(ctx)
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o755)
    release = os.path.join(tmp, "release")
    script = os.path.join(tmp, "stallfs.py")
    with open(script, "w") as f:
        f.write(STALLFS.replace("os.kill(server, 9)", "while not os.path.exists(%r):\n    time.sleep(0.2)\n"
                                "os.kill(server, 9)" % release, 1))
    procs, marks = [], []

    def done():
        with open(release, "w") as f:
            f.write("x")
        for p in procs:
            try:
                p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
    ctx.on_cleanup(done)
    for i in range(16):
        mnt, mark = os.path.join(tmp, "mnt%d" % i), os.path.join(tmp, "stuck%d" % i)
        os.mkdir(mnt)
        marks.append(mark)
        procs.append(subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "python3", script, mnt, mark],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    wait(lambda: all(os.path.exists(m) for m in marks) or any(p.poll() is not None for p in procs),
         timeout=60, what="16 stalled sessions")
    assert all(p.poll() is None for p in procs), [p.communicate() for p in procs if p.poll() is not None][:1]
    t0 = time.monotonic()
    r = session(ctx, d, ["/bin/echo", "innocent-ran"], user="nobody")
    took = time.monotonic() - t0
    assert r.returncode == 0 and b"innocent-ran" in r.stdout, (r.returncode, r.stderr[-300:])
    assert took < 4.5, "another user's session waited %.1fs for a worker" % took
    st = json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)["counters"]["sessions"]
    assert st["lookups_waiting"] >= 16 * 3, st


# A session process's stderr on a FUSE file system it serves itself, whose
# server never answers the daemon (nor its helper): a refusal's line would
# poll (FUSE_POLL), fstat (GETATTR), write (WRITE) and close (FUSE_FLUSH)
# that file. The session's own requests are answered. Three children are
# refused: one whose stderr is a file on this machine's disk (it gets the
# line), one whose stderr is the FUSE file, one whose second thread swaps
# fd 2 between a pipe and the FUSE file as fast as it can.
STDERRFS = r"""
import ctypes, os, struct, sys, threading
mnt, mark, local = sys.argv[1], sys.argv[2], sys.argv[3]
""" + FUSE_MOUNT + r"""
def attr(ino, mode):
    return struct.pack("<QQQQQQIIIIIIIIII", ino, 0, 0, 0, 0, 0, 0, 0, 0, mode, 1, 0, 0, 0, 4096, 0)

server = os.fork()
if server == 0:
    null = os.open("/dev/null", os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    while True:
        buf = os.read(fd, 1 << 20)
        length, opcode, unique, nodeid, uid, gid, pid = struct.unpack("<IIQQIII", buf[:36])
        def reply(err, out=b""):
            os.write(fd, struct.pack("<IiQ", 16 + len(out), err, unique) + out)
        try:
            with open("/proc/%d/comm" % pid) as f:
                comm = f.read()
        except OSError:
            comm = ""
        if opcode == 26:                                       # INIT
            reply(0, struct.pack("<IIIIHHI", 7, 31, 0, 0, 16, 12, 65536))
        elif opcode == 2 or comm.startswith("execgate"):       # FORGET; the daemon: never
            pass
        elif opcode == 1:                                      # LOOKUP "err"
            reply(0, struct.pack("<QQQQII", 2, 0, 0, 0, 0, 0) + attr(2, 0o100666))
        elif opcode == 3:                                      # GETATTR
            reply(0, struct.pack("<QII", 0, 0, 0) + (attr(1, 0o40755) if nodeid == 1 else attr(2, 0o100666)))
        elif opcode == 14:                                     # OPEN
            reply(0, struct.pack("<QIi", 1, 0, 0))
        elif opcode == 16:                                     # WRITE
            reply(0, struct.pack("<II", struct.unpack("<I", buf[56:60])[0], 0))
        elif opcode in (18, 25):                               # RELEASE, FLUSH
            reply(0)
        else:
            reply(-38)
os.close(fd)                             # the server alone holds /dev/fuse
pids = open(mark + ".pids", "w")         # for the test to kill should the daemon get stuck
pids.write("%d\n" % server)
pids.flush()

def refused(stderr_to, tries=1):
    pid = os.fork()
    if pid:
        pids.write("%d\n" % pid)
        pids.flush()
    else:
        if stderr_to != "race":
            os.dup2(os.open(stderr_to, os.O_WRONLY | os.O_CREAT, 0o644), 2)
        else:
            fuse, (_, pipe) = os.open(os.path.join(mnt, "err"), os.O_WRONLY), os.pipe()
            def swap():                  # ctypes lets go of the GIL: this runs while execv waits
                while True:
                    libc.dup2(fuse, 2)
                    libc.usleep(30)      # replacing it waits for FLUSH: the FUSE file stays a while
                    libc.dup2(pipe, 2)
            threading.Thread(target=swap, daemon=True).start()
        got = set()
        for i in range(tries):           # a new argv each time: a new question, a new line
            libc.execv(b"/bin/true", (ctypes.c_char_p * 3)(b"true", b"%d" % i, None))
            got.add(ctypes.get_errno())
        os._exit(13 if got == {13} else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

res = [refused(local), refused(os.path.join(mnt, "err")), refused("race", tries=300)]
print(" ".join(map(str, res)), flush=True)
open(mark, "w").write("done\n")
sys.stdin.read()                         # the other sessions are checked meanwhile
try:
    os.kill(server, 9)
except OSError:
    pass
os.waitpid(server, 0)
"""


def test_stderr_on_a_stalled_file_system_stalls_nobody(ctx):
    """A refused task's stderr line is never written to a file on a file
    system the session may serve itself (nor polled, stat'ed or closed by
    the daemon): with its stderr on a FUSE file whose server never answers
    the daemon, or swapped to one in a race, the exec is refused (EACCES)
    and other sessions are answered meanwhile. A file on a local disk still
    gets the line."""
    need_fuse(ctx)
    d = daemon(ctx)
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o755)
    mnt, mark, local = os.path.join(tmp, "mnt"), os.path.join(tmp, "done"), os.path.join(tmp, "local-err")
    os.mkdir(mnt)
    script = os.path.join(tmp, "stderrfs.py")
    with open(script, "w") as f:
        f.write(STDERRFS)

    def unstick():
        # the FUSE server gone, the connection is aborted and what waits on it fails
        try:
            pids = [int(x) for x in open(mark + ".pids").read().split()]
        except OSError:
            pids = []
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--restricted", "--", "python3", script,
                          mnt, mark, local], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    ctx.on_cleanup(lambda: p.poll() is None and p.kill())
    ok = False
    try:
        wait(lambda: os.path.exists(mark) or p.poll() is not None, timeout=20,
             what="the three refusals answered (the daemon stuck on the FUSE file?)")
        assert p.poll() is None, p.communicate()
        for _ in range(3):
            t0 = time.monotonic()
            r = session(ctx, d, ["sh", "-c", "/bin/true; wget x; echo served"], timeout=10)
            assert r.stdout.decode().strip() == "served", r.stderr
            assert time.monotonic() - t0 < 3, "another session waited %.1f s" % (time.monotonic() - t0)
        ok = True
    finally:
        if not ok:
            unstick()
    out, err = p.communicate(b"", timeout=30)
    assert out.decode().split() == ["13", "13", "13"], (out, err[-500:])
    with open(local) as f:
        assert "execgate: denied:" in f.read(), "a file on a local disk gets the line"
    r = session(ctx, d, ["sh", "-c", "/bin/true && echo still"], timeout=10)
    assert r.stdout.decode().strip() == "still", r.stderr


def test_exec_of_a_fifo_stalls_nobody(ctx):
    """A FIFO as the program (execve, execveat by name and by fd) or as a
    script's '#!' interpreter: the exec fails with EACCES, as the kernel
    says, and the daemon, which opens what a task names in the one thread
    that serves every session, never waits for a writer meanwhile."""
    d = daemon(ctx)
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o755)
    fifo, ififo = os.path.join(tmp, "fifo"), os.path.join(tmp, "ififo")
    for f in (fifo, ififo):
        os.mkfifo(f)
        os.chmod(f, 0o777)
    script = os.path.join(tmp, "script")
    with open(script, "w") as f:
        f.write("#!%s\n" % ififo)
    os.chmod(script, 0o755)

    def unstick():
        # a daemon that did block in open(O_RDONLY) gets its writer: no test hangs behind it
        for f in (fifo, ififo):
            try:
                os.close(os.open(f, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
    ctx.on_cleanup(unstick)
    prog = ("import os, subprocess\n"
            "res = []\n"
            "for i in range(20):\n"
            "    for how, argv in (('exec', ['%s']), ('script', ['%s']),\n"
            "                      ('at', ['%s', '%s', 'fifo', 'tok'])):\n"
            "        try:\n"
            "            p = subprocess.run(argv, stdout=subprocess.PIPE, timeout=20)\n"
            "            rc = p.stdout.decode().split()[0] if how == 'at' else 'ran'\n"
            "        except OSError as e:\n"
            "            rc = str(e.errno)\n"
            "        res.append('%%s=%%s' %% (how, rc))\n"
            "    fd = os.open('%s', os.O_PATH)\n"
            "    pid = os.fork()\n"
            "    if pid == 0:\n"
            "        try:\n"
            "            os.execve(fd, ['fifo'], {})\n"
            "        except OSError as e:\n"
            "            os._exit(e.errno)\n"
            "    res.append('fd=%%d' %% os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"
            "    os.close(fd)\n"
            "print(' '.join(sorted(set(res))))\n"
            % (fifo, script, ctx.helper("execveat_fail"), tmp, fifo))
    a = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "python3", "-c", prog],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(0.3)
        # meanwhile, another session: each exec answered at once
        for _ in range(3):
            t0 = time.monotonic()
            r = session(ctx, d, ["sh", "-c", "/bin/true; echo served"], timeout=10)
            took = time.monotonic() - t0
            assert r.stdout.decode().strip() == "served", r.stderr
            assert took < 2, "another session waited %.1f s behind a FIFO" % took
        out, err = a.communicate(timeout=60)
    finally:
        if a.poll() is None:
            unstick()
            a.kill()
            a.wait()
    assert out.decode().split() == ["at=13", "exec=13", "fd=13", "script=13"], (out, err[-500:])
    # and it still serves: a new session's exec
    r = session(ctx, d, ["sh", "-c", "/bin/true && echo still"], timeout=10)
    assert r.stdout.decode().strip() == "still", r.stderr


def test_policy_from_a_pipe_stalls_nobody(ctx):
    """The session policy is read by the daemon: a pipe's writer that never
    finishes must not stall it (the launcher copies a pipe into a memfd)."""
    d = daemon(ctx)
    r = subprocess.run(["bash", "-c", "%s exec -p %s --policy <(echo 'default_decision: allow') -- "
                        "sh -c '/bin/true && echo piped'" % (ctx.execgate, d.pin_path)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert r.returncode == 0 and r.stdout.decode().strip() == "piped", r.stderr
    # a writer that never closes: only that launcher waits, the daemon goes on
    rd, wr = os.pipe()
    try:
        p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--policy", "/dev/stdin", "--",
                              "true"], stdin=rd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.3)
        t0 = time.monotonic()
        r = session(ctx, d, ["sh", "-c", "/bin/true; echo served"], timeout=10)
        assert r.stdout.decode().strip() == "served" and time.monotonic() - t0 < 2, r.stderr
        p.kill()
        p.wait()
    finally:
        os.close(rd)
        os.close(wr)


# Outside any session: a FUSE file system whose server never answers READ,
# in a mount namespace of its own, and `execgate exec --policy MNT/p.yaml`.
STALLPOL = r"""
import ctypes, os, struct, subprocess, sys
mnt, mark, execgate, pin = sys.argv[1:5]
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x00020000) or libc.mount(None, b"/", None, 0x4000 | 0x40000, None):
    sys.exit("unshare: %d" % ctypes.get_errno())
fd = os.open("/dev/fuse", os.O_RDWR)
opts = ("fd=%d,rootmode=40000,user_id=0,group_id=0" % fd).encode()
if libc.mount(b"stallfs", mnt.encode(), b"fuse.stallfs", 0, opts):
    sys.exit("mount: %d" % ctypes.get_errno())

def attr(ino, mode, size=0):
    return struct.pack("<QQQQQQIIIIIIIIII", ino, size, 1, 0, 0, 0, 0, 0, 0, mode, 1, 0, 0, 0, 4096, 0)

server = os.fork()
if server == 0:
    while True:
        buf = os.read(fd, 1 << 20)
        length, opcode, unique, nodeid = struct.unpack("<IIQQ", buf[:24])
        def reply(err, out=b""):
            os.write(fd, struct.pack("<IiQ", 16 + len(out), err, unique) + out)
        if opcode == 26:                                       # INIT
            reply(0, struct.pack("<IIIIHHI", 7, 31, 0, 0, 16, 12, 65536))
        elif opcode == 1:                                      # LOOKUP "p.yaml"
            reply(0, struct.pack("<QQQQII", 2, 0, 60, 60, 0, 0) + attr(2, 0o100644, 100))
        elif opcode == 3:                                      # GETATTR
            reply(0, struct.pack("<QII", 60, 0, 0) + (attr(1, 0o40755) if nodeid == 1 else attr(2, 0o100644, 100)))
        elif opcode == 14:                                     # OPEN
            reply(0, struct.pack("<QIi", 1, 0, 0))
        elif opcode in (2, 15):                                # FORGET; READ: never answered
            pass
        else:
            reply(-38)
os.close(fd)
with open(mark + ".srv", "w") as f:
    f.write(str(server))
p = subprocess.Popen([execgate, "exec", "-p", pin, "--policy", os.path.join(mnt, "p.yaml"), "--", "true"])
open(mark, "w").write("started\n")
p.wait()
"""


def test_policy_on_a_stalled_file_system_stalls_nobody(ctx):
    """The daemon reads a session policy only from a sealed memfd: the
    launcher copies the file, with the caller's rights, so a policy on a
    FUSE mount whose server never answers makes only that launcher wait.
    A launcher that passes the file itself is refused."""
    need_fuse(ctx)
    d = daemon(ctx)
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o755)
    mnt, mark = os.path.join(tmp, "mnt"), os.path.join(tmp, "started")
    os.mkdir(mnt)
    script = os.path.join(tmp, "stallpol.py")
    with open(script, "w") as f:
        f.write(STALLPOL)

    def unstick():
        try:
            os.kill(int(open(mark + ".srv").read()), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    p = subprocess.Popen(["python3", script, mnt, mark, ctx.execgate, d.pin_path],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ctx.on_cleanup(lambda: p.poll() is None and p.kill())
    try:
        wait(lambda: os.path.exists(mark) or p.poll() is not None, timeout=20, what="the launcher")
        time.sleep(1)                    # it reads the policy (and waits for ever)
        t0 = time.monotonic()
        r = session(ctx, d, ["sh", "-c", "/bin/true; echo served"], timeout=10)
        assert r.stdout.decode().strip() == "served", r.stderr
        assert time.monotonic() - t0 < 3, "another session waited %.1f s" % (time.monotonic() - t0)
    finally:
        unstick()
    p.wait(timeout=20)
    # the policy as an open file, not a memfd: refused before anything reads it
    if os.environ.get("EG_ASAN"):
        ctx.skip("an ASan build takes no LD_PRELOAD helper (its runtime must come first)")
    sock = json.loads(open(d.output).readline())["socket"]
    pol = write(ctx, "default_decision: allow\ncommands: []\n", "plain.yaml")
    env = dict(os.environ, LD_PRELOAD=ctx.helper("preload_session_open"), EG_TEST_SOCKET=sock,
               EG_TEST_POLICY=pol)
    r = subprocess.run([ctx.execgate, "exec", "-p", d.pin_path, "--", "true"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    reply = json.loads(r.stdout)
    assert reply["ok"] is False and "sealed memfd" in reply["error"], (reply, r.stderr)
    # the launcher's own copy still goes through
    r = session(ctx, d, ["sh", "-c", "/bin/true && echo fine"], "--policy", pol, timeout=10)
    assert r.stdout.decode().strip() == "fine", r.stderr



def test_a_session_not_attached_at_a_handover_ends(ctx):
    """A launcher between its two requests (its session opened, no listener attached yet) when
    the daemon is handed over: its connection goes with the old daemon, and the new one carried
    the session on with nothing that would ever end it (it counted among the user's sessions,
    and a later process with the launcher's pid could attach to it). It ends at the import."""
    if os.environ.get("EG_ASAN"):
        ctx.skip("an ASan build takes no LD_PRELOAD helper (its runtime must come first)")
    d = daemon(ctx)
    sock = json.loads(open(d.output).readline())["socket"]
    env = dict(os.environ, LD_PRELOAD=ctx.helper("preload_session_hold"), EG_TEST_SOCKET=sock)
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "true"], env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    ctx.on_cleanup(lambda: p.poll() is None and (os.killpg(p.pid, signal.SIGKILL), p.wait()))
    assert select.select([p.stdout], [], [], 30)[0], "no reply to the session_open"
    reply = json.loads(p.stdout.readline())
    assert reply["ok"] and reply["session"], reply
    sid = reply["session"]
    d.reexec()
    end = wait(lambda: [e for e in d.events() if e.get("type") == "session" and e.get("event") == "end" and
                        e.get("session") == sid], timeout=20, what="the end of the session never attached")
    assert "not attached" in json.dumps(end[-1]), end[-1]


def test_a_launcher_that_execs_while_it_is_answered_gets_no_session(ctx):
    """A launcher is the caller's code (LD_PRELOAD reaches it): one that asks for a session and
    execs while the daemon answers gets none. Its session id is written in the kernel only while it
    is still the image the daemon looked at; a lookup and update from user space would have put
    the launcher's image back over the one it exec'd, flags and all, with the session."""
    if os.environ.get("EG_ASAN"):
        ctx.skip("an ASan build takes no LD_PRELOAD helper (its runtime must come first)")
    work = ctx.tmpdir()
    arm, mark = os.path.join(work, "arm"), os.path.join(work, "stalled")
    denv = dict(os.environ, LD_PRELOAD=ctx.helper("preload_stall_bpf"), EG_STALL_MARK=mark,
                EG_STALL_ARM=arm)
    d = ctx.daemon(env=denv)
    ctx.on_cleanup(lambda: os.path.exists(mark) and os.unlink(mark))
    sock = json.loads(open(d.output).readline())["socket"]
    reply, started = os.path.join(work, "reply"), os.path.join(work, "started")
    env = dict(os.environ, LD_PRELOAD=ctx.helper("preload_launcher_execs"), EG_TEST_SOCKET=sock,
               EG_STALL_MARK=mark, EG_TEST_AFTER=": > %s; head -n 1 <&3 > %s" % (started, reply))
    open(arm, "w").close()
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "true"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ctx.on_cleanup(p.kill)
    # the daemon stops before it marks the session; the launcher execs the shell meanwhile
    eg.wait_until(lambda: os.path.exists(mark), what="the daemon at the session's mark")
    eg.wait_until(lambda: os.path.exists(started), what="the launcher's exec of the shell")
    os.unlink(mark)
    p.communicate(timeout=20)
    r = json.loads(open(reply).read())
    assert r["ok"] is False and "no longer a launcher" in r["error"], r


# ---- stacking ---------------------------------------------------------------------

# Run inside a session: asks the daemon through a connection whose connecting
# process is gone (mode "reaped": exited and reaped; "zombie": exited, not
# reaped yet) or still there ("direct"), and prints the reply.
PEER_LEFT = r"""
import json, os, socket, sys
sock, mode, req = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if req.get("id") == "PENDING":
    # the pending approval's id, which the test reads from outside (a session may not list them)
    import time
    while not (os.path.exists(sys.argv[4]) and open(sys.argv[4]).read()):
        time.sleep(0.05)
    req["id"] = open(sys.argv[4]).read().strip()
go_r, go_w = os.pipe()
res_r, res_w = os.pipe()
a = os.fork()
if a == 0:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)                     # SO_PEERCRED and SO_PEERPIDFD: this process
    if mode != "direct" and os.fork() == 0:
        os.close(go_w)
        os.read(go_r, 1)                # EOF: the connecting process has exited
    elif mode != "direct":
        os._exit(0)
    s.sendall(json.dumps(req).encode() + b"\n")
    os.write(res_w, s.makefile().readline().encode())
    os._exit(0)
os.close(go_r)
os.close(res_w)
if mode == "reaped":
    os.waitpid(a, 0)
elif mode == "zombie":
    os.waitid(os.P_PID, a, os.WEXITED | os.WNOWAIT)
os.close(go_w)
print(mode, os.read(res_r, 65536).decode().strip(), flush=True)
if mode != "reaped":
    os.waitpid(a, 0)
"""


def peer_left(ctx, d, mode, req, *opts, user=None, pre=""):
    """The reply to req sent from inside a session (python3 its command, or
    a shell's after pre) over the connection of a process that left."""
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o755)
    helper = os.path.join(tmp, "peer.py")
    with open(helper, "w") as f:
        f.write(PEER_LEFT)
    os.chmod(helper, 0o644)
    sock = json.loads(open(d.output).readline())["socket"]
    cmd = ["python3", helper, sock, mode, json.dumps(req)]
    stop = threading.Event()
    if req.get("id") == "PENDING":
        idfile = os.path.join(tmp, "pending-id")
        cmd.append(idfile)

        def tell():
            while not stop.is_set():
                r = ctx.run([ctx.execgate, "approvals", "--json", "-p", d.pin_path], check=False)
                ids = [json.loads(l)["approval_id"] for l in r.stdout.decode().splitlines() if l.strip()]
                if ids:
                    with open(idfile + ".tmp", "w") as f:
                        f.write(ids[0])
                    os.chmod(idfile + ".tmp", 0o644)
                    os.rename(idfile + ".tmp", idfile)
                    return
                time.sleep(0.05)
        threading.Thread(target=tell, daemon=True).start()
    if pre:
        cmd = ["sh", "-c", pre + " exec " + " ".join(shlex.quote(a) for a in cmd)]
    try:
        r = session(ctx, d, cmd, *opts, user=user)
    finally:
        stop.set()
    line = [l for l in r.stdout.decode().splitlines() if l.startswith(mode + " ")]
    assert line, (r.returncode, r.stdout, r.stderr)
    return json.loads(line[-1].split(" ", 1)[1])


def test_a_peer_that_left_is_still_in_its_session(ctx):
    """A session process connects, forks and exits; its child asks. The
    daemon must not take the gone (or reused) pid for a process outside
    every session: it asks the socket for its peer's pidfd, and refuses
    what it cannot place."""
    d = daemon(ctx, POLICY, "--state-dir", ctx.tmpdir())
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o777)
    out = os.path.join(tmp, "escaped")
    run = {"op": "run", "argv": ["/bin/sh", "-c", "id > %s" % out], "background": True, "cwd": "/"}
    for mode in ("reaped", "zombie", "direct"):
        reply = peer_left(ctx, d, mode, run, "--restricted", user="nobody")
        assert reply["ok"] is False and "inside a supervised session" in reply["error"], (mode, reply)
    for op in ({"op": "write", "id": "p-1", "data": "x"}, {"op": "send_keys", "id": "p-1", "keys": ["Enter"]},
               {"op": "wait", "id": "p-1"}):
        reply = peer_left(ctx, d, "reaped", op, "--restricted", user="nobody")
        assert reply["ok"] is False and "inside a supervised session" in reply["error"], (op, reply)
    # refused before the registry had an entry: nothing ran that could write out later
    ps = json.loads(ctx.run([ctx.execgate, "ps", "--json", "-p", d.pin_path]).stdout)
    assert not [e for e in ps if out in e["command"]], ps
    assert not os.path.exists(out), "a run from inside a restricted session escaped it"
    # from outside every session, run works as before
    r = ctx.run([ctx.execgate, "run", "-p", d.pin_path, "--", "sh", "-c", "echo outside"])
    assert r.stdout == b"outside\n", r
    # no self-approval through a child either: the request times out, nobody answered it
    f = os.path.join(tmp, "self-" + token())
    for mode in ("reaped", "zombie"):
        reply = peer_left(ctx, d, mode, {"op": "approve", "id": "PENDING"}, pre="touch %s &" % f)
        assert reply["ok"] is False, (mode, reply)
        assert ("inside session" if mode == "zombie" else "cannot tell whether") in reply["error"], reply
        assert not os.path.exists(f), mode
    answered = [e for e in d.events() if e.get("type") == "approval" and e["event"] == "approved"]
    assert not answered, answered


def test_sessions_stack_never_weaken(ctx):
    d = daemon(ctx, POLICY + "  - {name: tools, paths: [\"%s\"], decision: allow}\n" % ctx.execgate)
    allow_all = write(ctx, "default_decision: allow\ncommands: []\n", "allow-all.yaml")
    t = token()
    inner = "%s exec -p %s --policy %s -- sh -c 'wget %s; echo inner-rc=$?'" % (ctx.execgate, d.pin_path, allow_all, t)
    r = session(ctx, d, ["sh", "-c", inner])
    assert "inner-rc=126" in r.stdout.decode(), (r.stdout, r.stderr)
    assert "rule no-net" in r.stderr.decode()
    # restricted outer: the inner session cannot lift it (its launcher is already refused)
    r = session(ctx, d, ["sh", "-c", "%s exec -p %s -- /bin/true; echo rc=$?" % (ctx.execgate, d.pin_path)],
                "--restricted")
    assert "rc=126" in r.stdout.decode() and "restricted" in r.stderr.decode(), r.stderr
    # a nested session's depth keeps counting: nothing looks direct again
    t = token()
    r = session(ctx, d, ["sh", "-c", "%s exec -p %s -- /bin/true %s" % (ctx.execgate, d.pin_path, t)])
    e = wait(lambda: [x for x in evs(d, t, "exec") if x["filename"] == os.path.realpath("/bin/true")],
             what="inner exec")[0]
    assert e["depth"] >= 2, e
    sessions = [x for x in d.events() if x.get("type") == "session" and x.get("event") == "start"]
    assert sessions[-1]["parent"] is not None, sessions[-1]


def test_every_outer_policy_judges_however_deep(ctx):
    """64 permissive session policies stacked under one that denies: the
    outer one still judges (the supervisor evaluates at most 63 session
    policies, and refuses rather than leave one out)."""
    d = daemon(ctx, "commands: []\n")
    work = ctx.tmpdir()
    os.chmod(work, 0o755)
    outer = write(ctx, "commands:\n  - {name: no-forbidden, basenames: [forbidden], decision: deny}\n",
                  "outer.yaml")
    allow = write(ctx, "default_decision: allow\ncommands: []\n", "allow.yaml")
    prog = os.path.join(work, "forbidden")
    shutil.copy("/bin/echo", prog)
    os.chmod(prog, 0o755)
    for k, ran in ((3, False), (64, False)):
        argv = []
        for _ in range(k):
            argv += [ctx.execgate, "exec", "-p", d.pin_path, "--policy", allow, "--"]
        r = session(ctx, d, argv + [prog, "forbidden-ran"], "--policy", outer, timeout=120)
        assert b"forbidden-ran" not in r.stdout, (k, r.returncode, r.stderr[-300:])
        assert r.returncode != 0, (k, r.returncode)


def test_session_policy_cannot_raise_argv_limits(ctx):
    """max_argc and max_argv_bytes bound what the daemon reads for each exec:
    a session policy may lower them, not raise them past the daemon's."""
    d = daemon(ctx, "sandbox: {seccomp: {execve: {max_argc: 100}}}\ncommands: []\n")
    mine = write(ctx, "default_decision: allow\nsandbox: {seccomp: {execve: {max_argc: 2147483647, "
                 "max_argv_bytes: 2147483647}}}\ncommands: []\n", "mine.yaml")
    t = token()
    r = session(ctx, d, ["sh", "-c", "/bin/true %s $(seq 200); echo rc=$?" % t], "--policy", mine)
    assert "rc=126" in r.stdout.decode(), (r.stdout, r.stderr)
    assert "truncated" in r.stderr.decode(), r.stderr
    # and within the daemon's limit it runs
    r = session(ctx, d, ["sh", "-c", "/bin/true %s $(seq 50); echo rc=$?" % t], "--policy", mine)
    assert "rc=0" in r.stdout.decode(), (r.stdout, r.stderr)


def test_nested_sessions_end_when_their_processes_do(ctx):
    """A session started inside another has no listener of its own: it ends
    once none of its processes is left (not while one still runs), and
    with the tree. An agent that starts more nested sessions one after
    another than a user may hold at once is not refused."""
    d = daemon(ctx, "commands: []\n")
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o777)
    go = os.path.join(tmp, "go")
    t = token()
    E, P = ctx.execgate, d.pin_path
    # a nested session whose command exits at once, leaving a process behind that execs later
    keeper = "%s exec -p %s --session keeper -- sh -c '(while [ ! -e %s ]; do sleep 0.2; done; " \
             "/bin/true %s) >/dev/null 2>&1 &'" % (E, P, go, t)
    loop = "i=0; while [ $i -lt 300 ]; do %s exec -p %s -- /bin/true || echo FAIL $i; i=$((i+1)); done" % (E, P)
    script = "%s; %s; touch %s; sleep 1.5; echo finished" % (keeper, loop, go)
    r = session(ctx, d, ["sh", "-c", script], timeout=300)
    out = r.stdout.decode()
    assert "finished" in out and "FAIL" not in out, (out[-500:], r.stderr.decode()[-500:])
    # the process left behind was still judged as its session's member
    e = wait(lambda: [x for x in evs(d, t, "exec")], what="the late exec")[0]
    assert e["action"] == "allowed", e
    starts = [x for x in d.events() if x.get("type") == "session" and x.get("event") == "start"]
    keep = [x for x in starts if x.get("name") == "keeper"][0]
    assert e["session"] == keep["session"], (e, keep)

    def st():
        return json.loads(ctx.run([E, "stats", "-j", "-p", P]).stdout)["counters"]["sessions"]
    wait(lambda: st()["active"] == 0, timeout=20, what="every session ended")
    ends = wait(lambda: [x for x in d.events() if x.get("type") == "session" and x.get("event") == "end"]
                [301:] and [x for x in d.events() if x.get("type") == "session" and x.get("event") == "end"],
                what="302 end records")
    assert len(ends) == st()["started"] == 302, (len(ends), st())
    assert len({x["session"] for x in ends}) == 302


def test_session_policy_cannot_loosen_approval_timeout(ctx):
    """What nobody's answer comes to is every policy's word, not the
    innermost one's: a session policy that allows after 1 s does not make
    the daemon's approvals (20 s, then deny) pass unanswered."""
    d = daemon(ctx, """
sandbox: {seccomp: {execve: {approval_timeout: 20s, approval_timeout_action: deny}}}
commands:
  - {name: ask-touch, basenames: [touch], context: [nested], decision: approval, message: "needs a human"}
""")
    weak = write(ctx, "sandbox: {seccomp: {execve: {approval_timeout: 1s, approval_timeout_action: allow}}}\n"
                 "commands: []\n", "weak.yaml")
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o777)
    f = os.path.join(tmp, "weak-" + token())
    # the agent (uid nobody) nests a session of its own with the weak policy
    inner = "%s exec -p %s --policy %s -- sh -c 'touch %s; echo touch-rc=$?'" % (ctx.execgate, d.pin_path, weak, f)
    t0 = time.monotonic()
    r = session(ctx, d, ["sh", "-c", inner], user="nobody")
    took = time.monotonic() - t0
    assert b"touch-rc=126" in r.stdout and not os.path.exists(f), (r.stdout, r.stderr)
    assert b"no answer to the approval request in time" in r.stderr, r.stderr
    assert took < 15, "refused at the shortest timeout in the chain, %.1fs" % took
    ev = wait(lambda: [e for e in d.events() if e.get("type") == "approval" and e["event"] == "timeout"],
              what="the timeout record")[0]
    assert ev["timeout_ms"] == 1000 and ev["timeout_action"] == "deny", ev
    # every policy allows on timeout: allowed, once the longest timeout has passed
    d.stop()
    d = daemon(ctx, """
sandbox: {seccomp: {execve: {approval_timeout: 2s, approval_timeout_action: allow}}}
commands:
  - {name: ask-touch, basenames: [touch], context: [nested], decision: approval}
""")
    f = os.path.join(tmp, "both-" + token())
    t0 = time.monotonic()
    r = session(ctx, d, ["sh", "-c", "touch %s; echo touch-rc=$?" % f], "--policy", weak)
    assert b"touch-rc=0" in r.stdout and os.path.exists(f), (r.stdout, r.stderr)
    assert time.monotonic() - t0 >= 1.9, "not at the session policy's 1 s"
    ev = wait(lambda: [e for e in d.events() if e.get("type") == "approval" and e["event"] == "timeout"],
              what="the timeout record")[0]
    assert ev["timeout_ms"] == 2000 and ev["timeout_action"] == "allow", ev


EXECVEAT_FDCWD = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
arr = lambda xs: (ctypes.c_char_p * (len(xs) + 1))(*[x.encode() for x in xs], None)
argv = arr(["s.sh", "one", "two"])
libc.syscall(322, -100, b"s.sh", argv, arr([]), 0)       # execveat(AT_FDCWD, "s.sh", ...)
sys.exit("execveat: %d" % ctypes.get_errno())
"""


def test_execveat_from_the_cwd_runs_a_script_as_the_kernel_names_it(ctx):
    """execveat(AT_FDCWD, "s.sh") of a '#!' script: the kernel gives the
    interpreter the name as spelled (not /dev/fd/N/s.sh), and so must the
    supervisor, or the ticket's argv differs and the exec is killed."""
    d = daemon(ctx)
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o755)
    with open(os.path.join(tmp, "s.sh"), "w") as f:
        f.write("#!/bin/sh\necho \"ran: $0 $*\"\n")
    os.chmod(os.path.join(tmp, "s.sh"), 0o755)
    r = subprocess.run([ctx.execgate, "exec", "-p", d.pin_path, "--", "python3", "-c", EXECVEAT_FDCWD],
                       cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert r.returncode == 0 and r.stdout.decode().strip() == "ran: s.sh one two", (r.returncode, r.stdout,
                                                                                     r.stderr[-300:])


def test_session_policy_naming_a_fifo_stalls_nobody(ctx):
    """A session policy is someone else's word: the files its literal paths
    name are not opened by the daemon (a FIFO would keep it waiting for a
    writer, as root). `policy check` looks before it opens, too."""
    d = daemon(ctx)
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o755)
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    pol = write(ctx, "default_decision: allow\ncommands:\n  - {name: f, paths: [%s], decision: deny}\n" % fifo,
                "fifo.yaml")
    r = session(ctx, d, ["/bin/echo", "ran"], "--policy", pol, timeout=20)
    assert r.returncode == 0 and r.stdout.strip() == b"ran", (r.returncode, r.stderr[-300:])
    r = session(ctx, d, ["/bin/true"], timeout=20)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([ctx.execgate, "policy", "check", pol], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=20)
    assert r.returncode == 0, r.stderr


def test_no_user_namespace_to_rename_a_program(ctx):
    """In a user namespace of its own an unprivileged process can mount, and
    bind a denied program over an allowed path: the name the policy
    matches would be its to choose. Sessions refuse user namespaces
    (unshare, clone, setns; clone3 falls back to clone); ordinary threads
    and spawns still work."""
    d = daemon(ctx, "default_decision: deny\ncommands:\n"
                    "  - {name: ok, basenames: [sh, dash, true, echo, unshare, setpriv, python3, python3.11, mount],"
                    " decision: allow}\n")
    trick = ("unshare -Urm /bin/sh -c 'mount --bind /usr/bin/id /usr/bin/true && /usr/bin/true'; "
             "echo rc=$?")
    r = session(ctx, d, ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c", trick])
    out = r.stdout.decode()
    assert "uid=" not in out and "rc=0" not in out and "rc=" in out, (out, r.stderr[-300:])
    probe = ("import ctypes, os, threading, subprocess\n"
             "libc = ctypes.CDLL(None, use_errno=True)\n"
             "if libc.unshare(0x10000000) == 0:\n    print('unshared')\n"
             "else:\n    print('refused', ctypes.get_errno())\n"
             "t = threading.Thread(target=print, args=('thread',)); t.start(); t.join()\n"
             "print(subprocess.run(['/bin/echo', 'spawned'], capture_output=True).stdout.decode().strip())\n")
    r = session(ctx, d, ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "python3", "-c", probe])
    assert r.stdout.decode().split("\n")[:3] == ["refused 1", "thread", "spawned"], (r.stdout, r.stderr[-300:])


def test_a_session_in_a_users_mount_namespace_allows_nothing_by_path(ctx):
    """A session started inside a mount namespace a user made (its own
    tasks cannot make one) runs where any path may be of that user's
    making: a tmpfs they mounted over /usr/local/games holds their own
    program. No allow by path holds there, for that program nor any other
    (the daemon cannot tell mount by mount, as the kernel's judge does);
    an allow by name still does, and the same session outside runs what
    the path allows. Both ways the daemon tells who made the namespace:
    the facts program, and /proc with EXECGATE_NO_FACTS_PROG=1 (a kernel
    where it does not load)."""
    for no_prog in ("0", "1"):
        users_mount_namespace(ctx, no_prog)


def users_mount_namespace(ctx, no_prog):
    pol = ("default_decision: deny\ncommands:\n"
           "  - {name: shells, basenames: [sh, dash], decision: allow}\n"
           "  - {name: system, paths: [\"/usr/*\"], decision: allow}\n")
    d = ctx.daemon("--policy", write(ctx, pol), env=dict(os.environ, EXECGATE_NO_FACTS_PROG=no_prog))
    work = ctx.tmpdir()
    os.chmod(work, 0o755)
    shutil.copy("/usr/bin/echo", os.path.join(work, "x"))
    os.chmod(os.path.join(work, "x"), 0o755)
    t = token()
    inner = "/usr/bin/echo a-%s; echo rc=$?; /usr/local/games/x b-%s; echo rc=$?" % (t, t)
    launch = [ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c", inner]
    r = subprocess.run(launch, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                       user="nobody", group="nogroup", extra_groups=[])
    assert r.stdout.decode().split() == ["a-" + t, "rc=0", "rc=127"], (r.stdout, r.stderr[-300:])
    setup = "mount -t tmpfs none /usr/local/games && cp %s/x /usr/local/games/x || exit 99; exec \"$@\"" % work
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        "unshare", "-Urm", "sh", "-c", setup, "sh"] + launch,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    out = r.stdout.decode()
    assert r.returncode != 99 and "a-" not in out and "b-" not in out, (out, r.stderr[-300:])
    assert out.split() == ["rc=126", "rc=126"], (out, r.stderr[-300:])
    refused = wait(lambda: [e for e in evs(d, "b-" + t, "exec_failed") if e["errno"] == 13], what="x refused")
    assert refused[0]["decision"] == "deny" and refused[0]["rule"] is None, refused
    # one root made (as a runtime's): not the host's either, yet its paths are root's to spell
    r = subprocess.run(["unshare", "-m", "--propagation", "private"] + launch, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    assert r.stdout.decode().split() == ["a-" + t, "rc=0", "rc=127"], (r.stdout, r.stderr[-300:])


def test_a_copy_of_a_denied_program_is_known_by_content(ctx):
    """The daemon's policy names /usr/bin/id by path: a copy under another
    name (and a hard link) is the same program, in a session as on the host."""
    d = daemon(ctx, "default_decision: allow\ncommands:\n  - {name: no-id, paths: [/usr/bin/id], decision: deny}\n")
    work = ctx.tmpdir()
    os.chmod(work, 0o755)
    copy = os.path.join(work, "myid")
    shutil.copy("/usr/bin/id", copy)
    os.chmod(copy, 0o755)
    for prog in ("/usr/bin/id", copy):
        r = session(ctx, d, ["sh", "-c", "%s; echo rc=$?" % prog])
        out = r.stdout.decode()
        assert "uid=" not in out and "rc=126" in out, (prog, out, r.stderr[-300:])
        assert "rule no-id" in r.stderr.decode(), r.stderr
    # a file of another size is not read, and runs
    r = session(ctx, d, ["/bin/true"])
    assert r.returncode == 0, r.stderr


# ---- restricted ---------------------------------------------------------------------

SPAWNS = {
    "simple": "ls /",
    "absolute": "/bin/ls /",
    "command": "command ls /",
    "exec": "(exec ls /)",
    "pipeline": "echo x | cat",
    "substitution": "x=$(date); test -n \"$x\"",
    "background": "ls / & wait $!",
    "coproc": "coproc cat; echo hi >&\"${COPROC[1]}\"; exec {COPROC[1]}>&-; read -r l <&\"${COPROC[0]}\"; wait $COPROC_PID",
    "xargs": "echo / | xargs ls",
    "find": "find / -maxdepth 0 -exec true {} \\;",
    "env": "env true",
    "script": "printf '#!/bin/sh\\ntrue\\n' > $T/s.sh; chmod +x $T/s.sh; $T/s.sh",
}


def test_restricted_everywhere(ctx):
    d = daemon(ctx)
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o777)
    for name, cmd in SPAWNS.items():
        r = session(ctx, d, ["bash", "-c", "T=%s; echo builtin-ok; %s" % (tmp, cmd)], "--restricted",
                    timeout=30)
        out, err = r.stdout.decode(), r.stderr.decode()
        assert "builtin-ok" in out, (name, out, err)
        assert r.returncode != 0, (name, r.returncode, out)
        assert "restricted" in err, (name, err)
    # programs that spawn: python subprocess, posix_spawn, vfork, execveat (CMD itself runs)
    prog = ("import os, subprocess, sys\n"
            "res = []\n"
            "for how in ('subprocess', 'posix_spawn', 'vfork', 'execveat'):\n"
            "    try:\n"
            "        if how == 'subprocess':\n"
            "            rc = subprocess.run(['/bin/true']).returncode\n"
            "        elif how == 'posix_spawn':\n"
            "            pid = os.posix_spawn('/bin/true', ['true'], {}); rc = os.waitpid(pid, 0)[1]\n"
            "        elif how == 'vfork':\n"
            "            rc = subprocess.run(['/bin/true'], close_fds=False).returncode\n"
            "        else:\n"
            "            rc = subprocess.run(['%s', 'fd', '/bin/true', 'true']).returncode\n"
            "    except OSError as e:\n"
            "        rc = 'refused:%%d' %% e.errno\n"
            "    res.append('%%s=%%s' %% (how, rc))\n"
            "print(' '.join(res))\n" % ctx.helper("fexec"))
    r = session(ctx, d, ["python3", "-c", prog], "--restricted", timeout=30)
    out = r.stdout.decode()
    assert "subprocess=refused:13" in out and "posix_spawn=refused:13" in out, out
    assert "vfork=refused:13" in out, out
    assert "execveat=refused:13" in out, out


# ---- fail closed -----------------------------------------------------------------

# argv: the control socket, a file the nested holder makes when it starts (the outer one waits
# for it: the nested launcher needs its own connection first), and a file whose making lets go
HOLD_CTL = r"""
import os, resource, socket, sys, time
sock, ready, release, nested = sys.argv[1], sys.argv[2], sys.argv[3], len(sys.argv) > 4
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
deadline = time.monotonic() + 60
if nested:
    open(ready, "w").close()
while not nested and not os.path.exists(ready) and time.monotonic() < deadline:
    time.sleep(0.02)
held = []
for _ in range(1100):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sock)
    except OSError:
        break
    held.append(s)
# the server closes those it refused: what is left open is what it gave, once the server has
# taken every one from its listen queue (a slow daemon: counted until the count stands still)
def count():
    alive = 0
    for s in held:
        s.setblocking(False)
        try:
            alive += s.recv(1) != b""
        except BlockingIOError:
            alive += 1
    return alive
alive, same, until = -1, 0, time.monotonic() + 20
while same < 3 and time.monotonic() < until:
    time.sleep(0.3)
    n = count()
    same, alive = same + 1 if n == alive else 0, n
os.write(1, b"%d\n" % alive)      # one write: the two holders share the pipe (print() may make two)
# held until the test has read both counts (not stdin: a shell's background job reads /dev/null)
while not os.path.exists(release) and time.monotonic() < deadline:
    time.sleep(0.05)
"""


def test_a_session_cannot_take_every_control_connection(ctx):
    """A session's process (root here, who is never held to a user's share)
    opened every connection the control socket takes: the harness, another
    session, an operator were locked out, and a shim installed with
    --fail-open ran the next command unsupervised. A session gets 128,
    with the sessions started inside it (one more nested session is no
    second share)."""
    d = ctx.daemon()
    sock = json.loads(ctx.run([ctx.execgate, "status", "--json", "-p", d.pin_path]).stdout)["socket"]
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o777)
    err, ready, release = (os.path.join(tmp, n) for n in ("stderr", "ready", "release"))
    # both hold at once, whatever the order they get to the socket in: the outer holder starts
    # once the nested session runs, and neither lets go before the test has read both counts
    with open(err, "wb") as ef:
        p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c",
                              'python3 -c "$0" "$1" "$4" "$5" & '
                              '"$2" exec -p "$3" -- python3 -c "$0" "$1" "$4" "$5" nested; wait',
                              HOLD_CTL, sock, ctx.execgate, d.pin_path, ready, release],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=ef, start_new_session=True)
    ctx.on_cleanup(lambda: open(release, "w").close())
    # what is left of the session, should an assertion fail before the holders were let go
    ctx.on_cleanup(lambda: p.poll() is None and os.killpg(p.pid, signal.SIGKILL))
    try:
        # the two holders' counts (a line each), or what ended them: never a read that waits for good
        lines, buf, deadline = [], b"", time.monotonic() + 60
        while len(lines) < 2 and time.monotonic() < deadline:
            if select.select([p.stdout], [], [], 0.5)[0]:
                b = os.read(p.stdout.fileno(), 4096)
                if not b:
                    break
                buf += b
                while b"\n" in buf and len(lines) < 2:
                    line, buf = buf.split(b"\n", 1)
                    lines.append(line)
        with open(err, "rb") as ef:
            assert len(lines) == 2 and all(x.strip().isdigit() for x in lines), (lines, buf, ef.read()[-2000:])
        assert sum(int(x) for x in lines) <= 128, lines
        r = subprocess.run([ctx.execgate, "exec", "-p", d.pin_path, "--", "true"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        assert r.returncode == 0, r.stderr
        r = subprocess.run([ctx.execgate, "status", "-p", d.pin_path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        assert r.returncode == 0, r.stderr
    finally:
        open(release, "w").close()
        p.wait(timeout=30)


def test_a_users_sessions_leave_the_user_room_outside_them(ctx):
    """Connections from a user's sessions counted against the user's own share (320): a
    harness's shims each start an outermost session, and three agents' background processes
    holding 110 each locked the harness (the same user, outside sessions) out of the control
    socket; a --fail-open shim then ran its next command unsupervised. Sessions have their own
    shares now, one user's sessions at most 256 of all, and the user outside them keeps theirs."""
    d = ctx.daemon()
    sock = json.loads(ctx.run([ctx.execgate, "status", "--json", "-p", d.pin_path]).stdout)["socket"]
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o777)
    release = os.path.join(tmp, "release")
    ctx.on_cleanup(lambda: open(release, "w").close())
    holders = []
    for i in range(3):
        p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "python3", "-c", HOLD_CTL, sock,
                              os.path.join(tmp, "ready%d" % i), release, "x"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             user="nobody", group="nogroup", extra_groups=[], start_new_session=True)
        ctx.on_cleanup(lambda p=p: p.poll() is None and os.killpg(p.pid, signal.SIGKILL))
        holders.append(p)
    counts = []
    for p in holders:
        if select.select([p.stdout], [], [], 60)[0]:
            line = p.stdout.readline()
            counts.append(int(line) if line.strip().isdigit() else line)
    assert len(counts) == 3 and all(isinstance(n, int) for n in counts), counts
    assert 128 < sum(counts) <= 256, counts
    # the same user, outside any session: still let in
    code = ("import socket, sys\n"
            "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
            "s.connect(sys.argv[1])\n"
            "s.settimeout(1)\n"
            "try:\n"
            "    print('closed' if s.recv(1) == b'' else 'data')\n"
            "except socket.timeout:\n"
            "    print('open')\n")
    r = subprocess.run(["python3", "-c", code, sock], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                       user="nobody", group="nogroup", extra_groups=[])
    assert r.stdout.strip() == b"open", (r.stdout, r.stderr[-300:], counts)
    open(release, "w").close()
    for p in holders:
        p.wait(timeout=30)


def test_session_cannot_signal_the_daemon(ctx):
    """A (root) session process cannot signal the daemon or open a pidfd
    on it by its pid, however it spells the pid: the kernel reads 32 bits
    of the register, the filter compares those (kill((1 << 32) | pid) went
    through a 64-bit comparison), and every call that names a pid is
    covered, the daemon's process group too."""
    d = daemon(ctx)
    prog = r"""
import ctypes, os, sys
dp = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
info = ctypes.create_string_buffer(128)          # a siginfo_t, si_code SI_QUEUE
ctypes.memmove(ctypes.addressof(info) + 8, ctypes.byref(ctypes.c_int(-1)), 4)
def call(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[a if isinstance(a, ctypes.Array) else ctypes.c_long(a) for a in args])
    return "ok" if r >= 0 else "errno%d" % ctypes.get_errno()
hi = (1 << 32) | dp
calls = [("kill", 62, dp, 0), ("kill_hi", 62, hi, 0), ("kill_group", 62, -dp, 0),
         ("tkill", 200, dp, 0), ("tkill_hi", 200, hi, 0), ("tgkill_hi", 234, hi, dp, 0),
         ("rt_sigqueueinfo", 129, dp, 0, info), ("rt_sigqueueinfo_hi", 129, hi, 0, info),
         ("rt_tgsigqueueinfo", 297, dp, dp, 0, info), ("pidfd_open_hi", 434, hi, 0),
         ("kill_self", 62, os.getpid(), 0)]
print(" ".join("%s=%s" % (c[0], call(*c[1:])) for c in calls))
"""
    r = session(ctx, d, ["python3", "-c", prog, str(d.proc.pid)], check_rc=0)
    got = dict(kv.split("=") for kv in r.stdout.decode().split())
    assert got.pop("kill_self") == "ok", got
    assert os.getpgid(d.proc.pid) == d.proc.pid, "the test daemon leads its process group"
    assert set(got.values()) == {"errno1"} and len(got) == 10, got
    assert d.proc.poll() is None


def test_daemon_killed_fails_closed(ctx):
    d = daemon(ctx)
    f = os.path.join(ctx.tmpdir(), "dead-" + token())
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c",
                          "touch %s; echo first-rc=$?; /bin/true; echo later-rc=$?" % f],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait(lambda: approvals(ctx, d), what="a pending approval")
    d.proc.kill()
    d.proc.wait()
    out, err = p.communicate(timeout=20)
    out = out.decode()
    assert "first-rc=126" in out or "first-rc=127" in out, (out, err)
    assert "later-rc=126" in out or "later-rc=127" in out, (out, err)
    assert not os.path.exists(f)


def test_sessions_end_before_the_daemon_stops_tracing(ctx):
    """SIGTERM with a session running: the sessions end (their execs fail) and
    their receivers are done before the programs that check tickets at exec
    go, so no answer a receiver still held lets an exec run unchecked. The
    record of the session's end comes before the daemon's stop record."""
    d = daemon(ctx)
    t = token()
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--session", t, "--", "sh", "-c",
                          "while /bin/true; do :; done"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ctx.on_cleanup(lambda: p.poll() is None and p.kill())
    d.wait_for(lambda e: e.get("type") == "session" and e.get("event") == "start" and e.get("name") == t)
    d.wait_for(lambda e: e.get("type") == "exec" and e.get("argv") == ["/bin/true"])
    assert d.stop() == 0
    p.wait(20)
    ev = d.events()
    kinds = [(e.get("type"), e.get("event"), e.get("name")) for e in ev]
    end = [i for i, k in enumerate(kinds) if k[0] == "session" and k[1] == "end" and k[2] == t]
    stop = [i for i, k in enumerate(kinds) if k[0] == "daemon" and k[1] == "stop"]
    assert end and stop and end[0] < stop[0], kinds[-6:]


def test_bypass_logged_in_sessions(ctx):
    pol = ("sandbox: {seccomp: {execve: {internal_bypass: [/usr/bin/printf]}}}\n"
           "commands:\n  - {name: no-printf, basenames: [printf], decision: deny}\n")
    d = daemon(ctx, pol)
    t = token()
    r = session(ctx, d, ["sh", "-c", "/usr/bin/printf %%s %s" % t])
    assert r.stdout.decode() == t, r.stderr
    e = wait(lambda: evs(d, t, "exec"), what="bypass exec")[0]
    assert e["rule"] == "internal_bypass" and e["layer"] == "seccomp" and e["action"] == "allowed", e


def test_handover_keeps_sessions(ctx):
    """SIGUSR2: the daemon re-executes itself; a running session's next exec
    is judged by the new daemon, and every exec is logged exactly once."""
    d = daemon(ctx)
    fifo = os.path.join(ctx.tmpdir(), "go")
    os.mkfifo(fifo)
    t = token()
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c",
                          "for i in 1 2 3; do /bin/true %s-$i; done; read x < %s; "
                          "for i in 4 5 6; do /bin/true %s-$i; done; wget %s; echo wget-rc=$?" % (t, fifo, t, t)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait(lambda: evs(d, "%s-3" % t, "exec"), what="the first execs")
    pid = d.proc.pid
    d.proc.send_signal(signal.SIGUSR2)
    wait(lambda: [e for e in d.events() if e.get("type") == "daemon" and e.get("event") == "start" and
                  e.get("takeover")], what="the new daemon's start record")
    assert d.proc.poll() is None and d.proc.pid == pid
    with open(fifo, "w") as f:
        f.write("go\n")
    out, err = p.communicate(timeout=30)
    assert b"wget-rc=126" in out and b"rule no-net" in err, (out, err)
    for i in range(1, 7):
        got = wait(lambda: evs(d, "%s-%d" % (t, i), "exec"), what="tick %d" % i)
        assert len(got) == 1, ("logged once", i, got)
        assert got[0]["action"] == "allowed", got[0]
    assert wait(lambda: evs(d, t, "exec_failed"))[0]["rule"] == "no-net"
    lost = [e for e in d.events() if e.get("type") == "lost"]
    assert not lost, ("nothing lost", lost)


def test_approvals_watch_follows_a_handover(ctx):
    """approvals --watch goes on with the new daemon after SIGUSR2 (which
    closes every connection), and exits 1, saying so, when the daemon is gone."""
    d = daemon(ctx)
    w = subprocess.Popen([ctx.execgate, "approvals", "--watch", "-p", d.pin_path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ctx.on_cleanup(lambda: (w.poll() is None and w.kill(), w.wait()))
    out = []
    reader = threading.Thread(target=lambda: out.extend(iter(w.stdout.readline, b"")), daemon=True)
    reader.start()
    wait(lambda: out, what="the watcher's header")
    d.proc.send_signal(signal.SIGUSR2)
    wait(lambda: [e for e in d.events() if e.get("event") == "start" and e.get("takeover")],
         what="the new daemon's start record")
    f = os.path.join(ctx.tmpdir(), "w-" + token())
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c", "touch %s" % f],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    a = wait(lambda: approvals(ctx, d), what="a pending approval")[0]
    got = wait(lambda: [l for l in out if a["approval_id"].encode() in l], what="the request watched: %s" % out)
    assert b" requested " in got[0], got
    ctx.run([ctx.execgate, "deny", a["approval_id"], "-p", d.pin_path])
    p.communicate(timeout=20)
    wait(lambda: [l for l in out if a["approval_id"].encode() in l and b" denied " in l], what="the answer watched")
    assert w.poll() is None, (w.returncode, w.stderr.read())
    assert d.stop() == 0
    assert w.wait(30) == 1
    err = w.stderr.read().decode()
    assert "watching again" in err and "the daemon went away" in err, err


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def test_many_sessions_every_verdict_logged_once(ctx):
    d = daemon(ctx)
    base = fd_count(d.proc.pid)
    n_sessions, n_execs = 10, 30
    toks = [token() for _ in range(n_sessions)]
    script = "for i in $(seq %d); do /bin/true %%s-$i; wget %%s-$i 2>/dev/null; done; true" % (n_execs // 2)
    procs = [subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c", script % (t, t)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for t in toks]
    for p in procs:
        assert p.wait(120) == 0
    for t in toks:
        for i in range(1, n_execs // 2 + 1):
            ok = wait(lambda: evs(d, "%s-%d" % (t, i), "exec"), what="allowed %s-%d" % (t, i))
            assert len(ok) == 1 and ok[0]["action"] == "allowed", ok
            no = wait(lambda: evs(d, "%s-%d" % (t, i), "exec_failed"), what="blocked")
            # refused where PATH has it; the kernel's ENOENT (let through) where it has not
            assert any(e["action"] == "blocked" for e in no), no
            assert all(e["action"] == "blocked" and e["rule"] == "no-net" or
                       e["errno"] == 2 and e["action"] == "allowed" for e in no), no
    wait(lambda: fd_count(d.proc.pid) <= base, what="fds back to the baseline (%d)" % base)


def test_each_record_gets_its_own_verdict(ctx):
    """A thread that execs again before the daemon read the record of its
    last exec: each record still carries the verdict of its own exec (a
    failed one, then the one that ran), in order."""
    pf = write(ctx, """
commands:
  - {name: audit-true, basenames: [true], decision: audit, message: "true was run"}
""")
    d = ctx.daemon("--policy", pf)
    work = ctx.tmpdir()
    os.chmod(work, 0o755)
    junk = os.path.join(work, "junk")
    with open(junk, "wb") as f:
        f.write(b"\x7fELFnot really\n")
    os.chmod(junk, 0o755)
    t = token()
    code = ("import os\n"
            "for i in range(20):\n"
            "    if os.fork() == 0:\n"
            "        try:\n"
            "            os.execv(%r, ['junk', %r])\n"
            "        except OSError:\n"
            "            pass\n"
            "        os.execv('/bin/true', ['true', %r])\n"
            "    os.wait()\n" % (junk, t, t))
    session(ctx, d, ["/usr/bin/python3", "-c", code], check_rc=0)

    def both():
        failed = [e for e in evs(d, t, "exec_failed") if e.get("argv", [None])[0] == "junk"]
        ran = [e for e in evs(d, t, "exec") if e.get("filename") == "/usr/bin/true"]
        return (failed, ran) if len(failed) >= 20 and len(ran) >= 20 else None
    # each child's failed exec comes before its true: the 20th true is the last record of the run
    failed, ran = wait(both, 15, "20 failed and 20 run exec records")
    assert len(failed) == 20 and len(ran) == 20, (len(failed), len(ran))
    for e in ran:
        assert e["decision"] == "audit" and e["rule"] == "audit-true", e
    for e in failed:
        assert e["decision"] == "allow" and e["rule"] is None, e
