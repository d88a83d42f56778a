# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The HTTP and WebSocket API (docs/api.md): off by default, tokens (401
counted), runs as --api-run-as, approvals answered with the token's name
recorded, a peer inside a session refused, the event stream (SSE and
WebSocket) with query's filters, a run's terminal over WebSocket, the
bounds, the page at / in headless Chromium (the token typed into its
form, rows that stay put, what runs shown, whole before it is approved),
and docs/api.md's curl examples run as written."""
import base64
import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import threading
import time

import eg
from eg import token

POLICY = """
sandbox: {seccomp: {execve: {approval_timeout: 20s}}}
commands:
  - {name: ask-touch, basenames: [touch], context: [nested], decision: approval, message: "touch needs a yes"}
"""

TOKENS = {"alice": "alice-token-0123456789abcdef", "bob": "bob-token-0123456789abcdef"}


def token_file(ctx, mode=0o600, text=None):
    path = os.path.join(ctx.tmpdir(), "tokens")
    with open(path, "w") as f:
        f.write(text if text is not None else
                "# name token\n" + "".join("%s %s\n" % kv for kv in TOKENS.items()))
    os.chmod(path, mode)
    return path


class Api:
    def __init__(self, ctx, policy=POLICY, run_as="nobody", extra=()):
        self.ctx = ctx
        pol = os.path.join(ctx.tmpdir(), "policy.yaml")
        with open(pol, "w") as f:
            f.write(policy)
        os.chmod(pol, 0o644)
        self.state = ctx.tmpdir()
        args = ["--policy", pol, "--state-dir", self.state, "--api-listen", "127.0.0.1:0",
                "--api-token-file", token_file(ctx)] + (["--api-run-as", run_as] if run_as else []) + list(extra)
        self.d = ctx.daemon(*args)
        m = eg.wait_until(lambda: re.search(r"HTTP API on port (\d+)", self.d.err()), what="the API's port")
        self.port = int(m.group(1))

    def req(self, method, path, body=None, tok="alice", headers=None, raw=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        h = dict(headers or {})
        if tok:
            h["Authorization"] = "Bearer " + TOKENS.get(tok, tok)
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if data is not None:
            h["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        out = r.read()
        c.close()
        try:
            return r.status, json.loads(out)
        except ValueError:
            return r.status, out

    def ok(self, method, path, body=None, tok="alice", want=200):
        st, j = self.req(method, path, body, tok)
        assert st == want and j.get("ok") is True, (method, path, st, j)
        return j

    def metric(self, name, label=None):
        r = self.ctx.run([self.ctx.execgate, "metrics", "-p", self.d.pin_path])
        for line in r.stdout.decode().splitlines():
            if line.startswith(name + ("{" + label + "}" if label else " ")):
                return float(line.split()[-1])
        return None

    def approvals(self):
        return self.ok("GET", "/v1/approvals")["approvals"]


# ---- a minimal WebSocket client (RFC 6455), enough for the tests ------------

class WS:
    def __init__(self, port, path, tok="alice"):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=15)
        key = base64.b64encode(os.urandom(16)).decode()
        hdr = ("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n" % (path, port, key))
        if tok:
            hdr += "Authorization: Bearer %s\r\n" % TOKENS.get(tok, tok)
        self.s.sendall((hdr + "\r\n").encode())
        resp = b""
        while b"\r\n\r\n" not in resp:
            b = self.s.recv(1)
            if not b:
                break
            resp += b
        self.status = int(resp.split(b" ", 2)[1]) if resp else 0
        if self.status == 101:
            want = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode())
                                    .digest()).decode()
            assert want.encode() in resp, resp
        self.buf = b""

    def send(self, data, text=False):
        if isinstance(data, str):
            data, text = data.encode(), True
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x80 | (1 if text else 2)])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        self.s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _need(self, n):
        while len(self.buf) < n:
            b = self.s.recv(65536)
            if not b:
                raise EOFError("the server closed the WebSocket")
            self.buf += b

    def recv(self):
        """(opcode, payload) of the next whole frame."""
        self._need(2)
        op, n = self.buf[0] & 0x0f, self.buf[1] & 0x7f
        off = 2
        if n == 126:
            self._need(4)
            n, off = struct.unpack(">H", self.buf[2:4])[0], 4
        elif n == 127:
            self._need(10)
            n, off = struct.unpack(">Q", self.buf[2:10])[0], 10
        self._need(off + n)
        data, self.buf = self.buf[off:off + n], self.buf[off + n:]
        return op, data

    def message(self):
        """(opcode, payload) of the next whole message: its fragments joined."""
        op, data = self.recv_frame()
        while not self.fin:
            cont, more = self.recv_frame()
            assert cont == 0, ("a fragment that is not a continuation", cont)
            data += more
        return op, data

    def recv_frame(self):
        self._need(1)
        self.fin = bool(self.buf[0] & 0x80)
        return self.recv()

    def close(self):
        self.s.close()


def until_frame(ws, pred, what, timeout=10):
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        ws.s.settimeout(max(0.1, deadline - time.monotonic()))
        op, data = ws.recv()
        seen.append((op, data[:200]))
        if pred(op, data):
            return op, data
    raise AssertionError("no %s within %ss: %r" % (what, timeout, seen[-5:]))


# ---- the options ---------------------------------------------------------------

def test_off_by_default_and_its_options(ctx):
    d = ctx.daemon()
    r = ctx.run([ctx.execgate, "metrics", "-p", d.pin_path])
    assert b"execgate_api_" not in r.stdout, "no API unless --api-listen"
    d.stop()
    bad = [
        (["--api-listen", "127.0.0.1:0"], b"needs --api-token-file"),
        (["--api-token-file", "/nonexistent"], b"go with --api-listen"),
        (["--api-listen", "127.0.0.1:0", "--api-token-file", token_file(ctx), "--api-run-as", "root"],
         b"never runs anything as root"),
        (["--api-listen", "nohost:1", "--api-token-file", token_file(ctx)], b"numeric address"),
    ]
    for args, msg in bad:
        r = ctx.run([ctx.execgate, "daemon", "--output", os.path.join(ctx.tmpdir(), "o")] + args, check=False)
        assert r.returncode != 0 and msg in r.stderr, (args, r.returncode, r.stderr)
    # a token file that group or others may read, or that holds a bad line, is refused at start
    for tf, msg in [(token_file(ctx, 0o640), b"not readable"), (token_file(ctx, 0o604), b"not readable"),
                    (token_file(ctx, text="alice short\n"), b"want 'NAME TOKEN'"),
                    (token_file(ctx, text="a %s\na %s\n" % ("x" * 20, "y" * 20)), b"a name given twice")]:
        d = ctx.daemon("--api-listen", "127.0.0.1:0", "--api-token-file", tf, ready=False)
        d.proc.wait(30)
        assert d.proc.returncode != 0, tf
        assert msg in d.err().encode() or (msg == b"not readable" and b"only root" in d.err().encode()), d.err()


def test_tokens_401_counted(ctx):
    a = Api(ctx)
    for tok in (None, "wrong-token-0123456789", "short"):
        st, j = a.req("GET", "/v1/runs", tok=tok)
        assert st == 401 and j["ok"] is False and "token" in j["error"], (tok, st, j)
    # a query argument is not a token
    st, _ = a.req("GET", "/v1/approvals?token=" + TOKENS["alice"], tok=None)
    assert st == 401
    # a WebSocket upgrade without a token is refused before it is one
    ws = WS(a.port, "/v1/events", tok=None)
    assert ws.status == 401, ws.status
    ws.close()
    assert a.metric("execgate_api_refused_total", 'reason="unauthorized"') == 5, a.d.err()
    j = a.ok("GET", "/v1/whoami", tok="bob")
    assert j["token"] == "bob" and j["run_as_uid"] == 65534, j
    assert a.metric("execgate_api_requests_total") >= 1


def test_runs_as_run_as_user(ctx):
    a = Api(ctx)
    tok = token()
    j = a.ok("POST", "/v1/runs", {"argv": ["sh", "-c", "echo %s; id -u; read l; echo got=$l" % tok]}, want=201)
    pid = j["id"]
    runs = a.ok("GET", "/v1/runs")["processes"]
    me = [p for p in runs if p["id"] == pid]
    assert me and me[0]["uid"] == 65534, runs
    a.ok("POST", "/v1/runs/%s/write" % pid, {"data": "hello\n"})
    out = ""
    deadline = time.monotonic() + 10
    while "got=hello" not in out:
        assert time.monotonic() < deadline, out
        j = a.ok("GET", "/v1/runs/%s/poll" % pid)
        out += base64.b64decode(j.get("data_b64") or "").decode()
        time.sleep(0.05)
    assert out.startswith(tok + "\n65534\n"), out
    eg.wait_until(lambda: a.ok("GET", "/v1/runs/%s" % pid)["state"] == "exited", what="the run's end")
    log = a.ok("GET", "/v1/runs/%s/log?offset=0" % pid)
    assert base64.b64decode(log["data_b64"]).decode() == out, log
    # kill and keys
    j = a.ok("POST", "/v1/runs", {"argv": ["sleep", "300"]}, want=201)
    a.ok("POST", "/v1/runs/%s/kill" % j["id"], {"signal": "TERM"})
    eg.wait_until(lambda: a.ok("GET", "/v1/runs/%s" % j["id"])["state"] != "running",
                  what="killed: %r" % (a.ok("GET", "/v1/runs/%s" % j["id"]),))
    assert a.ok("GET", "/v1/runs/%s" % j["id"])["signal"] in ("TERM", "SIGTERM", 15), \
        a.ok("GET", "/v1/runs/%s" % j["id"])
    # what the routes do not offer is not reached through them
    st, j = a.req("GET", "/v1/runs/p-999/poll")
    assert st == 404, (st, j)
    st, j = a.req("POST", "/v1/runs", raw=b"[1,2")
    assert st == 400, (st, j)
    st, j = a.req("DELETE", "/v1/runs")
    assert st in (404, 405), st


def test_no_runs_without_run_as(ctx):
    a = Api(ctx, run_as=None)
    st, j = a.req("POST", "/v1/runs", {"argv": ["true"]})
    assert st == 403 and "--api-run-as" in j["error"], (st, j)


def ask_touch(a, f):
    """A session that asks to touch f (the policy's ask-touch rule): its
    process, and the approval pending for it. The process prints rc=N."""
    p = subprocess.Popen([a.ctx.execgate, "exec", "-p", a.d.pin_path, "--", "sh", "-c", "touch %s; echo rc=$?" % f],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p, eg.wait_until(a.approvals, what="a pending approval")[0]


def test_approvals_answered_with_the_token_name(ctx):
    a = Api(ctx)
    tmp = ctx.tmpdir()
    f1 = os.path.join(tmp, "yes-" + token())
    p, ap = ask_touch(a, f1)
    assert ap["argv"] == ["touch", f1] and ap["rule"] == "ask-touch" and ap["message"] == "touch needs a yes", ap
    one = a.ok("GET", "/v1/approvals/" + ap["approval_id"])
    assert one["approvals"][0]["approval_id"] == ap["approval_id"], one
    # a process inside a session cannot answer it through the API
    r = subprocess.run([ctx.execgate, "exec", "-p", a.d.pin_path, "--", "curl", "-s", "-o", "/dev/null", "-w",
                        "%{http_code}", "-X", "POST", "-H", "Authorization: Bearer " + TOKENS["alice"],
                        "http://127.0.0.1:%d/v1/approvals/%s/approve" % (a.port, ap["approval_id"])],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert r.stdout == b"403", (r.stdout, r.stderr)
    assert a.approvals(), "still pending after the refused answer"
    assert a.metric("execgate_api_refused_total", 'reason="in_session"') >= 1
    a.ok("POST", "/v1/approvals/%s/approve" % ap["approval_id"], {"reason": "looks fine"}, tok="bob")
    out, err = p.communicate(timeout=20)
    assert b"rc=0" in out and os.path.exists(f1), (out, err)
    ev = a.d.wait_for(lambda e: e.get("type") == "approval" and e.get("approval_id") == ap["approval_id"] and
                      e["event"] == "approved", what="the approved record")[0]
    assert ev["answered_by"]["via"] == "api" and ev["answered_by"]["token"] == "bob", ev
    assert ev["answered_by"]["uid"] == 65534 and ev["reason"] == "looks fine", ev
    # denied
    f2 = os.path.join(tmp, "no-" + token())
    p, ap = ask_touch(a, f2)
    a.ok("POST", "/v1/approvals/%s/deny" % ap["approval_id"])
    out, err = p.communicate(timeout=20)
    assert b"rc=126" in out and not os.path.exists(f2), out
    ev = a.d.wait_for(lambda e: e.get("type") == "approval" and e.get("approval_id") == ap["approval_id"] and
                      e["event"] == "denied", what="the denied record")[0]
    assert ev["answered_by"]["token"] == "alice", ev
    st, j = a.req("POST", "/v1/approvals/a-0000/approve")
    assert st == 404, (st, j)


# a client that sends its request and closes at once: its socket is then an orphan
# (FIN: inode 0 in the kernel's table) or gone (a reset: not in the table at all)
HIT_AND_RUN = r"""
import socket, struct, sys
port, path, tok, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
for _ in range(int(sys.argv[5])):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
    s.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Content-Length: 0\r\n\r\n" % (path, tok)).encode())
    if mode == "reset":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
print("sent")
"""


def test_a_client_that_closes_at_once_is_not_taken_for_one_elsewhere(ctx):
    """A process in a session sends its answer to its own approval and
    closes its end before the daemon looks for it: the socket is then an
    orphan (held by no file) or gone after a reset. Neither is a client on
    another host: the answer is refused, and the approval still waits."""
    a = Api(ctx)
    tmp = ctx.tmpdir()
    f = os.path.join(tmp, "self-" + token())
    p, ap = ask_touch(a, f)
    refused0 = a.metric("execgate_api_refused_total", 'reason="in_session"') or 0
    for mode in ("fin", "reset"):
        r = subprocess.run([ctx.execgate, "exec", "-p", a.d.pin_path, "--", "python3", "-c", HIT_AND_RUN,
                            str(a.port), "/v1/approvals/%s/approve" % ap["approval_id"], TOKENS["alice"], mode, "20"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        assert r.stdout == b"sent\n", (mode, r.stdout, r.stderr)
    # the 20 closed with a FIN were read and refused (the server drops one reset before its request)
    eg.wait_until(lambda: (a.metric("execgate_api_refused_total", 'reason="in_session"') or 0) >= refused0 + 20,
                  what="20 refusals counted")
    assert [x["approval_id"] for x in a.approvals()] == [ap["approval_id"]], "the approval was answered from inside"
    assert not [e for e in a.d.events() if e.get("type") == "approval" and e.get("event") == "approved"]
    a.ok("POST", "/v1/approvals/%s/deny" % ap["approval_id"])
    out, err = p.communicate(timeout=20)
    assert b"rc=126" in out and not os.path.exists(f), (out, err)


def test_a_run_from_inside_a_session_is_refused(ctx):
    a = Api(ctx)
    r = subprocess.run([ctx.execgate, "exec", "-p", a.d.pin_path, "--", "curl", "-s", "-o", "/dev/null", "-w",
                        "%{http_code}", "-X", "POST", "-d", '{"argv":["true"]}',
                        "-H", "Authorization: Bearer " + TOKENS["alice"], "http://127.0.0.1:%d/v1/runs" % a.port],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert r.stdout == b"403", (r.stdout, r.stderr)
    assert not a.ok("GET", "/v1/runs")["processes"]
    # nothing else either: not the approvals, not the event stream (a token is held outside sessions)
    for path in ("/v1/approvals", "/v1/events?type=exec", "/v1/whoami"):
        r = subprocess.run([ctx.execgate, "exec", "-p", a.d.pin_path, "--", "curl", "-s", "-o", "/dev/null", "-w",
                            "%{http_code}", "-m", "5", "-H", "Authorization: Bearer " + TOKENS["alice"],
                            "http://127.0.0.1:%d%s" % (a.port, path)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        assert r.stdout == b"403", (path, r.stdout, r.stderr)
    r = subprocess.run([ctx.execgate, "exec", "-p", a.d.pin_path, "--", "curl", "-s", "-o", "/dev/null", "-w",
                        "%{http_code}", "-m", "5", "-H", "Authorization: Bearer " + TOKENS["alice"],
                        "-H", "Connection: Upgrade", "-H", "Upgrade: websocket", "-H", "Sec-WebSocket-Version: 13",
                        "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                        "http://127.0.0.1:%d/v1/events" % a.port],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert r.stdout == b"403", ("websocket", r.stdout, r.stderr)
    assert a.metric("execgate_api_refused_total", 'reason="in_session"') >= 5


# a session's process hides its own copy of its API connection (a thread with a file table of its
# own) and hands the connection to the daemon (a control request it never ends): the daemon alone
# held it, and a holder outside every session placed the client outside
HAND_TO_DAEMON = r"""
import array, ctypes, os, socket, sys, threading
port, ctl, tok = int(sys.argv[1]), sys.argv[2], sys.argv[3]
t = socket.create_connection(("127.0.0.1", port))
u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
u.connect(ctl)
u.sendmsg([b"{"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [t.fileno()]))])
if len(sys.argv) > 4:
    u.recv(1)           # an outside holder: it has taken the fd
fd = t.detach()
unshared, closed, out = threading.Event(), threading.Event(), []
def worker():
    if ctypes.CDLL(None, use_errno=True).unshare(0x400):      # CLONE_FILES
        out.append("unshare failed")
        unshared.set()
        return
    unshared.set()
    closed.wait()
    os.write(fd, ("GET /v1/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                  "Connection: close\r\n\r\n" % tok).encode())
    data = b""
    while True:
        b = os.read(fd, 4096)
        if not b:
            break
        data += b
    out.append(data.split(b" ", 2)[1].decode() if data else "none")
th = threading.Thread(target=worker)
th.start()
unshared.wait()
os.close(fd)            # gone from the process's own table; the worker's copy remains
closed.set()
th.join()
print(out[0])
"""


def test_a_connection_handed_to_the_daemon_is_not_placed_outside(ctx):
    """A session's process hides its copy of its API connection in a thread's own file table and
    hands the connection over: to the daemon, or to a process outside every session. Either was
    the only holder found, and placed the client outside (200). Now the daemon's own hold cannot
    be placed, and the thread's table is read too: 403 both ways."""
    a = Api(ctx)
    ctl = json.loads(ctx.run([ctx.execgate, "status", "--json", "-p", a.d.pin_path]).stdout)["socket"]
    code = os.path.join(ctx.tmpdir(), "hand.py")
    with open(code, "w") as f:
        f.write(HAND_TO_DAEMON)
    os.chmod(os.path.dirname(code), 0o755)
    os.chmod(code, 0o644)
    r = subprocess.run([ctx.execgate, "exec", "-p", a.d.pin_path, "--", "python3", code, str(a.port), ctl,
                        TOKENS["alice"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert r.stdout.strip() == b"403", (r.stdout, r.stderr[-500:])
    # handed to a process outside every session (here this test, over a unix socket of its own):
    # the copy in the thread's own file table is found all the same
    path = os.path.join(ctx.tmpdir(), "holder.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    os.chmod(path, 0o777)
    kept = []

    def holder():
        c, _ = srv.accept()
        msg, anc, _, _ = c.recvmsg(16, socket.CMSG_SPACE(4))
        kept.extend(anc)
        c.send(b"k")
        kept.append(c)
    th = threading.Thread(target=holder, daemon=True)
    th.start()
    # an accept() that is never met ends with the test (shutdown wakes it; close alone does not)
    ctx.on_cleanup(lambda: (srv.shutdown(socket.SHUT_RDWR), srv.close()))
    r = subprocess.run([ctx.execgate, "exec", "-p", a.d.pin_path, "--", "python3", code, str(a.port), path,
                        TOKENS["alice"], "outside"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    th.join(10)
    assert kept, "the holder took no fd"
    assert r.stdout.strip() == b"403", (r.stdout, r.stderr[-500:])


def sse_lines(a, path, n, timeout=10):
    """The first n data lines of an SSE stream."""
    c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=timeout)
    c.request("GET", path, headers={"Authorization": "Bearer " + TOKENS["alice"], "Accept": "text/event-stream"})
    r = c.getresponse()
    assert r.status == 200 and r.getheader("content-type").startswith("text/event-stream"), r.status
    out = []
    while len(out) < n:
        line = r.fp.readline()
        if not line:
            break
        if line.startswith(b"data: "):
            out.append(json.loads(line[6:]))
    c.close()
    return out


def test_event_stream_sse_and_websocket_with_filters(ctx):
    a = Api(ctx)
    tok = token()
    import threading
    got = {}

    def reader():
        got["sse"] = sse_lines(a, "/v1/events?type=exec&comm=true", 1, timeout=20)
    t = threading.Thread(target=reader)
    t.start()
    ws = WS(a.port, "/v1/events?type=exec&comm=true")
    assert ws.status == 101, ws.status
    # the streams are followers once the daemon has them: keep making execs until both see one
    deadline = time.monotonic() + 15
    while t.is_alive() and time.monotonic() < deadline:
        subprocess.run(["true", tok])
        time.sleep(0.1)
    t.join(1)
    assert got.get("sse") and got["sse"][0]["comm"] == "true", got
    op, data = until_frame(ws, lambda op, d: op == 1, "an exec record")
    rec = json.loads(data)
    assert rec["type"] == "exec" and rec["comm"] == "true", rec
    ws.close()
    # a record longer than one WebSocket frame's buffer (64 KiB): one message in fragments
    ws = WS(a.port, "/v1/events?type=exec&comm=true")
    assert ws.status == 101, ws.status
    big = token()
    deadline = time.monotonic() + 15
    rec = None
    while rec is None and time.monotonic() < deadline:
        subprocess.run(["true", big] + ["a"] * 30000)
        ws.s.settimeout(2)
        try:
            while True:
                op, data = ws.message()
                r = json.loads(data)
                if big in r["argv"]:
                    rec = r
                    break
        except socket.timeout:
            pass
    assert rec and rec["argv"] == ["true", big] + ["a"] * 30000 and len(data) > 65536, (rec and len(data))
    ws.close()
    # ?since= sends the file's records first
    evs = sse_lines(a, "/v1/events?type=exec&since=1h&comm=true", 1)
    assert evs and evs[0]["comm"] == "true"
    st, j = a.req("GET", "/v1/events?bogus=1")
    assert st == 400 and "unknown filter" in j["error"], (st, j)


def test_a_query_argument_too_long_is_refused_not_dropped(ctx):
    """An argument of 512 bytes or more (64 for a run's log) ended the
    reading of the query arguments (libwebsockets says -1 both past the
    last argument and for one that does not fit): the filters after it
    were left out, and the stream sent every record unfiltered; ?offset=
    after a long argument was not seen. Now such an argument is a 400 that
    names it, and those after it are read."""
    a = Api(ctx)

    def status(path):
        c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=10)
        c.request("GET", path, headers={"Authorization": "Bearer " + TOKENS["alice"]})
        r = c.getresponse()
        body = r.read() if r.status != 200 or "/v1/events" not in path else b"{}"   # a stream goes on
        c.close()
        return r.status, json.loads(body)
    long_ = "x" * 600
    for path in ("/v1/events?comm=%s&type=exec" % long_, "/v1/events?%s&type=exec" % long_,
                 "/v1/events?type=exec&filename=/%s" % long_):
        st, j = status(path)
        assert st == 400 and "too long" in j["error"], (path[:40], st, j)
    assert "query argument comm:" in status("/v1/events?comm=%s&type=exec" % long_)[1]["error"]
    # over WebSocket, the error message
    ws = WS(a.port, "/v1/events?comm=%s&type=exec" % long_)
    assert ws.status == 101, ws.status
    op, data = until_frame(ws, lambda op, d: op == 1, "the error message")
    assert "query argument comm:" in json.loads(data)["error"], data
    ws.close()
    # what fits is taken, and a filter after it still counts
    st, j = status("/v1/events?comm=%s&type=exec" % ("x" * 400))
    assert st == 200, (st, j)
    st, j = status("/v1/events?comm=%s&bogus=1" % ("x" * 400))
    assert st == 400 and "unknown filter bogus" in j["error"], (st, j)
    # a run's log: ?offset= after a long argument is read, and one too long is refused
    rid = a.ok("POST", "/v1/runs", {"argv": ["true"]}, want=201)["id"]
    assert a.req("GET", "/v1/runs/%s/log?offset=0" % rid)[0] == 200
    for q in ("x=%s&offset=abc" % ("y" * 100), "offset=%s" % ("1" * 70)):
        st, j = status("/v1/runs/%s/log?%s" % (rid, q))
        assert st == 400 and "?offset= takes a number" in j["error"], (q[:20], st, j)


def test_bytes_that_are_not_utf8_reach_the_approver_and_the_stream(ctx):
    """A command with an argument that is not UTF-8 (a Latin-1 file name):
    its approval was denied at once with nobody asked (the listing's entry
    went through jansson, which refuses such bytes), and a filtered event
    stream left its exec record out. Now the approver sees it (U+FFFD in
    the API's JSON, the exact bytes in `approvals --json ID`), approves it,
    and the stream carries the record."""
    a = Api(ctx)
    tag = token()
    f = os.path.join(ctx.tmpdir(), "caf").encode() + b"\xe9-" + tag.encode()
    p = subprocess.Popen([ctx.execgate.encode(), b"exec", b"-p", a.d.pin_path.encode(), b"--", b"sh", b"-c",
                          b"touch '" + f + b"'; echo rc=$?"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ap = eg.wait_until(a.approvals, what="a pending approval")[0]
    except AssertionError:
        p.kill()
        out, err = p.communicate()
        raise AssertionError("no approval asked: %r %r" % (out, err))
    assert ap["argv"] == ["touch", f.decode("utf-8", "replace")], ap
    r = ctx.run([ctx.execgate, "approvals", "--json", "-p", a.d.pin_path, ap["approval_id"]])
    assert json.loads(r.stdout)["argv"] == ["touch", f.decode("utf-8", "replace")], r.stdout
    r = ctx.run([ctx.execgate, "approvals", "-p", a.d.pin_path])
    assert ("caf\ufffd-" + tag).encode() in r.stdout, r.stdout
    # the record keeps the bytes themselves
    ev = a.d.wait_for(lambda e: e.get("type") == "approval" and e.get("approval_id") == ap["approval_id"],
                      what="the requested record")[0]
    assert ev["argv"] == ["touch", f.decode("utf-8", "surrogateescape")], ev
    a.ok("POST", "/v1/approvals/%s/approve" % ap["approval_id"])
    out, err = p.communicate(timeout=20)
    assert b"rc=0" in out and os.path.exists(f), (out, err)
    # its session's (a touch elsewhere on the host is another record)
    evs = sse_lines(a, "/v1/events?type=exec&comm=touch&session=%s&since=1h" % ev["session"], 1)
    assert evs and evs[0]["argv"] == ["touch", f.decode("utf-8", "surrogateescape")], evs


def test_a_websocket_refused_with_odd_bytes_is_told_and_closed(ctx):
    """A WebSocket whose filter holds a byte that is not UTF-8 is refused:
    the message quoting it could not be built with jansson, so nothing was
    sent, and the connection, with no timer and no timeout, stayed open
    for good (a slot held). Now it gets the error and is closed."""
    a = Api(ctx)
    ws = WS(a.port, "/v1/events?uid=%ff")
    assert ws.status == 101, ws.status
    op, data = until_frame(ws, lambda op, d: op == 1, "the error message")
    assert json.loads(data)["type"] == "error", data
    try:
        until_frame(ws, lambda op, d: op == 8, "a close", timeout=15)
    except EOFError:
        pass
    ws.close()


def test_an_sse_client_that_goes_frees_its_stream(ctx):
    """libwebsockets reads nothing of an HTTP connection while it sends
    the answer, so an SSE client that closed its end was seen gone only
    when a record it matched failed to be written: with a filter that
    matches seldom, its stream kept an API connection and the daemon's
    follower for good. Each tick now looks whether the client is there."""
    a = Api(ctx)

    def followers():
        r = ctx.run([ctx.execgate, "stats", "--json", "-p", a.d.pin_path])
        return json.loads(r.stdout)["counters"]["followers"]
    c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=10)
    c.request("GET", "/v1/events?type=approval", headers={"Authorization": "Bearer " + TOKENS["alice"]})
    r = c.getresponse()
    assert r.status == 200, r.status
    eg.wait_until(lambda: followers() == 1, what="the stream's follower")
    r.close()       # the response holds the socket (a stream has no length)
    c.close()
    eg.wait_until(lambda: followers() == 0, timeout=3, what="the follower gone with its client")
    assert a.metric("execgate_api_refused_total", 'reason="slow_client"') in (None, 0), "counted as too slow"
    # one that sent a byte more after its request (a stray CRLF) before it closed: gone too
    s = socket.create_connection(("127.0.0.1", a.port))
    s.sendall(("GET /v1/events?type=approval HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
               "Authorization: Bearer %s\r\n\r\n" % TOKENS["alice"]).encode())
    assert s.recv(4096).startswith(b"HTTP/1.1 200"), "no answer"
    eg.wait_until(lambda: followers() == 1, what="the stream's follower")
    s.sendall(b"\r\n")
    s.close()
    eg.wait_until(lambda: followers() == 0, timeout=3, what="the follower gone with a client that sent more")


def test_a_follower_that_does_not_read_is_dropped(ctx):
    """An event stream (SSE, WebSocket) whose client reads nothing while
    records keep coming: past 4 MiB unread the daemon closes it, counted
    (slow_client), rather than keeping its slot and its queue."""
    # records of about 1 MB (eight arguments of 120 KB): few of them fill the 4 MiB and the sockets
    a = Api(ctx, extra=("--max-argv-bytes", "1048576"))

    def small():
        # a small receive buffer, set before the connect: the kernel holds little for the client
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", a.port))
        return s
    sse = small()
    sse.sendall(("GET /v1/events?type=exec HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
                 "Authorization: Bearer %s\r\n\r\n" % TOKENS["alice"]).encode())
    key = base64.b64encode(os.urandom(16)).decode()
    ws = small()
    ws.sendall(("GET /v1/events?type=exec HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer %s\r\n\r\n"
                % (key, TOKENS["alice"])).encode())
    args = ["/bin/true"] + ["a" * 120000] * 8
    deadline = time.monotonic() + 60
    spawned = 0
    while (a.metric("execgate_api_refused_total", 'reason="slow_client"') or 0) < 2:
        assert time.monotonic() < deadline, "no follower dropped"
        for _ in range(5):
            os.waitpid(os.posix_spawn(args[0], args, {}), 0)
        spawned += 5
    # both ends are closed: what was in flight, then the end (EOF or a reset), not a wait
    for s in (sse, ws):
        s.settimeout(10)
        try:
            while s.recv(1 << 20):
                pass
        except ConnectionResetError:
            pass
    print("    dropped after %d execs of 1 MB records" % spawned)
    assert a.approvals() == []      # the API goes on
    # a since= whose records are more than 4 MiB: what fits, an end event saying so, and the end
    s = socket.create_connection(("127.0.0.1", a.port), timeout=15)
    s.sendall(("GET /v1/events?type=exec&since=1h HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
               "Authorization: Bearer %s\r\n\r\n" % TOKENS["alice"]).encode())
    got = b""
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        got += b
    s.close()
    assert got.startswith(b"HTTP/1.1 200") and b"event: end" in got and b"more than a client may leave unread" in got, \
        (got[:200], got[-300:])
    assert 3 << 20 < len(got) <= (4 << 20) + 4096, len(got)


def test_event_streams_leave_followers_for_query_follow(ctx):
    """Each event stream holds one of the daemon's 64 followers for as long
    as it is open, with no idle timeout: one token holder opening streams
    took every follower, and `execgate query --follow` was refused. The API
    serves 16 at once; the next gets 503 with the error (a WebSocket, an
    error message), and a stream closed makes room for another."""
    a = Api(ctx)

    def open_sse():
        c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=10)
        c.request("GET", "/v1/events?type=exec", headers={"Authorization": "Bearer " + TOKENS["alice"]})
        r = c.getresponse()
        if r.status != 200:
            body = r.read()
            c.close()
            return r.status, json.loads(body)
        return 200, r       # the response holds the socket (a stream has no length): closed with it
    streams = []
    try:
        for i in range(16):
            st, r = open_sse()
            assert st == 200, (i, st, r)
            streams.append(r)

        def followers():
            r = ctx.run([ctx.execgate, "stats", "--json", "-p", a.d.pin_path])
            return json.loads(r.stdout)["counters"]["followers"]
        eg.wait_until(lambda: followers() == 16, what="16 followers, one a stream")
        st, j = open_sse()
        assert st == 503 and j["ok"] is False and "16 event streams" in j["error"], (st, j)
        ws = WS(a.port, "/v1/events?type=exec")
        assert ws.status == 101, ws.status
        op, data = until_frame(ws, lambda op, d: op == 1, "the error message")
        assert "16 event streams" in json.loads(data)["error"], data
        ws.close()
        assert (a.metric("execgate_api_refused_total", 'reason="too_many"') or 0) >= 2
        # the control socket's follower starts, and sees a record
        tok = token()
        fol = subprocess.Popen([ctx.execgate, "query", "-p", a.d.pin_path, "--follow", "--json", "--comm", "true"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        ctx.on_cleanup(fol.kill)
        got = []

        def reader():
            for line in fol.stdout:
                if tok.encode() in line:
                    got.append(line)
                    return
        t = threading.Thread(target=reader, daemon=True)
        t.start()
        deadline = time.monotonic() + 15
        while not got and fol.poll() is None and time.monotonic() < deadline:
            subprocess.run(["true", tok])
            time.sleep(0.2)
        assert got, ("query --follow saw nothing", fol.poll(), fol.stderr.read() if fol.poll() is not None else "")
        fol.kill()
        # one closed: another can open (the API saw it go)
        streams.pop().close()

        def another():
            st, r = open_sse()
            if st == 200:
                streams.append(r)
            return st == 200
        eg.wait_until(another, timeout=5, what="a stream once one was closed")
    finally:
        for r in streams:
            r.close()


def test_pty_over_websocket(ctx):
    a = Api(ctx)
    j = a.ok("POST", "/v1/runs", {"argv": ["sh", "-c", "stty size; read l; echo got=$l; stty size; exit 7"],
                                  "pty": True}, want=201)
    ws = WS(a.port, "/v1/runs/%s/pty" % j["id"])
    assert ws.status == 101
    out = b""

    def more(op, d):
        nonlocal out
        if op == 2:
            out += d
        return b"\n" in out
    until_frame(ws, more, "the first size")
    ws.send(json.dumps({"type": "resize", "rows": 33, "cols": 101}))
    ws.send(b"hi-there\r")
    until_frame(ws, lambda op, d: more(op, d) and b"33 101" in out, "the new size")
    assert b"got=hi-there" in out, out
    op, d = until_frame(ws, lambda op, d: op == 1 and json.loads(d).get("type") == "exit", "the exit frame")
    assert json.loads(d)["exit_code"] == 7, d
    ws.close()
    # a run without a terminal, and one that is not there
    j = a.ok("POST", "/v1/runs", {"argv": ["sleep", "5"]}, want=201)
    ws = WS(a.port, "/v1/runs/%s/pty" % j["id"])
    op, d = until_frame(ws, lambda op, d: op == 1, "an error frame")
    assert json.loads(d)["type"] == "error" and "no terminal" in json.loads(d)["error"], d
    ws.close()


def test_bounds(ctx):
    a = Api(ctx)
    st, j = a.req("POST", "/v1/runs", raw=b"{" + b" " * (300 * 1024) + b"}")
    assert st == 413, st
    assert a.metric("execgate_api_refused_total", 'reason="too_large"') >= 1
    # connections past the bound are refused, and those held do not keep anyone out once gone
    held = []
    try:
        for _ in range(80):
            s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
            held.append(s)
        eg.wait_until(lambda: (a.metric("execgate_api_refused_total", 'reason="too_many"') or 0) >= 1,
                      what="a refused connection")
    finally:
        for s in held:
            s.close()
    def served():
        try:
            return a.req("GET", "/v1/whoami")[0] == 200
        except OSError:
            return False    # refused (reset) while the server has not yet seen the others go
    eg.wait_until(served, what="served again")
    # requests after a refused one (its body unread, more pipelined) end the connection: the server
    # goes on serving (libwebsockets once spun on them; inputs from the fuzzer)
    for fn in ("spin-after-refused-body", "spin-after-refused-body-2"):
        with open(os.path.join(eg.ROOT, "tests", "fuzz", "corpus", "api", fn), "rb") as f:
            raw = f.read().replace(b"fuzz-token-0123456789", TOKENS["alice"].encode())
        s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
        s.sendall(raw)
        assert s.recv(64).startswith(b"HTTP/1.1 4"), fn
        s.close()
        st, j = a.req("GET", "/v1/whoami")
        assert st == 200, (fn, st, j)
    # an answered request, then one with a body and more bytes pipelined: libwebsockets completed
    # that body again and again and the API's thread spun for good (no token needed: the page's
    # GET / comes first); the connection ends instead, and the daemon's CPU stays still
    s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/runs HTTP/1.1\r\nHost: x\r\n"
              b"Content-Length: 15\r\n\r\nST /v1n-0123456789\r\n\r\n")
    assert s.recv(64).startswith(b"HTTP/1.1 200"), "the page"
    time.sleep(0.5)
    before = eg.cpu_seconds(a.d.proc.pid)
    time.sleep(1.5)
    spent = eg.cpu_seconds(a.d.proc.pid) - before
    s.close()
    assert spent < 0.4, "the daemon spent %.2f s of CPU in 1.5 s" % spent
    st, j = a.req("GET", "/v1/whoami")
    assert st == 200, (st, j)
    # a WebSocket message past its bound closes the socket
    j = a.ok("POST", "/v1/runs", {"argv": ["sleep", "30"], "pty": True}, want=201)
    ws = WS(a.port, "/v1/runs/%s/pty" % j["id"])
    ws.send(b"x" * (70 * 1024))
    try:
        until_frame(ws, lambda op, d: op == 8, "a close")
    except (EOFError, ConnectionResetError):
        pass
    eg.wait_until(lambda: (a.metric("execgate_api_refused_total", 'reason="too_large"') or 0) >= 2,
                  what="counted")


def test_connections_without_a_token_cannot_hold_every_slot(ctx):
    """Anyone who reaches the port, a process in a session too, needs no
    token for the page. A GET / that announces a body nobody reads, fed a
    byte every two seconds, kept its connection for good (each byte put
    off libwebsockets' timeout), so 70 of them held every slot: the person
    with the token was locked out and pending approvals ran to their
    timeout. A body with GET is refused and the connection ends; so is a
    request head sent a byte at a time past its time."""
    a = Api(ctx)
    heads = [b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999\r\n\r\n",
             b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
             b"GET /v1/whoami HTTP/1.1\r\nHost: x\r\nContent-Length: 999999\r\n\r\n",
             b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ",     # a head that never ends
             b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n"]   # no token, slow body
    held, kind = [], []
    t0 = time.monotonic()
    for i in range(70):
        try:
            s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
            s.sendall(heads[0 if i < 64 else i % len(heads)])
            held.append(s)
            kind.append(0 if i < 64 else i % len(heads))
        except OSError:
            pass
    stop = threading.Event()

    def trickle():
        while not stop.wait(2):
            for s in held:
                try:
                    s.send(b"x")
                except OSError:
                    pass
    t = threading.Thread(target=trickle)
    t.start()
    try:
        time.sleep(8)       # past the API's 5 s to send a request

        def served():
            try:
                return a.req("GET", "/v1/whoami")[0] == 200
            except OSError:
                return False
        eg.wait_until(served, timeout=10, what="a request with the token served while 70 trickle")
        # the server ended them all, the slow head too once its 10 s were up: each reads an
        # answer or the end, none is still waiting
        deadline = t0 + 16
        open_, kinds = 0, {}
        for s, k in zip(held, kind):
            s.settimeout(max(0.2, deadline - time.monotonic()))
            try:
                while s.recv(65536):
                    pass
            except socket.timeout:
                open_ += 1
                kinds[k] = kinds.get(k, 0) + 1
            except OSError:
                pass
        assert open_ == 0, "%d of %d connections still held by the server (%s)" % (open_, len(held), kinds)
    finally:
        stop.set()
        t.join()
        for s in held:
            s.close()


def test_idle_connections_make_room_for_a_token_holder(ctx):
    """All 64 connections taken by a client that sends nothing (no token
    needed to connect) refused every newcomer until the head sweep ended
    them ten seconds later, and one that connects again as fast kept the
    person with the token out for good. When full, the oldest connection
    still waiting for its request head makes room (counted as too_many)."""
    a = Api(ctx)
    held = []
    stop = threading.Event()

    def connect():
        try:
            held.append(socket.create_connection(("127.0.0.1", a.port), timeout=5))
        except OSError:
            pass

    def flood():
        while not stop.wait(0.05):      # 20 more a second, sending nothing
            connect()
    for _ in range(70):
        connect()
    t = threading.Thread(target=flood)
    t.start()
    try:
        def served():
            try:
                return a.req("GET", "/v1/whoami")[0] == 200
            except OSError:
                return False            # refused: the server closed it unanswered
        eg.wait_until(served, timeout=2, what="a request with the token served while 64 idle hold every slot")
        # the first idle one made room: closed by the server
        held[0].settimeout(2)
        assert held[0].recv(1) == b"", "the oldest idle connection is still open"
        assert (a.metric("execgate_api_refused_total", 'reason="too_many"') or 0) >= 1
    finally:
        stop.set()
        t.join()
        for s in held:
            s.close()


# ---- the page, in headless Chromium ------------------------------------------------

class Navigated(Exception):
    """The page was navigating (the login form reloads it) while a call was made."""


class Chromium:
    """Headless Chromium driven over its DevTools protocol (a WebSocket: the WS client above)."""

    def __init__(self, ctx, url):
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            raise eg.Skip("chromium is not installed (Debian package chromium, tools/install-deps.sh)")
        self.dir = ctx.tmpdir()
        self.p = subprocess.Popen([exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                   "--disable-extensions", "--disable-background-networking", "--hide-scrollbars",
                                   "--window-size=1200,900", "--user-data-dir=" + self.dir,
                                   "--remote-debugging-port=0", url],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        ctx.on_cleanup(self.kill)
        portfile = os.path.join(self.dir, "DevToolsActivePort")
        port = int(eg.wait_until(lambda: os.path.exists(portfile) and open(portfile).read().split("\n")[0],
                                 timeout=30, what="chromium's DevTools port"))

        def page():
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/json/list")
            ts = json.loads(c.getresponse().read())
            c.close()
            return [t for t in ts if t.get("type") == "page" and t.get("url", "").startswith(url.split("#")[0])]
        t = eg.wait_until(page, timeout=30, what="the page's target")[0]
        path = t["webSocketDebuggerUrl"].split(str(port), 1)[1]
        self.ws = WS(port, path, tok=None)
        assert self.ws.status == 101, self.ws.status
        self.n = 0

    def call(self, method, **params):
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            self.ws.s.settimeout(30)
            op, d = self.ws.recv()
            if op != 1:
                continue
            m = json.loads(d)
            if m.get("id") == self.n:
                if "navigated or closed" in m.get("error", {}).get("message", ""):
                    raise Navigated(m["error"]["message"])
                assert "error" not in m, m
                return m["result"]

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        assert "exceptionDetails" not in r, r
        return r["result"].get("value")

    def center(self, selector):
        """Where the middle of selector's element is on the screen."""
        return self.js("(function(){var r=document.querySelector(%s).getBoundingClientRect();"
                       "return [r.x + r.width / 2, r.y + r.height / 2];})()" % json.dumps(selector))

    def click(self, selector):
        self.click_at(*self.center(selector))

    def click_at(self, x, y):
        """A person's click there, whatever is there now."""
        for t in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=t, x=x, y=y, button="left", clickCount=1)

    def ids(self):
        """The ids of the table's rows, top to bottom."""
        return self.js("Array.from(document.querySelectorAll('#approvals tr.pending')).map("
                       "function(r){return r.dataset.id;})")

    def status(self):
        return self.js("document.getElementById('status').textContent")

    def screenshot(self, path):
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        os.makedirs(os.path.dirname(path), exist_ok=True)    # a clean clone has no test-output yet
        with open(path, "wb") as f:
            f.write(data)
        return data

    def kill(self):
        if self.p.poll() is None:
            os.killpg(self.p.pid, 9)
            self.p.wait()


# the page ignores a click for this long after its table changed (page.c's SETTLE)
SETTLE = 1.0


def open_page(ctx, a, tok="alice"):
    """Chromium on a's bare address, the token typed into the page's form as docs/api.md says."""
    br = Chromium(ctx, "http://127.0.0.1:%d/" % a.port)
    eg.wait_until(lambda: br.js("(function(){var e=document.getElementById('login');"
                                "return e && getComputedStyle(e).display;})()") == "block",
                  timeout=20, what="the page asking for a token")
    br.js("document.getElementById('tok').focus()")
    br.call("Input.insertText", text=TOKENS[tok])
    br.click("#login button[type=submit]")

    def ready():
        try:    # the form reloads the page: a call made meanwhile is told so
            return br.js("document.body && document.body.dataset.ready") == "1"
        except Navigated:
            return False
    eg.wait_until(ready, timeout=20, what="the page connected")
    return br


def test_page_token_typed_into_its_form(ctx):
    """docs/api.md has a person open the page's bare address and type or
    paste the token into its form, not open /#token=TOKEN: a browser
    started with that address carries the token in its argv, which every
    user reads in /proc/PID/cmdline and execgate writes in its exec
    records. Done as the docs say, the page connects and no record the
    daemon wrote holds the token."""
    with open(os.path.join(eg.ROOT, "docs", "api.md")) as f:
        doc = f.read()
    assert not re.search(r"open\s+`?https?://\S*#token=", doc), "docs/api.md has the token put in the address"
    page = doc[doc.index("\n## The page\n"):]
    assert re.search(r"type\s+or\s+paste\s+it", page) and "/proc/PID/cmdline" in page and \
        "records every exec's argv" in page, "docs/api.md says where the token goes, and why"
    a = Api(ctx)
    br = open_page(ctx, a)
    assert br.status() == "connected as alice", br.status()
    assert br.js("location.href") == "http://127.0.0.1:%d/" % a.port
    assert br.js("sessionStorage.getItem('execgate-token')") == TOKENS["alice"]
    time.sleep(0.5)
    held = [e for e in a.d.events() if TOKENS["alice"] in json.dumps(e)]
    assert not held, held[:1]
    assert [e for e in a.d.events() if e.get("type") == "exec" and "chromium" in (e.get("filename") or "")], \
        "the daemon recorded chromium's execs"


def ask(a, sh):
    """A session whose shell runs sh (which should ask for an approval), then
    prints rc=$?: its process."""
    p = subprocess.Popen([a.ctx.execgate, "exec", "-p", a.d.pin_path, "--", "sh", "-c", sh + "; echo rc=$?"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    a.ctx.on_cleanup(lambda: p.poll() is None and os.killpg(p.pid, 9))
    return p


def new_approval(a, known):
    """The pending approval whose id is not in known (waits for it)."""
    return eg.wait_until(lambda: [x for x in a.approvals() if x["approval_id"] not in known],
                         what="a new pending approval")[0]


def answered(a, aid):
    """The record of aid's answer, or None."""
    ev = [e for e in a.d.events() if e.get("type") == "approval" and e.get("approval_id") == aid and
          e["event"] != "requested"]
    return ev[0] if ev else None


def test_page_rows_stay_put(ctx):
    """The table keeps its rows where they are: the oldest request first and a
    new one appended (the daemon lists the newest first), a click within a
    second of a row coming or going does nothing, and each button answers the
    id of its own row. A click aimed at a row that just moved never answers
    another request."""
    a = Api(ctx)
    br = open_page(ctx, a)
    tmp = ctx.tmpdir()
    fa, fb = os.path.join(tmp, "a-" + token()), os.path.join(tmp, "b-" + token())
    pa = ask(a, "touch " + fa)
    ida = new_approval(a, set())["approval_id"]
    eg.wait_until(lambda: br.ids() == [ida], what="A on the page")
    time.sleep(SETTLE + 0.2)
    assert br.js("document.querySelector('#approvals tr.pending button.approve').closest('tr').dataset.id") == ida
    # the person aims at A's Approve; B comes while the pointer is there
    xy = br.center("#approvals tr.pending button.approve")
    pb = ask(a, "touch " + fb)
    idb = new_approval(a, {ida})["approval_id"]
    eg.wait_until(lambda: idb in br.ids(), timeout=5, what="B on the page")
    br.click_at(*xy)
    time.sleep(0.8)
    assert answered(a, idb) is None, ("a click aimed at A answered B", answered(a, idb))
    assert answered(a, ida) is None, ("a click just after the table changed answered A", answered(a, ida))
    assert "just changed" in br.status(), br.status()
    assert br.ids() == [ida, idb], ("oldest first, the new one appended", br.ids(), [ida, idb])
    # once the table has stood still, the same spot is still A's Approve, and answers A alone
    time.sleep(SETTLE)
    br.click_at(*xy)
    out = pa.stdout.readline()
    assert out == b"rc=0\n" and os.path.exists(fa), out
    assert eg.wait_until(lambda: answered(a, ida), what="A's answer")["event"] == "approved"
    eg.wait_until(lambda: br.status() == "approved " + ida, what="the page naming what it approved")
    # A's row leaves and B's moves up under the pointer: a click at once does nothing
    eg.wait_until(lambda: br.ids() == [idb], what="A's row gone")
    br.click_at(*xy)
    time.sleep(0.8)
    assert answered(a, idb) is None and pb.poll() is None, answered(a, idb)
    assert [x["approval_id"] for x in a.approvals()] == [idb]
    # B's own Deny answers B
    time.sleep(SETTLE)
    br.click("#approvals tr.pending[data-id='%s'] button.deny" % idb)
    out = pb.stdout.readline()
    assert out == b"rc=126\n" and not os.path.exists(fb), out
    assert eg.wait_until(lambda: answered(a, idb), what="B's answer")["event"] == "denied"


POLICY_WHAT = POLICY.replace("approval_timeout: 20s", "approval_timeout: 20s, max_argc: 100, on_truncated: approval") + \
    """  - {name: ask-what, basenames: [payload, ask-script], context: [nested], decision: approval, message: "what runs?"}
"""


def cell(br, aid, sel):
    """The text of sel in the command cell of aid's row ('' for the cell itself), None when it is not there."""
    return br.js("(function(){var e=document.querySelector(\"#approvals tr[data-id='%s'] td.cmd %s\");"
                 "return e && e.textContent;})()" % (aid, sel))


def test_page_shows_what_runs(ctx):
    """A row shows the program that runs (filename, not the argv[0] the caller
    chose) and a script's interpreter; a shortened argv (the listing keeps 32
    arguments, 2 KiB) is marked, and Approve on it does not approve: it
    fetches the whole request (GET /v1/approvals/ID) and shows it, and only
    a click after that approves. argv's strings stay text (markup is not
    made into elements), a byte that is not UTF-8 shows as an escape, and
    a row whose JSON carries one as U+FFFD says what it stands for."""
    a = Api(ctx, policy=POLICY_WHAT)
    br = open_page(ctx, a)
    tmp = ctx.tmpdir()
    os.chmod(tmp, 0o755)
    known = set()
    # execve("/tmp/.../payload", ["ls", f]): the page says payload runs
    payload = os.path.join(tmp, "payload")
    shutil.copy(shutil.which("touch"), payload)
    f1 = os.path.join(tmp, "f1-" + token())
    ask(a, "bash -c 'exec -a ls %s %s'" % (payload, f1))
    e1 = new_approval(a, known)
    known.add(e1["approval_id"])
    assert e1["argv"] == ["ls", f1] and e1["filename"] == payload, e1
    eg.wait_until(lambda: cell(br, e1["approval_id"], ""), timeout=5, what="the payload on the page")
    assert cell(br, e1["approval_id"], ".argv") == "ls " + f1, cell(br, e1["approval_id"], "")
    assert cell(br, e1["approval_id"], ".file") == payload, ("the program that runs", cell(br, e1["approval_id"], ""))
    # a script: the page names it and its interpreter
    script = os.path.join(tmp, "ask-script")
    with open(script, "w") as f:
        f.write("#!/bin/sh\n:\n")
    os.chmod(script, 0o755)
    ask(a, "/bin/true \"$(printf 'x\\377y')\" && " + script + " one")
    e2 = new_approval(a, known)
    known.add(e2["approval_id"])
    assert e2["filename"] == script and e2.get("interpreter"), e2
    eg.wait_until(lambda: cell(br, e2["approval_id"], ""), timeout=5, what="the script on the page")
    assert cell(br, e2["approval_id"], ".file") == script, cell(br, e2["approval_id"], "")
    assert cell(br, e2["approval_id"], ".interp") == e2["interpreter"], cell(br, e2["approval_id"], "")
    # what would not show as itself is an escape: a byte that is not UTF-8 (the event stream
    # carries it as \udcXX, docs/events.md), a control character, a right-to-left override
    eg.wait_until(lambda: "/bin/true $'x\\xffy'" in (br.js("document.getElementById('tree').textContent") or ""),
                  timeout=30, what="the tree's escape of a byte that is not UTF-8")
    q = br.js("cmdline(['x\\udcffy', 'a\\nb', '\\u202eevil', \"it's\", '\\ud83d\\ude00'])")
    assert q == "$'x\\xffy' $'a\\nb' $'\\u202eevil' 'it'\\''s' '\U0001F600'", q
    # 44 arguments: the listing keeps the first 32, the last one hides behind them
    d = os.path.join(tmp, "many")
    os.mkdir(d)
    last = os.path.join(d, "LAST-" + token())
    p3 = ask(a, "touch '%s/<b>bold' \"%s/$(printf 'caf\\351')\" %s %s" %
             (d, d, " ".join("%s/s%02d" % (d, i) for i in range(40)), last))
    e3 = new_approval(a, known)
    i3 = e3["approval_id"]
    assert e3.get("argv_shortened") and last not in e3["argv"], e3
    # argc is the whole's count (docs/events.md), the listing's argv its first 32
    assert e3["argc"] == 44 and len(e3["argv"]) == 32, (e3["argc"], len(e3["argv"]))
    eg.wait_until(lambda: cell(br, i3, ""), timeout=5, what="the long one on the page")
    text = cell(br, i3, "")
    assert last not in text and cell(br, i3, ".note.shortened"), ("marked as shortened", text)
    # (the note says how many are shown, never "32 of 32")
    assert not re.search(r"\b(\d+) of \1\b", cell(br, i3, ".note.shortened")), cell(br, i3, ".note.shortened")
    assert "'%s/<b>bold'" % d in text, text
    # the API's JSON carries a byte that is not UTF-8 as U+FFFD: the row says what it stands for
    assert "%s/caf\ufffd" % d in text and cell(br, i3, ".note.replaced"), text
    assert br.js("document.querySelectorAll('#approvals td.cmd b').length") == 0, "markup made into an element"
    time.sleep(SETTLE + 0.2)
    br.click("#approvals tr[data-id='%s'] button.approve" % i3)
    time.sleep(0.8)
    assert answered(a, i3) is None and p3.poll() is None, ("approved a shortened command unseen", answered(a, i3))
    # it shows the whole request: every argument
    eg.wait_until(lambda: last in (cell(br, i3, ".argv") or ""), timeout=5, what="the whole command shown")
    assert cell(br, i3, ".note.whole") and not cell(br, i3, ".note.shortened"), cell(br, i3, "")
    assert cell(br, i3, ".argv").endswith("%s/s39 %s" % (d, last)), cell(br, i3, ".argv")
    br.screenshot(os.path.join(eg.OUT, "test-output", "api-page-whole.png"))
    # the row grew: a click at once does nothing, one after a second approves
    br.click("#approvals tr[data-id='%s'] button.approve" % i3)
    time.sleep(0.5)
    assert answered(a, i3) is None, "approved right after the row changed"
    time.sleep(SETTLE)
    br.click("#approvals tr[data-id='%s'] button.approve" % i3)
    out = p3.stdout.readline()
    assert out == b"rc=0\n" and os.path.exists(last) and os.path.exists(d.encode() + b"/caf\xe9"), out
    assert eg.wait_until(lambda: answered(a, i3), what="its answer")["event"] == "approved"
    # an argv the daemon itself read only part of (max_argc 100, on_truncated: approval): the row says so
    known.add(i3)
    ask(a, "/bin/echo %s >/dev/null" % " ".join(str(i) for i in range(120)))
    e4 = new_approval(a, known)
    assert e4["truncated"] and e4["rule"] == "on_truncated", e4
    eg.wait_until(lambda: cell(br, e4["approval_id"], ""), timeout=5, what="the truncated one on the page")
    assert "TRUNCATED" in (cell(br, e4["approval_id"], ".note.truncated") or ""), cell(br, e4["approval_id"], "")


def test_page_escapes_what_does_not_show_as_itself(ctx):
    """The page's quote() escaped a list of marks by UTF-16 unit: a
    surrogate pair went through whatever it stood for, so a path ending in
    an invisible tag character (U+E0041) showed as the path without it,
    and default-ignorable characters (a combining grapheme joiner, Hangul
    fillers, variation selectors...) were not on the list. Every code
    point that is default-ignorable, a format character, private use,
    unassigned or a lone surrogate is now an escape bash reads back
    (\\uXXXX, \\UXXXXXXXX past U+FFFF), in this browser's JavaScript."""
    a = Api(ctx)
    br = open_page(ctx, a)
    hidden = ([0x034f, 0x115f, 0x1160, 0x17b4, 0x17b5, 0x3164, 0xffa0, 0x00ad, 0x061c, 0x200b, 0x200d, 0x202e,
               0x2066, 0x2028, 0xfeff, 0x0085, 0x0378, 0xffff, 0xe000, 0xf0000, 0x10fffd, 0xd800, 0xdbff, 0xdc00]
              + list(range(0x180b, 0x1810)) + list(range(0xfe00, 0xfe10)) + list(range(0x1d173, 0x1d17b))
              + [0xe0000, 0xe0001, 0xe0020, 0xe0041, 0xe007f, 0xe0080, 0xe0100, 0xe01ef, 0xe0fff])
    shown = [0xe9, 0x4e2d, 0x1f600, 0x20ac, 0x1d11e]
    args = ["/bin/ls" + chr(c) for c in hidden + shown]
    got = json.loads(br.js("JSON.stringify(%s.map(quote))" % json.dumps(args)))
    want = ["$'/bin/ls%s'" % ("\\U%08x" % c if c > 0xffff else "\\u%04x" % c) for c in hidden]
    want += ["'/bin/ls%s'" % chr(c) for c in shown]
    bad = [(hex(c), g, w) for c, g, w in zip(hidden + shown, got, want) if g != w]
    assert not bad, bad
    # what bash reads back is the argument itself
    for c, q in zip(hidden + shown, got):
        if 0xd800 <= c <= 0xdfff:
            continue    # a lone surrogate has no UTF-8: bash writes nothing for it
        r = subprocess.run(["bash", "-c", "printf %s " + q], stdout=subprocess.PIPE, check=True,
                           env=dict(os.environ, LC_ALL="C.UTF-8"))
        assert r.stdout == ("/bin/ls" + chr(c)).encode(), (hex(c), q, r.stdout)


def test_page_in_chromium_approves(ctx):
    a = Api(ctx)
    # the page itself needs no token (it holds no data), and names no file of another host
    st, html = a.req("GET", "/", tok=None)
    assert st == 200 and b"Approve" in html and b"http://" not in html and b"https://" not in html, html[:200]
    br = Chromium(ctx, "http://127.0.0.1:%d/#token=%s" % (a.port, TOKENS["alice"]))
    eg.wait_until(lambda: br.js("document.body && document.body.dataset.ready") == "1", timeout=20,
                  what="the page connected")
    assert br.js("location.hash") == "", "the token leaves the address bar"
    f = os.path.join(ctx.tmpdir(), "page-" + token())
    p = subprocess.Popen([ctx.execgate, "exec", "-p", a.d.pin_path, "--session", "pagetest", "--", "sh", "-c",
                          "touch %s '%s two'; echo rc=$?; exec sleep 60" % (f, f)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    # (the session stays active after touch, so the page keeps showing its tree)
    ctx.on_cleanup(lambda: os.killpg(p.pid, 9))
    ap = eg.wait_until(a.approvals, what="a pending approval")[0]
    t0 = time.monotonic()
    row = eg.wait_until(lambda: br.js("(function(){var r=document.querySelector('#approvals tr.pending');"
                                      "return r && [r.dataset.id].concat(Array.from(r.cells).map("
                                      "function(c){var a=c.querySelector('.argv');"
                                      "return (a || c).textContent;}));})()"),
                        timeout=5, what="the request on the page")
    assert time.monotonic() - t0 < 2, "the page showed the request after %.1fs" % (time.monotonic() - t0)
    assert row[0] == ap["approval_id"] and row[1] == ap["approval_id"], row
    assert row[2] == "touch %s '%s two'" % (f, f) and row[3] == ap["session"], row
    assert row[4] == "ask-touch" and row[5] == "touch needs a yes" and 0 < int(row[6]) <= 20, row
    # the session's tree shows its shell (allowed) while touch waits
    eg.wait_until(lambda: ap["session"] in (br.js("document.getElementById('tree').textContent") or ""),
                  what="the session on the page")
    shot = os.path.join(eg.OUT, "test-output", "api-page.png")
    os.makedirs(os.path.dirname(shot), exist_ok=True)
    assert br.screenshot(shot)[:8] == b"\x89PNG\r\n\x1a\n"
    print("    screenshot: %s" % shot)
    time.sleep(SETTLE)
    br.click("#approvals tr.pending button.approve")
    p.stdout.flush()
    out = p.stdout.readline()
    assert out == b"rc=0\n" and os.path.exists(f), out
    ev = a.d.wait_for(lambda e: e.get("type") == "approval" and e.get("approval_id") == ap["approval_id"] and
                      e["event"] != "requested", what="the answer's record")[0]
    assert ev["event"] == "approved" and ev["answered_by"]["token"] == "alice", ev
    # the tree gets touch's verdict, and the request leaves the table
    eg.wait_until(lambda: "approved (ask-touch)" in (br.js("document.getElementById('tree').textContent") or ""),
                  what="touch's verdict in the tree")
    eg.wait_until(lambda: not br.js("document.querySelector('#approvals tr.pending')"), what="the row gone")
    # a PATH search's misses are no part of the tree: one line each for sh, touch and sleep
    # (the misses come before sleep's own record: once it is there, they would be too)
    eg.wait_until(lambda: br.js("Array.from(document.querySelectorAll('#tree li > .cmd')).map("
                                "function(e){return e.textContent;}).join('|')").endswith("|sleep 60"),
                  what="sleep in the tree")
    assert br.js("document.querySelectorAll('#tree li').length") == 3, br.js("document.getElementById('tree').textContent")
    br.screenshot(os.path.join(eg.OUT, "test-output", "api-page-after.png"))


def test_docs_curl_examples_run(ctx):
    """Every sh block of docs/api.md runs as written against a daemon."""
    if not shutil.which("curl") or not shutil.which("jq"):
        ctx.skip("curl and jq are needed (tools/install-deps.sh)")
    with open(os.path.join(eg.ROOT, "docs", "api.md")) as f:
        blocks = re.findall(r"```sh\n(.*?)```", f.read(), re.S)
    assert len(blocks) >= 4, "docs/api.md has its examples"
    a = Api(ctx)
    env = dict(os.environ, API="http://127.0.0.1:%d" % a.port, TOKEN=TOKENS["alice"])
    waiting = None
    f = os.path.join(ctx.tmpdir(), "docs-" + token())
    for b in blocks:
        if "/approvals" in b:
            # something to approve
            waiting, _ = ask_touch(a, f)
        if "/v1/events" in b:
            subprocess.Popen(["sh", "-c", "sleep 0.5; exec true docs-example"])
        r = subprocess.run(["bash", "-e", "-c", b], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60)
        assert r.returncode == 0, (b, r.returncode, r.stdout.decode()[-500:], r.stderr.decode()[-500:])
    out, _ = waiting.communicate(timeout=20)
    assert b"rc=0" in out and os.path.exists(f), out
    ev = a.d.wait_for(lambda e: e.get("type") == "approval" and e["event"] == "approved", what="approved")[0]
    assert ev["answered_by"]["token"] == "alice" and ev["reason"] == "checked the command", ev
