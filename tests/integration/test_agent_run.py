# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Daemon-run processes: `execgate run` in the foreground and the background,
the registry (ps, poll, log, write, send-keys, kill), the limits (environment
blocklist, workspace, RLIMIT_NPROC) and the shell state of `run --stateful`."""
import json
import os
import resource
import signal
import subprocess
import time

import eg
from eg import token

POLICY = """
commands:
  - {name: no-net, basenames: [curl, wget], decision: deny, message: "no network tools"}
"""


class Env:
    def __init__(self, ctx, policy=POLICY):
        self.ctx = ctx
        self.ws = ctx.tmpdir()
        os.chmod(self.ws, 0o755)
        self.state = ctx.tmpdir()
        pol = os.path.join(ctx.tmpdir(), "policy.yaml")
        with open(pol, "w") as f:
            f.write(policy)
        self.d = ctx.daemon("--policy", pol, "--state-dir", self.state, "--workspace", self.ws)

    def run(self, *args, input=None, timeout=60, env=None, cwd=None, pre=()):
        argv = list(pre) + [self.ctx.execgate] + [args[0], "-p", self.d.pin_path] + list(args[1:])
        return subprocess.run(argv, input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout, env=env, cwd=cwd or self.ws)

    def ok(self, *args, **kw):
        r = self.run(*args, **kw)
        assert r.returncode == 0, (args, r.returncode, r.stderr.decode())
        return r.stdout.decode()

    def bg(self, *cmd, opts=()):
        out = self.ok("run", "--background", *opts, "--", *cmd)
        return out.strip().split("\n")[-1].split()[-1]

    def poll(self, pid):
        return self.ok("poll", pid)

    def wait_output(self, pid, pred, what, timeout=10):
        """Polls pid until pred(all its output so far) holds; returns that output."""
        out = ""
        deadline = time.monotonic() + timeout
        while not pred(out):
            assert time.monotonic() < deadline, "no %s from %s within %ss: %r" % (what, pid, timeout, out)
            out += self.poll(pid)
            time.sleep(0.05)
        return out

    def wait_status(self, pid, what, timeout=10):
        deadline = time.monotonic() + timeout
        out = ""
        while time.monotonic() < deadline:
            out += self.poll(pid)
            if out.rstrip("\n").split("\n")[-1] == what:
                return out
            time.sleep(0.05)
        raise AssertionError("no %r for %s: %r" % (what, pid, out))


def test_foreground_output_and_status(ctx):
    e = Env(ctx)
    r = e.run("run", "--", "sh", "-c", "echo to-out; echo to-err >&2; exit 3")
    assert r.returncode == 3, r.stderr
    assert r.stdout == b"to-out\n" and b"to-err" in r.stderr, r
    r = e.run("run", "--", "sh", "-c", "kill -TERM $$")
    assert r.returncode == 128 + 15, r
    # a signal without a name: the status says SIG34, and the exit status is still 128+34
    r = e.run("run", "--", "sh", "-c", "kill -34 $$")
    assert r.returncode == 128 + 34, r
    pid = e.bg("sh", "-c", "kill -34 $$")
    e.wait_status(pid, "killed by SIG34")
    # the command ran in a session
    e.d.wait_for(lambda x: x.get("type") == "exec" and x.get("session") and x.get("argv") == ["sh", "-c", "kill -TERM $$"])


def test_no_daemon_and_policy_applies(ctx):
    r = subprocess.run([ctx.execgate, "run", "-p", "/sys/fs/bpf/egtest-none-%d" % os.getpid(), "--", "true"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode == 2 and r.stderr.decode().startswith("execgate run: no daemon"), r
    e = Env(ctx)
    r = e.run("run", "--", "sh", "-c", "curl --version >/dev/null; echo rc=$?")
    assert r.stdout.decode().strip() == "rc=126", r
    assert b"denied" in r.stderr, r.stderr


def test_timeout_kills_the_group(ctx):
    e = Env(ctx)
    t = "%d.%d" % (300 + os.getpid() % 100, time.monotonic_ns() % 1000)
    start = time.monotonic()
    r = e.run("run", "--timeout", "1s", "--", "bash", "-c", "sleep %s & sleep %s1; wait" % (t, t))
    assert r.returncode == 128 + 9, r
    assert time.monotonic() - start < 10
    assert b"timed out" in r.stderr, r.stderr
    # killed with the group: gone once reaped (it would sleep on for 300 s)
    eg.wait_until(lambda: not subprocess.run(["pgrep", "-f", "sleep %s" % t], stdout=subprocess.PIPE).stdout,
                  timeout=5, what="the grandchild (sleep %s) killed with the group" % t)


def test_background_log_event_and_registry(ctx):
    e = Env(ctx)
    pid = e.bg("sh", "-c", "echo line1; echo line2; read x; echo got-$x; echo line4; exit 4")
    out = e.ok("run", "--background", "--json", "--", "sleep", "0.1")
    assert json.loads(out)["id"].startswith("p-")
    first = e.wait_status(pid, "running")
    ps = e.ok("ps")
    assert pid in ps and "running" in ps, ps
    e.ok("write", pid, "hello", "--newline")
    out = e.wait_status(pid, "exited 4")
    assert "got-hello" in out, out
    # poll says only what is new
    assert e.poll(pid) == "exited 4\n"
    log = e.ok("log", pid)
    assert log == "line1\nline2\ngot-hello\nline4\n", log
    assert e.ok("log", pid, "--tail", "2") == "got-hello\nline4\n"
    assert e.ok("log", pid, "--offset", "6") == "line2\ngot-hello\nline4\n"
    ev = e.d.wait_for(lambda x: x.get("type") == "process" and x.get("id") == pid, what="exit event")
    ev = ev[-1] if isinstance(ev, list) else ev
    assert ev["status"] == "exited 4" and ev["exit_code"] == 4, ev
    assert ev["last_lines"][-2:] == ["got-hello", "line4"], ev
    assert os.path.exists(ev["log"]) and ev["log"].startswith(e.state)


def test_a_process_in_a_session_drives_no_run_and_reloads_nothing(ctx):
    """A session's process asked the daemon to signal a run of its user
    (sent as root, past the session's Landlock signal scope), to read or
    poll its output (moving its caller's reading point), to reload the
    policy, to follow every session's records and to list every session's
    pending approvals: each is refused now, as starting a run or writing
    to one was."""
    e = Env(ctx)
    pid = e.bg("sleep", "100")
    script = "; ".join("%s %s; echo rc=$?" % (e.ctx.execgate, args % e.d.pin_path)
                       for args in ("kill -p %s " + pid + " --signal STOP", "poll -p %s " + pid,
                                    "log -p %s " + pid, "policy reload -p %s", "query -p %s --follow --since 1h",
                                    "approvals -p %s"))
    r = e.run("exec", "--", "sh", "-c", "timeout 10 sh -c '%s'" % script.replace("'", "'\\''"))
    out, err = r.stdout.decode(), r.stderr.decode()
    assert out.count("rc=0") == 0 and out.count("rc=") == 6, (out, err)
    for verb in ("kill", "poll", "log", "policy_reload", "follow", "approvals"):
        assert "%s: a process inside a supervised session cannot" % verb in err, (verb, err)
    st = e.ok("ps", "--json")
    run = [p for p in json.loads(st) if p["id"] == pid][0]
    assert run["status"] == "running", run
    with open("/proc/%d/status" % run["pid"]) as f:
        assert "\nState:\tS" in f.read(), "the run was stopped from inside the session"
    e.ok("kill", pid)


def test_kill_and_send_keys_on_a_pty(ctx):
    e = Env(ctx)
    pid = e.bg("sleep", "100")
    e.ok("kill", pid)
    e.wait_status(pid, "killed by SIGTERM")
    pid = e.bg("sleep", "100")
    e.ok("kill", pid, "--signal", "INT")
    e.wait_status(pid, "killed by SIGINT")
    r = e.run("kill", pid)
    assert r.returncode == 1 and r.stderr.decode().startswith("execgate kill:"), r
    r = e.run("poll", "p-99999")
    assert r.returncode == 1 and r.stderr.decode().startswith("execgate poll: no process"), r

    pid = e.bg("bash", "--norc", "--noprofile", "-i", opts=("--pty", "--env", "PS1=EGPROMPT$ "))
    e.wait_output(pid, lambda o: "EGPROMPT$ " in o, "prompt")
    e.ok("send-keys", pid, "echo tty-$((40+2)); tty -s && echo on-a-tty", "Enter")
    e.wait_output(pid, lambda o: "tty-42" in o and "\non-a-tty" in o.replace("\r", ""), "tty-42 and on-a-tty")
    # C-c once sleep holds the terminal, exit once bash has it back
    nap = "100.%d" % os.getpid()
    e.ok("send-keys", pid, "sleep " + nap, "Enter")
    sleeper = eg.wait_until(lambda: eg.foreground_pid(["sleep", nap]), what="sleep %s in the pty's foreground" % nap)
    shell = eg.proc_stat(sleeper)["ppid"]
    e.ok("send-keys", pid, "C-c")
    eg.wait_until(lambda: not eg.proc_stat(sleeper) and eg.in_foreground(shell),
                  what="sleep %s ended by C-c, bash (pid %d) in the foreground again" % (nap, shell))
    e.ok("send-keys", pid, "exit 6", "Enter")
    e.wait_status(pid, "exited 6")


def test_env_blocklist(ctx):
    e = Env(ctx)
    for kv in ["LD_PRELOAD=/x.so", "GITHUB_TOKEN=t", "OPENAI_API_KEY=k", "DB_PASSWORD=p", "BASH_FUNC_x%%=() { :; }"]:
        r = e.run("run", "--env", kv, "--", "true")
        assert r.returncode == 2 and r.stderr.decode().startswith("execgate run: --env ") and b"refused" in r.stderr, (kv, r)
    env = dict(os.environ, LD_PRELOAD="", AWS_SECRET_ACCESS_KEY="s", MY_TOKEN="t", PYTHONPATH="/p", KEEP="yes")
    out = e.ok("run", "--env", "SET=1", "--", "sh", "-c",
               "echo ${LD_PRELOAD-u} ${AWS_SECRET_ACCESS_KEY-u} ${MY_TOKEN-u} ${PYTHONPATH-u} $KEEP $SET", env=env)
    assert out == "u u u u yes 1\n", out


GCONV_MODULE = r"""
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void loaded(void)
{
	int fd = open(MARK, O_WRONLY | O_CREAT | O_APPEND, 0666);

	if (fd >= 0) {
		if (write(fd, "loaded\n", 7)) {}
		close(fd);
	}
}
int gconv_init(void *step) { (void)step; return 1; }
int gconv(void) { return 1; }
"""


def gconv_module(ctx):
    """A real iconv module, built here: loaded (it says so in mark) by any program that converts
    from EGTEST with GCONV_PATH naming its directory. Returns (that directory, mark)."""
    d = ctx.tmpdir()
    os.chmod(d, 0o755)
    mark = os.path.join(d, "mark")
    with open(os.path.join(d, "m.c"), "w") as f:
        f.write(GCONV_MODULE)
    subprocess.run(["gcc", "-shared", "-fPIC", "-DMARK=\"%s\"" % mark, os.path.join(d, "m.c"), "-o",
                    os.path.join(d, "egtest.so")], check=True)
    with open(os.path.join(d, "gconv-modules"), "w") as f:
        f.write("module EGTEST// INTERNAL egtest 1\nmodule INTERNAL EGTEST// egtest 1\n")
    # it works: outside execgate the module runs
    subprocess.run(["iconv", "-f", "EGTEST", "-t", "UTF-8"], input=b"x", env=dict(os.environ, GCONV_PATH=d),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert open(mark).read() == "loaded\n", "the module does not load even outside execgate"
    os.unlink(mark)
    return d, mark


def test_no_variable_loads_code(ctx):
    """GCONV_PATH (a real iconv module), NODE_OPTIONS, PERL5OPT, ...: refused with --env, dropped
    when inherited, by run, exec and shell alike; a policy's environment.deny adds names; an
    agent wrapped by exec keeps its own keys (only runs drop secrets)."""
    e = Env(ctx, POLICY + "environment: {deny: [CORP_*]}\n")
    gdir, mark = gconv_module(ctx)
    for kv in ["GCONV_PATH=" + gdir, "NODE_OPTIONS=--require /x.js", "PERL5OPT=-Mx", "PERL5LIB=/p", "RUBYOPT=-rx",
               "PYTHONHOME=/h", "PYTHONSTARTUP=/s", "PYTHONWARNINGS=ignore::x.Y", "LOCPATH=/l",
               "GLIBC_TUNABLES=glibc.malloc.check=3", "HOSTALIASES=/h", "LD_DEBUG=all", "CORP_HOOK=1"]:
        r = e.run("run", "--env", kv, "--", "true")
        assert r.returncode in (1, 2) and b"--env " in r.stderr and b"refused" in r.stderr, (kv, r)
    names = ["GCONV_PATH", "NODE_OPTIONS", "PERL5OPT", "RUBYOPT", "PYTHONHOME", "LOCPATH", "GLIBC_TUNABLES",
             "HOSTALIASES", "CORP_HOOK"]
    env = dict(os.environ, GCONV_PATH=gdir, NODE_OPTIONS="x", PERL5OPT="x", RUBYOPT="x", PYTHONHOME="/h",
               LOCPATH="/l", GLIBC_TUNABLES="x", HOSTALIASES="/h", CORP_HOOK="1", MY_API_KEY="k", KEEP="yes")
    show = "iconv -f EGTEST -t UTF-8 </dev/null 2>/dev/null; env | grep -E '^(%s|MY_API_KEY|KEEP)=' | sort" % \
        "|".join(names)
    out = e.ok("run", "--", "sh", "-c", show, env=env)
    assert out == "KEEP=yes\n", out
    r = subprocess.run([e.ctx.execgate, "exec", "-p", e.d.pin_path, "--", "sh", "-c", show], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert r.stdout.decode() == "KEEP=yes\nMY_API_KEY=k\n", (r.stdout, r.stderr)
    r = subprocess.run([e.ctx.execgate, "shell", "-p", e.d.pin_path], input=(show + "\n").encode(), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, cwd=e.ws)
    assert r.stdout.decode() == "KEEP=yes\n", (r.stdout, r.stderr)
    assert not os.path.exists(mark), "the iconv module ran"


def test_a_run_ends_whole(ctx):
    """Each run in a cgroup of its own: --timeout and kill reach a child that left the process
    group with setsid, and pids.max (the run's RLIMIT_NPROC) bounds root's runs too, which the
    rlimit does not."""
    e = Env(ctx)
    t = "%d.%d" % (500 + os.getpid() % 100, time.monotonic_ns() % 1000)

    def left(n):
        return subprocess.run(["pgrep", "-f", "sleep %s%d" % (t, n)], stdout=subprocess.PIPE).stdout

    def gone(n, within=5):
        deadline = time.monotonic() + within
        while left(n) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not left(n), "sleep %s%d runs on" % (t, n)

    ctx.on_cleanup(lambda: subprocess.run(["pkill", "-f", "sleep %s" % t]))
    r = e.run("run", "--timeout", "1s", "--", "sh", "-c", "setsid sleep %s1 >/dev/null 2>&1 & wait" % t)
    assert r.returncode == 128 + 9, r
    gone(1)
    pid = e.bg("sh", "-c", "setsid sleep %s2 >/dev/null 2>&1 & exit 0" % t)
    e.wait_status(pid, "exited 0")
    assert left(2), "the setsid child runs"
    e.ok("kill", pid)
    gone(2)
    # a run as root may make a cgroup below its own and move there: a kill (SIGTERM) after its
    # first process exited reaches it there too, and the run's cgroups go once it is gone
    inner = "echo $$ >%s$d/sub/cgroup.procs && exec sleep %s3" % (eg.CGROUP2, t)
    pid = e.bg("sh", "-c", "export d=$(sed -n 's/^0:://p' /proc/self/cgroup); mkdir %s$d/sub && "
               "{ setsid sh -c '%s' >/dev/null 2>&1 & } && sleep 0.3; exit 0" % (eg.CGROUP2, inner))
    e.wait_status(pid, "exited 0")
    assert left(3), "the child in the cgroup below runs"
    sub = [l[3:] for l in open("/proc/%d/cgroup" % int(left(3).split()[0])).read().splitlines()
           if l.startswith("0::")][0]
    assert sub.endswith("/sub"), sub
    e.ok("kill", pid)
    gone(3)
    # the run's cgroup, and its pids.max: 512 from a caller's RLIMIT_NPROC of 100
    st = json.loads(e.ok("status", "-j"))["runs"]
    assert st["cgroup"] and st["cgroup"].endswith("/execgate-runs"), st
    out = e.ok("run", "--", "cat", "/proc/self/cgroup", pre=["prlimit", "--nproc=100:"])
    rel = [l.split(":", 2)[2] for l in out.splitlines() if l.startswith("0::")][0]
    assert rel.startswith(st["cgroup"][len(eg.CGROUP2):] + "/p-"), (rel, st)
    fork = r"""
import os, sys, time
n = 0
try:
    while n < 2000:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
except OSError as e:
    print(n, e.errno, flush=True)
os.killpg(0, 9)
"""
    r = e.run("run", "--timeout", "60s", "--", "python3", "-c", fork, pre=["prlimit", "--nproc=100:"])
    words = r.stdout.decode().split()
    assert len(words) == 2 and int(words[1]) == 11 and 400 < int(words[0]) < 512, (r.stdout, r.stderr)
    # the daemon's stop removes its runs' cgroups, and the one a run made below its own
    assert os.path.isdir(eg.CGROUP2 + sub)
    e.d.stop()
    assert not os.path.exists(eg.CGROUP2 + os.path.dirname(sub)), "the run's cgroup is left"


def test_the_cgroups_of_a_gone_daemons_runs_are_removed(ctx):
    """A daemon killed, or stopped while its runs still ran, leaves their cgroups behind: the next
    daemon's start removes those whose daemon is gone (no such process, or one started since) once
    they are empty, and keeps a live daemon's, a busy one and a name not of its making."""
    e = Env(ctx)
    runs = json.loads(e.ok("status", "-j"))["runs"]["cgroup"]
    assert runs and os.path.isdir(runs), runs
    gone = subprocess.Popen(["true"])
    gone.wait()
    now = int(time.time())
    # "reused": a process that is not an execgate (this test) has the number; "live": a daemon
    made = {
        "dead": "p-1.%d.%x" % (gone.pid, now),
        "reused": "p-2.%d.%x" % (os.getpid(), now),
        "live": "p-3.%d.%x" % (e.d.proc.pid, now - 100000),
        "busy": "p-4.%d.%x" % (gone.pid, now),
        "other": "p-other.%d.%x" % (gone.pid, now),
    }
    paths = {k: os.path.join(runs, v) for k, v in made.items()}
    sleeper = []

    def clean():
        for s in sleeper:
            s.kill()
            s.wait()
        for p in paths.values():
            for sub in ("/sub/deeper", "/sub", ""):
                try:
                    os.rmdir(p + sub)
                except OSError:
                    pass
    ctx.on_cleanup(clean)
    for p in paths.values():
        os.mkdir(p)
    os.makedirs(paths["dead"] + "/sub/deeper")
    sleeper.append(subprocess.Popen(["sleep", "60"]))
    with open(paths["busy"] + "/cgroup.procs", "w") as f:
        f.write(str(sleeper[0].pid))
    Env(ctx)
    left = {k for k, p in paths.items() if os.path.isdir(p)}
    assert left == {"live", "busy", "other"}, left


def test_workspace_and_nproc(ctx):
    e = Env(ctx)
    os.mkdir(os.path.join(e.ws, "sub"))
    os.symlink("/etc", os.path.join(e.ws, "esc"))
    os.symlink("sub", os.path.join(e.ws, "in"))
    assert e.ok("run", "--cwd", "sub", "--", "pwd") == os.path.join(e.ws, "sub") + "\n"
    assert e.ok("run", "--cwd", "in", "--", "pwd") == os.path.join(e.ws, "sub") + "\n"
    for bad in ["..", "sub/../..", "esc", e.ws + "/esc/..", "/"]:
        r = e.run("run", "--cwd", bad, "--", "pwd")
        assert r.returncode == 1 and b"outside the workspace" in r.stderr and not r.stdout, (bad, r)
    # a caller outside the workspace starts at its root
    assert e.ok("run", "--", "pwd", cwd="/") == e.ws + "\n"
    # RLIMIT_NPROC: 512 by default, an inherited higher soft limit is not lowered
    # (unlimited included), and the caller's hard limit is kept and not passed
    def nproc(limits):
        return e.ok("run", "--", "bash", "-c", "echo $(ulimit -Su) $(ulimit -Hu)", pre=["prlimit", "--nproc=" + limits])
    assert nproc("100:4000") == "512 4000\n"
    assert nproc("1500:4000") == "1500 4000\n"
    hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    if hard == resource.RLIM_INFINITY:
        assert nproc("unlimited:unlimited") == "unlimited unlimited\n"
    assert nproc("%d:%d" % (hard, hard) if hard != resource.RLIM_INFINITY else "5000:unlimited") == \
        ("%d %d\n" % (hard, hard) if hard != resource.RLIM_INFINITY else "5000 unlimited\n")
    assert nproc("100:200") == "200 200\n"
    # the daemon asks the kernel, not the request: a raw request cannot claim more
    req = {"op": "run", "argv": ["bash", "-c", "ulimit -Su"], "background": True, "nproc": -1, "cwd": e.ws}
    sock = [x for x in e.d.events() if x.get("type") == "daemon" and x.get("event") == "start"][0]["socket"]
    r = subprocess.run(["prlimit", "--nproc=100:300", "python3", "-c",
                        "import socket,sys,json,time;s=socket.socket(socket.AF_UNIX);s.connect(sys.argv[1]);"
                        "s.sendall(sys.argv[2].encode()+b'\\n');print(s.makefile().readline());time.sleep(0.5)",
                        sock, json.dumps(req)], stdout=subprocess.PIPE, timeout=30)
    pid = json.loads(r.stdout)["id"]
    assert e.wait_status(pid, "exited 0") == "300\nexited 0\n"


def test_a_stateful_runs_workspace_stays_where_it_began(ctx):
    """With no daemon --workspace, a stateful run's workspace is where its
    first command ran. The launcher took its directory instead, which the
    last command's `cd` had moved: `cd /tmp/elsewhere`, and the policy's
    `write: [workspace]` let the next command write there."""
    ws, other = ctx.tmpdir(), ctx.tmpdir()
    os.chmod(ws, 0o755)
    os.chmod(other, 0o755)
    pol = os.path.join(ctx.tmpdir(), "policy.yaml")
    with open(pol, "w") as f:
        f.write("filesystem:\n  read: [/]\n  write: [workspace, /dev/null]\n"
                "  execute: [/usr, /bin, /lib, /lib64, /sbin]\ncommands: []\n")
    d = ctx.daemon("--policy", pol, "--state-dir", ctx.tmpdir())
    s = "ws-" + token()

    def st(cmd):
        return subprocess.run([ctx.execgate, "run", "-p", d.pin_path, "--stateful", "--session", s, "--", cmd],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, cwd=ws)
    r = st("touch in-ws; echo rc=$?")
    assert r.stdout == b"rc=0\n" and os.path.exists(os.path.join(ws, "in-ws")), r
    r = st("cd %s; touch moved; echo rc=$?" % other)
    assert r.stdout != b"rc=0\n" and not os.path.exists(os.path.join(other, "moved")), r
    r = st("pwd; touch moved-later; echo rc=$?")
    assert r.stdout.decode().split("\n")[0] == other, r
    assert not os.path.exists(os.path.join(other, "moved-later")), "the workspace followed the cd: %r" % r.stdout
    r = st("cd %s; touch again; echo rc=$?" % ws)
    assert r.stdout == b"rc=0\n" and os.path.exists(os.path.join(ws, "again")), r


def test_a_state_that_would_break_the_next_command_is_cut(ctx):
    """A state is the next command's environment and its launcher's: one pushd a command,
    never popped, made the carried directory stack (one variable) longer than an exec takes,
    and EXECGATE_LANDLOCK_ABI=0 exported once had the next launcher refuse its session; either
    failed every later command of the state, for good. The stack is bounded (64 entries, 64
    KiB) and execgate's own settings are not carried."""
    e = Env(ctx)
    s = "st-" + token()

    def st(cmd, rc=0):
        r = e.run("run", "--stateful", "--session", s, "--", cmd)
        assert r.returncode == rc, (cmd, r.returncode, r.stderr[-400:])
        return r.stdout.decode()

    long_dir = os.path.join(e.ws, "d" * 200)
    os.mkdir(long_dir)
    st("for i in $(seq 800); do pushd -n %s >/dev/null; done" % long_dir)
    assert st("pwd") == e.ws + "\n"
    n = int(st("dirs -p | wc -l"))
    assert 2 <= n <= 65, n
    st("export EXECGATE_LANDLOCK_ABI=0 EXECGATE_NO_WAIT_KILLABLE=1 KEEP=yes")
    assert st('echo "${EXECGATE_LANDLOCK_ABI-unset} $KEEP"') == "unset yes\n"


def test_a_stateful_run_in_the_foreground_on_a_pty_is_refused(ctx):
    """run --stateful --pty in the foreground: the launcher's relay runs the shell in a child of
    its own, whose state the daemon throws away (it takes a state from the process it started
    only): 'cd' and 'export' were lost while the run said it succeeded. Refused, saying why."""
    e = Env(ctx)
    s = "st-" + token()
    r = e.run("run", "--stateful", "--pty", "--session", s, "--", "cd /tmp; export A=1")
    assert r.returncode != 0 and b"--stateful keeps no state with --pty in the foreground" in r.stderr, r
    r = e.run("run", "--stateful", "--session", s, "--", "pwd")
    assert r.returncode == 0 and r.stdout.decode().strip() == e.ws, r


def test_stateful_runs(ctx):
    e = Env(ctx)
    home = os.path.join(e.ws, "home")
    os.mkdir(home)
    s = "st-" + token()
    env = dict(os.environ, HOME=home)

    def st(cmd, rc=0):
        r = e.run("run", "--stateful", "--session", s, "--", cmd, env=env)
        assert r.returncode == rc, (cmd, r.returncode, r.stderr)
        return r.stdout.decode()

    os.mkdir(os.path.join(e.ws, "a"))
    assert st("cd a; pwd") == e.ws + "/a\n"
    assert st("pwd") == e.ws + "/a\n"
    assert st("cd /usr; cd - >/dev/null; pwd") == e.ws + "/a\n"
    assert st("cd /usr") == ""
    assert st("cd -") == e.ws + "/a\n"
    assert st("cd ~; pwd") == home + "\n"
    st("export FOO='x y' LD_PRELOAD=/tmp/evil.so BASH_ENV=/tmp/b; f() { echo fn; }; false", rc=1)
    assert st('echo "prev=$? foo=$FOO ld=${LD_PRELOAD-unset} be=${BASH_ENV-unset}"') == "prev=1 foo=x y ld=unset be=unset\n"
    assert st("type f >/dev/null 2>&1 || echo no-function") == "no-function\n"
    assert st("env | grep -c '^LD_PRELOAD=' || true") == "0\n"
    st("sh -c 'exit 9'", rc=9)
    assert st('echo $?') == "9\n"
    # another session has a state of its own
    r = e.run("run", "--stateful", "--session", s + "-2", "--", "echo ${FOO-unset}", env=env)
    assert r.stdout == b"unset\n", r
    # a program the command starts cannot write a state (the daemon takes only the shell's own writes)
    fake = ("import os\n"
            "for fd in range(3, 1024):\n"
            "    try: os.write(fd, b'FAKE=1\\0__EG_PWD=/\\0')\n"
            "    except OSError: pass\n"
            "for p in [os.getppid()]:\n"
            "    for n in os.listdir('/proc/%d/fd' % p):\n"
            "        try:\n"
            "            f = os.open('/proc/%d/fd/%s' % (p, n), os.O_WRONLY)\n"
            "            os.write(f, b'FAKE=1\\0__EG_PWD=/\\0'); os.close(f)\n"
            "        except OSError: pass\n")
    with open(os.path.join(e.ws, "fake.py"), "w") as f:
        f.write(fake)
    st("python3 %s/fake.py; ( exec 9>&63 ) 2>/dev/null; true" % e.ws)
    got = st('echo "FAKE=${FAKE-unset}"; pwd')
    assert got == "FAKE=unset\n" + home + "\n", got
    # a subshell (another pid) writing to the shell's saved copy spoils nothing but its own run's state
    st("export GOOD=1")
    assert st('echo $GOOD') == "1\n"


def test_log_keeps_the_latest_output(ctx):
    """~40 MB through a log that rotates at 16 MiB: the exit event's last
    lines, log --tail and poll show the real end; offsets stay positions in
    the whole output; what was dropped from the front is counted and said."""
    e = Env(ctx)
    n = 620000
    fmt = "line %08g of the output, padded out to a fair length......"
    width = len(fmt % 1) + 1
    pid = e.bg("sh", "-c", "seq -f '%s' 1 %d; echo tail-line" % (fmt, n))
    ev = e.d.wait_for(lambda x: x.get("type") == "process" and x.get("id") == pid, timeout=120,
                      what="exit event")[-1]
    total = n * width + len("tail-line\n")
    assert ev["status"] == "exited 0", ev
    assert ev["last_lines"][-2:] == [fmt % n, "tail-line"], ev["last_lines"][-3:]
    assert ev["log_bytes"] == total and ev["log_failed"] == 0, ev
    kept = total - ev["log_dropped"]
    assert 16 << 20 <= kept <= 32 << 20, ev
    # at most two files of 16 MiB on disk
    procs = os.path.join(e.state, "procs")
    files = os.listdir(procs)
    on_disk = sum(os.path.getsize(os.path.join(procs, f)) for f in files)
    assert on_disk == kept and on_disk <= 32 << 20, (files, on_disk, kept)
    assert sorted(files) == sorted([os.path.basename(ev["log"]), os.path.basename(ev["log"]) + ".1"]), files
    assert e.ok("log", pid, "--tail", "1") == "tail-line\n"
    assert e.ok("log", pid, "--tail", "2") == fmt % n + "\ntail-line\n"
    # a stream offset: line k starts at (k-1) * width, rotation or not
    k = n - 1000
    out = e.ok("log", pid, "--offset", str((k - 1) * width))
    assert out.startswith(fmt % k + "\n") and out.endswith(fmt % n + "\ntail-line\n"), out[:80]
    assert len(out) == total - (k - 1) * width
    # an offset that was dropped: the answer says so and starts at the first byte kept
    r = e.run("log", pid, "--offset", "0")
    assert r.returncode == 0 and b"no longer kept" in r.stderr, r.stderr
    assert r.stderr.decode().count("\n") == 1, r.stderr
    assert len(r.stdout) == kept and r.stdout.endswith(b"tail-line\n"), len(r.stdout)
    # poll: from where it was (0), all but what the log still keeps came and went
    r = e.run("poll", pid, timeout=120)
    assert r.returncode == 0 and b"came and went" in r.stderr, r.stderr
    assert r.stdout.endswith(b"tail-line\nexited 0\n") and len(r.stdout) == kept + len("exited 0\n"), \
        r.stdout[-40:]
    ps = json.loads(e.ok("ps", "--json"))
    me = [p for p in ps if p["id"] == pid][0]
    assert me["log_bytes"] == total and me["log_dropped"] == ev["log_dropped"], me


def test_registry_survives_a_handover(ctx):
    """SIGUSR2: the new daemon takes the registry over: ps lists the running
    processes, poll goes on from where it was, write and send-keys reach
    them, their exits are recorded with their status, a foreground caller
    gets its exit status, a timeout still fires and a stateful state is
    kept."""
    e = Env(ctx)
    os.mkdir(os.path.join(e.ws, "hd"))
    s = "st-" + token()
    pid1 = e.bg("sh", "-c", "echo before; read x; echo got-$x; read y; echo got-$y; exit 5")
    pty = e.bg("bash", "--norc", "--noprofile", "-i", opts=("--pty",))
    gone = e.bg("sh", "-c", "echo early; exit 2")
    e.wait_status(gone, "exited 2")
    assert e.ok("run", "--stateful", "--session", s, "--", "cd hd; export HV=kept") == ""
    fg = subprocess.Popen([ctx.execgate, "run", "-p", e.d.pin_path, "--", "sh", "-c", "sleep 2; echo fg-done; exit 7"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=e.ws)
    # a stateful command running across the handover: its state comes back to the new daemon
    os.mkdir(os.path.join(e.ws, "hd2"))
    s2 = s + "-2"
    sfg = subprocess.Popen([ctx.execgate, "run", "-p", e.d.pin_path, "--stateful", "--session", s2, "--",
                            "sleep 2; cd hd2; export ACROSS=yes; echo st-done; false"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=e.ws)
    e.ok("write", pid1, "one", "--newline")
    out = ""
    deadline = time.monotonic() + 10
    while "got-one" not in out:
        assert time.monotonic() < deadline, out
        out += e.poll(pid1)
        time.sleep(0.05)
    assert out.startswith("before\ngot-one\n"), out
    # both foreground runs are under way (they sleep 2 s) when the daemon hands over

    def fg_running():
        return [p for p in json.loads(e.ok("ps", "--json")) if not p["background"] and p["status"] == "running"]
    eg.wait_until(lambda: len(fg_running()) == 2, what="the two foreground runs in the registry")

    # a timeout that fires after the handover, however long the new daemon takes to load; the
    # handover waits until its session is up (the supervised exec of sleep is in): a launcher
    # still in its requests to the old daemon fails closed (docs/sessions.md, "Failing closed")
    timed = e.bg("sleep", "100", opts=("--timeout", "10s"))
    e.d.wait_for(lambda x: x.get("type") == "exec" and x.get("session") and x.get("argv") == ["sleep", "100"],
                 what="the timed run's command, supervised")
    daemon_pid = e.d.proc.pid
    e.d.proc.send_signal(signal.SIGUSR2)
    e.d.wait_for(lambda x: x.get("type") == "daemon" and x.get("event") == "start" and x.get("takeover"),
                 what="the new daemon's start record")
    assert e.d.proc.poll() is None and e.d.proc.pid == daemon_pid

    ps = {p["id"]: p for p in json.loads(e.ok("ps", "--json"))}
    for i in (pid1, pty, timed):
        assert ps[i]["status"] == "running", (ps[i], e.ok("log", i))
    assert ps[gone]["status"] == "exited 2", ps[gone]
    assert e.ok("log", gone) == "early\n"
    # poll goes on from where it was; write reaches the pipe
    assert e.poll(pid1) == "running\n"
    e.ok("write", pid1, "two", "--newline")
    out = e.wait_status(pid1, "exited 5")
    assert out == "got-two\nexited 5\n", out
    assert e.ok("log", pid1) == "before\ngot-one\ngot-two\n"
    ev = e.d.wait_for(lambda x: x.get("type") == "process" and x.get("id") == pid1, what="exit event")[-1]
    assert ev["exit_code"] == 5 and ev["last_lines"] == ["before", "got-one", "got-two"], ev
    # send-keys reaches the pty
    e.ok("send-keys", pty, "echo hv-$((40+2))", "Enter")
    deadline = time.monotonic() + 10
    out = ""
    while "hv-42" not in out:
        assert time.monotonic() < deadline, out
        out += e.poll(pty)
        time.sleep(0.05)
    e.ok("send-keys", pty, "exit 3", "Enter")
    e.wait_status(pty, "exited 3")
    # the foreground caller lost its connection and asked the new daemon
    out, err = fg.communicate(timeout=30)
    assert fg.returncode == 7 and out == b"fg-done\n", (fg.returncode, out, err)
    # the timeout set before the handover still fires
    e.wait_status(timed, "killed by SIGKILL", timeout=20)
    assert [p for p in json.loads(e.ok("ps", "--json")) if p["id"] == timed][0]["timed_out"]
    out, err = sfg.communicate(timeout=30)
    assert sfg.returncode == 1 and out == b"st-done\n", (sfg.returncode, out, err)
    r = e.run("run", "--stateful", "--session", s2, "--", "echo $? $ACROSS; pwd")
    assert r.returncode == 0 and r.stdout.decode() == "1 yes\n" + os.path.join(e.ws, "hd2") + "\n", r
    # the shell state came over
    r = e.run("run", "--stateful", "--session", s, "--", "pwd; echo $HV")
    assert r.returncode == 0 and r.stdout.decode() == os.path.join(e.ws, "hd") + "\nkept\n", r
    # ids go on, and one exit event each
    new = e.bg("true")
    assert new not in (pid1, pty, timed, gone) and int(new[2:]) > int(gone[2:]), new
    for i in (pid1, pty, timed, gone):
        e.d.wait_for(lambda x: x.get("type") == "process" and x.get("id") == i, what="%s's exit event" % i)
    # a later run's exit recorded: a second exit event of any of them would be in the output by now
    later = e.bg("true")
    e.d.wait_for(lambda x: x.get("type") == "process" and x.get("id") == later, what="a later run's exit event")
    for i in (pid1, pty, timed, gone):
        evs = [x for x in e.d.events() if x.get("type") == "process" and x.get("id") == i]
        assert len(evs) == 1, evs
    ev = [x for x in e.d.events() if x.get("type") == "process" and x.get("id") == timed][0]
    assert ev["timed_out"] and ev["signal"] == "SIGKILL", ev


USER = ["setpriv", "--reuid", "12345", "--regid", "12345", "--clear-groups"]


def test_cwd_is_entered_as_the_user(ctx):
    """--cwd and a stateful session's directory are entered with the user's
    rights: a directory below one the user may not traverse stays shut."""
    e = Env(ctx)
    priv = os.path.join(e.ws, "priv")
    pub = os.path.join(priv, "pub")
    os.makedirs(pub)
    os.chmod(priv, 0o700)
    os.chmod(pub, 0o755)
    with open(os.path.join(pub, "secret"), "w") as f:
        f.write("TOP SECRET\n")
    os.chmod(os.path.join(pub, "secret"), 0o644)
    r = e.run("run", "--cwd", "priv/pub", "--", "cat", "secret", pre=USER)
    assert r.returncode == 1 and b"TOP" not in r.stdout, r
    assert r.stderr.decode().startswith("execgate run: --cwd ") and b"Permission denied" in r.stderr, r
    # a saved directory the user could not enter is not taken
    s = "st-" + token()
    e.ok("run", "--stateful", "--session", s, "--", "export PWD=%s" % pub, pre=USER)
    r = e.run("run", "--stateful", "--session", s, "--", "pwd; cat secret", pre=USER)
    assert b"TOP" not in r.stdout and r.stdout == (e.ws + "\n").encode(), r
    # a saved directory shut later: refused once with the reason, then forgotten
    os.mkdir(os.path.join(e.ws, "open"))
    os.mkdir(os.path.join(e.ws, "open", "in"))
    assert e.ok("run", "--stateful", "--session", s, "--", "cd open/in; pwd", pre=USER) == e.ws + "/open/in\n"
    os.chmod(os.path.join(e.ws, "open"), 0o700)
    r = e.run("run", "--stateful", "--session", s, "--", "pwd", pre=USER)
    assert r.returncode == 1 and b"the session's directory" in r.stderr, r
    assert e.ok("run", "--stateful", "--session", s, "--", "pwd", pre=USER) == e.ws + "\n"
    os.chmod(os.path.join(e.ws, "open"), 0o755)
    # a directory the user may enter still works, and root's runs are as before
    assert e.ok("run", "--cwd", "open/in", "--", "pwd", pre=USER) == e.ws + "/open/in\n"
    assert e.ok("run", "--cwd", "priv/pub", "--", "cat", "secret") == "TOP SECRET\n"


GONE_CALLER = r"""
import json, os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
connector = os.getpid()
if os.fork():
    os._exit(0)          # the process that connected is gone before the request comes:
while os.path.exists("/proc/%d" % connector):
    time.sleep(0.01)     # exited and reaped by the sh that waits for it
s.sendall(sys.argv[2].encode() + b"\n")
print(s.makefile().readline(), flush=True)
"""


def test_nproc_is_the_callers_or_refused(ctx):
    """The caller's limits come through the connection's pidfd; when they
    cannot be read the run is refused, it does not get the daemon's."""
    e = Env(ctx)
    out = os.path.join(e.ws, "nproc.out")
    req = {"op": "run", "argv": ["/bin/sh", "-c", "ulimit -Hu > " + out], "background": True, "cwd": e.ws}
    sock = [x for x in e.d.events() if x.get("type") == "daemon" and x.get("event") == "start"][0]["socket"]
    r = subprocess.Popen(["prlimit", "--nproc=100:300", "sh", "-c", 'exec python3 -c "$1" "$2" "$3" & wait',
                          "sh", GONE_CALLER, sock, json.dumps(req)], stdout=subprocess.PIPE)
    reply = json.loads(r.communicate(timeout=30)[0].decode().strip().split("\n")[-1])
    # the connecting process has gone: the kernel cannot place it, so it counts as inside a session and
    # is refused before its limits are read (they could not be read either); no registry entry, so
    # nothing ran that could write out later
    assert reply == {"ok": False, "error": "run: a process inside a supervised session cannot start processes "
                     "outside it"}, reply
    assert not [p for p in json.loads(e.ok("ps", "--json")) if out in p["command"]], "an entry for the refused run"
    assert not os.path.exists(out), open(out).read()
    # a daemon without CAP_SYS_RESOURCE cannot prlimit another user's process: it reads
    # the limits all the same (/proc/PID/limits), it does not hand out its own
    from test_packaging import CapDaemon
    caps = ["bpf", "perfmon", "syslog", "sys_ptrace", "dac_read_search", "chown", "setuid", "setgid", "kill"]
    d = CapDaemon(ctx, caps, args=("--state-dir", e.state))
    os.chmod(e.ws, 0o777)
    r = subprocess.run(USER + ["prlimit", "--nproc=100:300", ctx.execgate, "run", "-p", d.pin_path, "--",
                               "bash", "-c", "ulimit -Hu"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60, cwd=e.ws)
    assert r.returncode == 0 and r.stdout == b"300\n", r


def test_what_a_run_leaves_behind(ctx):
    """The timeout, kill and a foreground caller's going away reach the
    process group after its first process has exited (`cmd & exit 0`)."""
    e = Env(ctx)
    t = "%d.%d" % (400 + os.getpid() % 100, time.monotonic_ns() % 1000)

    def left(n):
        return subprocess.run(["pgrep", "-f", "sleep %s%d" % (t, n)], stdout=subprocess.PIPE).stdout

    def gone(n, within=5):
        deadline = time.monotonic() + within
        while left(n) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not left(n), "sleep %s%d runs on" % (t, n)

    # the timeout of a background run
    pid = e.bg("sh", "-c", "sleep %s1 >/dev/null 2>&1 & exit 0" % t, opts=("--timeout", "2s"))
    e.wait_status(pid, "exited 0")
    assert left(1)
    gone(1)
    # kill on an entry whose first process has exited
    pid = e.bg("sh", "-c", "sleep %s2 >/dev/null 2>&1 & exit 0" % t)
    e.wait_status(pid, "exited 0")
    assert left(2)
    e.ok("kill", pid)
    gone(2)
    deadline = time.monotonic() + 5    # until whoever reaps orphans has reaped it
    while e.run("kill", pid).returncode == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    r = e.run("kill", pid)
    assert r.returncode == 1 and b"has exited already" in r.stderr, r
    # a foreground run: what it left behind goes when its caller does
    r = e.run("run", "--timeout", "30s", "--", "sh", "-c", "sleep %s3 >/dev/null 2>&1 & exit 0" % t)
    assert r.returncode == 0, r
    gone(3)


def test_one_user_cannot_take_the_registry(ctx):
    """Each user has a share of the registry (32 entries) and of the shell
    states (16): past it, its own oldest finished entries go, never another
    user's, and a share that is all running refuses a new run."""
    e = Env(ctx)
    os.chmod(e.ws, 0o777)
    other = ["setpriv", "--reuid", "12346", "--regid", "12346", "--clear-groups"]
    victim = e.ok("run", "--background", "--", "echo", "victim-output", pre=other).strip().split()[-1]
    e.wait_status(victim, "exited 0")
    s = "mine-" + token()
    e.ok("run", "--stateful", "--session", s, "--", "export KEEP=victim-state", pre=other)
    ids = []
    ctx.on_cleanup(lambda: [e.run("kill", i, "--signal", "KILL") for i in ids])
    for i in range(32):
        ids.append(e.ok("run", "--background", "--", "sleep", "600", pre=USER).strip().split()[-1])
    r = e.run("run", "--background", "--", "sleep", "600", pre=USER)
    assert r.returncode == 1 and b"32 runs" in r.stderr, r
    assert "victim-output" in e.ok("log", victim, pre=other)
    for i in ids:
        e.ok("kill", i, pre=USER)
    for i in ids:
        e.wait_status(i, "killed by SIGTERM")
    # finished: they make room for the same user's next runs
    for i in range(8):
        e.ok("run", "--", "true", pre=USER)
    # ... but not a finished one that left a process behind: it keeps its timeout and its kill
    keep = []
    ctx.on_cleanup(lambda: [e.run("kill", i, "--signal", "KILL") for i in keep])
    for i in range(32):
        keep.append(e.ok("run", "--background", "--timeout", "10m", "--", "sh", "-c",
                         "sleep 600 >/dev/null 2>&1 & exit 0", pre=USER).strip().split()[-1])
    for i in keep:
        e.wait_status(i, "exited 0")
    r = e.run("run", "--", "true", pre=USER)
    assert r.returncode == 1 and b"32 runs" in r.stderr, (r, keep[:2])
    assert all(i in e.ok("ps", pre=USER) for i in keep)
    for i in keep:
        e.ok("kill", i, "--signal", "KILL", pre=USER)
    eg.wait_until(lambda: e.run("run", "--", "true", pre=USER).returncode == 0, timeout=20,
                  what="room again once what the runs left is killed")
    r = e.run("poll", ids[0], pre=USER)
    assert r.returncode == 1 and b"no process" in r.stderr, r
    assert "victim-output" in e.ok("log", victim, pre=other)
    # shell states: the user's own least recently used goes
    for i in range(70):
        e.ok("run", "--stateful", "--session", "s%d" % i, "--", "true", pre=USER)
    assert e.ok("run", "--stateful", "--session", s, "--", "echo $KEEP", pre=other) == "victim-state\n"


def test_a_state_too_big_for_exec(ctx):
    """A variable over 128 KiB (or a state over 1 MiB) is not kept, with a
    warning: the next command starts (execve would refuse it with E2BIG)."""
    e = Env(ctx)
    s = "big-" + token()

    def st(cmd):
        return e.run("run", "--stateful", "--session", s, "--", cmd)

    r = st('export BIG=$(head -c 200000 /dev/zero | tr "\\0" x) SMALL=1; echo set')
    assert r.returncode == 0 and r.stdout == b"set\n", r
    assert b"does not keep BIG (200004 bytes)" in r.stderr, r
    r = st('echo "hello ${BIG-unset} $SMALL"')
    assert r.returncode == 0 and r.stdout == b"hello unset 1\n", r
    # many variables under the limit each, over ARG_MAX together
    r = st('for i in $(seq 20); do export V$i=$(head -c 120000 /dev/zero | tr "\\0" y); done; echo set')
    assert r.returncode == 0 and b"does not keep V" in r.stderr, r
    r = st('echo hello ${#V1}')
    assert r.returncode == 0 and r.stdout == b"hello 120000\n", r
