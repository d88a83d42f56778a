# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Day two: process lifetimes (exit records, the parent inline), the
shipped host policy's severities, execgate query (filters, text, JSON, the
tree, --follow), and the syslog and journal sinks, against sockets the
test binds itself. One daemon serves most checks."""
import json
import shutil
import signal
import os
import socket
import struct
import subprocess
import threading
import time

import eg
from eg import token


def wait(pred, timeout=20, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("no %s within %ss" % (what, timeout))


def stats(ctx, d):
    r = ctx.run([ctx.execgate, "stats", "--json", "-p", d.pin_path])
    return json.loads(r.stdout)["counters"]


class Listener:
    """A datagram socket read by a thread of its own, as syslog or journald would."""
    def __init__(self, ctx, name):
        self.path = os.path.join(ctx.tmpdir(), name)
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.s.bind(self.path)
        self.got = []
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()
        ctx.on_cleanup(self.close)

    def loop(self):
        while True:
            try:
                self.got.append(self.s.recv(1 << 20))
            except OSError:
                return

    def close(self):
        self.s.shutdown(socket.SHUT_RDWR)
        self.s.close()
        os.unlink(self.path)
        self.t.join(5)


def journal_fields(msg):
    """journald's native protocol: NAME=value lines, or NAME, a 64-bit length, the bytes."""
    f, i = {}, 0
    while i < len(msg):
        nl = msg.index(b"\n", i)
        line = msg[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            i = nl + 1
        else:
            k = line
            n = struct.unpack("<Q", msg[nl + 1:nl + 9])[0]
            v = msg[nl + 9:nl + 9 + n]
            assert msg[nl + 9 + n:nl + 10 + n] == b"\n", msg
            i = nl + 10 + n
        f[k.decode()] = v
    return f


def test_lifetimes_query_and_shipping(ctx):
    rel, cg, cgid = ctx.cgroup()
    slog = Listener(ctx, "syslog.sock")
    jrnl = Listener(ctx, "journal.sock")
    slog_path, jrnl_path = slog.path, jrnl.path
    d = ctx.daemon("--cgroup", cg, "--policy", os.path.join(ctx.root, "policy", "host-audit.yaml"),
                   "--syslog=" + slog_path, "--journal=" + jrnl_path, "--min-severity", "journal=high")
    t = token()

    def run(cmd):
        return subprocess.run(["/bin/sh", "-c", cmd], preexec_fn=lambda: open(
            os.path.join(cg, "cgroup.procs"), "w").write(str(os.getpid())))

    # a live follower from the start: what it sees is what the file gets
    fol = subprocess.Popen([ctx.execgate, "query", "-p", d.pin_path, "--follow", "--json", "--comm", "sh"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ctx.on_cleanup(fol.kill)
    wait(lambda: stats(ctx, d)["followers"] == 1, what="the follower connected")
    # the text view shows the sinks' and the followers' counts, as -j does
    txt = ctx.run([ctx.execgate, "stats", "-p", d.pin_path]).stdout.decode()
    for row in ("syslog sent", "syslog dropped", "journal sent", "journal dropped", "followers ", "written exit"):
        assert row in txt, (row, txt)
    run("exit 7; %s" % t)
    run("kill -9 $$; %s" % t)
    # PATH's misses are no audited command: one record for the one setpriv that ran
    run("env setpriv --help >/dev/null; : %s" % t)
    run("/bin/true %s" % t)

    def mine(typ):
        return [e for e in d.events() if e.get("type") == typ and any(t in a for a in e.get("argv", []))]
    execs = wait(lambda: len(mine("exec")) >= 4 and mine("exec"), what="the execs")
    by_cmd = {e["argv"][-1].split(";")[0]: e for e in execs if e["comm"] == "sh"}
    ends = {x["exec_id"]: x for x in wait(lambda: [x for x in d.events() if x.get("type") == "exit"
                                                    and x["exec_id"] in {e["exec_id"] for e in execs}
                                                    and x["comm"] == "sh"] if len([
        x for x in d.events() if x.get("type") == "exit" and x["exec_id"] in {e["exec_id"] for e in execs}
        and x["comm"] == "sh"]) >= 4 else None, what="their exits")}
    seven = ends[by_cmd["exit 7"]["exec_id"]]
    assert seven["exit_code"] == 7 and seven["signal"] is None and seven["duration_ns"] > 0, seven
    assert seven["filename"] == "/usr/bin/dash" and seven["pid"] == by_cmd["exit 7"]["pid"], seven
    killed = ends[by_cmd["kill -9 $$"]["exec_id"]]
    assert killed["exit_code"] is None and killed["signal"] == "SIGKILL", killed
    # the parent inline: a child's parent is the exec that ran it
    setpriv = [e for e in d.events() if e.get("type") == "exec" and e["comm"] == "setpriv"
               and e["cgroup_id"] == cgid]
    assert len(setpriv) == 1, setpriv
    env = [e for e in d.events() if e.get("exec_id") == setpriv[0]["parent_exec_id"] and e["type"] == "exec"][0]
    assert setpriv[0]["parent"] == {"exec_id": env["exec_id"], "filename": "/usr/bin/env", "comm": "env"}, setpriv
    # the shipped policy: one audit record, with the rule's severity and tags
    audits = [e for e in d.events() if e.get("decision") == "audit" and e["cgroup_id"] == cgid]
    assert [a["comm"] for a in audits] == ["setpriv"], audits
    assert audits[0]["severity"] == "high" and audits[0]["tags"] == ["privilege"], audits[0]
    misses = [e for e in d.events() if e.get("type") == "exec_failed" and e["cgroup_id"] == cgid
              and e["filename"].endswith("/setpriv")]
    assert misses and all("decision" not in e for e in misses), misses[:2]

    # query: filters, JSON unchanged, text with users and decisions, the tree
    q = ctx.run([ctx.execgate, "query", "-p", d.pin_path, "--json", "--decision", "audit", "--user", "root"])
    lines = [l for l in q.stdout.decode().splitlines() if '"cgroup_id":%d,' % cgid in l]
    assert len(lines) == 1 and json.loads(lines[0]) == audits[0], q.stdout[-400:]
    q = ctx.run([ctx.execgate, "query", "-p", d.pin_path, "--min-severity", "high", "--since", "1h",
                 "--comm", "setp*"])
    assert b" root " in q.stdout and b"audit    audited     setpriv --help" in q.stdout, q.stdout
    q = ctx.run([ctx.execgate, "query", "-p", d.pin_path, "--since", "tomorrow"], check=False)
    assert q.returncode == 2 and b"cannot read the time 'tomorrow'" in q.stderr, q.stderr
    q = ctx.run([ctx.execgate, "query", "-p", d.pin_path, "--tree", by_cmd["exit 7"]["exec_id"]])
    tree = q.stdout.decode()
    assert "exit 7 after" in tree and "[exit" in tree.splitlines()[-1], tree

    # the follower saw the same records as the file, live
    os.set_blocking(fol.stdout.fileno(), False)
    buf = [b""]

    def followed():
        try:
            buf[0] += os.read(fol.stdout.fileno(), 1 << 20)
        except BlockingIOError:
            pass
        return buf[0].count(t.encode()) >= 4 and buf[0].count(b'"type":"exit"') >= 4 and buf[0]
    got = wait(followed, what="records at the follower")
    for line in got.splitlines():
        assert json.loads(line)["comm"] == "sh", line
    assert set(got.splitlines()) <= set(d.lines()), "the file's bytes"

    # syslog: RFC 5424, the record as the message; journal: only what is high or above
    msgs = list(slog.got)
    mine_s = [m for m in msgs if t.encode() in m]
    assert len(mine_s) >= 4, (len(mine_s), [m[-300:] for m in mine_s], stats(ctx, d))
    m = [m for m in msgs if b'"decision":"audit"' in m and b"setpriv" in m][0]
    hdr, rec = m.split(b" - ", 1)
    assert hdr.startswith(b"<83>1 ") and hdr.split(b" ")[3:5] == [b"execgate", str(d.proc.pid).encode()], hdr
    assert json.loads(rec) == audits[0], rec
    js = [journal_fields(m) for m in list(jrnl.got)]
    assert js and all(j.get("EXECGATE_SEVERITY") in (b"high", b"critical") or j["EXECGATE_TYPE"] == b"daemon"
                      for j in js), js
    sp = [j for j in js if j.get("EXECGATE_COMM") == b"setpriv"][0]
    assert sp["MESSAGE"] == b"exec /usr/bin/setpriv --help (uid 0, audit by privilege-change, audited)", sp
    assert sp["PRIORITY"] == b"3" and json.loads(sp["EXECGATE_TAGS"]) == ["privilege"], sp
    c = stats(ctx, d)
    assert c["syslog_dropped"] == 0 and c["journal_dropped"] == 0 and c["journal_filtered"] > 0, c
    assert c["syslog_sent"] >= len(mine_s) and c["exits"] >= 4 and c["lost_exit"] == 0, c

    # a user who may not reload is told so, in one line
    r = subprocess.run([ctx.execgate, "policy", "reload", "-p", d.pin_path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
    err = r.stderr.decode()
    assert r.returncode == 1 and "permission denied" in err and "(null)" not in err, err
    assert len(err.strip().splitlines()) == 1, err

    # a listener that goes away: each record it misses is counted, the file loses none
    slog.close()
    run("/bin/true %s after" % t)
    wait(lambda: stats(ctx, d)["syslog_dropped"] > 0, what="syslog drops counted")
    lost = wait(lambda: [e for e in d.events() if e.get("type") == "lost" and e.get("syslog_dropped")],
                what="a lost record with the syslog's drops")
    assert lost[0]["output_dropped"] == 0, lost[0]
    assert d.stop() == 0
    assert fol.wait(10) == 1
    os.set_blocking(fol.stdout.fileno(), True)
    err = json.loads(fol.stdout.read().splitlines()[-1])  # --json: the error as JSON too
    assert "the daemon closed the connection" in err["error"], err


def dropped_follower(ctx):
    """A daemon (--exit-events=none) and a follower that does not read, flooded with execs
    until the daemon has dropped it: (daemon, the follower's socket)."""
    rel, cg, cgid = ctx.cgroup()
    d = ctx.daemon("--cgroup", cg, "--exit-events=none")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(d.wait_ready()["socket"])
    ctx.on_cleanup(s.close)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b'{"op":"follow"}\n')
    t, big = token(), "y" * 60000
    deadline = time.monotonic() + 60
    while stats(ctx, d)["followers_dropped"] == 0:
        assert time.monotonic() < deadline, "the slow follower was never dropped"
        subprocess.run(["/bin/true", t, big], preexec_fn=lambda: open(
            os.path.join(cg, "cgroup.procs"), "w").write(str(os.getpid())))
    return d, s


def test_exit_events_none_and_a_slow_follower(ctx):
    """--exit-events=none builds no exit record; a follower that does not read is dropped and told."""
    d, s = dropped_follower(ctx)
    assert stats(ctx, d)["exits"] == 0
    assert not [e for e in d.events() if e.get("type") == "exit"]
    data = b""
    s.setblocking(True)
    s.settimeout(10)
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        data += b
    last = json.loads(data.rstrip(b"\n").rsplit(b"\n", 1)[-1])
    assert last["event"] == "dropped" and "too slow" in last["reason"], last
    # every line before it is a whole record
    for line in data.rstrip(b"\n").split(b"\n")[1:-1]:
        json.loads(line)
    assert d.proc.poll() is None


def test_a_dropped_follower_that_never_reads_is_let_go(ctx):
    """A follower dropped for being too slow is told so in a last line, and its connection
    ended once that line was sent; one that never read again kept it (and its place among the
    64 followers, and its buffer) for good: 64 pagers left open locked every later follow out.
    Now the last line has the control socket's idle time to go out."""
    d, s = dropped_follower(ctx)
    wait(lambda: stats(ctx, d)["followers"] == 0, timeout=20, what="the end of the dropped follower")


def test_follow_since_reads_the_stream_beside_a_long_history(ctx):
    """query --follow --since reads the history while the daemon streams new records to it;
    a follower more than 4 MiB behind is dropped, which a long history on a busy host reached
    (the client read the stream only after the history). The stream is read beside it now."""
    rel, cg, cgid = ctx.cgroup()
    d = ctx.daemon("--cgroup", cg)

    def execs(tok, n, size):
        subprocess.run(["/bin/sh", "-c", 'i=0; while [ $i -lt %d ]; do /bin/true "$0" "$1"; i=$((i+1)); done' % n,
                        tok, "h" * size], preexec_fn=lambda: open(os.path.join(cg, "cgroup.procs"), "w").write("0"))
    old, new = token(), token()
    execs(old, 2500, 2000)
    wait(lambda: sum(1 for e in d.events() if e.get("type") == "exec" and old in e.get("argv", [])) >= 2501,
         timeout=60, what="the history")
    fol = subprocess.Popen([ctx.execgate, "query", "-p", d.pin_path, "--follow", "--since", "1h", "--json",
                            "--type", "exec"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ctx.on_cleanup(lambda: (fol.poll() is None and fol.kill(), fol.wait()))
    time.sleep(0.5)     # its output unread: it is stuck in the history, its pipe full
    execs(new, 3000, 6000)  # 18 MB of records streamed to it meanwhile
    got = {"old": 0, "new": 0}

    last = token()

    def read():
        for line in fol.stdout:
            e = json.loads(line)
            if not e.get("filename", "").endswith("/true"):
                continue        # the shells that ran the loops
            k = "old" if old in e.get("argv", []) else "new" if new in e.get("argv", []) else \
                "last" if last in e.get("argv", []) else "x"
            got[k] = got.get(k, 0) + 1
            if k == "last":
                return
    th = threading.Thread(target=read, daemon=True)
    th.start()
    # what the file had grown by is read as history; then the stream goes on, live
    wait(lambda: got["new"] == 3000 or fol.poll() is not None, timeout=60, what="the records streamed")
    time.sleep(1)
    execs(last, 1, 10)
    th.join(20)
    alive = fol.poll() is None
    fol.kill()
    err = fol.stderr.read().decode()
    assert alive and "dropped" not in err, err
    assert got["old"] == 2500 and got["new"] == 3000 and got.get("last") == 1, (got, err)


def test_a_follower_gets_no_record_the_file_leaves_out(ctx):
    """--min-severity output=LEVEL leaves records out of the file; a follower gets what the
    file gets (query --follow --since meets the file's history by its last lines), not more."""
    rel, cg, cgid = ctx.cgroup()
    d = ctx.daemon("--cgroup", cg, "--min-severity", "output=high")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(d.wait_ready()["socket"])
    ctx.on_cleanup(s.close)
    s.sendall(b'{"op":"follow"}\n')
    s.settimeout(10)
    assert b'"ok":true' in s.recv(65536)
    t = token()
    subprocess.run(["/bin/true", t], preexec_fn=lambda: open(os.path.join(cg, "cgroup.procs"), "w").write("0"))
    wait(lambda: stats(ctx, d)["filtered_severity"] >= 1, what="the exec left out of the file")
    s.settimeout(2)
    data = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    except socket.timeout:
        pass
    assert t.encode() not in data, data[:300]


def flood(ctx, cg, argv_bytes=2000):
    """A shell in cg running /bin/true with a long argv as fast as it can, until the test's end."""
    p = subprocess.Popen(["/bin/sh", "-c", 'while :; do /bin/true "$0"; done', "f" * argv_bytes],
                         start_new_session=True, preexec_fn=lambda: open(
                             os.path.join(cg, "cgroup.procs"), "w").write(str(os.getpid())))
    ctx.on_cleanup(lambda: (os.killpg(p.pid, signal.SIGKILL), p.wait()))
    return p


def test_followers_that_go_away_while_the_daemon_floods(ctx):
    """A follower whose peer is gone when its chunk is sent is freed by that send: the ASan
    daemon neither touches it after nor misses a beat. Without ASan a use after free is
    seldom seen, so the test needs that build (make test builds it: make asan-build)."""
    asan = os.path.join(ctx.out, "asan", "execgate")
    exe = os.environ.get("EG_EXECGATE") or asan
    if not os.access(exe, os.X_OK):
        ctx.skip("needs the ASan build, %s: make OUTPUT=%s asan-build (make test builds it)" % (exe, ctx.out))
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    rel, cg, cgid = ctx.cgroup()
    d = ctx.daemon("--cgroup", cg, "--exit-events=none", exe=exe, env=env)
    sock = d.wait_ready()["socket"]
    flood(ctx, cg)
    d.wait_for(lambda e: e.get("comm") == "true", what="the flood")
    def died(rnd):
        time.sleep(0.5)
        return "the daemon died (%s) in round %d: %s" % (d.proc.poll(), rnd, d.err()[-3000:])
    for rnd in range(30):
        conns = []
        try:
            for i in range(40):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                conns.append(s)
                s.connect(sock)
                s.sendall(b'{"op":"follow"}\n')
            for s in conns:
                s.settimeout(10)
                assert s.recv(1 << 16).startswith(b'{"ok":true'), "the follow op answered"
        except OSError as e:
            raise AssertionError("%s; %s" % (e, died(rnd)))
        time.sleep(0.02)
        # gone with records unread, while the daemon sends them more
        for s in conns:
            s.close()
        assert d.proc.poll() is None, died(rnd)
    wait(lambda: stats(ctx, d)["followers"] == 0, what="every follower freed")
    assert d.proc.poll() is None and "AddressSanitizer" not in d.err(), d.err()[-3000:]
    assert d.stop() == 0, d.err()[-3000:]


def test_a_cut_last_line_is_ended_and_left_out(ctx):
    """A daemon killed in the middle of a write leaves a cut last line: the next daemon ends it
    before its start record (which says so), and query leaves the cut line out, counted, with
    --json and no filter as with a filter and as text."""
    rel, cg, cgid = ctx.cgroup()
    out = os.path.join(ctx.tmpdir(), "events.jsonl")
    whole = b'{"v":1,"type":"daemon","time":"2026-01-19T14:00:00.000000000Z","event":"stop","exec":0}'
    # an exec id no record's time can spell ("1:2" is in times such as 21:2x or hh:x1:2x)
    cut = b'{"v":1,"type":"exec","time":"2026-01-19T14:00:01.000000000Z","exec_id":"9191:7373","argv":["a}'
    with open(out, "wb") as f:
        f.write(whole + b"\n" + cut)

    def starts():
        with open(out, "rb") as f:
            lines = f.read().split(b"\n")[:-1]
        return [json.loads(l) for l in lines if b'"event":"start"' in l] or None
    # (not d.events(): the file holds a line that is no JSON, on purpose)
    d = ctx.daemon("--cgroup", cg, output=out, ready=False)
    start = wait(starts, what="the start record")[0]
    with open(out, "rb") as f:
        lines = f.read().split(b"\n")
    assert lines[0] == whole and lines[1] == cut and json.loads(lines[2]) == start, lines[:3]
    assert start["ended_cut_line"] is True, start
    # copied unparsed (no filter, a time), parsed (a filter the cut line's bytes pass), as text
    for args, want in ((["--json"], ["stop", "start"]), (["--json", "--since", "2000-01-01"], ["stop", "start"]),
                       (["--json", "--type", "exec"], []), ([], None)):
        q = ctx.run([ctx.execgate, "query"] + args + [out])
        assert b'"argv":["a}' not in q.stdout and b"9191:7373" not in q.stdout, (args, q.stdout)
        if want is not None:
            got = [json.loads(l).get("event") for l in q.stdout.splitlines()]
            assert got[:len(want)] == want and len(got) >= len(want), (args, got)
        assert b"1 lines were not JSON records: left out" in q.stderr, (args, q.stderr)
    assert d.stop() == 0
    # a file that ends with its '\n' is left as it is, and the start record says so
    d = ctx.daemon("--cgroup", cg, output=out, ready=False)
    start = wait(lambda: (lambda v: v if v and len(v) == 2 else None)(starts()), what="the second start")[1]
    assert start["ended_cut_line"] is False, start
    assert d.stop() == 0


def records(hour, n, pad=0):
    """n records of that hour, in order, each with pad bytes more (of a kind the schema takes
    in a daemon's file, which the test's cleanup checks)."""
    return b"".join(b'{"v":1,"type":"daemon","time":"2026-01-19T%02d:%02d:%02d.%09dZ","event":"policy_error",'
                    b'"rules":%d,"error":"%s"}\n' % (hour, i // 60 % 60, i % 60, i, i, b"a" * pad)
                    for i in range(n))


def test_a_rotation_during_a_query(ctx):
    """query opens every file when it lists them: a rotation, a compression and a new live
    file while it reads change nothing in what it reads (all the records of the files as they
    were at its start, in order, once each)."""
    import gzip
    d = ctx.daemon()
    live = d.output
    assert d.stop() == 0     # its record of its output stays in /run/execgate: query finds the files through it
    base = os.path.dirname(live)
    a, b, c = records(10, 4000, 1000), records(11, 50), records(12, 50)
    for name, data in (("events.jsonl.2", a), ("events.jsonl.1", b), ("events.jsonl", c)):
        with open(os.path.join(base, name), "wb") as f:
            f.write(data)
    q = subprocess.Popen([ctx.execgate, "query", "--json", "-p", d.pin_path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    ctx.on_cleanup(q.kill)
    # its first bytes: it has listed the files and reads the oldest; its pipe full, it waits for us
    first = q.stdout.read(4096)
    assert first.startswith(b'{"v":1,"type":"daemon","time":"2026-01-19T10:'), first[:200]
    time.sleep(0.2)
    # the compressor takes events.jsonl.1, and the daemon rotates: a new live file
    with open(os.path.join(base, "events.jsonl.1"), "rb") as f, \
            gzip.open(os.path.join(base, "events.jsonl.1.gz"), "wb") as g:
        g.write(f.read())
    os.unlink(os.path.join(base, "events.jsonl.1"))
    os.rename(live, os.path.join(base, "events.jsonl.20260119T120100.000Z"))
    with open(live, "wb") as f:
        f.write(records(13, 5))
    out, err = q.communicate(timeout=60)
    out = first + out
    assert q.returncode == 0 and b"cannot open" not in err, (q.returncode, err)
    assert out == a + b + c, (len(out), len(a + b + c), out.count(b'T11:'), out.count(b'T12:'), out.count(b'T13:'))


def test_more_files_than_fds(ctx):
    """More FILE operands than the fd limit: every record once, in the operands' order (the
    first ones opened again by name at their turn), not EMFILE."""
    base = ctx.tmpdir()
    files, want = [], b""
    for i in range(200):
        files.append(os.path.join(base, "events.%03d.jsonl" % i))
        data = records(i % 24, 3)
        want += data
        with open(files[-1], "wb") as f:
            f.write(data)
    q = ctx.run(["sh", "-c", 'ulimit -n 64; exec "$0" "$@"', ctx.execgate, "query", "--json"] + files, check=False)
    assert q.returncode == 0 and q.stdout == want, (q.returncode, q.stderr[-500:], len(q.stdout), len(want))


def test_a_logrotate_during_a_query_past_the_fd_limit(ctx):
    """More rotated files than the fd limit: the oldest are opened at their turn, and a
    logrotate meanwhile (every .N renamed .N+1, one compressed to a .gz, another file removed)
    changes nothing in what is read: each file as listed, once, in order, found under its new
    name; the removed one is named on stderr and the exit status is 1, no other file is read in
    its place."""
    import gzip
    d = ctx.daemon()
    live = d.output
    assert d.stop() == 0     # its record of its output stays in /run/execgate: query finds the files through it
    base = os.path.dirname(live)

    def at(minute, n):
        return b"".join(b'{"v":1,"type":"daemon","time":"2026-01-19T10:%02d:%02d.%09dZ","event":"policy_error",'
                        b'"rules":%d,"error":"x"}\n' % (minute, i, i, i) for i in range(n))
    for remove in (False, True):
        for n in os.listdir(base):
            if n.startswith("events.jsonl"):
                os.unlink(os.path.join(base, n))
        # .30 the oldest (large: the query waits on its full pipe in it), .1 the newest
        gens = {k: records(9, 4000, 1000) if k == 30 else at(30 - k, 20) for k in range(1, 31)}
        for k, data in gens.items():
            with open("%s.%d" % (live, k), "wb") as f:
                f.write(data)
        c = records(12, 5)
        with open(live, "wb") as f:
            f.write(c)
        q = subprocess.Popen(["sh", "-c", 'ulimit -n 64; exec "$0" "$@"', ctx.execgate, "query", "--json",
                              "-p", d.pin_path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        ctx.on_cleanup(q.kill)
        first = q.stdout.read(4096)
        assert first.startswith(b'{"v":1,"type":"daemon","time":"2026-01-19T09:'), first[:200]
        # logrotate: each .N becomes .N+1, the live file .1, a new live file; then .21 (the .20
        # listed) is compressed, and (the second time) .26 (the .25 listed) removed
        for k in range(30, 0, -1):
            os.rename("%s.%d" % (live, k), "%s.%d" % (live, k + 1))
        os.rename(live, live + ".1")
        with open(live, "wb") as f:
            f.write(records(13, 5))
        with open(live + ".21", "rb") as f, gzip.open(live + ".21.gz", "wb") as g:
            g.write(f.read())
        os.unlink(live + ".21")
        if remove:
            os.unlink(live + ".26")
        out, err = q.communicate(timeout=60)
        out = first + out
        want = b"".join(gens[k] for k in range(30, 0, -1) if not (remove and k == 25)) + c
        got = [out.count(b'"time":"2026-01-19T10:%02d:00.' % (30 - k)) for k in range(1, 30)]
        assert out == want, (remove, len(out), len(want), got, err[-300:])
        if remove:
            assert q.returncode == 1, (q.returncode, err)
            assert err.decode().count("was renamed, compressed or removed since the query listed it") == 1, err
            assert "events.jsonl.25 was" in err.decode(), err
        else:
            assert q.returncode == 0 and not err, (q.returncode, err)


def test_a_crlf_file(ctx):
    """A file with CRLF line ends (copied through Windows): its records are records, copied
    unparsed (--json) as parsed (--json --type), each line as it is."""
    path = os.path.join(ctx.tmpdir(), "events.jsonl")
    data = records(10, 5).replace(b"\n", b"\r\n")
    with open(path, "wb") as f:
        f.write(data)
    for args in (["--json"], ["--json", "--type", "daemon"]):
        q = ctx.run([ctx.execgate, "query"] + args + [path], check=False)
        assert q.returncode == 0 and q.stdout == data, (args, q.stdout, q.stderr)


def test_a_corrupt_gzip_file_is_said_and_skipped(ctx):
    """One corrupt .gz among the files: the others are read, the file is named on stderr,
    and the exit status is 1."""
    import gzip
    base = ctx.tmpdir()
    good, bad, plain = (os.path.join(base, n) for n in ("events.jsonl.1.gz", "events.jsonl.2.gz", "events.jsonl"))
    a, b, c = records(10, 200, 100), records(11, 200, 100), records(12, 20)
    with gzip.open(good, "wb") as g:
        g.write(a)
    z = bytearray(gzip.compress(b))
    z[40:400] = b"\xff" * 360       # the deflate stream broken in its middle
    with open(bad, "wb") as f:
        f.write(z)
    with open(plain, "wb") as f:
        f.write(c)
    q = ctx.run([ctx.execgate, "query", "--json", good, bad, plain], check=False)
    err = q.stderr.decode()
    assert q.returncode == 1, (q.returncode, err)
    assert "cannot read %s: corrupt gzip data" % bad in err, err
    got = q.stdout
    assert got.startswith(a) and got.endswith(c) and got.count(b"T12:") == 20, (len(got), err)
    assert all(l in b.splitlines() for l in got[len(a):len(got) - len(c)].splitlines()), "what was read of it"


def test_generate_a_policy_then_replay_under_it(ctx):
    """A real build (make, cc, as, ld) in a session; the policy generated from
    it passes check --strict, the same build under it meets no deny, and
    anything else (make clean's rm) is refused."""
    if not all(shutil.which(t) for t in ("make", "cc")):
        ctx.skip("make and cc are needed (build-essential)")
    d = ctx.daemon()
    src = ctx.tmpdir()
    for name, text in (("a.c", "int a(void){return 1;}\n"), ("b.c", "int b(void){return 2;}\n"),
                       ("main.c", "int a(void);int b(void);\nint main(void){return a()+b()-3;}\n"),
                       ("Makefile", "prog: a.o b.o main.o\n\tcc -o prog a.o b.o main.o\n"
                                    "%.o: %.c\n\tcc -c -o $@ $<\nclean:\n\trm -f *.o prog\n")):
        with open(os.path.join(src, name), "w") as f:
            f.write(text)

    def session(*extra):
        r = subprocess.run([ctx.execgate, "exec", "-p", d.pin_path] + list(extra) + ["--", "make"] + [],
                           cwd=src, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return r

    r = session("--session", "learn")
    assert r.returncode == 0 and os.path.exists(os.path.join(src, "prog")), r.stderr
    sid = wait(lambda: [e["session"] for e in d.events() if e.get("type") == "session" and e.get("name") == "learn"
                        and e.get("event") == "end"], what="the session's end")[0]
    gen = os.path.join(ctx.tmpdir(), "gen.yaml")
    ctx.run([ctx.execgate, "policy", "generate", "-p", d.pin_path, "--session", sid, "-o", gen])
    text = open(gen).read()
    assert "default_decision: deny" in text and "'/usr/bin/make'" in text, text[:800]
    assert "differ in file names or numbers" in text and "[^ ]*\\.c" in text, text
    r = ctx.run([ctx.execgate, "policy", "check", "--strict", gen], check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    subprocess.run(["make", "clean"], cwd=src, check=True, stdout=subprocess.DEVNULL)

    r = session("--session", "replay", "--policy", gen)
    assert r.returncode == 0 and os.path.exists(os.path.join(src, "prog")), r.stderr
    replay = wait(lambda: [e["session"] for e in d.events() if e.get("type") == "session"
                           and e.get("name") == "replay" and e.get("event") == "end"], what="the replay's end")[0]
    mine = [e for e in d.events() if e.get("session") == replay and e.get("type") in ("exec", "exec_failed")]
    assert len([e for e in mine if e["type"] == "exec"]) >= 10, len(mine)
    assert not [e for e in mine if e.get("decision") not in ("allow", None)], \
        [e for e in mine if e.get("decision") != "allow"][:2]
    # what the build did not do is refused: make clean runs rm
    r = subprocess.run([ctx.execgate, "exec", "-p", d.pin_path, "--policy", gen, "--", "make", "clean"], cwd=src,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode != 0 and b"denied" in r.stderr, r.stderr
    # and the tree of the learning session is drawn with every exit status
    q = ctx.run([ctx.execgate, "query", "-p", d.pin_path, "--tree", sid])
    tree = q.stdout.decode()
    assert "└─ make  [exit 0 after" in tree and tree.count("[exit 0 after") >= 10, tree


def test_shipping_recipes(ctx):
    """docs/shipping.md's rsyslog configuration, as written there, turns --syslog
    into a file with the same records as --output; a real systemd-journald takes
    --journal's datagrams and journalctl gives the records back."""
    ran = 0
    if shutil.which("rsyslogd"):
        ran += 1
        with open(os.path.join(ctx.root, "docs", "shipping.md")) as f:
            doc = f.read()
        conf = doc.split("<!-- rsyslog-recipe -->")[1].split("```")[1].strip("\n")
        d = ctx.tmpdir()
        sock, jl = os.path.join(d, "syslog.sock"), os.path.join(d, "syslog.jsonl")
        conf = conf.replace("/run/execgate/syslog.sock", sock).replace("/var/log/execgate/syslog.jsonl", jl)
        with open(os.path.join(d, "rsyslog.conf"), "w") as f:
            f.write(conf + "\n")
        rs = subprocess.Popen(["rsyslogd", "-n", "-f", os.path.join(d, "rsyslog.conf"), "-i",
                               os.path.join(d, "rsyslogd.pid")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        ctx.on_cleanup(lambda: (rs.poll() is None and rs.kill(), rs.wait()))
        wait(lambda: os.path.exists(sock), what="rsyslog's socket")
        rel, cg, cgid = ctx.cgroup()
        dm = ctx.daemon("--cgroup", cg, "--syslog=" + sock)
        t, big = token(), token()
        subprocess.run(["/bin/true", t], preexec_fn=lambda: open(os.path.join(cg, "cgroup.procs"), "w").write("0"))
        # a record rsyslog would cut (its message size is 8 KiB): 40,000 bytes that are not UTF-8
        subprocess.run([b"/bin/true", big.encode(), b"\xff" * 40000],
                       preexec_fn=lambda: open(os.path.join(cg, "cgroup.procs"), "w").write("0"))
        dm.wait_for(lambda e: e.get("type") == "exec" and big in e.get("argv", []), what="the big exec")
        dm.wait_for(lambda e: e.get("type") == "exit" and e.get("filename") == "/usr/bin/true", what="its exit")
        assert dm.stop() == 0
        lines = dm.lines()
        want = [json.loads(l) for l in lines]
        big_line = [l for l in lines if big.encode() in l][0]

        def shipped():
            try:
                with open(jl, "rb") as f:
                    got = [json.loads(l) for l in f.read().split(b"\n")[:-1]]
            except FileNotFoundError:
                return None
            return got if len(got) >= len(want) else None
        got = wait(shipped, what="rsyslog's file")
        # the big record arrives whole as JSON, its argv cut to fit and said so; every other the same
        cut = [e for e in got if e.get("syslog_cut")]
        assert len(cut) == 1 and cut[0]["argv"][:2] == ["/bin/true", big], cut
        full = [e for e in want if big in e.get("argv", [])][0]
        assert cut[0]["syslog_cut"] == {"bytes": len(big_line.rstrip(b"\n")), "argc": 3,
                                        "argv_kept": len(cut[0]["argv"])}, cut[0]["syslog_cut"]
        assert full["argv"][2].startswith(cut[0]["argv"][2]) and cut[0]["exec_id"] == full["exec_id"]
        assert [e for e in got if not e.get("syslog_cut")] == [e for e in want if e is not full], (len(got), len(want))
        assert [e for e in got if t in e.get("argv", [])], "the exec is there"
        rs.terminate()
    if os.path.exists("/lib/systemd/systemd-journald") and shutil.which("journalctl") and shutil.which("unshare"):
        ran += 1
        t = token()
        d = ctx.tmpdir()
        pin = "/sys/fs/bpf/egtest-jd-%d" % os.getpid()
        ctx.on_cleanup(lambda: shutil.rmtree(pin, ignore_errors=True))
        # journald in a mount namespace of its own: its sockets and files on tmpfs, none of the host's touched
        script = r'''
set -e
mount -t tmpfs tmpfs /run/systemd 2>/dev/null || { mkdir -p /run/systemd; mount -t tmpfs tmpfs /run/systemd; }
mkdir -p /run/log; mount -t tmpfs tmpfs /run/log
mkdir -p /run/systemd/journal
/lib/systemd/systemd-journald >/dev/null 2>&1 & J=$!
for i in $(seq 100); do [ -S /run/systemd/journal/socket ] && break; sleep 0.05; done
"$EG" daemon --pin-path "$PIN" --output "$DIR/events.jsonl" --journal --exit-events=none 2>"$DIR/err" & D=$!
for i in $(seq 200); do grep -q '"event":"start"' "$DIR/events.jsonl" 2>/dev/null && break; sleep 0.05; done
/bin/true "$TOK"
for i in $(seq 200); do grep -q "$TOK" "$DIR/events.jsonl" && break; sleep 0.05; done
kill $D; wait $D || true
# journald reads its socket in its own time: until it has every record the file has
for i in $(seq 200); do
    [ "$(journalctl -D /run/log/journal -o json SYSLOG_IDENTIFIER=execgate | wc -l)" -ge \
      "$(wc -l < "$DIR/events.jsonl")" ] && break
    sleep 0.05
done
journalctl -D /run/log/journal -o json SYSLOG_IDENTIFIER=execgate
kill $J
'''
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c", script],
                           env=dict(os.environ, EG=ctx.execgate, PIN=pin, DIR=d, TOK=t),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        assert r.returncode == 0, r.stderr.decode()[-500:]
        js = [json.loads(l) for l in r.stdout.splitlines()]
        mine = [j for j in js if json.loads(j.get("EXECGATE_ARGV", "[]")) == ["/bin/true", t]]
        assert len(mine) == 1, (t, [j.get("EXECGATE_ARGV") for j in js])
        j = mine[0]
        assert j["MESSAGE"] == "exec /usr/bin/true %s (uid 0)" % t, j["MESSAGE"]
        assert j["EXECGATE_TYPE"] == "exec" and j["PRIORITY"] == "6" and j["EXECGATE_FILENAME"] == "/usr/bin/true", j
        recs = [json.loads(l) for l in open(os.path.join(d, "events.jsonl"))]
        rec = [e for e in recs if e.get("argv") == ["/bin/true", t]][0]
        assert j["EXECGATE_EXEC_ID"] == rec["exec_id"] and int(j["EXECGATE_PPID"]) == rec["ppid"], j
        assert ("EXECGATE_PARENT" in j) == (rec["parent"] is not None), "null fields are left out"
        assert {x["EXECGATE_TYPE"] for x in js} >= {"daemon", "exec"}, js[:3]
        assert len(js) == len(recs), (len(js), len(recs))
    if not ran:
        ctx.skip("neither rsyslogd nor systemd-journald is installed (tools/install-deps.sh installs rsyslog)")


def test_a_handover_keeps_the_sinks_counts(ctx):
    """SIGUSR2 (a package upgrade): the new daemon's syslog counts go on from the old one's."""
    slog = Listener(ctx, "syslog.sock")
    rel, cg, cgid = ctx.cgroup()
    d = ctx.daemon("--cgroup", cg, "--syslog=" + slog.path)
    t = token()
    subprocess.run(["/bin/true", t], preexec_fn=lambda: open(os.path.join(cg, "cgroup.procs"), "w").write("0"))
    before = wait(lambda: (lambda c: c if c["syslog_sent"] >= 3 else None)(stats(ctx, d)), what="records sent")
    d.reexec()
    assert d.proc.poll() is None, d.err()
    wait(lambda: [e for e in d.events() if e.get("event") == "start" and e.get("takeover")], what="the new start")
    after = stats(ctx, d)
    assert after["syslog_sent"] >= before["syslog_sent"] + 1, (before["syslog_sent"], after["syslog_sent"])
    assert after["syslog_dropped"] == 0, after
    assert any(b'"event":"start","version"' in m and b'"takeover":true' in m for m in slog.got), "the new daemon ships too"


class FakeDaemon:
    """The control socket of a pin path no daemon has, answered by the test: each request
    line gets replies[op] (a list of lines: the reply, then what a watch would send)."""
    def __init__(self, ctx, replies):
        name = "egfake_%d_%d" % (os.getpid(), ctx.seq())
        self.pin_path = "/sys/fs/bpf/" + name
        self.path = "/run/execgate/pin-%s.sock" % name
        os.makedirs("/run/execgate", exist_ok=True)
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.bind(self.path)
        self.s.listen(8)
        self.replies, self.conns = replies, []
        threading.Thread(target=self.loop, daemon=True).start()
        ctx.on_cleanup(self.close)

    def loop(self):
        while True:
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            self.conns.append(c)
            # each connection on its own: one that closes at once, or sends no request, stops no other
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        try:
            line = c.makefile("rb").readline()
            if not line:
                return
            for reply in self.replies[json.loads(line)["op"]]:
                c.sendall(json.dumps(reply).encode() + b"\n")
        except (OSError, ValueError, KeyError) as e:
            print("    fake daemon: %r" % e)

    def close(self):
        self.s.close()
        for c in self.conns:
            c.close()
        os.unlink(self.path)


# what an agent's exec can hold: ESC sequences (a title, a screen clear) and U+009B, CSI in UTF-8
EVIL = "\x1b]0;pwned\x07\x1b[2J\u009b1A\x7f"
EVIL_SHOWN = b"\\x1b]0;pwned\\x07\\x1b[2J\\xc2\\x9b1A\\x7f"


def terminal_safe(out):
    """No byte a terminal acts on but the lines' ends: C0, DEL, C1 in UTF-8 (c2 80..9f)."""
    for i, c in enumerate(out):
        if (c < 0x20 and c != 0x0a) or c == 0x7f or (c == 0xc2 and 0x80 <= out[i + 1:i + 2][0] < 0xa0):
            return False
    return True


def test_approvals_and_ps_escape_what_an_agent_wrote(ctx):
    """`execgate approvals` (the list and --watch) and `execgate ps` show an exec's file name,
    arguments and command with their control characters as \\xNN: an agent waiting for an
    approval cannot redraw what the person who answers sees."""
    appr = {"approval_id": "a-1", "session": "s-7f3a", "pid": 42, "depth": 1, "seconds_left": 50,
            "rule": "ask", "argv": ["rm", "-rf", "/tmp/x" + EVIL], "filename": "/bin/rm" + EVIL,
            "event": "requested"}
    fake = FakeDaemon(ctx, {
        "approvals": [{"ok": True, "approvals": [appr]}, appr],
        "ps": [{"ok": True, "processes": [{"id": "p1", "pid": 42, "session": "s-7f3a", "status": "running",
                                           "runtime_ms": 1500, "command": "make " + EVIL}]}]})
    r = ctx.run([ctx.execgate, "approvals", "-p", fake.pin_path])
    assert terminal_safe(r.stdout), r.stdout
    assert b" rm -rf '/tmp/x" + EVIL_SHOWN + b"'\n" in r.stdout, r.stdout
    w = subprocess.Popen([ctx.execgate, "approvals", "--watch", "-p", fake.pin_path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    ctx.on_cleanup(w.kill)
    lines = [w.stdout.readline() for _ in range(3)]      # the header, the approval, the event
    w.kill()
    assert terminal_safe(b"".join(lines)), lines
    assert lines[2], (lines, w.stderr.read())
    assert lines[2] == b"a-1 requested s-7f3a pid 42: /bin/rm" + EVIL_SHOWN + b"\n", lines
    r = ctx.run([ctx.execgate, "ps", "-p", fake.pin_path])
    assert terminal_safe(r.stdout), r.stdout
    assert r.stdout.splitlines()[1].endswith(b"  make " + EVIL_SHOWN), r.stdout
