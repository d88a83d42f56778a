# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Shared helpers for the integration tests: run the daemon, read its events,
make cgroups, and decode strings back to the exact bytes."""
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, os.environ.get("OUTPUT", ".output"))
EXECGATE = os.path.abspath(os.environ.get("EG_EXECGATE") or os.path.join(OUT, "execgate"))
HELPERS = os.path.join(OUT, "tests", "helpers")
# the file the marker helper writes when it runs (tests/helpers/marker.c; one a lane of tests/run.sh)
MARKER = os.environ.get("EG_MARKER") or "/tmp/egmarker"
CGROUP2 = "/sys/fs/cgroup/unified" if os.path.isdir("/sys/fs/cgroup/unified") and \
    os.path.exists("/sys/fs/cgroup/unified/cgroup.procs") else "/sys/fs/cgroup"


class Skip(Exception):
    pass


class Timeout(BaseException):
    """Raised in the main thread by run.py's alarm: a test (or one of its cleanups) that does not end.
    A BaseException, so a test's own `except Exception` does not swallow it."""
    pass


# seconds one cleanup step may take before run.py's alarm cuts it short (0: no alarm, outside run.py)
CLEANUP_S = 0


_validator = None


def schema_errors(lines, where):
    """Records that docs/events.schema.json does not describe (make test checks every one the suites write)."""
    global _validator
    if _validator is None:
        import jsonschema
        with open(os.path.join(ROOT, "docs", "events.schema.json")) as f:
            _validator = jsonschema.Draft202012Validator(json.load(f))
    errs = []
    for line in lines:
        if not line.startswith(b"{"):
            continue  # the text table, or a line cut by a full disk
        try:
            r = json.loads(line)
        except ValueError:
            continue
        e = next(_validator.iter_errors(r), None)
        if e is not None:
            errs.append("%s: a %s record: %s at %s: %s" % (where, r.get("type"), e.message[:300],
                                                           "/".join(map(str, e.absolute_path)), line[:300]))
    return errs


def raw(s):
    """The exact bytes behind a decoded JSON string (docs/events.md)."""
    return s.encode("utf-8", "surrogateescape")


def token():
    return "egt%d_%d" % (os.getpid(), time.monotonic_ns() % 10**9)


class Daemon:
    def __init__(self, ctx, args=(), output=None, pin_path=None, env=None, ready=True, exe=None):
        self.ctx = ctx
        self.pin_path = pin_path or "/sys/fs/bpf/egtest-%d-%d" % (os.getpid(), ctx.seq())
        self.output = output or os.path.join(ctx.tmpdir(), "events.jsonl")
        self.stderr_path = self.output + ".stderr"
        self.stderr = open(self.stderr_path, "wb")
        cmd = [exe or EXECGATE, "daemon", "--output", self.output, "--pin-path", self.pin_path] + list(args)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.stderr,
                                     env=env, start_new_session=True)
        ctx.on_cleanup(self._forget)
        ctx.on_cleanup(self.kill)
        if ready:
            self.wait_ready()

    def wait_ready(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("daemon exited with %s: %s" % (self.proc.returncode, self.err()))
            for e in self.events():
                if e.get("type") == "daemon" and e.get("event") == "start":
                    return e
            time.sleep(0.05)
        raise AssertionError("daemon not ready after %ss: %s" % (timeout, self.err()))

    def err(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def _read(self):
        """Brings the cache up to the output's last complete line: only what
        was appended since the last call is read and parsed (a host-wide
        daemon's file grows with every exec on the host, and tests ask for
        its events in loops); a new file at the path (a rotation, a
        reopen) or a shorter one is read again from its start."""
        try:
            f = open(self.output, "rb")
        except FileNotFoundError:
            self._cache = None
            return
        with f:
            st = os.fstat(f.fileno())
            # the file's first bytes (its first record has the time in ns) tell a new file from
            # the one read so far, even when the new one got the old one's inode number
            head = f.read(256)
            c = getattr(self, "_cache", None)
            if c is None or c["id"] != (st.st_dev, st.st_ino) or st.st_size < c["off"] or \
                    head[:len(c["head"])] != c["head"]:
                c = self._cache = {"id": (st.st_dev, st.st_ino), "off": 0, "lines": [], "events": [],
                                   "head": b""}
            if len(c["head"]) < 256:
                c["head"] = head
            if st.st_size == c["off"]:
                return
            f.seek(c["off"])
            data = f.read()
        end = data.rfind(b"\n")
        if end < 0:
            return
        new = data[:end].split(b"\n")
        c["lines"].extend(new)
        c["off"] += end + 1
        if c["events"] is not None:
            try:
                c["events"].extend([json.loads(l) for l in new])
            except ValueError:
                c["events"] = None  # not JSON lines (a text output): events() parses them as it did

    def lines(self):
        self._read()
        c = getattr(self, "_cache", None)
        return list(c["lines"]) if c else []  # only complete lines

    def events(self):
        self._read()
        c = getattr(self, "_cache", None)
        if c and c["events"] is None:
            return [json.loads(l) for l in c["lines"]]
        return list(c["events"]) if c else []

    def wait_for(self, pred, timeout=10, what="event"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            evs = [e for e in self.events() if pred(e)]
            if evs:
                return evs
            time.sleep(0.05)
        raise AssertionError("no %s within %ss" % (what, timeout))

    def reexec(self, timeout=20):
        """SIGUSR2 (a handover), and waits until the daemon has re-executed itself with --takeover
        (or has exited: the caller looks at that)."""
        pid = self.proc.pid
        self.proc.send_signal(signal.SIGUSR2)

        def taken_over():
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    return b"--takeover" in f.read().split(b"\0")
            except OSError:
                return False
        wait_until(lambda: self.proc.poll() is not None or taken_over(), timeout, what="the re-exec")

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("daemon did not stop within %ss" % timeout)
        self.stderr.close()
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if not self.stderr.closed:
            self.stderr.close()
        self.ctx.schema_failures += schema_errors(self.lines(), self.output)
        if os.path.isdir(self.pin_path):
            shutil.rmtree(self.pin_path, ignore_errors=True)

    def pidfile_and_socket(self):
        """Its pid file and control socket in /run/execgate (the name from the pin path)."""
        st = [e for e in self.events() if e.get("type") == "daemon" and e.get("event") == "start"][0]
        return st["socket"][:-len(".sock")] + ".pid", st["socket"]

    def _forget(self):
        """After the test, once the daemon is killed: what a killed daemon leaves in
        /run/execgate, its pid file and socket, and its output's record."""
        if self.proc.poll() is None:
            return
        try:
            pid, sock = self.pidfile_and_socket()
        except (IndexError, KeyError, ValueError):
            return
        for path in (pid, sock, pid[:-len(".pid")] + ".output"):
            try:
                os.unlink(path)
            except OSError:
                pass


class Ctx:
    execgate = EXECGATE
    root = ROOT
    out = OUT

    def __init__(self):
        self._cleanups = []
        self._seq = 0
        self.schema_failures = []

    def seq(self):
        self._seq += 1
        return self._seq

    def skip(self, reason):
        raise Skip(reason)

    def helper(self, name):
        p = os.path.join(HELPERS, name)
        if not os.access(p, os.X_OK):
            raise AssertionError("test helper %s not built (make build-tests)" % p)
        return p

    def on_cleanup(self, fn):
        self._cleanups.append(fn)

    def cleanup(self):
        """Runs the cleanups, last first. One that hangs is cut short by the alarm
        (CLEANUP_S) and the others still run; the hung ones are returned, named."""
        hung = []
        while self._cleanups:
            fn = self._cleanups.pop()
            if CLEANUP_S:
                signal.alarm(CLEANUP_S)
            try:
                fn()
            except Exception:
                pass
            except Timeout:
                hung.append(getattr(fn, "__qualname__", repr(fn)))
            finally:
                if CLEANUP_S:
                    signal.alarm(0)
        return hung

    def tmpdir(self):
        d = tempfile.mkdtemp(prefix="egtest.")
        self.on_cleanup(lambda: shutil.rmtree(d, ignore_errors=True))
        return d

    def daemon(self, *args, **kw):
        return Daemon(self, args=args, **kw)

    def cgroup(self):
        """A fresh cgroup v2 directory; (path relative to the root, absolute path, id)."""
        name = "egtest-%d-%d" % (os.getpid(), self.seq())
        path = os.path.join(CGROUP2, name)
        os.mkdir(path)

        def rm():
            # a task still exiting (or just forked) keeps it busy: move what is there, try again
            deadline = time.monotonic() + 3
            while True:
                try:
                    with open(os.path.join(path, "cgroup.procs")) as f:
                        pids = f.read().split()
                    for p in pids:
                        try:
                            with open(os.path.join(CGROUP2, "cgroup.procs"), "w") as f:
                                f.write(p)
                        except OSError:
                            pass
                    os.rmdir(path)
                    return
                except FileNotFoundError:
                    return
                except OSError:
                    if time.monotonic() > deadline:
                        return
                    time.sleep(0.05)
        self.on_cleanup(rm)
        return "/" + name, path, os.stat(path).st_ino

    def run(self, argv, check=True, **kw):
        return subprocess.run(argv, check=check, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, **kw)


PROCS_FIELDS = ("tgid", "depth", "ppid", "uid", "session", "exec_ktime", "parent_tgid",
                "parent_ktime", "flags", "cgroup_id", "comm")


def procs_view(pin_path):
    """PIN/procs read once: {tgid: {field: value}}, the header checked."""
    with open(os.path.join(pin_path, "procs"), "rb") as f:
        lines = f.read().decode("utf-8", "replace").splitlines()
    assert lines and tuple(lines[0].split()) == PROCS_FIELDS, lines[:1]
    view = {}
    for l in lines[1:]:
        vals = l.split(" ", len(PROCS_FIELDS) - 1)
        row = {k: (v if k == "comm" else int(v)) for k, v in zip(PROCS_FIELDS, vals)}
        assert row["tgid"] not in view, "one line per process: %r" % l
        view[row["tgid"]] = row
    return view


def cpu_seconds(pid):
    """The CPU time (user + system) process pid has used, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")


def wait_until(cond, timeout=10, what="the condition"):
    """Calls cond() until it returns something true, and returns that; AssertionError naming
    what never came within timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise AssertionError("%s: not within %ss" % (what, timeout))
        time.sleep(0.05)


def proc_stat(pid):
    """/proc/PID/stat's state, ppid, pgrp, tty_nr and tpgid; None once the process is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            v = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return {"state": v[0], "ppid": int(v[1]), "pgrp": int(v[2]), "tty_nr": int(v[4]), "tpgid": int(v[5])}


def in_foreground(pid):
    """Whether pid runs (not stopped, not a zombie) in the foreground process group of its terminal:
    what the terminal's keys (C-c, C-z, typed lines) reach."""
    return _foreground(proc_stat(pid))


def _foreground(st):
    return bool(st) and st["state"] not in "TtZX" and st["tty_nr"] != 0 and st["tpgid"] == st["pgrp"]


def foreground_pid(argv, tty=None):
    """The pid of a process whose command line is argv, in the foreground of its terminal (tty:
    that terminal, a /dev/pts/N path); None while there is none."""
    want = ("\0".join(argv) + "\0").encode()
    tty_nr = None
    if tty:
        rdev = os.stat(tty).st_rdev
        minor, major = os.minor(rdev), os.major(rdev)
        tty_nr = (minor & 0xff) | (major << 8) | ((minor & ~0xff) << 12)   # the kernel's new_encode_dev
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if f.read() != want:
                    continue
        except OSError:
            continue
        st = proc_stat(int(d))
        if _foreground(st) and (tty_nr is None or st["tty_nr"] == tty_nr):
            return int(d)
    return None


class ThreadFork:
    """tests/helpers/thread_fork (or exe, a copy of it) running prog from a thread of its choice:
    its worker thread starts first, before anything the test does next. run("main"|"thread",
    word) has that thread fork and exec prog word and returns the exit status (128+N: signal N)."""

    def __init__(self, ctx, prog, exe=None, **kw):
        self.proc = subprocess.Popen([exe or ctx.helper("thread_fork"), prog], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, **kw)
        ctx.on_cleanup(self.proc.kill)
        line = self._line(10)
        assert line.startswith("ready "), line
        self.pid, self.worker = map(int, line.split()[1:])
        assert self.worker != self.pid and os.path.exists("/proc/%d/task/%d" % (self.pid, self.worker))

    def _line(self, timeout):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert r, "thread_fork said nothing within %ss" % timeout
        return self.proc.stdout.readline().decode().strip()

    def run(self, who, word, timeout=20):
        self.proc.stdin.write(("%s %s\n" % (who, word)).encode())
        self.proc.stdin.flush()
        line = self._line(timeout)
        got_who, got_word, rc = line.split()
        assert (got_who, got_word) == (who, word), line
        return int(rc)
