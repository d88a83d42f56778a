# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The session boundary (issue 18): nothing in a session reaches a process
outside it, and no process of the same user reaches into execgate.

Every execgate verb is not dumpable, so a same-user process cannot write a
waiting `execgate run`'s or `approvals --watch`'s memory; every session's
processes live in a Landlock domain, so they cannot ptrace, read or write
the memory of, signal, or connect to an abstract socket of a process
outside it, whoever owns it; a policy's filesystem: and network: sections
are Landlock layers of their own (files and execute in and out of the
workspace, two TCP ports), nested sessions nest domains, the refusals are
counted in the session's records (audit), and a kernel without what a
policy asks refuses the session unless the policy says on_unsupported:
allow. The attacker is always a real unprivileged uid."""
import ctypes
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

import eg
from eg import token

U = 60101          # the user the agent and its harness run as
GRP = 60199        # the daemon's --ctl-group
ME = dict(user=U, group=U, extra_groups=[])

# What a process tries against pid (and the abstract socket name): one JSON line of errno names.
PROBE = r"""
import ctypes, errno, json, os, socket, sys
pid, abstract = int(sys.argv[1]), sys.argv[2]
out = {}
def name(e): return errno.errorcode.get(e, str(e))
try:
    with open("/proc/%d/mem" % pid, "r+b"):
        out["mem"] = "ok"
except OSError as e:
    out["mem"] = name(e.errno)
try:
    os.kill(pid, 0)
    out["signal"] = "ok"
except OSError as e:
    out["signal"] = name(e.errno)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\0" + abstract)
    out["abstract"] = "ok"
except OSError as e:
    out["abstract"] = name(e.errno)
libc = ctypes.CDLL(None, use_errno=True)
class iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(8)
local, remote = iov(ctypes.addressof(buf), 8), iov(0x400000, 8)
r = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
out["vm_read"] = "ok" if r >= 0 or ctypes.get_errno() == errno.EFAULT else name(ctypes.get_errno())
print(json.dumps(out), flush=True)
"""

# The victim: an ordinary process of U, outside every session, with an abstract socket;
# it lives until its stdin closes (or 60 s with "stay").
VICTIM = r"""
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0" + sys.argv[1])
s.listen(8)
print("ready", flush=True)
time.sleep(60) if sys.argv[2:] == ["stay"] else sys.stdin.read()
"""


def write(ctx, text, name="policy.yaml"):
    d = ctx.tmpdir()
    os.chmod(d, 0o755)
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    return path


def workspace(ctx):
    ws = ctx.tmpdir()
    os.chown(ws, U, U)
    os.chmod(ws, 0o755)
    return ws


def wait(pred, timeout=10, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("no %s within %ss" % (what, timeout))


def exec_(ctx, d, cmd, *opts, user=ME, cwd=None, timeout=60, env=None):
    argv = [ctx.execgate, "exec", "-p", d.pin_path] + list(opts) + ["--"] + list(cmd)
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                          cwd=cwd or "/", env=env, **(user or {}))


def probe(ctx, d, pid, abstract, session=True, opts=()):
    """What PROBE sees of pid, from inside a session (or outside one), as U."""
    cmd = ["/usr/bin/python3", "-c", PROBE, str(pid), abstract]
    if session:
        r = exec_(ctx, d, cmd, *opts)
    else:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, **ME)
    assert r.returncode == 0, (r.returncode, r.stderr.decode()[-800:])
    return json.loads(r.stdout.decode().strip().splitlines()[-1])


def victim(ctx):
    name = "egtest-victim-" + token()
    p = subprocess.Popen(["/usr/bin/python3", "-c", VICTIM, name], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, start_new_session=True, **ME)
    ctx.on_cleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
    assert p.stdout.readline() == b"ready\n"
    return p, name


class Audit:
    """Turns the kernel's audit on for a test (Landlock logs its refusals only then), and back."""

    def __init__(self, ctx):
        st = self._status()
        if st is None:
            ctx.skip("cannot read audit's status here (AUDIT_GET)")
        self.was, backlog = bool(st[1]), st[5]
        # with audit on, every BPF program a daemon loads or unloads is logged too (three records):
        # the other suites' daemons, beside this one, overflow the default backlog (64) and the
        # kernel drops records, a Landlock refusal among them (seen once in a loaded make test)
        if backlog < 65536:
            self._set_backlog(65536)
            ctx.on_cleanup(lambda: self._set_backlog(backlog))
        if not self.was:
            self._set(1)
            ctx.on_cleanup(lambda: self._set(0))

    @staticmethod
    def _talk(typ, payload=b""):
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)
        s.settimeout(2)
        try:
            s.send(struct.pack("=IHHII", 16 + len(payload), typ, 1 | 4, 1, 0) + payload)
            for _ in range(4):
                d = s.recv(8192)
                ln, t = struct.unpack("=IH", d[:6])
                if t == typ:
                    return d[16:]
                if t == 2 and struct.unpack("=i", d[16:20])[0]:
                    return None
        except OSError:
            return None
        finally:
            s.close()
        return None

    def _status(self):
        d = self._talk(1000)   # AUDIT_GET: mask, enabled, failure, pid, rate_limit, backlog_limit, ...
        return None if d is None or len(d) < 32 else struct.unpack("=IIIIIIII", d[:32])

    def _set(self, on):
        self._talk(1001, struct.pack("=IIIIIIII", 1, on, 0, 0, 0, 0, 0, 0))   # AUDIT_SET enabled

    def _set_backlog(self, n):
        self._talk(1001, struct.pack("=IIIIIIII", 0x10, 0, 0, 0, 0, n, 0, 0))   # AUDIT_SET backlog_limit


def session_records(d, sid):
    return [e for e in d.events() if e.get("session") == sid and e.get("type") in ("session", "boundary")]


def started(d, pred=lambda e: True):
    """The sessions' start records that pred takes (waits for one: the output is written in batches)."""
    return wait(lambda: [e for e in d.events() if e.get("type") == "session" and e.get("event") == "start" and
                         pred(e)], what="a session's start record")


# ---- nothing of the user's reaches into execgate -------------------------------------------

def test_no_same_user_reach_into_execgate(ctx):
    """A waiting `execgate run` and `approvals --watch` of uid U: another process of U writes
    neither's memory, from outside a session (they are not dumpable) nor from inside one (the
    Landlock domain); so the injected code that ran a denied program with `session: null`, or
    approved its own request, has nowhere to go."""
    d = ctx.daemon("--ctl-group", str(GRP), "--state-dir", ctx.tmpdir())
    run = subprocess.Popen([ctx.execgate, "run", "-p", d.pin_path, "--timeout", "60s", "--", "sh", "-c",
                            "echo waiting; sleep 60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           cwd="/", start_new_session=True, **ME)
    ctx.on_cleanup(lambda: (run.poll() is None and run.kill(), run.wait()))
    assert run.stdout.readline() == b"waiting\n", run.stderr.read(500) if run.poll() is not None else ""
    watch = subprocess.Popen([ctx.execgate, "approvals", "--watch", "-p", d.pin_path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True, user=U, group=U, extra_groups=[GRP])
    ctx.on_cleanup(lambda: (watch.poll() is None and watch.kill(), watch.wait()))
    assert watch.stdout.readline().startswith(b"ID "), watch.stderr.read(500) if watch.poll() is not None else ""
    for pid in (run.pid, watch.pid):
        for inside in (False, True):
            got = probe(ctx, d, pid, "none-" + token(), session=inside)
            assert got["mem"] == "EACCES" and got["vm_read"] == "EPERM", (pid, inside, got)
    assert run.poll() is None and watch.poll() is None


def test_daemon_in_a_session_of_its_own(ctx):
    """Started from a script (no terminal), the daemon is the leader of a session and a process
    group of its own: a signal to its starter's group does not reach it."""
    out = os.path.join(ctx.tmpdir(), "events.jsonl")
    p = subprocess.Popen([ctx.execgate, "daemon", "--output", out, "--pin-path",
                          "/sys/fs/bpf/egtest-%d-sid" % os.getpid()], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ctx.on_cleanup(lambda: (p.poll() is None and p.kill(), p.wait(),
                            shutil.rmtree("/sys/fs/bpf/egtest-%d-sid" % os.getpid(), ignore_errors=True)))
    wait(lambda: os.path.exists(out) and b'"event":"start"' in open(out, "rb").read(), 30, "the start record")
    assert os.getsid(p.pid) == p.pid and os.getpgid(p.pid) == p.pid, \
        (os.getsid(p.pid), os.getpgid(p.pid), p.pid, os.getpgrp())
    assert os.getpgid(p.pid) != os.getpgrp()


# ---- nothing in a session reaches a process outside it -------------------------------------

def test_session_cannot_reach_an_outside_process(ctx):
    """An ordinary process of the same uid outside the session: from inside, /proc/PID/mem,
    process_vm_readv, a signal and its abstract unix socket are refused (the same probe from
    outside any session reaches all four: it is the domain, not the uid); a nested session
    cannot reach its outer session's processes either. The start record says what holds."""
    d = ctx.daemon()
    v, name = victim(ctx)
    outside = probe(ctx, d, v.pid, name, session=False)
    assert outside == {"mem": "ok", "signal": "ok", "abstract": "ok", "vm_read": "ok"}, outside
    inside = probe(ctx, d, v.pid, name)
    assert inside == {"mem": "EACCES", "signal": "EPERM", "abstract": "EPERM", "vm_read": "EPERM"}, inside
    st = started(d)[-1]["boundary"]
    assert st["in_force"] == ["ptrace", "signal", "abstract_unix_socket"] and st["missing"] is None, st
    assert st["landlock_abi"] >= 6 and st["layers"][0]["scopes"] is True, st

    # nested: a process of the outer session is outside the domain of a session started in it
    script = ('coproc V { exec /usr/bin/python3 -c "$VICTIM" "$TOK" stay; }; read -r line <&"${V[0]}"; '
              '"$EG" exec -p "$PIN" -- /usr/bin/python3 -c "$PROBE" "$V_PID" "$TOK"; kill $V_PID')
    tok = token()
    env = dict(os.environ, VICTIM=VICTIM, PROBE=PROBE, TOK=tok, EG=ctx.execgate, PIN=d.pin_path)
    r = exec_(ctx, d, ["/bin/bash", "-c", script], env=env)
    assert r.returncode == 0, r.stderr.decode()[-500:]
    got = json.loads(r.stdout.decode().splitlines()[-1])
    assert got == {"mem": "EACCES", "signal": "EPERM", "abstract": "EPERM", "vm_read": "EPERM"}, got
    nested = started(d, lambda e: e.get("parent"))[-1]
    assert nested["parent"] in [e["session"] for e in started(d)], nested


LIMITS = r"""
import errno, json, os, resource, sys
pid = int(sys.argv[1])
out = {}
def name(e): return errno.errorcode.get(e, str(e))
for k, f in (("prlimit", lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (64, 64))),
             ("prlimit_read", lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE)),
             ("nice", lambda: os.setpriority(os.PRIO_PROCESS, pid, 19)),
             ("sched", lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))),
             ("own_nice", lambda: os.setpriority(os.PRIO_PROCESS, 0, 1)),
             ("own_limit", lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))):
    try:
        f()
        out[k] = "ok"
    except OSError as e:
        out[k] = name(e.errno)
print(json.dumps(out))
"""


def test_session_cannot_set_an_outside_process_limits_or_priority(ctx):
    """Landlock scopes ptrace and signals, not prlimit, setpriority or the
    scheduler, which the kernel allows on any process of the same user: from
    inside a session `prlimit --pid $PPID --cpu=1` killed the harness. Each
    is refused for another process now (reading its limits still works);
    the session's own stay its own. From outside any session, all work."""
    d = ctx.daemon()
    cmd = ["/usr/bin/python3", "-c", LIMITS]
    v, _ = victim(ctx)
    r = subprocess.run(cmd + [str(v.pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, **ME)
    outside = json.loads(r.stdout.decode().strip().splitlines()[-1])
    assert set(outside.values()) == {"ok"}, outside
    v, _ = victim(ctx)
    r = exec_(ctx, d, cmd + [str(v.pid)])
    inside = json.loads(r.stdout.decode().strip().splitlines()[-1])
    assert inside == {"prlimit": "EPERM", "prlimit_read": "ok", "nice": "EPERM", "sched": "EPERM",
                      "own_nice": "ok", "own_limit": "ok"}, inside
    with open("/proc/%d/limits" % v.pid) as f:
        assert "Max open files            64 " not in f.read()


IPC_AND_KEYS = r"""
import ctypes, errno, json, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.syscall.restype = ctypes.c_long
shmid = int(sys.argv[1])
out = {}
def name(e): return errno.errorcode.get(e, str(e))
def tried(k, f, bad):
    r = f()
    out[k] = name(ctypes.get_errno()) if r == bad else "ok"
tried("shmat", lambda: libc.shmat(shmid, None, 0), ctypes.c_void_p(-1).value)
tried("shmget", lambda: libc.shmget(0, 4096, 0o1600), -1)
tried("semget", lambda: libc.semget(0, 1, 0o1600), -1)
tried("msgget", lambda: libc.msgget(0, 0o1600), -1)
# the session keyring's id (KEYCTL_GET_KEYRING_ID of KEY_SPEC_SESSION_KEYRING), and joining the parent's
out["session_keyring"] = libc.syscall(250, 0, -3, 0)
tried("session_to_parent", lambda: libc.syscall(250, 18), -1)
# the user's keyring linked in the session's (KEYCTL_READ of @s holds @u's id)
ids = (ctypes.c_int32 * 256)()
n = libc.syscall(250, 11, -3, ids, ctypes.sizeof(ids))
out["user_linked"] = libc.syscall(250, 0, -4, 1) in list(ids[:max(n, 0) // 4])
print(json.dumps(out))
"""


def test_session_cannot_reach_outside_sysv_ipc_or_keyrings(ctx):
    """System V IPC is the host's, open to the owner's every process, and Landlock has no hook
    for it: from inside a session a process attached an outside process's shared memory
    segment. It is refused whole in a session (ENOSYS, as a kernel without it); outside, the
    same probe attaches it. A session has a session keyring of its own (the caller's held the
    user's keys) and cannot replace its parent's."""
    d = ctx.daemon()
    libc = ctypes.CDLL(None, use_errno=True)
    shmid = libc.shmget(0, 4096, 0o1600)   # IPC_PRIVATE, IPC_CREAT | 0600
    assert shmid >= 0, ctypes.get_errno()
    ctx.on_cleanup(lambda: libc.shmctl(shmid, 0, None))   # IPC_RMID
    # the segment is U's, as an outside process of U's would have made it
    class ShmidDs(ctypes.Structure):
        _fields_ = [("key", ctypes.c_int), ("uid", ctypes.c_uint), ("gid", ctypes.c_uint),
                    ("cuid", ctypes.c_uint), ("cgid", ctypes.c_uint), ("mode", ctypes.c_ushort),
                    ("pad", ctypes.c_char * 256)]
    ds = ShmidDs()
    assert libc.shmctl(shmid, 2, ctypes.byref(ds)) == 0    # IPC_STAT
    ds.uid, ds.gid = U, U
    assert libc.shmctl(shmid, 1, ctypes.byref(ds)) == 0    # IPC_SET
    # under a shell of U's (single-threaded, its parent): KEYCTL_SESSION_TO_PARENT reaches it
    cmd = ["/bin/sh", "-c", '/usr/bin/python3 -c "$0" "$1"; true', IPC_AND_KEYS, str(shmid)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, **ME)
    outside = json.loads(r.stdout.decode().strip().splitlines()[-1])
    keyring = outside.pop("session_keyring")
    outside.pop("user_linked")
    assert outside == {"shmat": "ok", "shmget": "ok", "semget": "ok", "msgget": "ok",
                       "session_to_parent": "ok"}, outside
    r = exec_(ctx, d, cmd)
    inside = json.loads(r.stdout.decode().strip().splitlines()[-1])
    assert inside.pop("session_keyring") not in (keyring, -1), (keyring, inside)
    assert inside == {"shmat": "ENOSYS", "shmget": "ENOSYS", "semget": "ENOSYS", "msgget": "ENOSYS",
                      "session_to_parent": "EPERM", "user_linked": True}, inside


FS_POLICY = """
filesystem:
  read: [/]
  write: [workspace, /dev/null]
  execute: [/usr, /bin, /lib, /lib64, /sbin]
commands: []
"""


def fs_daemon(ctx):
    """A daemon with FS_POLICY, a workspace, and another directory of the user's (in /tmp) with a
    program in it (t2): not on the execute list either."""
    d = ctx.daemon("--policy", write(ctx, FS_POLICY))
    ws, other = workspace(ctx), workspace(ctx)
    shutil.copy("/bin/true", os.path.join(other, "t2"))
    os.chown(os.path.join(other, "t2"), U, U)
    return d, ws, other


def test_filesystem_in_and_out_of_the_workspace(ctx):
    """filesystem: in the daemon's policy: the session writes its workspace and nothing else
    (EACCES), reads everything, and runs no program it wrote, in the workspace or in /tmp; each
    refusal is a `boundary` record of the session and counted in its end record."""
    Audit(ctx)
    d, ws, other = fs_daemon(ctx)
    script = ("echo in > in.txt && echo wrote-in; "
              "echo out > %s/out.txt || echo refused-out; "
              "cat /etc/hostname > /dev/null && echo read-ok; "
              "cp /bin/true ./mytrue && ./mytrue; echo ws-exec=$?; "
              "%s/t2; echo tmp-exec=$?" % (other, other))
    r = exec_(ctx, d, ["/bin/sh", "-c", script], cwd=ws)
    out, err = r.stdout.decode(), r.stderr.decode()
    assert "wrote-in" in out and "refused-out" in out and "read-ok" in out, (out, err)
    assert "ws-exec=126" in out and "tmp-exec=126" in out, (out, err)
    assert "Permission denied" in err, err
    assert open(os.path.join(ws, "in.txt")).read() == "in\n"
    assert not os.path.exists(os.path.join(other, "out.txt"))
    sid = started(d, lambda e: e["boundary"].get("workspace") == ws)[-1]["session"]
    end = wait(lambda: [e for e in session_records(d, sid) if e.get("event") == "end"], what="the end record")[0]
    denied = wait(lambda: (lambda v: v if len(v) >= 3 else None)(
        [e for e in session_records(d, sid) if e["type"] == "boundary"]), what="3 boundary records")
    kinds = {e["blockers"] for e in denied}
    assert {"fs.make_reg", "fs.execute"} <= kinds, denied
    # counted in the session (a refusal audit delivers after the end record is still a record)
    assert 1 <= end["access_denied"] <= len(denied), (end, denied)
    assert [e["count"] for e in denied[:end["access_denied"]]] == list(range(1, end["access_denied"] + 1)), denied
    assert any(other in (e.get("object") or "") for e in denied), denied
    st = json.loads(ctx.run([ctx.execgate, "status", "-j", "-p", d.pin_path]).stdout)
    assert "filesystem" in st["boundary"]["session"]["in_force"], st["boundary"]
    assert st["boundary"]["denials"]["counted"] is True, st["boundary"]
    assert st["counters"]["sessions"]["access_denied"] >= len(denied), st["counters"]["sessions"]
    m = [l for l in ctx.run([ctx.execgate, "metrics", "-p", d.pin_path]).stdout.decode().splitlines()
         if l.startswith("execgate_session_access_denied_total ")]
    assert m and int(m[0].split()[1]) >= len(denied), m


LDSO = "/lib64/ld-linux-x86-64.so.2"


def test_the_loader_runs_nothing_off_the_execute_list(ctx):
    """The kernel checks a layer's execute list at an exec, and a program
    the dynamic loader maps is never exec'd: the supervisor refuses a
    loader asked for a program off any layer's list (the daemon's, the
    session policy's), and lets one on every list run (an entry's
    symlinks followed, as the launcher opened it: /bin is /usr/bin)."""
    d, ws, other = fs_daemon(ctx)
    script = ("cp /bin/true ./mytrue; %s ./mytrue; echo ws=$?; %s %s/t2; echo tmp=$?; "
              "%s /bin/true; echo bin=$?; %s /usr/sbin/nologin >/dev/null; echo sbin=$?"
              % (LDSO, LDSO, other, LDSO, LDSO))
    r = exec_(ctx, d, ["/bin/sh", "-c", script], cwd=ws)
    out, err = r.stdout.decode(), r.stderr.decode()
    assert "ws=126" in out and "tmp=126" in out and "bin=0" in out and "sbin=1" in out, (out, err)
    assert "outside the session's execute list" in err, err
    # a session policy's layer is checked too: nologin is on the daemon's list, not on this one
    # (the loader itself, which the kernel opens for exec, is in /lib)
    narrow = write(ctx, "filesystem: {execute: [/bin, /lib, /lib64]}\ncommands: []\n", "narrow.yaml")
    r = exec_(ctx, d, ["/bin/sh", "-c", "%s /bin/true; echo bin=$?; %s /usr/sbin/nologin; echo sbin=$?"
                       % (LDSO, LDSO)], "--policy", narrow, cwd=ws)
    out, err = r.stdout.decode(), r.stderr.decode()
    assert "bin=0" in out and "sbin=126" in out, (out, err)
    refused = wait(lambda: (lambda v: v if len(v) >= 3 else None)(
        [e for e in d.events() if e.get("rule") == "loader"]), what="3 loader refusals")
    assert len(refused) == 3 and all(e["type"] == "exec_failed" and e["action"] == "blocked" for e in refused), \
        refused


def test_the_loader_check_keeps_the_lists_of_the_start(ctx):
    """An execute entry is resolved when the session opens, as the
    launcher opens it for Landlock: a session that swaps a listed
    directory for a symlink to another afterwards gets no program of the
    other one run through the loader."""
    d = ctx.daemon()
    ws, other = workspace(ctx), workspace(ctx)
    os.mkdir(os.path.join(other, "bin"))
    shutil.copy("/bin/true", os.path.join(other, "bin", "t1"))
    for p in ("bin", "bin/t1"):
        os.chown(os.path.join(other, p), U, U)
    # and one that is not there when it opens allows nothing, made afterwards or not
    pol = write(ctx, "filesystem: {execute: [/usr, /bin, /lib, /lib64, %s/bin, %s/later]}\ncommands: []\n"
                % (other, other), "swap.yaml")
    script = ("%(l)s %(o)s/bin/t1; echo listed=$?; mkdir %(o)s/evil && cp /bin/true %(o)s/evil/t3 && "
              "mv %(o)s/bin %(o)s/bin.old && ln -s %(o)s/evil %(o)s/bin && echo swapped; "
              "%(l)s %(o)s/bin/t3; echo swap=$?; mkdir %(o)s/later && cp /bin/true %(o)s/later/t4; "
              "%(l)s %(o)s/later/t4; echo later=$?" % {"l": LDSO, "o": other})
    r = exec_(ctx, d, ["/bin/sh", "-c", script], "--policy", pol, cwd=ws)
    out = r.stdout.decode()
    assert "listed=0" in out and "swapped" in out and "swap=126" in out and "later=126" in out, \
        (out, r.stderr.decode())


def test_files_move_across_directories_under_read_and_execute_lists(ctx):
    """A layer that limits reading or running but not writing does not
    refuse renames and links across directories (Landlock refuses them
    in any layer that does not grant them); one that would give a file a
    right it did not have (moved onto the execute list) is still refused."""
    pol = write(ctx, "filesystem: {read: [/], execute: [/usr, /bin, /lib, /lib64, /sbin, %s]}\n"
                     "commands: []\n" % "workspace")
    d = ctx.daemon("--policy", pol)
    ws, other = workspace(ctx), workspace(ctx)
    code = ("import os, sys\nws, other = sys.argv[1], sys.argv[2]\n"
            "os.mkdir('a'); os.mkdir('b'); open('a/x', 'w').close()\n"
            "os.rename('a/x', 'b/x'); os.link('b/x', 'a/y'); print('moved')\n"
            "open(other + '/z', 'w').close()\n"
            "try:\n    os.rename(other + '/z', ws + '/z'); print('gained')\n"
            "except OSError as e:\n    print('refused', e.errno)\n")
    r = exec_(ctx, d, ["/usr/bin/python3", "-c", code, ws, other], cwd=ws)
    out = r.stdout.decode()
    assert "moved" in out and "refused 18" in out, (out, r.stderr.decode())
    assert os.path.exists(os.path.join(ws, "b", "x")) and os.path.exists(os.path.join(ws, "a", "y"))


TIOCSTI_CODE = r"""
import fcntl, os, sys, termios
for req in (termios.TIOCSTI, termios.TIOCSTI | (1 << 32)):
    try:
        for c in b"id\n":
            fcntl.ioctl(0, req, bytes([c]))
        print("typed")
    except OSError as e:
        print("refused", e.errno)
"""


def test_a_session_cannot_type_into_its_terminal(ctx):
    """TIOCSTI pushes bytes into a terminal's input: from a session, into
    the shell that started it, which reads them once the session is over.
    Refused (EPERM), with the command's upper bits set too; the same call
    outside a session types."""
    import pty
    d = ctx.daemon()
    for session in (False, True):
        master, slave = pty.openpty()
        try:
            cmd = ["/usr/bin/python3", "-c", TIOCSTI_CODE]
            if session:
                cmd = [ctx.execgate, "exec", "-p", d.pin_path, "--"] + cmd
            # root: TIOCSTI needs no controlling terminal then (CAP_SYS_ADMIN)
            r = subprocess.run(cmd, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            os.set_blocking(slave, False)
            try:
                typed = os.read(slave, 100)
            except BlockingIOError:
                typed = b""
        finally:
            os.close(master)
            os.close(slave)
        out = r.stdout.decode().split("\n")
        if session:
            assert out[:2] == ["refused 1", "refused 1"] and typed == b"", (out, typed, r.stderr)
        else:
            assert out[0] == "typed" and typed.startswith(b"id"), (out, typed, r.stderr)


def test_refusals_counted_across_a_handover(ctx):
    """Audit names a domain's maker once: after a handover (SIGUSR2) the new daemon still knows
    whose domain a refusal is, and counts it in that session."""
    Audit(ctx)
    d = ctx.daemon("--policy", write(ctx, FS_POLICY))
    ws, other = workspace(ctx), workspace(ctx)
    go, done = os.path.join(ws, "go"), os.path.join(ws, "done")
    for f in (go, done):
        os.mkfifo(f)
        os.chown(f, U, U)
    # the session lives on until told, so that both refusals are in before its end record
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "/bin/sh", "-c",
                          "echo a > %s/a; read x < %s; echo b > %s/b; read x < %s" % (other, go, other, done)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ws, start_new_session=True, **ME)
    ctx.on_cleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
    sid = started(d, lambda e: e["boundary"].get("workspace") == ws)[-1]["session"]
    wait(lambda: [e for e in session_records(d, sid) if e["type"] == "boundary"], what="the first refusal")
    d.proc.send_signal(signal.SIGUSR2)
    # the new binary's check and its start each load the programs: up to a minute on a busy machine,
    # as the other handover tests allow
    wait(lambda: [e for e in d.events() if e.get("type") == "daemon" and e.get("event") == "start" and
                  e.get("takeover")], timeout=60, what="the new daemon's start record")
    with open(go, "w") as f:
        f.write("go\n")
    denied = wait(lambda: (lambda v: v if len(v) >= 2 else None)(
        [e for e in session_records(d, sid) if e["type"] == "boundary"]), what="the second refusal")
    assert [e["count"] for e in denied] == [1, 2], denied
    with open(done, "w") as f:
        f.write("done\n")
    p.communicate(timeout=30)
    end = wait(lambda: [e for e in session_records(d, sid) if e.get("event") == "end"], what="the end record")[0]
    assert end["access_denied"] == 2, end


def test_session_policies_stack_and_nest(ctx):
    """A session --policy adds a layer: it can narrow what the daemon's allows (its write list
    without the workspace) and widen nothing (a nested session whose policy allows every write
    still cannot write outside the workspace)."""
    # the nested launcher is execgate itself: on the execute list
    here = os.path.dirname(os.path.realpath(ctx.execgate))
    d = ctx.daemon("--policy", write(ctx, FS_POLICY.replace("/sbin]", "/sbin, %s]" % here)))
    ws, other = workspace(ctx), workspace(ctx)
    narrow = write(ctx, "filesystem: {write: [/dev/null]}\ncommands: []\n")
    wide = write(ctx, "filesystem: {write: [/], execute: [/]}\ncommands: []\n")
    r = exec_(ctx, d, ["/bin/sh", "-c", "echo x > a.txt; echo rc=$?"], "--policy", narrow, cwd=ws)
    assert "rc=2" in r.stdout.decode() and not os.path.exists(os.path.join(ws, "a.txt")), r
    layers = started(d, lambda e: e["policy_sha256"])[-1]["boundary"]["layers"]
    assert [l["from"] for l in layers] == ["daemon", "session"], layers
    nested = "%s exec -p %s --policy %s -- /bin/sh -c 'echo x > %s/b.txt; echo rc=$?'" % (
        ctx.execgate, d.pin_path, wide, other)
    r = exec_(ctx, d, ["/bin/sh", "-c", nested], cwd=ws)
    assert "rc=2" in r.stdout.decode() and not os.path.exists(os.path.join(other, "b.txt")), \
        (r.stdout, r.stderr)


def test_two_tcp_ports(ctx):
    """network: connect_tcp lists one of two listening ports: the other is refused with EACCES,
    and bind_tcp: [] refuses every bind."""
    listeners = []
    for _ in range(2):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        listeners.append(s)
        ctx.on_cleanup(s.close)
    ok, no = (s.getsockname()[1] for s in listeners)
    d = ctx.daemon("--policy", write(ctx, "network: {connect_tcp: [%d], bind_tcp: []}\ncommands: []\n" % ok))
    code = r"""
import errno, socket, sys
for port in map(int, sys.argv[1:]):
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port)); print("connect", port, "ok")
    except OSError as e:
        print("connect", port, errno.errorcode[e.errno])
s = socket.socket()
try:
    s.bind(("127.0.0.1", 0)); print("bind ok")
except OSError as e:
    print("bind", errno.errorcode[e.errno])
# Multipath TCP: Landlock's TCP rules look at plain TCP sockets only
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
    s.connect(("127.0.0.1", int(sys.argv[2]))); print("mptcp ok")
except OSError as e:
    print("mptcp", errno.errorcode[e.errno])
# the other transports: SCTP by protocol, and the types only they have (this kernel has neither:
# outside a session the type is ESOCKTNOSUPPORT, which tells the filter's answer apart)
for name, typ, proto in (("sctp", socket.SOCK_STREAM, 132), ("seqpacket", socket.SOCK_SEQPACKET, 0)):
    try:
        socket.socket(socket.AF_INET6, typ, proto); print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
# io_uring makes sockets (and more) without their system calls; a ring passed in is refused too
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
fd = libc.syscall(425, 4, params)
print("io_uring", "ok" if fd >= 0 else errno.errorcode[ctypes.get_errno()])
r = libc.syscall(426, 0, 0, 0, 0, None, 0)
print("io_uring_enter", errno.errorcode[ctypes.get_errno()] if r < 0 else "ok")
"""
    r = exec_(ctx, d, ["/usr/bin/python3", "-c", code, str(ok), str(no)])
    assert r.stdout.decode().split("\n")[:8] == ["connect %d ok" % ok, "connect %d EACCES" % no, "bind EACCES",
                                                  "mptcp EPROTONOSUPPORT", "sctp EPROTONOSUPPORT",
                                                  "seqpacket EPROTONOSUPPORT", "io_uring ENOSYS",
                                                  "io_uring_enter ENOSYS"], (r.stdout, r.stderr)
    assert "network" in started(d)[-1]["boundary"]["in_force"]


def test_an_older_kernel_refuses_or_says_so(ctx):
    """On a kernel without what a policy asks (Landlock ABI 3: no network rules, no scopes) the
    session refuses to start, saying why; with on_unsupported: allow it runs, and its start
    record and status say what it runs without."""
    env = dict(os.environ, EXECGATE_LANDLOCK_ABI="3")
    pol = "network: {connect_tcp: [443]}\ncommands: []\n"
    d = ctx.daemon("--policy", write(ctx, pol), env=env)
    r = exec_(ctx, d, ["/bin/true"], env=env)
    err = r.stderr.decode()
    assert r.returncode == 1 and "network rules (Landlock ABI 4)" in err and "on_unsupported" in err, err
    st = json.loads(ctx.run([ctx.execgate, "status", "-j", "-p", d.pin_path]).stdout)["boundary"]
    assert st["session"] is None and "refused" in st["refused"], st
    # a launcher that sees another ABI than its daemon planned for does not start
    d.kill()
    d = ctx.daemon("--policy", write(ctx, "on_unsupported: allow\n" + pol), env=env)
    r = exec_(ctx, d, ["/bin/true"])
    assert r.returncode == 1 and b"planned for Landlock ABI 3" in r.stderr, r.stderr
    r = exec_(ctx, d, ["/bin/true"], env=env)
    assert r.returncode == 0, r.stderr
    b = started(d)[-1]["boundary"]
    assert b["in_force"] == ["ptrace"] and "network rules (Landlock ABI 4)" in b["missing"], b
    assert "signals and abstract unix sockets" in b["missing"], b


# ---- approvals survive a restart, and fair limits ----------------------------------------

ASK = """
sandbox: {seccomp: {execve: {approval_timeout: %s, approval_timeout_action: %s}}}
commands:
  - {name: ask-touch, basenames: [touch], decision: approval, message: "touch needs a yes"}
"""


def approvals(ctx, d, *args):
    r = ctx.run([ctx.execgate, "approvals", "--json", "-p", d.pin_path] + list(args))
    return [json.loads(l) for l in r.stdout.decode().splitlines()]


def test_a_restart_never_allows(ctx):
    """approval_timeout_action: allow and nobody answering: a handover (SIGUSR2) before the
    deadline refuses the waiting exec (it used to count as the timeout and run it at once), and
    the process's stderr said once that it waited, for which id. The deadline is far: the old
    daemon serves, and its deadlines run, while the new binary is checked (a second or more)."""
    d = ctx.daemon("--policy", write(ctx, ASK % ("30s", "allow")))
    ws = workspace(ctx)
    f = os.path.join(ws, "f-" + token())
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "/bin/sh", "-c", "touch %s; echo rc=$?" % f],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ws, start_new_session=True, **ME)
    ctx.on_cleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
    pend = wait(lambda: approvals(ctx, d), what="a pending approval")[0]
    d.proc.send_signal(signal.SIGUSR2)
    out, err = p.communicate(timeout=30)
    assert b"rc=126" in out, (out, err)
    aid = pend["approval_id"]
    line = ("execgate: waiting for approval %s (execgate approve %s)\n" % (aid, aid)).encode()
    assert err.count(line) == 1, err
    assert b"the daemon restarted while the approval waited" in err, err
    rec = wait(lambda: [e for e in d.events() if e.get("type") == "approval" and e.get("approval_id") == aid and
                        e["event"] != "requested"], what="the approval's outcome")
    assert [e["event"] for e in rec] == ["denied"] and "restarted" in rec[0]["reason"], rec
    # refused, not left to its deadline: the shell went on and is gone, nothing can run it later
    assert not os.path.exists(f)
    assert not [e for e in d.events() if e.get("type") == "exec" and f in (e.get("argv") or [])]


# Threads that each exec `touch` (ctypes: the GIL is let go), each waiting for an approval.
THREADS = r"""
import ctypes, os, sys, threading, time
n, size, tag = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
libc = ctypes.CDLL(None, use_errno=True)
def go(i):
    args = [b"/usr/bin/touch", b"/nonexistent/%s-%d" % (tag.encode(), i), b"x" * size]
    argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)
    libc.execve(args[0], argv, None)
ts = [threading.Thread(target=go, args=(i,), daemon=True) for i in range(n)]
for t in ts: t.start()
print("started", flush=True)
time.sleep(120)
"""


def flood_approvals(ctx, d, uid, sessions, per, size, tag):
    ps = []
    for k in range(sessions):
        p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "/usr/bin/python3", "-c", THREADS,
                              str(per), str(size), "%s-%d" % (tag, k)], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, cwd="/", start_new_session=True,
                             user=uid, group=uid, extra_groups=[])
        ctx.on_cleanup(lambda p=p: (p.poll() is None and os.killpg(p.pid, signal.SIGKILL), p.wait()))
        ps.append(p)
    for p in ps:
        assert p.stdout.readline() == b"started\n"
    return ps


def test_three_users_cannot_take_every_approval(ctx):
    """Three users with 6 session trees of 64 waiting execs each (1152, more than the 1024 the
    daemon holds): each user gets a share (256), so root's next request and a fourth user's
    still wait for an answer; every one is listed (argv of 60 KB shortened, its size said) and
    `approvals -j ID` shows one whole."""
    d = ctx.daemon("--policy", write(ctx, ASK % ("60s", "deny")))
    users = (60111, 60112, 60113)
    for uid in users:
        flood_approvals(ctx, d, uid, 6, 64, 8, "u%d" % uid)

    def settled():
        evs = d.events()
        asked = [e for e in evs if e.get("type") == "approval" and e["event"] == "requested"]
        refused = [e for e in evs if e.get("type") == "exec_failed" and "pending" in (e.get("message") or "")]
        return (asked, refused) if len(asked) + len(refused) >= 1152 else None
    asked, refused = wait(settled, timeout=120, what="the flood to settle")
    assert len(asked) == 768 and len(refused) == 1152 - 768, (len(asked), len(refused))
    assert {e["message"] for e in refused} == {"too many approvals pending for this user"}, \
        {e["message"] for e in refused}
    # root, and a fourth user, are not refused
    f = os.path.join(ctx.tmpdir(), "root-" + token())
    q = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "touch", f], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    ctx.on_cleanup(lambda: (q.poll() is None and q.kill(), q.wait()))
    # a fourth user's, with 60 KB of argv each: past a listing's 8 MiB if each were whole
    flood_approvals(ctx, d, 60114, 1, 16, 60000, "u60114")
    pend = wait(lambda: (lambda v: v if len(v) == 785 else None)(approvals(ctx, d)), timeout=30,
                what="785 approvals listed")
    assert len([a for a in pend if a["argv"][1] == f]) == 1, "root's request waits"
    big = [a for a in pend if "u60114" in a["argv"][1]]
    assert len(big) == 16, "the fourth user's wait"
    assert all(a["argv_shortened"] and a["argv_bytes"] > 60000 and len(a["argv"][2]) < 300 for a in big), big[:1]
    whole = approvals(ctx, d, big[0]["approval_id"])
    assert len(whole) == 1 and whole[0]["argv"][2] == "x" * 60000, len(whole[0]["argv"][2])
    r = ctx.run([ctx.execgate, "approvals", "-p", d.pin_path])
    assert len(r.stdout.decode().splitlines()) == 786 and b"shortened" in r.stdout, r.stdout[-300:]


# Connections a user holds open: each asks whoami every 2 s (no idle timeout closes them).
HOLD = r"""
import resource, select, socket, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
path, want = sys.argv[1], int(sys.argv[2])
socks = []
for _ in range(want):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    socks.append(s)
last = 0
while True:
    if time.monotonic() - last > 2:
        for s in list(socks):
            try:
                s.send(b'{"op":"whoami"}\n')
            except OSError:
                socks.remove(s)
        last = time.monotonic()
        print(len(socks), flush=True)
    r, _, _ = select.select(socks + [sys.stdin], [], [], 0.5)
    if sys.stdin in r:
        break
    for s in r:
        try:
            if not s.recv(65536):
                socks.remove(s)
        except OSError:
            socks.remove(s)
"""


def test_three_users_cannot_take_every_connection(ctx):
    """Three users each holding all the connections they can (320 asked for): together they
    keep fewer than the daemon has, and a fourth user's `execgate exec` (the shim's shell)
    still connects and runs."""
    d = ctx.daemon()
    sock = d.events()[0]["socket"]
    holders = []
    for uid in (60121, 60122, 60123):
        p = subprocess.Popen(["/usr/bin/python3", "-c", HOLD, sock, "320"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, user=uid, group=uid,
                             extra_groups=[])
        ctx.on_cleanup(lambda p=p: (p.poll() is None and p.kill(), p.wait()))
        holders.append(p)
    held = [int(p.stdout.readline()) for p in holders]
    # 2 s later, what the daemon kept: a refused connection reads EOF at once and is dropped
    held = [int(p.stdout.readline()) for p in holders]
    # 960 places for users, of which 240 stay free past the first 16 of each
    assert 700 <= sum(held) <= 720 + 3 * 16, held
    for _ in range(3):
        r = exec_(ctx, d, ["/bin/true"], user=dict(user=60124, group=60124, extra_groups=[]))
        assert r.returncode == 0, r.stderr.decode()
    assert all(p.poll() is None for p in holders)
