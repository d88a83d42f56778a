# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The tracer on this kernel: daemon lifecycle, event schema, argv limits,
exec depth, failed execs, lost-record accounting, bytes round trip, BTF.

Every test finds its own events by a unique token in argv (or by its own
cgroup), so other activity on the machine does not disturb it."""
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import time

import eg
from eg import raw, token


def execs(d, tok, typ="exec"):
    return [e for e in d.events() if e.get("type") == typ and tok in e.get("argv", [])]


def wait_execs(d, tok, n=1, typ="exec", timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        evs = execs(d, tok, typ)
        if len(evs) >= n:
            return evs
        time.sleep(0.05)
    raise AssertionError("expected %d %s events with %s, got %d" % (n, typ, tok, len(execs(d, tok, typ))))


def my_depth_is(ctx, d, depth):
    """Sets this test process's depth so that what it execs gets depth+1."""
    ctx.run([ctx.execgate, "task", str(os.getpid()), "--set-depth", str(depth),
             "--pin-path", d.pin_path])


# ---- daemon lifecycle ------------------------------------------------------

def wakeups(pid):
    """Voluntary context switches of every thread of pid: each is a sleep the thread woke from."""
    n = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, t)) as f:
                n += int(re.search(r"voluntary_ctxt_switches:\s+(\d+)", f.read()).group(1))
        except (OSError, AttributeError):
            pass
    return n


def test_a_stream_of_records_then_rest(ctx):
    """Records stream in for a while (the daemon drains on its timer, the ring quiet): every
    one is written; once the stream ends the daemon sleeps with no timer; a lone exec after
    it still gets its record."""
    rel, cg, cgid = ctx.cgroup()
    d = ctx.daemon("--cgroup", cg)  # the host's own execs bring no record
    tok = token()
    out = ctx.run([ctx.helper("burst"), cg, "600", tok]).stdout
    assert out.strip() == b"600", out
    wait_execs(d, tok, n=600, timeout=20)
    assert len([e for e in d.events() if e["type"] == "exit" and e.get("comm") == "true"]) >= 1
    # the last drains (the stream's, 75 ms apart, then one more 50 ms on that finds nothing)
    time.sleep(0.5)
    w0 = wakeups(d.proc.pid)
    time.sleep(1.5)
    w1 = wakeups(d.proc.pid)
    assert w1 == w0, "the daemon woke %d times in 1.5 s with no exec after a stream" % (w1 - w0)
    tok2 = token()
    t0 = time.monotonic()
    ctx.run([ctx.helper("burst"), cg, "1", tok2])
    wait_execs(d, tok2, timeout=10)
    took = time.monotonic() - t0
    assert took < 2, "a lone exec after a stream: its record took %.2f s" % took
    st = json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)["counters"]
    assert st["lost"] == 0, st


def test_start_record_and_pins(ctx):
    d = ctx.daemon()
    start = d.events()[0]
    assert start["type"] == "daemon" and start["event"] == "start", start
    assert start["v"] == 1 and start["version"]
    assert start["mode"]["tracer"] == "tp_btf"
    assert start["pin_path"] == d.pin_path
    assert start["max_argv_bytes"] == 65536
    for m in ("tasks", "procs", "counters"):
        assert os.path.exists(os.path.join(d.pin_path, m)), m


def test_procs_view_leaves_out_an_exec_no_tracer_saw(ctx):
    """An exec made while no daemon ran is no row after the next start: the
    task's storage still holds the image before it (as the map this view
    replaced, emptied at the stop, held nothing); the image the next daemon
    sees exec'd is a row again."""
    d = ctx.daemon()
    p = subprocess.Popen(["sh", "-c", "read x; exec sleep 30"], stdin=subprocess.PIPE)
    ctx.on_cleanup(lambda: (p.kill(), p.wait()))
    d.wait_for(lambda e: e.get("type") == "exec" and e["pid"] == p.pid, what="the sh exec")
    eg.wait_until(lambda: p.pid in eg.procs_view(d.pin_path), what="sh in the view")
    assert d.stop() == 0
    p.stdin.write(b"go\n")
    p.stdin.flush()
    eg.wait_until(lambda: open("/proc/%d/comm" % p.pid).read().strip() == "sleep", what="the unseen exec")
    d2 = ctx.daemon(pin_path=d.pin_path)
    view = eg.procs_view(d2.pin_path)
    assert p.pid not in view, view.get(p.pid)
    q = subprocess.Popen(["sleep", "30"])
    ctx.on_cleanup(lambda: (q.kill(), q.wait()))
    d2.wait_for(lambda e: e.get("type") == "exec" and e["pid"] == q.pid, what="the sleep exec")
    assert eg.procs_view(d2.pin_path)[q.pid]["comm"] == "sleep"


def test_status_counts_the_procs_view_with_no_daemon(ctx):
    """execgate status, with no daemon to ask, counts the pinned view's
    processes; a map pinned at procs (an older version's) counts as none."""
    d = ctx.daemon()
    p = subprocess.Popen(["sleep", "30"])
    ctx.on_cleanup(lambda: (p.kill(), p.wait()))
    d.wait_for(lambda e: e.get("type") == "exec" and e["pid"] == p.pid, what="the sleep exec")
    d.proc.kill()               # pins stay: no orderly stop
    d.proc.wait()
    before = eg.procs_view(d.pin_path)
    assert p.pid in before
    r = ctx.run([ctx.execgate, "status", "-p", d.pin_path, "-j"], check=False)
    after = eg.procs_view(d.pin_path)
    st = json.loads(r.stdout)
    assert r.returncode == 3 and st["daemon_running"] is False, (r.returncode, st)   # 3: not running
    # with no programs attached, processes only leave the view (those seeded at the start may exit)
    assert len(after) <= st["procs"] <= len(before), (st.get("procs"), len(before), len(after))
    os.unlink(os.path.join(d.pin_path, "procs"))
    ctx.run(["bpftool", "map", "create", os.path.join(d.pin_path, "procs"), "type", "hash",
             "key", "4", "value", "4", "entries", "4", "name", "procs"])
    st = json.loads(ctx.run([ctx.execgate, "status", "-p", d.pin_path, "-j"], check=False).stdout)
    assert st["procs"] is None, st.get("procs")


def test_tasks_of_the_older_layout_carry_over(ctx):
    """A pin directory whose "tasks" has the older 96-byte layout (an
    upgrade): the daemon copies every task's entry into its own map,
    threads included, so a running process keeps its depth, exec id and
    session id (which the kernel's ticket check reads), and a thread's exec
    counts from its own entry."""
    pin = "/sys/fs/bpf/egtest-old-%d-%d" % (os.getpid(), ctx.seq())
    os.mkdir(pin)
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", pin], capture_output=True))
    tok = token()
    leader = subprocess.Popen(["sleep", "30"])
    ctx.on_cleanup(lambda: (leader.kill(), leader.wait()))
    code = ("import os, sys, threading\n"
            "def run():\n"
            "    print(threading.get_native_id(), flush=True)\n"
            "    sys.stdin.readline()\n"
            "    os.execv('/bin/true', ['/bin/true', %r])\n"
            "t = threading.Thread(target=run); t.start(); t.join()\n" % tok)
    th = subprocess.Popen(["python3", "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    ctx.on_cleanup(lambda: (th.kill(), th.wait()))
    tid = int(th.stdout.readline())
    assert tid != th.pid
    out = ctx.run([ctx.helper("old_tasks"), pin + "/tasks", "%d:7:5" % leader.pid, "%d:9:0:t" % tid]).stdout
    assert out.strip() == b"ok 2", out
    d = ctx.daemon(pin_path=pin)
    assert "carried over: 2 entries copied" in d.err(), d.err()
    show = ctx.run(["bpftool", "map", "show", "pinned", pin + "/tasks"]).stdout.decode()
    assert "value 104B" in show, show
    t = json.loads(ctx.run([ctx.execgate, "task", "-p", pin, "-j", str(leader.pid)]).stdout)
    assert t["depth"] == 7 and t["session"] == 5 and t["exec_id"] == "%d:%d" % (leader.pid, 1000 + leader.pid), t
    th.stdin.write(b"go\n")
    th.stdin.flush()
    e = d.wait_for(lambda e: e.get("type") == "exec" and e["pid"] == th.pid and tok in e["argv"],
                   what="the thread's exec")[0]
    assert e["depth"] == 10 and e["parent_exec_id"] == "%d:%d" % (th.pid, 1000 + tid), e


def test_second_daemon_refused(ctx):
    d = ctx.daemon()
    r = ctx.run([ctx.execgate, "daemon", "--pin-path", d.pin_path, "--output",
                 os.path.join(ctx.tmpdir(), "x")], check=False, timeout=20)
    err = r.stderr.decode().strip()
    assert r.returncode != 0
    assert len(err.splitlines()) == 1, err
    assert "another execgate daemon" in err and str(d.proc.pid) in err, err
    assert d.proc.poll() is None, "the first daemon must keep running"


def test_sigterm_drains_writes_stop_and_unpins(ctx):
    d = ctx.daemon()
    tok = token()
    subprocess.run(["/bin/true", tok])
    rc = d.stop()
    assert rc == 0, d.err()
    evs = d.events()
    assert evs[-1]["type"] == "daemon" and evs[-1]["event"] == "stop", evs[-1]
    assert execs(d, tok), "the exec before SIGTERM must be drained"
    # the task storage stays for the next daemon (depths survive), with the names of the context
    # numbers tasks carry; everything else goes
    assert sorted(os.listdir(d.pin_path)) == ["ctxnames", "tasks"], os.listdir(d.pin_path)
    r = ctx.run([ctx.execgate, "unload", "--pin-path", d.pin_path], check=False)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(d.pin_path), "unload removes the rest"


def test_sigint_also_stops_cleanly(ctx):
    d = ctx.daemon()
    assert d.stop(signal.SIGINT) == 0
    assert d.events()[-1]["event"] == "stop"


def test_sighup_reopens_output(ctx):
    d = ctx.daemon("--policy", os.path.join(ctx.root, "policy", "host-audit.yaml"))
    rotated = d.output + ".1"
    os.rename(d.output, rotated)
    d.proc.send_signal(signal.SIGHUP)
    tok = token()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not execs(d, tok):
        subprocess.run(["/bin/true", tok])
        time.sleep(0.2)
    assert execs(d, tok), "events after SIGHUP go to the new file"
    with open(rotated) as f:
        assert tok not in f.read()
    # the new file says where it comes from, as a start record does
    first, start = d.events()[0], json.loads(open(rotated).readline())
    assert first["type"] == "daemon" and first["event"] == "reopened", first
    for k in ("hostname", "boot_id", "machine_id", "policy_sha256"):
        assert first[k] and first[k] == start[k], (k, first, start)


def test_text_table_on_a_terminal(ctx):
    master, slave = pty.openpty()
    pin = "/sys/fs/bpf/egtest-tty-%d" % os.getpid()
    ctx.on_cleanup(lambda: shutil.rmtree(pin, ignore_errors=True))
    p = subprocess.Popen([ctx.execgate, "daemon", "--pin-path", pin], stdout=slave,
                         stderr=slave, start_new_session=True)
    os.close(slave)
    ctx.on_cleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
    out = b""
    tok = token()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and tok.encode() not in out:
        if b"DEPTH" in out:
            subprocess.run(["/bin/echo", "hello world", tok], stdout=subprocess.DEVNULL)
        r, _, _ = select.select([master], [], [], 0.3)
        if r:
            try:
                out += os.read(master, 65536)
            except OSError:
                break
    p.send_signal(signal.SIGTERM)
    p.wait(20)
    os.close(master)
    text = out.decode("utf-8", "replace")
    assert re.search(r"TIME\s+PID\s+PPID\s+DEPTH\s+USER\s+BINARY\s+ARGV", text), text[:500]
    line = [l for l in text.splitlines() if tok in l]
    assert line, text[-1000:]
    assert "/bin/echo 'hello world' " + tok in line[0], line[0]
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} ", line[0]), "a date: " + line[0]
    assert " root " in line[0] and "/usr/bin/echo" in line[0], "user name and resolved binary: " + line[0]
    assert not line[0].lstrip().startswith("{"), "no JSON on a terminal"
    # stdout and stderr on one terminal: the banner once, not also as a log line
    assert text.count("tracer tp_btf") == 1, text[:1000]


def test_bad_options_one_line_errors(ctx):
    for args in (["--ringbuf-size", "1000"], ["--max-argv-bytes", "5M"], ["--format", "xml"],
                 ["--cgroup", "/no/such/cgroup"]):
        r = ctx.run([ctx.execgate, "daemon", "--pin-path", "/sys/fs/bpf/egtest-bad",
                     "--output", "/dev/null"] + args, check=False, timeout=20)
        assert r.returncode != 0, args
        assert r.stderr.strip(), args
    for args, says in ((["--output-max-size", "abc"], "--output-max-size: cannot parse the size 'abc'"),
                       (["--uid", "no-such-user-here"], "--uid: no user named 'no-such-user-here'"),
                       (["--uid", "root", "--exit-events", "x"], "--exit-events is all or none"),
                       (["--min-severity", "severe"], "--min-severity takes info, low")):
        r = ctx.run([ctx.execgate, "daemon", "--pin-path", "/sys/fs/bpf/egtest-bad"] + args, check=False)
        err = r.stderr.decode()
        assert r.returncode == 2 and err.startswith("execgate daemon: " + says), (args, err)


# ---- schema ---------------------------------------------------------------

def test_exec_event_fields(ctx):
    d = ctx.daemon()
    tok = token()
    cwd = ctx.tmpdir()
    subprocess.run(["/bin/echo", "x", tok], cwd=cwd, stdout=subprocess.DEVNULL)
    e = wait_execs(d, tok)[0]
    assert re.fullmatch(r"\d+:\d+", e["exec_id"]), e["exec_id"]
    assert e["exec_id"].split(":")[0] == str(e["pid"])
    assert e["tid"] == e["pid"]
    assert e["ppid"] == os.getpid()
    assert e["uid"] == os.getuid() and e["gid"] == os.getgid()
    assert e["comm"] == "echo"
    # the file that runs, resolved (/bin is a link to usr/bin here), and the spelling
    assert e["filename"] == os.path.realpath("/bin/echo"), e["filename"]
    assert e["path_requested"] == "/bin/echo"
    st = os.stat("/bin/echo")
    assert e["ino"] == st.st_ino and e["dev"] == "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev)), e
    assert e["cwd"] == os.path.realpath(cwd)
    assert e["argv"] == ["/bin/echo", "x", tok]
    assert e["argc"] == 3
    assert e["argv_bytes"] == len("/bin/echo") + 1 + 2 + len(tok) + 1
    assert e["truncated"] is False and e["filename_truncated"] is False and e["cwd_truncated"] is False
    with open("/proc/self/cgroup") as f:
        rel = [l.split(":", 2)[2].strip() for l in f if l.startswith("0::")][0]
    assert e["cgroup_id"] == os.stat(eg.CGROUP2 + rel).st_ino
    assert e["euid"] == os.geteuid() and e["egid"] == os.getegid()
    assert e["secureexec"] is False
    with open("/proc/self/loginuid") as f:
        auid = int(f.read())
    assert e["auid"] == (None if auid == 4294967295 else auid), e["auid"]
    assert e["mnt_ns"] == os.stat("/proc/self/ns/mnt").st_ino and e["pid_ns"] == os.stat("/proc/self/ns/pid").st_ino
    assert "foreign_ns" not in e and "ns_pid" not in e
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", e["time"]), e["time"]


def big_argv(head, n_args, total):
    """head + filler: n_args arguments in all, exactly `total` bytes with their NULs."""
    rest = total - sum(len(a) + 1 for a in head)
    n = n_args - len(head)
    base, extra = divmod(rest, n)
    return head + ["%0*d" % (base - 1 + (i < extra), i) for i in range(n)]


def test_argv_200k_exact_with_raised_cap(ctx):
    d = ctx.daemon("--max-argv-bytes", "262144")
    tok = token()
    full = big_argv(["/bin/true", tok], 2000, 200 * 1024)
    subprocess.run(full)
    e = wait_execs(d, tok)[0]
    assert e["argv"] == full, "argv must be byte-exact"
    assert e["argc"] == 2000 and e["truncated"] is False
    assert e["argv_bytes"] == 200 * 1024


def test_argv_200k_cut_at_boundary_by_default(ctx):
    d = ctx.daemon()
    tok = token()
    full = big_argv(["/bin/true", tok], 2000, 200 * 1024)
    subprocess.run(full)
    e = wait_execs(d, tok)[0]
    assert e["truncated"] is True
    assert e["argc"] == 2000, "argc is the real count"
    assert e["argv_bytes"] == 200 * 1024
    kept = e["argv"]
    assert 0 < len(kept) < len(full)
    assert kept == full[:len(kept)], "a prefix of whole arguments"
    assert sum(len(a) + 1 for a in kept) <= 65536
    assert sum(len(a) + 1 for a in full[:len(kept) + 1]) > 65536, "cut at the last boundary"


def test_argv_one_mib(ctx):
    d = ctx.daemon("--max-argv-bytes", "1048576")
    tok = token()
    full = big_argv(["/bin/true", tok], 16, 1000 * 1000)
    subprocess.run(full)
    e = wait_execs(d, tok)[0]
    assert e["argv"] == full and e["truncated"] is False and e["argv_bytes"] == 1000 * 1000


def test_long_filename_and_deep_cwd(ctx):
    d = ctx.daemon()
    base = ctx.tmpdir()
    # a path near PATH_MAX: 15 components of 250 bytes
    long_dir = os.path.join(base, *["L" * 250] * 15)
    os.makedirs(long_dir)
    exe = os.path.join(long_dir, "t")
    subprocess.run(["cp", "/bin/true", exe], check=True)
    tok = token()
    subprocess.run([exe, tok], cwd=long_dir)
    e = wait_execs(d, tok)[0]
    assert e["filename"] == exe and e["filename_truncated"] is False
    assert e["cwd"] == long_dir and e["cwd_truncated"] is False
    # deeper than the walk goes: flagged, never silently short
    deep = os.path.join(base, *["d"] * 80)
    os.makedirs(deep)
    tok2 = token()
    subprocess.run(["/bin/true", tok2], cwd=deep)
    e2 = wait_execs(d, tok2)[0]
    assert e2["cwd_truncated"] is True
    assert deep.endswith(e2["cwd"]), "the kept part is the leaf side"
    # a script that deep: its own path (the record's filename) is flagged, not rebuilt as if whole;
    # an interpreter that deep, and a middle script: their own flags
    script = os.path.join(deep, "s")
    with open(script, "w") as f:
        f.write("#!/bin/sh\ntrue\n")
    os.chmod(script, 0o755)
    tok3 = token()
    subprocess.run([script, tok3])
    e3 = wait_execs(d, tok3)[0]
    assert e3["filename_truncated"] is True and deep.endswith(os.path.dirname(e3["filename"])), e3
    assert e3["interpreter"] == "/usr/bin/dash" and "interpreter_truncated" not in e3, e3
    sh = os.path.join(deep, "sh")
    shutil.copy("/bin/dash", sh)
    mid = os.path.join(base, "mid")
    with open(mid, "w") as f:
        f.write("#!%s\ntrue\n" % sh)
    os.chmod(mid, 0o755)
    top = os.path.join(base, "top")
    with open(top, "w") as f:
        f.write("#!%s\n" % script)
    os.chmod(top, 0o755)
    tok4 = token()
    subprocess.run([mid, tok4])
    e4 = wait_execs(d, tok4)[0]
    assert e4["filename"] == mid and e4["filename_truncated"] is False, e4
    assert e4["interpreter_truncated"] is True and sh.endswith(e4["interpreter"]), e4
    tok5 = token()
    subprocess.run([top, tok5])
    e5 = wait_execs(d, tok5)[0]
    assert e5["filename"] == top and e5["script_chain_truncated"] is True, e5


def test_a_container_older_than_the_daemon_counts_its_own_depth(ctx):
    """A process in a pid namespace root made (a container's) that ran
    before the daemon: its children's execs were at container depth 0,
    each of them "direct" to a rule's context (the start's seeding left
    the container's count out). Its first process is 0, what it starts 1."""
    tok = token()
    p = subprocess.Popen(["unshare", "-pf", "--mount-proc", "sh", "-c",
                          "while :; do /bin/true %s; sleep 0.1; done" % tok], start_new_session=True)
    ctx.on_cleanup(lambda: (os.killpg(p.pid, signal.SIGKILL), p.wait()))
    time.sleep(0.5)
    d = ctx.daemon()
    # an exec forked while the daemon started, before its seeding reached the shell, knows no
    # depth at all ("depth_known": false, seen once in a loaded make test): the seeded ones count
    e = eg.wait_until(lambda: [x for x in execs(d, tok, "exec") if x.get("depth_known")], timeout=20,
                      what="an exec of the seeded shell")[0]
    assert e.get("container_depth") == 1, {k: e.get(k) for k in ("pid", "ns_pid", "depth", "container_depth")}


# ---- depth ----------------------------------------------------------------

def chain(d, leaf):
    by_id = {e["exec_id"]: e for e in d.events() if e.get("type") == "exec"}
    out = [leaf]
    while out[-1]["parent_exec_id"] in by_id:
        out.append(by_id[out[-1]["parent_exec_id"]])
    return out


def test_depth_nested_shells(ctx):
    d = ctx.daemon()
    my_depth_is(ctx, d, 10)
    tok = token()
    subprocess.run(["/bin/sh", "-c", "/bin/sh -c \"/bin/sh -c '/bin/true %s'\"" % tok])
    leaf = wait_execs(d, tok)[0]
    c = chain(d, leaf)
    assert len(c) >= 4, [x["argv"] for x in c]
    for child, parent in zip(c, c[1:]):
        assert child["depth"] == parent["depth"] + 1, (child["argv"], parent["argv"])
    assert [x["depth"] for x in c[:4]] == [14, 13, 12, 11]


def test_depth_exec_without_fork(ctx):
    d = ctx.daemon()
    my_depth_is(ctx, d, 0)
    tok = token()
    subprocess.run(["/bin/sh", "-c", "exec /bin/true %s" % tok])
    leaf = wait_execs(d, tok)[0]
    parent = chain(d, leaf)[1]
    assert parent["argv"][0] == "/bin/sh" and parent["pid"] == leaf["pid"]
    assert (parent["depth"], leaf["depth"]) == (1, 2)


def test_depth_double_fork_reparented(ctx):
    d = ctx.daemon()
    my_depth_is(ctx, d, 5)
    tok = token()
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(r)
            mid = os.getpid()
            if os.fork() == 0:
                # wait until the middle process is gone: re-parented before exec
                while os.getppid() == mid:
                    time.sleep(0.01)
                os.write(w, b"%d\n" % os.getppid())
                os.execv("/bin/true", ["/bin/true", "grandchild", tok])
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(child, 0)
    new_parent = int(os.read(r, 64))
    os.close(r)
    e = wait_execs(d, tok)[0]
    assert new_parent != child
    assert e["ppid"] == new_parent and e["ppid"] != child
    assert e["depth"] == 6, e["depth"]


def test_depth_thread_exec(ctx):
    d = ctx.daemon()
    my_depth_is(ctx, d, 3)
    tok = token()
    r = ctx.run([ctx.helper("thread_exec"), tok])
    pid, tid = map(int, r.stdout.split())
    assert pid != tid
    e = [x for x in wait_execs(d, tok, n=2) if x["argv"][1] == "thread-exec"][0]
    assert e["pid"] == pid, "the event's pid is the tgid"
    assert e["tid"] == tid, "tid is the thread that called execve"
    parent = chain(d, e)[1]
    assert parent["pid"] == pid and parent["depth"] == 4
    assert e["depth"] == 5


def test_depth_map_set_through_pidfd(ctx):
    d = ctx.daemon()
    my_depth_is(ctx, d, 41)
    r = ctx.run([ctx.execgate, "task", str(os.getpid()), "--json", "--pin-path", d.pin_path])
    st = json.loads(r.stdout)
    assert st["known"] is True and st["depth"] == 41
    tok = token()
    subprocess.run(["/bin/true", tok])
    assert wait_execs(d, tok)[0]["depth"] == 42



def test_set_depth_keeps_an_exec_made_meanwhile(ctx):
    """`execgate task --set-depth` changes the depth and its flag alone: an exec the process makes
    while the command runs keeps its exec id. A lookup, a change and a map update from user space
    put back the image before, and with it flags the exec set (a loader's mapping still to judge)."""
    if os.environ.get("EG_ASAN"):
        ctx.skip("an ASan build takes no LD_PRELOAD helper (its runtime must come first)")
    d = ctx.daemon()
    work = ctx.tmpdir()
    fifo = os.path.join(work, "go")
    os.mkfifo(fifo)
    tok = token()
    # "sleep 30; :": the second shell forks sleep (bash would exec a lone command in place)
    p = subprocess.Popen(["/bin/sh", "-c", "read x < %s; exec /bin/sh -c 'sleep 30; :' %s" % (fifo, tok)],
                         start_new_session=True)
    ctx.on_cleanup(lambda: os.killpg(p.pid, signal.SIGKILL))
    eg.wait_until(lambda: p.pid in eg.procs_view(d.pin_path), what="the shell in the procs view")
    mark = os.path.join(work, "stalled")
    env = dict(os.environ, LD_PRELOAD=ctx.helper("preload_stall_bpf"), EG_STALL_MARK=mark)
    cmd = subprocess.Popen([ctx.execgate, "task", str(p.pid), "--set-depth", "7", "--pin-path", d.pin_path],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ctx.on_cleanup(cmd.kill)
    ctx.on_cleanup(lambda: os.path.exists(mark) and os.unlink(mark))
    # the command waits at its first map update; the shell execs meanwhile
    eg.wait_until(lambda: os.path.exists(mark), what="the command's map update")
    with open(fifo, "w") as f:
        f.write("go\n")
    e = wait_execs(d, tok)[0]
    os.unlink(mark)
    out, err = cmd.communicate(timeout=20)
    assert cmd.returncode == 0, err
    row = eg.procs_view(d.pin_path).get(p.pid)
    assert row, "the shell left the procs view: its storage was put back to the image before the exec"
    assert "%d:%d" % (p.pid, row["exec_ktime"]) == e["exec_id"], (row, e["exec_id"])
    assert row["depth"] == 7, row



def test_set_depth_with_stdin_closed_changes_one_process(ctx):
    """With fd 0 closed the pidfd the command opens is fd 0, which an iterator link takes for
    "every task": the depth must still change on the one process asked."""
    d = ctx.daemon()
    a = subprocess.Popen(["/bin/sleep", "30"])
    b = subprocess.Popen(["/bin/sleep", "31"])
    for p in (a, b):
        ctx.on_cleanup(p.kill)
    eg.wait_until(lambda: {a.pid, b.pid} <= set(eg.procs_view(d.pin_path)), what="both in the procs view")
    before = eg.procs_view(d.pin_path)[b.pid]["depth"]
    assert before != 123
    subprocess.run([ctx.execgate, "task", str(a.pid), "--set-depth", "123", "--pin-path", d.pin_path],
                   check=True, preexec_fn=lambda: os.close(0), timeout=30)
    view = eg.procs_view(d.pin_path)
    assert view[a.pid]["depth"] == 123, view[a.pid]
    assert view[b.pid]["depth"] == before, "another process's depth changed: %r" % view[b.pid]


def test_set_depth_reaches_every_thread(ctx):
    """A thread's children take their depth from the thread's own task storage: `execgate task
    --set-depth` sets it in every thread of the process, so what a worker thread that ran before
    the command forks and execs counts from the depth set, as what the first thread does."""
    d = ctx.daemon()
    p = eg.ThreadFork(ctx, "/bin/true")
    eg.wait_until(lambda: p.pid in eg.procs_view(d.pin_path), what="the process in the procs view")
    assert eg.procs_view(d.pin_path)[p.pid]["depth"] != 40
    ctx.run([ctx.execgate, "task", str(p.pid), "--set-depth", "40", "--pin-path", d.pin_path])
    for who in ("main", "thread"):
        tok = "%s-%s" % (who, token())
        assert p.run(who, tok) == 0
        e = wait_execs(d, tok)[0]
        assert e["depth"] == 41, "the %s thread's child: %r" % (who, e)


# ---- failed execs ---------------------------------------------------------

def test_exec_failed_enoent_from_path_search(ctx):
    d = ctx.daemon()
    tok = token()
    cmd = "nosuch-" + tok
    subprocess.run(["/usr/bin/env", "PATH=/egt-none1:/egt-none2", cmd, "arg1"],
                   stderr=subprocess.DEVNULL)
    evs = wait_execs(d, cmd, n=2, typ="exec_failed")
    assert {e["filename"] for e in evs} == {"/egt-none1/" + cmd, "/egt-none2/" + cmd}
    for e in evs:
        assert e["errno"] == 2 and e["error"] == "ENOENT" and e["syscall"] == "execve"
        assert e["argv"] == [cmd, "arg1"] and e["argc"] == 2
        assert e["exec_id"] is None and e["comm"] == "env"


def test_exec_failed_eacces(ctx):
    d = ctx.daemon()
    tok = token()
    path = os.path.join(ctx.tmpdir(), "script-" + tok)
    with open(path, "w") as f:
        f.write("#!/bin/sh\necho hi\n")
    os.chmod(path, 0o644)
    try:
        subprocess.run([path, tok])
    except PermissionError:
        pass
    e = wait_execs(d, tok, typ="exec_failed")[0]
    assert e["errno"] == 13 and e["error"] == "EACCES"
    assert e["filename"] == path and e["argv"] == [path, tok]


def test_exec_failed_execveat(ctx):
    d = ctx.daemon()
    tok = token()
    r = ctx.run([ctx.helper("execveat_fail"), "/tmp", "nosuch-" + tok, tok])
    err, dfd = map(int, r.stdout.split())
    assert err == 2
    e = wait_execs(d, tok, typ="exec_failed")[0]
    assert e["syscall"] == "execveat" and e["dirfd"] == dfd
    assert e["filename"] == "nosuch-" + tok
    assert e["argv"] == ["nosuch-" + tok, "execveat-arg", tok]
    assert "unreadable" not in e


def test_exec_failed_argc_inexact(ctx):
    """A failed exec's argv array is counted up to 65536 pointers: past that
    argc is a lower bound and the record says so, in a field docs/events.md
    explains (as every field of the record)."""
    d = ctx.daemon()
    tok = token()
    missing = "/nosuch-" + tok
    code = "import os\ntry:\n    os.execv(%r, [%r, %r] + ['a'] * 70000)\nexcept OSError:\n    pass\n"
    ctx.run(["/usr/bin/python3", "-c", code % (missing, missing, tok)])
    try:
        subprocess.run([missing, tok, "few"])
    except FileNotFoundError:
        pass
    evs = wait_execs(d, tok, n=2, typ="exec_failed")
    many = [e for e in evs if "few" not in e["argv"]][0]
    few = [e for e in evs if "few" in e["argv"]][0]
    assert many["argc"] == 65536 and many["argc_inexact"] is True, {k: many[k] for k in many if k != "argv"}
    assert many["truncated"] is True
    assert few["argc"] == 3 and "argc_inexact" not in few, few
    with open(os.path.join(ctx.root, "docs", "events.md")) as f:
        doc = f.read()
    undocumented = [k for k in many if "`%s`" % k not in doc and '"%s"' % k not in doc]
    assert not undocumented, "fields not in docs/events.md: %s" % undocumented


# ---- nothing lost silently ------------------------------------------------

def test_lost_records_exact_accounting(ctx):
    rel, cg, cgid = ctx.cgroup()
    # the smallest ring that holds one record at a 1 KiB argv cap (a smaller one is refused)
    d = ctx.daemon("--ringbuf-size", "32K", "--max-argv-bytes", "1024", "--cgroup", cg)
    tok = token()
    n = 400
    d.proc.send_signal(signal.SIGSTOP)  # the consumer stalls: the ring must overflow
    try:
        r = ctx.run([ctx.helper("burst"), cg, str(n), tok])
        assert int(r.stdout) == n
        # the daemon is stopped: it does not answer (exit 4), the pinned counters are shown
        r = ctx.run([ctx.execgate, "stats", "--json", "--pin-path", d.pin_path], check=False)
        assert r.returncode == 4, r
        st = json.loads(r.stdout)["counters"]
    finally:
        d.proc.send_signal(signal.SIGCONT)
    assert st["lost"] > 0, "a 32 KiB ring with a stopped reader must overflow"
    time.sleep(0.5)
    assert d.stop() == 0
    evs = d.events()
    written = len([e for e in evs if e["type"] == "exec" and tok in e["argv"]])
    lost_records = sum(e["count"] for e in evs if e["type"] == "lost")
    stop = evs[-1]
    assert stop["event"] == "stop"
    others = [e for e in evs if e["type"] in ("exec", "exec_failed") and tok not in e.get("argv", [])]
    assert not others, "the cgroup filter keeps other tasks out: %s" % others[:2]
    assert lost_records == stop["lost"] == st["lost"], (lost_records, stop["lost"], st["lost"])
    # each child makes two records, its exec and its exit, and each is written or counted lost;
    # burst itself joined the cgroup, and ends there too (written or lost: one more)
    exits = len([e for e in evs if e["type"] == "exit" and e["cgroup_id"] == cgid])
    assert written + exits + lost_records == 2 * n + 1, (written, exits, lost_records, n)
    assert stop["exit"] == exits, stop
    assert all(e["cgroup_id"] == cgid for e in evs if e["type"] == "exec")


def test_losses_after_a_handover_to_new_counters_are_reported(ctx):
    """A handover whose new daemon cannot take the kernel's counters over
    (an older version's layout; here their pin is gone) starts them at 0.
    It took the old daemon's reported losses as its own figure, so new
    losses stayed unreported until they passed it (and their difference
    could wrap). They are reported now."""
    rel, cg, cgid = ctx.cgroup()
    d = ctx.daemon("--ringbuf-size", "32K", "--max-argv-bytes", "1024", "--cgroup", cg)
    tok = token()

    def flood(n):
        d.proc.send_signal(signal.SIGSTOP)
        try:
            ctx.run([ctx.helper("burst"), cg, str(n), tok])
        finally:
            d.proc.send_signal(signal.SIGCONT)
    flood(400)
    first = d.wait_for(lambda e: e["type"] == "lost", what="the first losses")[0]
    assert first["count"] > 50, first
    os.unlink(os.path.join(d.pin_path, "counters"))
    d.proc.send_signal(signal.SIGUSR2)
    d.wait_for(lambda e: e.get("type") == "daemon" and e.get("event") == "start" and e.get("takeover"),
               timeout=60, what="the new daemon's start")
    n = len(d.events())
    flood(200)
    try:
        evs = eg.wait_until(lambda: [e for e in d.events()[n:] if e["type"] == "lost"], timeout=15,
                            what="the losses after the handover reported")
    except AssertionError:
        st = ctx.run([ctx.execgate, "stats", "--json", "-p", d.pin_path], check=False).stdout
        raise AssertionError("no lost record after the handover; stats %s; records after it %s"
                             % (st[-600:], [e["type"] for e in d.events()[n:]][:20]))
    assert 0 < evs[0]["count"] <= 2 * 200 + 1 and evs[0]["total"] <= 2 * 200 + 1, (first, evs[0])


def test_a_busy_process_ends_once(ctx):
    """A process whose threads all leave at once (exit_group while 7 spin):
    two of its last threads could both find none left alive and report
    its end (3 in 400 runs here before). Each exec has one exit record,
    with the status; a repeat is counted, not written."""
    d = ctx.daemon()
    tok = token()
    helper = ctx.helper("exit_race")
    for _ in range(500):
        subprocess.run([helper, tok])
    evs = wait_execs(d, tok, n=500)
    ids = {e["exec_id"] for e in evs}

    def exits():
        return [e for e in d.events() if e["type"] == "exit" and e["exec_id"] in ids]
    eg.wait_until(lambda: len({e["exec_id"] for e in exits()}) == len(ids), what="an exit for each")
    time.sleep(0.5)
    got = exits()
    per = {}
    for e in got:
        per[e["exec_id"]] = per.get(e["exec_id"], 0) + 1
    twice = [k for k, v in per.items() if v > 1]
    assert not twice, "%d processes ended twice: %s" % (len(twice), twice[:3])
    assert all(e["exit_code"] == 3 for e in got), [e for e in got if e["exit_code"] != 3][:2]


def test_stats_while_running(ctx):
    d = ctx.daemon()
    tok = token()
    subprocess.run(["/bin/true", tok])
    wait_execs(d, tok)
    r = ctx.run([ctx.execgate, "stats", "--json", "--pin-path", d.pin_path])
    st = json.loads(r.stdout)
    assert st["daemon_running"] is True and st["pid"] == d.proc.pid, st
    c = st["counters"]
    assert c["exec"] >= 1 and c["lost"] == 0, c
    plain = ctx.run([ctx.execgate, "stats", "--pin-path", d.pin_path]).stdout.decode()
    assert "lost (ring buffer)" in plain and str(d.proc.pid) in plain, plain
    # the value column is aligned: every row's value starts at the same offset
    cols = {len(l) - len(l[24:].lstrip()) for l in plain.splitlines() if len(l) > 25}
    assert cols == {25}, plain


def test_stats_without_daemon_is_a_clear_error(ctx):
    r = ctx.run([ctx.execgate, "stats", "--pin-path", "/sys/fs/bpf/egtest-none"], check=False)
    assert r.returncode == 3  # the LSB's "not running"
    for verb in ("status", "metrics"):
        v = ctx.run([ctx.execgate, verb, "--pin-path", "/sys/fs/bpf/egtest-none"], check=False)
        assert v.returncode == 3, (verb, v.returncode, v.stderr)
    err = r.stderr.decode()
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("execgate stats: no daemon is running on /sys/fs/bpf/egtest-none"), err


# ---- bytes ----------------------------------------------------------------

def test_any_bytes_round_trip(ctx):
    d = ctx.daemon()
    tok = token()
    args = [b"a\nb", b'q"uote', b"back\\slash", b"\x01\x02\x1f\x7f", b"", b"tab\there",
            b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", "caf\u00e9 \U0001f600".encode(), b"\\udcff",
            tok.encode()]
    subprocess.run([b"/bin/true"] + args)
    wait_execs(d, tok)
    line = [l for l in d.lines() if tok.encode() in l][0]
    e = json.loads(line)  # strict: the line is valid JSON
    assert [raw(a) for a in e["argv"]] == [b"/bin/true"] + args
    assert b"\n" not in line


# ---- BTF for operators ----------------------------------------------------

def test_bpftool_shows_named_fields(ctx):
    d = ctx.daemon()
    tok = token()
    subprocess.run(["/bin/true", tok])
    wait_execs(d, tok)
    out = ctx.run(["bpftool", "map", "dump", "pinned", d.pin_path + "/counters"]).stdout.decode()
    for f in ("exec", "lost_exec", "lost_exec_failed", "argv_truncated"):
        assert '"%s"' % f in out, out[:400]
    out = ctx.run(["bpftool", "-j", "map", "dump", "pinned", d.pin_path + "/tickets_small"]).stdout
    assert json.loads(out) == [], out[:400]
    out = ctx.run(["bpftool", "map", "show", "pinned", d.pin_path + "/tasks"]).stdout.decode()
    assert "task_storage" in out and "btf_id" in out, out


def test_procs_view_names_each_process(ctx):
    """PIN/procs (an iterator): a line per live process whose image exec'd
    while traced, with the exec's facts; not a fork that did not exec, not
    a zombie, and the second image of a process in place of the first."""
    d = ctx.daemon()
    r, w = os.pipe()
    # the child's first image execs a second (same pid); a forked child stays unexec'd
    code = ("import os,sys,time\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    time.sleep(30); os._exit(0)\n"
            "os.write(%d, b'%%d\\n' %% pid)\n"
            "os.execv('/bin/sleep', ['sleep', '30'])\n" % w)
    p = subprocess.Popen(["python3", "-c", code], pass_fds=(w,))
    os.close(w)
    forked = int(os.read(r, 64))
    os.close(r)
    ctx.on_cleanup(lambda: (p.kill(), p.wait()))
    ctx.on_cleanup(lambda: os.kill(forked, 9))

    def exec_of(comm):
        return [e for e in d.events() if e.get("type") == "exec" and e["pid"] == p.pid and e["comm"] == comm]
    d.wait_for(lambda e: e.get("type") == "exec" and e["pid"] == p.pid and e["comm"] == "sleep",
               what="the sleep exec")
    first, second = exec_of("python3")[0], exec_of("sleep")[0]
    view = eg.procs_view(d.pin_path)
    row = view[p.pid]
    assert row["comm"] == "sleep" and row["ppid"] == os.getpid() and row["uid"] == os.getuid(), row
    assert "%d:%d" % (p.pid, row["exec_ktime"]) == second["exec_id"], (row, second["exec_id"])
    assert "%d:%d" % (row["parent_tgid"], row["parent_ktime"]) == first["exec_id"], (row, first["exec_id"])
    assert row["depth"] == second["depth"] == first["depth"] + 1, (row, first["depth"], second["depth"])
    assert row["cgroup_id"] == second["cgroup_id"] and row["session"] == 0, row
    assert forked not in view, "a fork that did not exec is no process of its own in the view"
    # a zombie (its last thread gone, not reaped yet) is gone from the view
    p.kill()
    eg.wait_until(lambda: eg.proc_stat(p.pid)["state"] == "Z", timeout=5, what="a zombie")
    assert p.pid not in eg.procs_view(d.pin_path)
    p.wait()




def test_a_cgroup_gone_before_its_records_are_written_is_still_named(ctx):
    """A container that runs and goes within the daemon's drain delay (docker run --rm, a Job's
    pod) left its records with no cgroup (and no container): the daemon named a record's cgroup
    by looking up its id when it wrote it, and it was gone. The kernel says each cgroup it makes
    (a record the daemon keeps, never writes), so the name is there; and a cgroups: rule judges it."""
    parent_rel, parent, _ = ctx.cgroup()
    pol = os.path.join(ctx.tmpdir(), "policy.yaml")
    with open(pol, "w") as f:
        f.write("commands:\n  - {name: gone-cg, cgroups: ['%s/c-*'], basenames: [true], decision: deny}\n"
                % parent_rel)
    d = ctx.daemon("--policy", pol)
    tok = token()
    for i in range(3):
        cg = os.path.join(parent, "c-%s-%d" % (tok, i))
        os.mkdir(cg)

        def join(cg=cg):
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write("0")
        subprocess.run(["/bin/true", tok, str(i)], preexec_fn=join, check=True)
        os.rmdir(cg)
    evs = wait_execs(d, tok, n=3, timeout=10)
    got = sorted((e.get("cgroup"), e.get("decision")) for e in evs)
    want = sorted(("%s/c-%s-%d" % (parent_rel, tok, i), "deny") for i in range(3))
    assert got == want, got
    assert not [e for e in d.events() if e.get("type") not in ("exec", "exit", "daemon", "exec_failed")], \
        "a record of another type in the output"
