# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The shell shim (execgate shim install/uninstall, .output/execgate-shim), and
`execgate exec --pty` (a session on a terminal of its own, the launcher relaying).

The host's /bin/sh and /bin/bash are never touched: the shells that run
through the shim do so in a private mount namespace where /usr/bin and /etc
are overlays (writes land in a temporary upper directory), and
`execgate shim install` runs there for real.
"""
import os
import re
import shutil
import signal
import subprocess
import termios
import time

import eg

SHIM = os.path.join(eg.OUT, "execgate-shim")
MARK = b"execgate-shell-shim-v1"


def make_tree(ctx, merged=True):
    """A small system image: bash a regular file, sh a symlink to dash."""
    root = ctx.tmpdir()
    bindir = os.path.join(root, "usr/bin") if merged else os.path.join(root, "bin")
    os.makedirs(bindir)
    if merged:
        os.symlink("usr/bin", os.path.join(root, "bin"))
    with open(os.path.join(bindir, "bash"), "wb") as f:
        f.write(b"\x7fELF not really bash \xff\x00")
    os.chmod(os.path.join(bindir, "bash"), 0o755)
    os.symlink("dash", os.path.join(bindir, "sh"))
    return root, bindir


def shim(ctx, *args, check=True):
    r = ctx.run([ctx.execgate, "shim"] + list(args), check=False)
    if check:
        assert r.returncode == 0, (args, r.returncode, r.stdout, r.stderr)
    return r


def state(bindir):
    out = {}
    for n in sorted(os.listdir(bindir)):
        p = os.path.join(bindir, n)
        out[n] = ("link", os.readlink(p)) if os.path.islink(p) else ("file", open(p, "rb").read())
    return out


def test_shim_install_uninstall_tree(ctx):
    for merged in (True, False):
        root, bindir = make_tree(ctx, merged)
        before = state(bindir)
        r = shim(ctx, "install", "--root", root, "-p", "/sys/fs/bpf/egtest-shim-tree")
        assert os.path.islink(os.path.join(bindir, "sh.real")) and \
            os.readlink(os.path.join(bindir, "sh.real")) == "dash", state(bindir)
        assert open(os.path.join(bindir, "bash.real"), "rb").read() == before["bash"][1]
        for n in ("sh", "bash"):
            data = open(os.path.join(bindir, n), "rb").read()
            assert MARK in data and os.access(os.path.join(bindir, n), os.X_OK), n
        conf = open(os.path.join(root, "etc/execgate/shim.conf")).read()
        assert "socket=/run/execgate/pin-egtest" in conf and "fail_open=0" in conf, conf
        assert "execgate=%s" % os.path.realpath(ctx.execgate) in conf, conf
        # again: nothing changes
        installed = state(bindir)
        shim(ctx, "install", "--root", root, "-p", "/sys/fs/bpf/egtest-shim-tree")
        assert state(bindir) == installed
        # back to exactly what was there, twice
        shim(ctx, "uninstall", "--root", root)
        assert state(bindir) == before, (state(bindir), before)
        assert not os.path.exists(os.path.join(root, "etc/execgate"))
        r = shim(ctx, "uninstall", "--root", root)
        assert state(bindir) == before and b"nothing to do" in r.stdout


def test_shim_interrupted_install(ctx):
    """Every state an install can be stopped in: a re-run finishes, uninstall undoes."""
    root, bindir = make_tree(ctx)
    before = state(bindir)
    sh, bash = os.path.join(bindir, "sh"), os.path.join(bindir, "bash")
    # stopped after writing the new shim, and after linking the shells to .real
    shutil.copy(SHIM, bash + ".execgate-new")
    os.link(bash, bash + ".real")
    os.link(sh, sh + ".real", follow_symlinks=False)
    shim(ctx, "uninstall", "--root", root)
    assert state(bindir) == before, state(bindir)
    # the same partial state, finished by install
    shutil.copy(SHIM, bash + ".execgate-new")
    os.link(bash, bash + ".real")
    shim(ctx, "install", "--root", root)
    st = state(bindir)
    assert MARK in st["bash"][1] and MARK in st["sh"][1] and st["sh.real"] == ("link", "dash"), st
    assert "bash.execgate-new" not in st
    shim(ctx, "uninstall", "--root", root)
    assert state(bindir) == before
    # refuses to guess: a shim with no .real, or a .real beside a real shell
    shutil.copy(SHIM, bash + ".x")
    os.rename(bash, bash + ".keep")
    os.rename(bash + ".x", bash)
    r = shim(ctx, "uninstall", "--root", root, check=False)
    assert r.returncode == 1 and b"missing" in r.stderr and r.stderr.startswith(b"execgate shim: "), r.stderr
    os.rename(bash + ".keep", bash)
    r = shim(ctx, "install", "--root", "relative/path", check=False)
    assert r.returncode == 2, r


class Ns:
    """A private mount namespace where /usr/bin and /etc are overlays and the shim is installed."""

    def __init__(self, ctx, pin, fail_open=False):
        self.ctx = ctx
        d = ctx.tmpdir()
        self.d = d
        for sub in ("ub", "ubw", "et", "etw"):
            os.mkdir(os.path.join(d, sub))
        self.prologue = (
            "set -e\n"
            "mount -t overlay overlay -o lowerdir=/usr/bin,upperdir={d}/ub,workdir={d}/ubw /usr/bin\n"
            "mount -t overlay overlay -o lowerdir=/etc,upperdir={d}/et,workdir={d}/etw /etc\n"
            "{eg} shim install -p {pin} {fo} >/dev/null\n"
            "set +e\n").format(d=d, eg=ctx.execgate, pin=pin, fo="--fail-open" if fail_open else "")

    def run(self, script, env=None, timeout=60):
        path = os.path.join(self.d, "script-%d.sh" % self.ctx.seq())
        with open(path, "w") as f:
            f.write(self.prologue + script)
        return subprocess.run(["unshare", "-m", "--propagation", "private", "/usr/bin/dash", path],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=timeout)


def session_execs(dm, pred=lambda e: True):
    return [e for e in dm.events() if e.get("type") in ("exec", "exec_failed") and e.get("session") and pred(e)]


def test_shim_runs_shells_in_a_session(ctx):
    dm = ctx.daemon()
    ns = Ns(ctx, dm.pin_path)
    tok = eg.token()
    r = ns.run("/bin/sh -c 'echo out-%s; echo err-%s >&2'\n" % (tok, tok))
    # non-interactive: pipeable, stdout and stderr apart
    assert r.returncode == 0 and r.stdout == b"out-%s\n" % tok.encode() and \
        r.stderr == b"err-%s\n" % tok.encode(), r
    # every argument as given (spaces, empty, bytes that are not UTF-8), $0 as invoked
    r = ns.run("bash -c 'printf \"[%%s]\" \"$0\" \"$@\"' zero-%s 'a b' '' \"$(printf '\\377\\001')\"\n"
               "python3 -c 'import os; os.execv(\"/bin/bash\", [\"-bash\", \"-c\", \"echo \\\"$0\\\"\"])'\n" % tok)
    assert r.stdout == b"[zero-%s][a b][][\xff\x01]-bash\n" % tok.encode(), r
    evs = dm.wait_for(lambda e: e.get("type") == "exec" and e.get("session")
                      and e.get("filename") == "/usr/bin/bash.real" and ("zero-" + tok) in e.get("argv", []),
                      what="bash.real in a session")
    assert evs[0]["session_depth"] == 0 and evs[0]["argv"][0] == "bash", evs[0]
    evs = dm.wait_for(lambda e: e.get("type") == "exec" and e.get("session")
                      and e.get("argv", [None])[0] == "-bash", what="a login bash in a session")
    assert evs[0]["filename"] == "/usr/bin/bash.real", evs[0]
    dm.wait_for(lambda e: e.get("type") == "exec" and e.get("session") and e.get("filename") == "/usr/bin/dash"
                and e["argv"][:2] == ["/bin/sh", "-c"] and ("out-" + tok) in e["argv"][2], what="sh.real (dash)")


def test_shim_recursion_guard_is_the_kernels(ctx):
    dm = ctx.daemon()
    ns = Ns(ctx, dm.pin_path)
    tok = eg.token()
    # inside a session, with the environment cleared: the inner shells run
    # directly, in the same session, and no second session starts
    r = ns.run("/bin/bash -c 'env -i /bin/bash -c \"/bin/sh -c \\\"echo inner-%s\\\"\"'\n" % tok)
    assert r.stdout == b"inner-%s\n" % tok.encode(), r
    evs = dm.wait_for(lambda e: e.get("type") == "exec" and e.get("session") and
                      any(("inner-" + tok) in a for a in e.get("argv", [])) and e["filename"] == "/usr/bin/dash",
                      what="the inner sh")
    sid = evs[0]["session"]
    mine = [e for e in dm.events() if e.get("session") == sid and e.get("type") == "exec"]
    assert not [e for e in mine if os.path.basename(e["filename"]) == "execgate"], \
        "a nested launcher ran: %s" % [e["argv"] for e in mine]
    assert evs[0]["session_depth"] >= 2 and evs[0]["depth"] > evs[0]["session_depth"], evs[0]
    # outside a session, variables claiming otherwise change nothing
    env = dict(os.environ, EXECGATE_IN_SESSION="1", AGENTSH_IN_SESSION="1", EXECGATE_SESSION="s-0",
               EXECGATE_SESSION_ID="claimed-" + tok)
    r = ns.run("/bin/sh -c 'echo outer-%s'\n" % tok, env=env)
    assert r.stdout == b"outer-%s\n" % tok.encode(), r
    dm.wait_for(lambda e: e.get("type") == "exec" and e.get("session") and
                any(("outer-" + tok) in a for a in e.get("argv", [])), what="the claimed shell, supervised")
    dm.wait_for(lambda e: e.get("type") == "session" and e.get("name") == "claimed-" + tok,
                what="the session named by EXECGATE_SESSION_ID")


def test_shim_session_name_resolution(ctx):
    dm = ctx.daemon()
    ns = Ns(ctx, dm.pin_path)
    tok = eg.token()
    f = os.path.join(ctx.tmpdir(), "sid")
    with open(f, "w") as fh:
        fh.write("from-file-%s\nignored\n" % tok)
    ws1, ws2 = ctx.tmpdir(), ctx.tmpdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXECGATE_")}
    ns.run("EXECGATE_SESSION_FILE=%s /bin/sh -c true\n"
           "cd %s; /bin/sh -c true; /bin/bash -c true\n"
           "cd %s; /bin/bash -c true\n" % (f, ws1, ws2), env=env)
    dm.wait_for(lambda e: e.get("type") == "session" and e.get("name") == "from-file-" + tok,
                what="the session named by EXECGATE_SESSION_FILE")

    def names(cwd):
        ids = {e["session"] for e in dm.events() if e.get("type") == "exec" and e.get("session")
               and e.get("cwd") == cwd}
        return {e.get("name") for e in dm.events() if e.get("type") == "session" and e.get("session") in ids}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (len(names(ws1)) < 1 or len(names(ws2)) < 1):
        time.sleep(0.1)
    n1, n2 = names(ws1), names(ws2)
    # sh and bash in one workspace share a name; another workspace has its own
    assert len(n1) == 1 and len(n2) == 1 and n1 != n2, (n1, n2)
    assert re.fullmatch(r"session-[0-9a-f]{16}", next(iter(n1))), n1


def test_shim_without_a_daemon(ctx):
    pin = "/sys/fs/bpf/egtest-shim-nodaemon-%d" % os.getpid()
    r = Ns(ctx, pin).run("/bin/sh -c 'echo ran'; echo rc=$?\n")
    lines = r.stderr.decode().splitlines()
    assert r.stdout == b"rc=126\n" and len(lines) == 1 and lines[0].startswith("execgate-shim: ") and \
        "refusing" in lines[0], r
    r = Ns(ctx, pin, fail_open=True).run("/bin/sh -c 'echo ran'; echo rc=$?\n")
    assert r.stdout == b"ran\nrc=0\n" and b"warning" in r.stderr and b"--fail-open" in r.stderr, r


def test_shim_policy_applies(ctx):
    d = ctx.tmpdir()
    pol = os.path.join(d, "p.yaml")
    with open(pol, "w") as f:
        f.write("commands:\n  - {name: no-denyme, basenames: [denyme], decision: deny, message: not here}\n")
    shutil.copy("/usr/bin/true", os.path.join(d, "denyme"))
    dm = ctx.daemon("--policy", pol)
    r = Ns(ctx, dm.pin_path).run("/bin/bash -c '%s/denyme; echo rc=$?'\n" % d)
    assert b"rc=126" in r.stdout and b"execgate: denied: not here (rule no-denyme)" in r.stderr, r


def tmux_text(sock, target):
    return subprocess.run(["tmux", "-S", sock, "capture-pane", "-p", "-t", target],
                          stdout=subprocess.PIPE).stdout.decode()


def wait_screen(sock, target, pat, timeout=15):
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = tmux_text(sock, target)
        if re.search(pat, text, re.M):
            return text
        time.sleep(0.1)
    raise AssertionError("screen never showed %r:\n%s" % (pat, text))


def pane_tty(sock, target):
    return subprocess.run(["tmux", "-S", sock, "display", "-p", "-t", target, "#{pane_tty}"],
                          stdout=subprocess.PIPE).stdout.decode().strip()


def wait_foreground(tty, *argv):
    """Until argv runs in the foreground of terminal tty: where the next keys go."""
    return eg.wait_until(lambda: eg.foreground_pid(list(argv), tty), timeout=15,
                         what="%s in the foreground of %s" % (" ".join(argv), tty))


def is_raw(tty):
    """Whether terminal tty is in raw mode (no line editing: a relay reads each key)."""
    fd = os.open(tty, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        return not termios.tcgetattr(fd)[3] & termios.ICANON
    finally:
        os.close(fd)


def test_shim_terminal(ctx):
    """An interactive bash through the shim: Ctrl-C, Ctrl-Z and fg, less, a resize."""
    if not shutil.which("tmux"):
        ctx.skip("tmux is not installed (tools/install-deps.sh)")
    dm = ctx.daemon()
    ns = Ns(ctx, dm.pin_path)
    sock = os.path.join(ns.d, "tmux.sock")
    page = os.path.join(ns.d, "page.txt")
    with open(page, "w") as f:
        f.write("".join("line %d of the page\n" % i for i in range(200)))
    env = dict(os.environ, TERM="xterm", PS1="PROMPT$ ", HOME=ns.d)
    r = ns.run("tmux -S %s -f /dev/null new-session -d -x 100 -y 30 -s t "
               "'/bin/bash --norc --noprofile -i'\n" % sock, env=env)
    assert r.returncode == 0, r

    def kill_server():
        subprocess.run(["tmux", "-S", sock, "kill-server"], stderr=subprocess.DEVNULL)
    ctx.on_cleanup(kill_server)

    def keys(*k):
        subprocess.run(["tmux", "-S", sock, "send-keys", "-t", "t"] + list(k), check=True)
    keys("PS1='PROMPT$ '", "Enter")
    wait_screen(sock, "t", r"^PROMPT\$ ?$")
    tty = pane_tty(sock, "t")
    # Ctrl-C interrupts the foreground job, the shell stays
    keys("sleep 300; echo after-sleep-$?", "Enter")
    wait_foreground(tty, "sleep", "300")
    keys("C-c")
    wait_screen(sock, "t", r"^\^C")
    keys("echo alive-$((6*7))", "Enter")
    wait_screen(sock, "t", r"^alive-42$")
    # Ctrl-Z stops it, jobs lists it, fg brings it back
    keys("sleep 301", "Enter")
    wait_foreground(tty, "sleep", "301")
    keys("C-z")
    wait_screen(sock, "t", r"Stopped\s+sleep 301")
    keys("jobs", "Enter")
    wait_screen(sock, "t", r"^\[1\]\+\s+Stopped\s+sleep 301")
    keys("fg", "Enter")
    wait_screen(sock, "t", r"^sleep 301$")
    keys("C-c")
    keys("echo back-$((1+1))", "Enter")
    wait_screen(sock, "t", r"^back-2$")
    # a full-screen program: less pages, q quits
    keys("less %s" % page, "Enter")
    wait_screen(sock, "t", r"^line 28 of the page")
    keys("q")
    keys("clear; echo quit-less", "Enter")
    wait_screen(sock, "t", r"^quit-less$")
    # a resize reaches the program
    subprocess.run(["tmux", "-S", sock, "resize-window", "-t", "t", "-x", "90", "-y", "25"], check=True)
    keys("stty size", "Enter")
    wait_screen(sock, "t", r"^25 90$")
    # all of it ran supervised
    dm.wait_for(lambda e: e.get("type") == "exec" and e.get("session") and e.get("argv") == ["sleep", "301"],
                what="sleep in the session")
    dm.wait_for(lambda e: e.get("type") == "exec" and e.get("session") and e.get("argv") == ["stty", "size"],
                what="stty in the session")


def pty_exec(ctx, dm, *cmd, inp=b"", policy=None):
    argv = [ctx.execgate, "exec", "--pty", "-p", dm.pin_path]
    if policy:
        argv += ["--policy", policy]
    return subprocess.run(argv + ["--"] + list(cmd), input=inp, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=30)


def test_exec_pty_pipes(ctx):
    """--pty with pipes on our side: the command sees a terminal, input ends, status kept."""
    d = ctx.tmpdir()
    pol = os.path.join(d, "p.yaml")
    with open(pol, "w") as f:
        f.write("commands:\n  - {name: no-denyme, basenames: [denyme], decision: deny, message: not here}\n")
    shutil.copy("/usr/bin/true", os.path.join(d, "denyme"))
    dm = ctx.daemon()
    tok = eg.token()
    r = pty_exec(ctx, dm, "/bin/sh", "-c",
                 "test -t 0 && test -t 1 && test -t 2 && echo tty-%s; tty; read x; echo got=$x; "
                 "cat; echo err-%s >&2; exit 5" % (tok, tok),
                 inp=b"first\nrest without newline")
    out = r.stdout.decode(errors="replace")
    # stdout and stderr share the terminal: both arrive on our stdout, in order
    assert r.returncode == 5 and r.stderr == b"", r
    assert ("tty-%s\r\n" % tok) in out and "/dev/pts/" in out and "got=first\r\n" in out, out
    assert "rest without newline" in out and out.index("rest without") < out.index("err-" + tok), out
    assert "first" not in out.replace("got=first", ""), "piped input echoed: %r" % out
    evs = dm.wait_for(lambda e: e.get("type") == "exec" and e.get("session") and e.get("filename") == "/usr/bin/dash"
                      and any(("tty-" + tok) in a for a in e.get("argv", [])), what="the pty command in a session")
    assert evs[0]["session_depth"] == 0, evs[0]
    dm.wait_for(lambda e: e.get("type") == "exec" and e.get("session") == evs[0]["session"]
                and e.get("argv") == ["tty"], what="tty, nested, in the same session")
    # death by a signal is 128+N, as a shell reports it
    r = pty_exec(ctx, dm, "/bin/sh", "-c", "kill -TERM $$")
    assert r.returncode == 128 + signal.SIGTERM, r
    # SIGTERM to the launcher reaches the command
    p = subprocess.Popen([ctx.execgate, "exec", "--pty", "-p", dm.pin_path, "--", "/bin/sh", "-c",
                          "trap 'echo trapped-term; exit 9' TERM; echo ready; while :; do sleep 0.05; done"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline().strip() == b"ready"
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=15)
    assert p.returncode == 9 and b"trapped-term" in out, (p.returncode, out, err)
    # a reader that goes away hangs the terminal up: the command ends (SIGHUP), nothing hangs
    r = subprocess.run(["/bin/bash", "-c", "%s exec --pty -p %s -- yes | head -1; echo status=${PIPESTATUS[0]}"
                        % (ctx.execgate, dm.pin_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=20)
    assert r.stdout == b"y\r\nstatus=%d\n" % (128 + signal.SIGHUP), r
    # the policies apply on the pty as anywhere: the denial is on the terminal
    r = pty_exec(ctx, dm, "/bin/sh", "-c", "%s/denyme; echo rc=$?" % d, policy=pol)
    assert b"execgate: denied: not here (rule no-denyme)" in r.stdout and b"rc=126" in r.stdout, r
    # no daemon: one line on our stderr, exit 2, nothing run
    r = subprocess.run([ctx.execgate, "exec", "--pty", "-p", "/sys/fs/bpf/egtest-pty-none-%d" % os.getpid(),
                        "--", "/bin/echo", "ran"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert r.returncode == 2 and r.stdout == b"" and len(r.stderr.splitlines()) == 1, r


def test_exec_pty_terminal(ctx):
    """An interactive bash under --pty in a tmux pane: its own pty, Ctrl-C, Ctrl-Z and fg, less, a resize."""
    if not shutil.which("tmux"):
        ctx.skip("tmux is not installed (tools/install-deps.sh)")
    dm = ctx.daemon()
    d = ctx.tmpdir()
    sock = os.path.join(d, "tmux.sock")
    page = os.path.join(d, "page.txt")
    with open(page, "w") as f:
        f.write("".join("line %d of the page\n" % i for i in range(200)))
    script = os.path.join(d, "pane.sh")
    with open(script, "w") as f:
        f.write("stty -g > {d}/before\n"
                "{eg} exec --pty -p {pin} -- /bin/bash --norc --noprofile -i\n"
                "echo launcher-status=$?\n"
                "stty -g > {d}/after\n"
                "exec sleep 600\n".format(d=d, eg=ctx.execgate, pin=dm.pin_path))
    env = dict(os.environ, TERM="xterm", PS1="PROMPT$ ", HOME=d)
    r = subprocess.run(["tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "30",
                        "-s", "t", "/bin/sh %s" % script], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    assert r.returncode == 0, r
    ctx.on_cleanup(lambda: subprocess.run(["tmux", "-S", sock, "kill-server"], stderr=subprocess.DEVNULL))

    def keys(*k):
        subprocess.run(["tmux", "-S", sock, "send-keys", "-t", "t"] + list(k), check=True)
    outer = pane_tty(sock, "t")
    keys("PS1='PROMPT$ '", "Enter")
    wait_screen(sock, "t", r"^PROMPT\$ ?$")
    # a terminal of its own, not the pane's
    keys("tty", "Enter")
    text = wait_screen(sock, "t", r"^/dev/pts/\d+$")
    inner = re.findall(r"^(/dev/pts/\d+)$", text, re.M)[0]
    assert outer.startswith("/dev/pts/") and inner != outer, (inner, outer)
    keys("sleep 300; echo after-sleep-$?", "Enter")
    wait_foreground(inner, "sleep", "300")
    keys("C-c")
    wait_screen(sock, "t", r"^\^C")
    keys("echo alive-$((6*7))", "Enter")
    wait_screen(sock, "t", r"^alive-42$")
    keys("sleep 301", "Enter")
    wait_foreground(inner, "sleep", "301")
    keys("C-z")
    wait_screen(sock, "t", r"Stopped\s+sleep 301")
    keys("jobs", "Enter")
    wait_screen(sock, "t", r"^\[1\]\+\s+Stopped\s+sleep 301")
    keys("fg", "Enter")
    wait_screen(sock, "t", r"^sleep 301$")
    keys("C-c")
    keys("echo back-$((1+1))", "Enter")
    wait_screen(sock, "t", r"^back-2$")
    keys("less %s" % page, "Enter")
    wait_screen(sock, "t", r"^line 28 of the page")
    keys("q")
    keys("clear; echo quit-less", "Enter")
    wait_screen(sock, "t", r"^quit-less$")
    # a resize of the outer terminal reaches the inner one
    subprocess.run(["tmux", "-S", sock, "resize-window", "-t", "t", "-x", "90", "-y", "25"], check=True)
    keys("stty size", "Enter")
    wait_screen(sock, "t", r"^25 90$")
    # the shell's exit status comes out of the launcher, and the outer terminal is as it was
    keys("exit 7", "Enter")
    wait_screen(sock, "t", r"^launcher-status=7$")

    def stty_line(name):
        try:
            text = open(os.path.join(d, name)).read()
        except FileNotFoundError:
            return None
        return text if text.endswith("\n") else None     # stty -g writes its one line at once
    after = eg.wait_until(lambda: stty_line("after"), what="the pane's terminal modes after the launcher (%s/after)" % d)
    before = stty_line("before")
    assert before == after and before.strip(), (before, after)
    dm.wait_for(lambda e: e.get("type") == "exec" and e.get("session") and e.get("argv") == ["sleep", "301"],
                what="sleep in the session")
    dm.wait_for(lambda e: e.get("type") == "exec" and e.get("session") and e.get("argv") == ["stty", "size"],
                what="stty in the session")


def test_shim_root_escape(ctx):
    """--root never reaches out of the tree: usr or etc a link to an absolute path is refused."""
    outside = ctx.tmpdir()
    _, obin = make_tree(ctx, merged=False)
    before = state(obin)
    # ROOT/bin -> usr/bin, and ROOT/usr a link to a directory elsewhere
    root = ctx.tmpdir()
    os.symlink("usr/bin", os.path.join(root, "bin"))
    os.symlink(os.path.dirname(obin), os.path.join(root, "usr"))
    r = shim(ctx, "install", "--root", root, check=False)
    assert r.returncode == 1 and b"out of --root" in r.stderr, r
    assert state(obin) == before and not os.path.exists(os.path.join(root, "etc")), state(obin)
    # ROOT/etc a link to a directory elsewhere: no configuration written there, no shell moved
    root, bindir = make_tree(ctx)
    tree = state(bindir)
    os.symlink(outside, os.path.join(root, "etc"))
    r = shim(ctx, "install", "--root", root, check=False)
    assert r.returncode == 1 and b"out of --root" in r.stderr, r
    assert os.listdir(outside) == [] and state(bindir) == tree, os.listdir(outside)


def test_exec_pty_stop_and_continue(ctx):
    """The launcher stopped (SIGTSTP) gives the caller's shell its terminal back as it was; fg resumes.

    The outer shell is dash, which does not save and restore terminal modes
    around a stopped job (bash does): what it finds is the launcher's doing.
    """
    if not shutil.which("tmux"):
        ctx.skip("tmux is not installed (tools/install-deps.sh)")
    dm = ctx.daemon()
    d = ctx.tmpdir()
    sock = os.path.join(d, "tmux.sock")
    env = dict(os.environ, TERM="xterm", PS1="OUTER$ ", HOME=d)
    r = subprocess.run(["tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "30",
                        "-s", "t", "/usr/bin/dash -i"], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    assert r.returncode == 0, r
    ctx.on_cleanup(lambda: subprocess.run(["tmux", "-S", sock, "kill-server"], stderr=subprocess.DEVNULL))

    def keys(*k):
        subprocess.run(["tmux", "-S", sock, "send-keys", "-t", "t"] + list(k), check=True)
    keys("PS1='OUTER$ '; stty -g > %s/before" % d, "Enter")
    # keys typed before dash's first prompt ("# ") is out echo first: the new prompt follows it
    wait_screen(sock, "t", r"^(# )?OUTER\$ ?$")
    keys("PS1='INNER$ ' %s exec --pty -p %s -- /bin/bash --norc --noprofile -i" % (ctx.execgate, dm.pin_path),
         "Enter")
    # the inner bash's prompt, through the relay: the outer terminal is raw, keys go in
    wait_screen(sock, "t", r"^INNER\$ ?$")
    keys("clear; echo relay=$PPID", "Enter")
    text = wait_screen(sock, "t", r"^relay=\d+$")
    relay = int(re.findall(r"^relay=(\d+)$", text, re.M)[0])
    wait_screen(sock, "t", r"^INNER\$ ?$")
    os.kill(relay, signal.SIGTSTP)
    wait_screen(sock, "t", r"Stopped")
    keys("clear; stty -g > %s/during; echo outer-back" % d, "Enter")
    wait_screen(sock, "t", r"^outer-back$")
    before, during = (open(os.path.join(d, n)).read() for n in ("before", "during"))
    assert before == during, (before, during)
    keys("fg", "Enter")
    # dash gave the relay the terminal and it runs again, its terminal raw: keys go to the inner bash
    tty = pane_tty(sock, "t")
    eg.wait_until(lambda: eg.in_foreground(relay) and is_raw(tty),
                  what="the relay (pid %d) in the foreground of %s, in raw mode, after fg" % (relay, tty))
    keys("echo inner-$((2+3))", "Enter")
    wait_screen(sock, "t", r"^inner-5$")
    keys("exit 4", "Enter")
    wait_screen(sock, "t", r"^OUTER\$ ?$")
    keys("echo st=$?", "Enter")
    wait_screen(sock, "t", r"^st=4$")


def test_shim_interrupted_between_shells(ctx):
    """Stopped between the two shells, or halfway through an uninstall: a re-run of either finishes."""
    for merged in (True, False):
        root, bindir = make_tree(ctx, merged)
        before = state(bindir)
        sh, bash = os.path.join(bindir, "sh"), os.path.join(bindir, "bash")
        shim(ctx, "install", "--root", root)
        installed = state(bindir)
        # install stopped after bash: sh still the real one (a link to dash)
        os.rename(sh + ".real", sh)
        shim(ctx, "install", "--root", root)
        assert state(bindir) == installed, state(bindir)
        os.rename(sh + ".real", sh)
        shim(ctx, "uninstall", "--root", root)
        assert state(bindir) == before, state(bindir)
        # uninstall stopped after bash: sh still the shim
        shim(ctx, "install", "--root", root)
        os.rename(bash + ".real", bash)
        shim(ctx, "uninstall", "--root", root)
        assert state(bindir) == before, state(bindir)
        assert not os.path.exists(os.path.join(root, "etc/execgate/shim.conf"))
        # the same state, and install instead: both shells shimmed again
        shim(ctx, "install", "--root", root)
        os.rename(bash + ".real", bash)
        shim(ctx, "install", "--root", root)
        assert state(bindir) == installed, state(bindir)
        shim(ctx, "uninstall", "--root", root)
        # only the temporary shim written, nothing renamed yet
        shutil.copy(SHIM, sh + ".execgate-new")
        shim(ctx, "install", "--root", root)
        assert state(bindir) == installed, state(bindir)
        shutil.copy(SHIM, bash + ".execgate-new")
        shim(ctx, "uninstall", "--root", root)
        assert state(bindir) == before, state(bindir)
