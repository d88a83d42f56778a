# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The policy judges what really runs, never how it was spelled.

Each test tries to get a command past a rule the way an attacker would
(`..`, `//`, a relative path, a symlink, a copy, exec by fd, a '#!' script,
a borrowed bypass name, another namespace) and checks the verdict the daemon
writes for the exec that really happened. Also here: the facts events carry
(credentials, namespaces), the exact edges of the tracer (unreadable
filename, exact-fit argv, deleted cwd, a leader that exits first), the
per-exec regex budget, depths across restarts and honest start records."""
import json
import os
import shutil
import signal
import subprocess
import time

import eg
from eg import token

SEED001 = os.path.join(eg.ROOT, "tests", "unit", "data", "seed001.yaml")


def write(ctx, text, name="policy.yaml"):
    path = os.path.join(ctx.tmpdir(), name)
    with open(path, "w") as f:
        f.write(text)
    return path


def one(d, tok, typ="exec", timeout=10):
    """The event of type typ with tok in its argv; when a wrapper (sh -c,
    env, runuser, chroot) carried the token too, the last exec of the chain
    (the deepest)."""
    deadline = time.monotonic() + timeout
    last = []
    while time.monotonic() < deadline:
        evs = [e for e in d.events() if e.get("type") == typ and tok in e.get("argv", [])]
        if evs and evs == last:
            return max(evs, key=lambda e: (e["depth"], e["time"]))
        last = evs
        time.sleep(0.2)
    if last:
        return max(last, key=lambda e: (e["depth"], e["time"]))
    raise AssertionError("no %s event with %s" % (typ, tok))


def brief(e):
    """An event without its argv, for assertion messages."""
    return {k: v for k, v in e.items() if k != "argv"}


DENY_PRINTF = ("commands:\n"
               "  - {name: no-printf, paths: [/usr/bin/printf], decision: deny}\n"
               "  - {name: no-tmp, paths: [\"/tmp/*\"], decision: deny}\n")


def test_spellings_do_not_change_the_verdict(ctx):
    d = ctx.daemon("--policy", write(ctx, DENY_PRINTF))
    real = os.path.realpath("/usr/bin/printf")
    tmp = ctx.tmpdir()
    link = os.path.join(tmp, "innocent-link")
    os.symlink("/usr/bin/printf", link)
    spellings = {
        "dotdot": "/opt/../usr/bin/printf",
        "doubleslash": "/usr/bin//printf",
        "leading": "//usr/bin/printf",
        "symlink": link,
    }
    for what, path in spellings.items():
        t = token()
        subprocess.run([path, "%s", t], stdout=subprocess.DEVNULL)
        e = one(d, t)
        assert e["filename"] == real, (what, e["filename"])
        assert e["path_requested"] == path, (what, e["path_requested"])
        assert e["decision"] == "deny" and e["rule"] == "no-printf", (what, e)
    # a relative path after cd /tmp, against paths: ["/tmp/*"]
    exe = os.path.join(tmp, "x")
    shutil.copy("/usr/bin/true", exe)
    t = token()
    subprocess.run(["./x", t], cwd=tmp)
    e = one(d, t)
    assert e["filename"] == exe and e["path_requested"] == "./x", e
    assert e["rule"] == "no-tmp", e
    # //tmp/evil against the same rule
    t = token()
    subprocess.run(["/" + exe, t])
    assert one(d, t)["rule"] == "no-tmp"


def test_copy_under_another_name(ctx):
    """A rule naming /usr/bin/printf catches a copy of it named otherwise (its content)."""
    d = ctx.daemon("--policy", write(ctx, "commands:\n  - {name: no-sleep, paths: [/usr/bin/sleep], decision: deny}\n"))
    copy = os.path.join("/var/tmp", "egt-renamed-%d" % os.getpid())
    shutil.copy("/usr/bin/sleep", copy)
    ctx.on_cleanup(lambda: os.unlink(copy))
    t = token()
    # the image must still live when the daemon looks (it reads /proc/PID/exe);
    # the token rides in argv[0], which sleep does not read
    subprocess.run([t, "1"], executable=copy)
    e = one(d, t)
    assert e["filename"] == copy and e["rule"] == "no-sleep", e


def test_exec_by_fd(ctx):
    d = ctx.daemon("--policy", write(ctx, "commands:\n  - {name: no-sleep, paths: [/usr/bin/sleep], decision: deny}\n"))
    fexec = ctx.helper("fexec")
    # a memfd holding a copy of sleep, run with fexecve
    t = token()
    subprocess.run([fexec, "memfd", "/usr/bin/sleep", "payload", t, "1"], check=True)
    e = one(d, t)
    assert e["filename"] == "memfd:payload", e["filename"]
    assert e["file_kind"] == "anonymous" and e["exec_fd"] is True, e
    assert e["path_requested"].startswith("/dev/fd/"), e
    assert e["rule"] == "no-sleep" and e["decision"] == "deny", "its content is sleep's: %s" % e
    # execveat(fd, "", AT_EMPTY_PATH) on the file itself
    t = token()
    subprocess.run([fexec, "fd", "/usr/bin/sleep", t, "0.1"], check=True)
    e = one(d, t)
    assert e["filename"] == os.path.realpath("/usr/bin/sleep") and e["exec_fd"] is True, e
    assert e["rule"] == "no-sleep", e


def test_script_judged_as_its_interpreter(ctx):
    """printf '#!/bin/rm -rf\\n' > cat; ./cat victim is judged as rm -rf, never as cat."""
    d = ctx.daemon("--policy", SEED001)
    tmp = ctx.tmpdir()
    with open(os.path.join(tmp, "cat"), "w") as f:
        f.write("#!/bin/rm -rf\n")
    os.chmod(os.path.join(tmp, "cat"), 0o755)
    victim = "victim-" + token()
    open(os.path.join(tmp, victim), "w").close()
    subprocess.run(["./cat", victim], cwd=tmp)
    e = one(d, victim)
    assert e["filename"] == os.path.join(tmp, "cat"), e
    assert e["interpreter"] == os.path.realpath("/bin/rm") and e["interpreter_requested"] == "/bin/rm", e
    assert e["argv"] == ["/bin/rm", "-rf", "./cat", victim], e["argv"]
    assert e["decision"] == "deny" and e["rule"] == "block-dangerous-rm", e


def test_script_with_denied_interpreter_and_by_its_own_path(ctx):
    pol = ("commands:\n"
           "  - {name: no-scripts-here, paths: [\"%s/*\"], decision: deny}\n"
           "  - {name: no-dash, basenames: [dash], decision: audit}\n")
    tmp = ctx.tmpdir()
    d = ctx.daemon("--policy", write(ctx, pol % tmp))
    script = os.path.join(tmp, "s.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(script, 0o755)
    link = os.path.join(ctx.tmpdir(), "elsewhere")
    os.symlink(script, link)
    t = token()
    subprocess.run([link, t])
    e = one(d, t)
    # the interpreter alone would only be audited: the script's own path denies
    assert e["filename"] == script and e["decision"] == "deny" and e["rule"] == "no-scripts-here", e


def test_bypass_cannot_be_borrowed(ctx):
    tmp = ctx.tmpdir()
    pol = ("sandbox: {seccomp: {execve: {internal_bypass: [/usr/bin/printf, \"*.real\"]}}}\n"
           "commands:\n  - {name: deny-all, paths: [\"*\"], decision: deny}\n")
    d = ctx.daemon("--policy", write(ctx, pol))
    t = token()
    subprocess.run(["/usr/bin/printf", "%s", t], stdout=subprocess.DEVNULL)
    assert one(d, t)["rule"] == "internal_bypass", "the real file gets it"
    # /usr/bin/../../tmp/evil.real: a name like a bypass entry, resolved into /tmp
    evil = os.path.join(tmp, "evil.real")
    shutil.copy("/usr/bin/true", evil)
    t = token()
    subprocess.run(["/usr/bin/../.." + evil, t])
    e = one(d, t)
    assert e["rule"] == "deny-all", e
    # a user namespace with a tmpfs over /usr/bin holding a file named printf
    shutil.copy("/usr/bin/true", os.path.join(tmp, "printf"))
    t = token()
    r = subprocess.run(["unshare", "-Urm", "sh", "-c",
                        "mount -t tmpfs t /usr/local/bin && cp %s/printf /usr/local/bin/printf && "
                        "mount --bind /usr/local/bin/printf /usr/bin/printf && /usr/bin/printf %s" % (tmp, t)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode == 0, r.stderr
    e = one(d, t)
    assert e["filename"] == "/usr/bin/printf", "the same path in its namespace: %s" % e["filename"]
    assert e["foreign_ns"] is True and e["mnt_ns"] != os.stat("/proc/self/ns/mnt").st_ino, e
    assert e["rule"] == "deny-all", "no bypass for another namespace's printf: %s" % e
    # a chroot holding a printf: the file is /chroot/usr/bin/printf, no bypass
    root = ctx.tmpdir()
    os.makedirs(os.path.join(root, "usr/bin"))
    shutil.copy(ctx.helper("static_true"), os.path.join(root, "usr/bin/printf"))
    t = token()
    subprocess.run(["chroot", root, "/usr/bin/printf", t], check=True, stdout=subprocess.DEVNULL)
    e = one(d, t)
    assert e["filename"] == os.path.join(root, "usr/bin/printf"), e["filename"]
    assert e["rule"] == "deny-all", e


def test_other_pid_namespace_says_so(ctx):
    d = ctx.daemon()
    t = token()
    subprocess.run(["unshare", "-Upf", "--mount-proc", "/bin/true", t], check=True)
    e = one(d, t)
    assert e["pid_ns"] != os.stat("/proc/self/ns/pid").st_ino, e
    assert e["ns_pid"] == 1 and e["pid"] != 1 and e["foreign_ns"] is True, e


def test_credentials(ctx):
    """runuser -u nobody -- passwd -S x runs with euid 0: uids rules match the effective uid."""
    pol = ("commands:\n"
           "  - {name: root-passwd, basenames: [passwd], uids: [0], decision: audit}\n"
           "  - {name: any-passwd, basenames: [passwd], decision: deny}\n")
    d = ctx.daemon("--policy", write(ctx, pol))
    t = token()
    subprocess.run(["runuser", "-u", "nobody", "--", "/usr/bin/passwd", "-S", t],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    e = one(d, t)
    assert e["uid"] == 65534 and e["euid"] == 0, e
    assert e["secureexec"] is True, e
    assert e["rule"] == "root-passwd", e
    # and a plain exec as nobody: euid nobody, no raise
    t = token()
    subprocess.run(["runuser", "-u", "nobody", "--", "/bin/true", t])
    e = one(d, t)
    assert e["uid"] == e["euid"] == 65534 and e["secureexec"] is False, e


def test_tty_and_loginuid(ctx):
    d = ctx.daemon()
    t = token()
    r = subprocess.run(["script", "-qec", "/bin/true %s" % t, "/dev/null"], stdout=subprocess.DEVNULL)
    assert r.returncode == 0
    e = one(d, t)
    assert e["tty"] and e["tty"].startswith("pts"), e["tty"]
    t = token()
    subprocess.run(["/bin/true", t], stdin=subprocess.DEVNULL, start_new_session=True)
    assert one(d, t)["tty"] is None


# ---- exact edges -------------------------------------------------------------

def test_unreadable_filename(ctx):
    d = ctx.daemon()
    t = token()
    r = subprocess.run([ctx.helper("badexec"), t], stdout=subprocess.PIPE)
    assert r.stdout.strip() == b"EFAULT", r.stdout
    e = one(d, t, typ="exec_failed")
    assert e["error"] == "EFAULT" and e["unreadable"] == ["filename"], e
    assert e["filename"] == "", "no bytes stand for an unreadable name: %r" % e["filename"][:40]


def exact_argv(total, tok, prog="/bin/true"):
    """An argv of exactly `total` bytes with their NULs."""
    head = [prog, tok]
    used = sum(len(a) + 1 for a in head)
    return head + ["x" * (total - used - 1)]


def test_argv_exactly_the_cap(ctx):
    d = ctx.daemon("--max-argv-bytes", "4096")
    t = token()
    argv = exact_argv(4096, t)
    subprocess.run(argv)
    e = one(d, t)
    assert e["argv_bytes"] == 4096 and e["truncated"] is False and e["argv"] == argv, brief(e)
    # the same argv for an exec that fails (the strings come from the caller)
    t = token()
    argv = exact_argv(4096, t, "/nonexistent/egt")
    subprocess.run(["/usr/bin/env", "-i", "/bin/sh", "-c", 'exec "$@"', "sh"] + argv,
                   stderr=subprocess.DEVNULL)
    e = one(d, t, typ="exec_failed")
    assert e["truncated"] is False and e["argv"] == argv, brief(e)
    # one byte more is cut, and says so
    t = token()
    argv = exact_argv(4097, t)
    subprocess.run(argv)
    e = one(d, t)
    assert e["truncated"] is True and e["argv_bytes"] == 4097, brief(e)


def test_deleted_cwd_marked(ctx):
    d = ctx.daemon()
    gone = ctx.tmpdir()
    t = token()
    subprocess.run(["sh", "-c", 'cd "$1" && rmdir "$1" && /bin/true "$2"', "sh", gone, t])
    e = one(d, t)
    assert e["cwd"] == os.path.realpath(gone) + " (deleted)", e["cwd"]


def test_procs_entry_outlives_its_leader(ctx):
    d = ctx.daemon()
    p = subprocess.Popen([ctx.helper("leader_exit"), "1500"], stdout=subprocess.PIPE)
    assert p.stdout.readline().strip() == b"ready"
    pid = p.pid
    assert pid in eg.procs_view(d.pin_path), "the leader is gone but a thread runs: the process is still there"
    p.wait(10)
    eg.wait_until(lambda: pid not in eg.procs_view(d.pin_path), timeout=5,
                  what="the procs entry of %d gone after its last thread" % pid)


# ---- regex budget -----------------------------------------------------------

HOSTILE = ("sandbox: {seccomp: {execve: {on_error: deny}}}\n"
           "commands:\n"
           "  - name: corp\n"
           "    basenames: [true]\n"
           "    args: ['https://([a-z0-9]+[-.]?)+\\.corp\\.example/.*']\n"
           "    decision: allow\n")


def test_hostile_regex_budget(ctx):
    """Forty execs of 1,600 arguments of https://aaa…a! against a backtracking
    pattern: each is decided (on_error, recorded as error), and no other
    process's record is lost at the default ring size."""
    d = ctx.daemon("--policy", write(ctx, HOSTILE))
    t = token()
    hostile = ["https://" + "a" * 31 + "!"] * 1600
    others = []
    procs = []
    for i in range(40):
        procs.append(subprocess.Popen(["/bin/true", t] + hostile))
        o = token()
        others.append(o)
        subprocess.run(["/bin/echo", o], stdout=subprocess.DEVNULL)
    for p in procs:
        p.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        evs = d.events()
        mine = [e for e in evs if e.get("type") == "exec" and t in e.get("argv", [])]
        seen = {a for e in evs if e.get("type") == "exec" for a in e.get("argv", [])}
        if len(mine) == 40 and all(o in seen for o in others):
            break
        time.sleep(0.2)
    assert len(mine) == 40, len(mine)
    assert all(o in seen for o in others), "every other exec recorded"
    assert not [e for e in evs if e.get("type") == "lost"], "nothing lost"
    for e in mine:
        assert e["decision"] == "error" and e["rule"] == "on_error" and e["reason"], e["decision"]
    st = json.loads(ctx.run([ctx.execgate, "stats", "--json", "-p", d.pin_path]).stdout)
    assert st["counters"]["lost"] == 0 and st["counters"]["decisions"]["error"] >= 40, st


# ---- depth across daemon restarts ------------------------------------------

def depth_of_next_exec(ctx, d, pid, t):
    """Tells the waiting shell pid to exec /bin/true t; returns the event."""
    os.kill(pid, signal.SIGUSR1)
    return one(d, t)


def test_depth_survives_restart_and_kill9(ctx):
    pin = "/sys/fs/bpf/egtest-depth-%d" % os.getpid()
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", pin], capture_output=True))
    d = ctx.daemon(pin_path=pin)
    subprocess.run([ctx.execgate, "task", str(os.getpid()), "--set-depth", "0", "-p", pin], check=True)
    out = os.path.join(ctx.tmpdir(), "go")
    # depth 1 (sh) -> depth 2 (sh) that waits, then execs /bin/true at depth 3 on each signal
    script = ('trap \'/bin/true "$(cat %s)"\' USR1; echo $$ > %s.pid; '
              'while :; do sleep 0.1; done' % (out, out))
    p = subprocess.Popen(["sh", "-c", "exec sh -c '%s'" % script.replace("'", "'\\''")])
    ctx.on_cleanup(lambda: p.kill())
    deadline = time.monotonic() + 10
    while not os.path.exists(out + ".pid") and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(open(out + ".pid").read())

    def ask(dmn):
        t = token()
        with open(out, "w") as f:
            f.write(t)
        os.kill(pid, signal.SIGUSR1)
        return one(dmn, t)

    e = ask(d)
    assert e["depth"] == 3 and e["depth_known"] is True, e
    # an orderly stop and a new daemon: the tree keeps its depth
    assert d.stop() == 0
    d2 = ctx.daemon(pin_path=pin)
    e = ask(d2)
    assert e["depth"] == 3 and e["depth_known"] is True, "after stop/start: %s" % e
    assert d2.events()[0].get("tasks_reused") is True, d2.events()[0]
    # kill -9 and start again
    d2.proc.kill()
    d2.proc.wait()
    d3 = ctx.daemon(pin_path=pin)
    e = ask(d3)
    assert e["depth"] == 3 and e["depth_known"] is True, "after kill -9: %s" % e


def test_unknown_depth(ctx):
    """A tree older than the tracer gets a depth inferred from /proc (never
    'direct'), its processes' other threads too (a fork from a thread that is
    not its process's leader)."""
    pol = ("commands:\n  - {name: only-direct, basenames: [true], context: [direct], decision: allow}\n"
           "default_decision: deny\n")
    # started before the daemon: the tracer never saw it fork
    p = subprocess.Popen(["sh", "-c", 'read x; exec /bin/true "$x"'], stdin=subprocess.PIPE)
    time.sleep(0.2)
    d = ctx.daemon("--policy", write(ctx, pol))
    seeded = d.events()[0].get("seeded") or {}
    assert seeded.get("inferred", 0) > 0, d.events()[0]
    t = token()
    p.communicate((t + "\n").encode())
    e = one(d, t)
    assert e["depth_known"] is True and e.get("depth_inferred") is True and e["depth"] >= 2, e
    assert e["parent_exec_id"] and e["parent_exec_id"].startswith("%d:" % p.pid), e
    assert e["decision"] == "deny" and e["rule"] is None, "counted as nested: %s" % e
    d.stop()
    # a thread's fork: every thread of a process the kernel did not know gets its
    # leader's inferred entry, so it is nested too, whatever unknown_depth says
    # (what unknown_depth does with a depth nobody knows: tests/unit/test_policy.c)
    script = ("import sys, threading, subprocess\n"
              "def run():\n"
              "    x = sys.stdin.readline().strip()\n"
              "    subprocess.run(['/bin/true', x])\n"
              "th = threading.Thread(target=run); th.start(); th.join()\n")
    for extra in ("", "unknown_depth: direct\n"):
        p = subprocess.Popen(["/usr/bin/python3", "-c", script], stdin=subprocess.PIPE)
        time.sleep(0.3)
        d = ctx.daemon("--policy", write(ctx, extra + pol))
        t = token()
        p.communicate((t + "\n").encode())
        e = one(d, t)
        assert e["depth_known"] is True and e.get("depth_inferred") is True and e["depth"] >= 2, e
        assert e["decision"] == "deny" and e["rule"] is None, e
        d.stop()


# ---- honest mode --------------------------------------------------------------

def test_start_record_is_honest(ctx):
    d = ctx.daemon("--policy", os.path.join(eg.ROOT, "policy", "host-audit.yaml"))
    start = d.events()[0]
    # sessions can be enforced; nothing host-wide is without --enforce
    assert start["enforcement"] == ["seccomp"], start
    assert "tp_btf" in start["available"] and "seccomp_notif" in start["available"], start
    assert "host-wide: none (audit only)" in d.err(), d.err()
    # a 70 KB command line is long, not a reason to say it would be blocked
    t = token()
    subprocess.run(["/usr/bin/env", "true", t] + ["x" * 100] * 700)
    e = one(d, t)
    assert e["truncated"] is True and e["action"] == "allowed", brief(e)
