# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The daemon as a host service: metrics (control socket, HTTP, textfile,
pinned maps), volume control (filters, --exec-failed), drops counted end to
end (BPF recursion misses, ring size), the control socket as an attack
surface (hostile peers, --ctl-group), and the output on a full disk and
across rotations.

Every test finds its own records by a unique token or its own cgroup, and
waits for conditions, never for a time: other engineers' processes run on
this machine at the same time."""
import fcntl
import gzip
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import stat
import struct
import subprocess
import termios
import threading
import time
import urllib.request

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


def recs(d, tok, typ="exec"):
    return [e for e in d.events() if e.get("type") == typ and tok in e.get("argv", [])]


def stats(ctx, d):
    r = ctx.run([ctx.execgate, "stats", "--json", "-p", d.pin_path])
    st = json.loads(r.stdout)
    assert st.get("pid") == d.proc.pid, "the daemon itself must answer: %s" % st
    return st["counters"]


def write(ctx, text, name):
    d = ctx.tmpdir()
    os.chmod(d, 0o755)
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755 if text.startswith("#!") else 0o644)
    return path


def in_cgroup(cg):
    def join():
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    return join


# ---- Prometheus text -------------------------------------------------------

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_prom(text):
    """{name: {"type":..., "help":..., "samples": {frozenset(labels): value}}}; checks the layout."""
    fams, cur = {}, None
    assert text.endswith("\n"), "the exposition ends with a newline"
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, help_ = line[7:].split(" ", 1)
            assert name not in fams, "family %s twice" % name
            cur = fams[name] = {"help": help_, "type": None, "samples": {}}
        elif line.startswith("# TYPE "):
            name, typ = line[7:].split(" ", 1)
            assert cur is fams.get(name), "TYPE %s right after its HELP" % name
            cur["type"] = typ
        else:
            m = SAMPLE.match(line)
            assert m, "not a sample: %r" % line
            name = m.group(1)
            assert cur is fams.get(name), "sample %s outside its family" % name
            labels = frozenset(LABEL.findall(m.group(3) or ""))
            cur["samples"][labels] = float(m.group(4))
    for name, f in fams.items():
        assert name.startswith("execgate_"), name
        assert f["type"] in ("counter", "gauge"), (name, f["type"])
        assert (f["type"] == "counter") == name.endswith("_total"), "%s is a %s" % (name, f["type"])
        assert f["help"].strip(), name
    return fams


def value(fams, name, **labels):
    return fams[name]["samples"][frozenset(labels.items())]


def promtool(ctx, text):
    tool = shutil.which("promtool")
    if not tool:
        raise eg.Skip("promtool is not installed (Debian package prometheus, tools/install-deps.sh)")
    r = subprocess.run([tool, "check", "metrics"], input=text.encode(), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60)
    assert r.returncode == 0 and not r.stdout.strip(), "promtool: %s" % r.stdout.decode()


def metrics(ctx, d):
    r = ctx.run([ctx.execgate, "metrics", "-p", d.pin_path])
    return r.stdout.decode()


# ---- metrics -----------------------------------------------------------------

POLICY = """
commands:
  - {name: no-false, basenames: [false], decision: deny, message: "no false here"}
"""


def test_metrics_over_the_control_socket(ctx):
    pol = write(ctx, POLICY, "policy.yaml")
    d = ctx.daemon("--policy", pol)
    tok = token()
    subprocess.run(["/bin/true", tok])
    subprocess.run(["/bin/false", tok])
    wait(lambda: len(recs(d, tok)) == 2, what="both execs")
    text = metrics(ctx, d)
    promtool(ctx, text)
    fams = parse_prom(text)
    assert value(fams, "execgate_daemon_up") == 1
    assert value(fams, "execgate_execs_total") >= 2
    assert value(fams, "execgate_policy_decisions_total", decision="deny") >= 1
    assert value(fams, "execgate_policy_decisions_total", decision="allow") >= 1
    assert set(dict(k)["decision"] for k in fams["execgate_policy_decisions_total"]["samples"]) == \
        {"allow", "deny", "approval", "audit", "error", "redirect"}
    for cause in ("ringbuf_full", "no_scratch", "too_big", "not_stashed", "bpf_recursion", "shutdown"):
        assert any(dict(k)["cause"] == cause for k in fams["execgate_lost_records_total"]["samples"]), cause
    for name in ("execgate_output_dropped_total", "execgate_records_written_total", "execgate_killed_total",
                 "execgate_read_faults_total", "execgate_argv_truncated_total", "execgate_sessions_open",
                 "execgate_sessions_started_total", "execgate_approvals_total", "execgate_exec_failed_total"):
        assert name in fams, name
    assert value(fams, "execgate_policy_reloads_total", result="ok") == 0
    # a reload that works, then one that does not: both counted
    r = ctx.run([ctx.execgate, "policy", "reload", "-p", d.pin_path], check=False)
    assert r.returncode == 0, r.stderr
    with open(pol, "w") as f:
        f.write("commands: [ {name: x, decision: nonsense} ]\n")
    r = ctx.run([ctx.execgate, "policy", "reload", "-p", d.pin_path], check=False)
    assert r.returncode != 0
    fams = parse_prom(metrics(ctx, d))
    assert value(fams, "execgate_policy_reloads_total", result="ok") == 1
    assert value(fams, "execgate_policy_reloads_total", result="failed") == 1
    # --json wraps the same text
    j = json.loads(ctx.run([ctx.execgate, "metrics", "-j", "-p", d.pin_path]).stdout)
    assert j["daemon_running"] is True and "execgate_execs_total" in j["text"], j.keys()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_daemon(ctx, *args):
    for _ in range(5):
        port = free_port()
        d = eg.Daemon(ctx, args=("--metrics-listen", "127.0.0.1:%d" % port) + args, ready=False)
        try:
            d.wait_ready()
            return d, port
        except AssertionError:
            if "Address already in use" not in d.err():
                raise
    raise AssertionError("no free port")


def http(port, raw, timeout=20):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(raw)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    code = int(lines[0].split()[1])
    headers = dict(l.split(": ", 1) for l in lines[1:])
    return code, headers, body


def test_metrics_http_endpoint(ctx):
    d, port = http_daemon(ctx)
    code, h, body = http(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n")
    assert code == 200, code
    assert h["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8", h
    assert int(h["Content-Length"]) == len(body) and h["Connection"] == "close", h
    promtool(ctx, body.decode())
    assert value(parse_prom(body.decode()), "execgate_daemon_up") == 1
    code, h, body = http(port, b"HEAD /metrics HTTP/1.0\r\n\r\n")
    assert code == 200 and body == b"" and int(h["Content-Length"]) > 0
    assert http(port, b"GET / HTTP/1.0\r\n\r\n")[0] == 404
    code, h, _ = http(port, b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
    assert code == 405 and h["Allow"] == "GET, HEAD"
    assert http(port, b"\x00\xff garbage\r\n\r\n")[0] == 400
    assert http(port, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 9000)[0] == 431
    # a peer that sends half a request and waits does not hold anyone up ...
    slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
    for s in slow:
        s.sendall(b"GET /metr")
    assert http(port, b"GET /metrics HTTP/1.0\r\n\r\n")[0] == 200
    tok = token()
    subprocess.run(["/bin/true", tok])
    wait(lambda: recs(d, tok), what="the exec while peers stall")
    # ... and is dropped (per-connection timeout)
    for s in slow:
        s.settimeout(60)
        assert s.recv(100) == b"", "a stalled peer is disconnected"
        s.close()
    fams = parse_prom(http(port, b"GET /metrics HTTP/1.0\r\n\r\n")[2].decode())
    assert value(fams, "execgate_metrics_http_rejected_total") >= 4 + 4
    assert value(fams, "execgate_metrics_http_requests_total") >= 3
    assert d.proc.poll() is None


def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=20) as r:
        assert r.status == 200
        return r.read().decode()


def test_metrics_http_peers_that_hold_on_lock_nobody_out(ctx):
    d, port = http_daemon(ctx)
    base = nfds(d.proc.pid)
    # every connection taken by peers that connect and send nothing ...
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(16)]
    wait(lambda: nfds(d.proc.pid) >= base + 16, what="the idle peers accepted")
    for _ in range(3):
        assert value(parse_prom(scrape(port)), "execgate_daemon_up") == 1
    idle[0].settimeout(60)
    assert idle[0].recv(100) == b"", "the oldest idle peer made room"
    for s in idle:
        s.close()
    # ... or read their answer and do not close
    held = []
    for _ in range(16):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        s.settimeout(60)
        while s.recv(65536):
            pass
        held.append(s)
    for _ in range(3):
        assert value(parse_prom(scrape(port)), "execgate_daemon_up") == 1
    for s in held:
        s.close()


def test_out_of_fds_costs_nothing(ctx):
    rel, cg, cgid = ctx.cgroup()
    d, port = http_daemon(ctx, "--cgroup", cg)  # nothing to trace: the daemon's CPU is the sockets'
    limit = nfds(d.proc.pid) + 8
    ctx.run(["prlimit", "--pid", str(d.proc.pid), "--nofile=%d:%d" % (limit, limit)])
    # more peers than the daemon has fds for, on both sockets: the rest wait in the listen queues
    peers = [ctl_socket(d) for _ in range(40)]
    peers += [socket.create_connection(("127.0.0.1", port)) for _ in range(12)]  # the queue holds 16
    wait(lambda: nfds(d.proc.pid) >= limit, what="the daemon out of fds")
    c0 = eg.cpu_seconds(d.proc.pid)
    time.sleep(2)
    used = eg.cpu_seconds(d.proc.pid) - c0
    assert used < 0.5, "the daemon spun on a listening socket it has no fd to accept with: %.2fs in 2s" % used
    for s in peers:
        s.close()
    # fds come back: both accept again
    assert value(parse_prom(scrape(port)), "execgate_daemon_up") == 1
    fams = parse_prom(metrics(ctx, d))
    assert value(fams, "execgate_control_dropped_total", reason="no_fds") >= 1
    err = d.err()
    assert err.count("control socket: Too many open files") == 1, err
    assert err.count("--metrics-listen: Too many open files") == 1, err


def test_metrics_listen_addresses(ctx):
    for spec in (":9464", "9464", "*:9464", "example.com:9464", "::1:9464", "127.0.0.1:0",
                 "127.0.0.1:70000", "[::1]9464"):
        r = ctx.run([ctx.execgate, "daemon", "-p", "/sys/fs/bpf/egtest-bad", "--output", "/dev/null",
                     "--metrics-listen", spec], check=False, timeout=20)
        err = r.stderr.decode()
        assert r.returncode == 2, (spec, r.returncode, err)
        first = err.splitlines()[0] if err else ""
        assert first.startswith("execgate daemon: --metrics-listen '%s'" % spec), (spec, err)
    if not socket.has_ipv6:
        raise eg.Skip("no IPv6 here")
    port = free_port()
    d = ctx.daemon("--metrics-listen", "[::1]:%d" % port)
    s = socket.create_connection(("::1", port), timeout=20)
    s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
    assert s.recv(12) == b"HTTP/1.0 200"
    s.close()
    assert "metrics are served beyond this host" not in d.err()


def test_metrics_textfile(ctx):
    out = ctx.tmpdir()
    path = os.path.join(out, "execgate.prom")
    r = ctx.run([ctx.execgate, "daemon", "-p", "/sys/fs/bpf/egtest-bad", "--output", "/dev/null",
                 "--metrics-textfile", os.path.join(out, "x.txt")], check=False, timeout=20)
    assert r.returncode == 2 and "FILE.prom" in r.stderr.decode(), r.stderr
    ctx.on_cleanup(lambda: shutil.rmtree("/sys/fs/bpf/egtest-badtf-%d" % os.getpid(), ignore_errors=True))
    r = ctx.run([ctx.execgate, "daemon", "-p", "/sys/fs/bpf/egtest-badtf-%d" % os.getpid(), "--output",
                 os.path.join(out, "ev.jsonl"), "--metrics-textfile", "/nonexistent-egt/x.prom"],
                check=False, timeout=30)
    err = r.stderr.decode()
    assert r.returncode == 1 and err == "execgate daemon: cannot write --metrics-textfile " \
        "/nonexistent-egt/x.prom: No such file or directory\n", err
    os.unlink(os.path.join(out, "ev.jsonl"))
    d = ctx.daemon("--metrics-textfile", path, "--metrics-interval", "1")
    wait(lambda: os.path.exists(path), what="the textfile")
    with open(path) as f:
        first = f.read()
    promtool(ctx, first)
    before = value(parse_prom(first), "execgate_execs_total")
    tok = token()
    subprocess.run(["/bin/true", tok])
    wait(lambda: recs(d, tok), what="the exec")

    def grown():
        with open(path) as f:
            return value(parse_prom(f.read()), "execgate_execs_total") > before
    wait(grown, timeout=30, what="a rewrite with the new exec counted")
    # rewritten by rename: a reader never sees a half-written file
    for _ in range(300):
        with open(path) as f:
            text = f.read()
        assert text.endswith("\n") and "execgate_daemon_up 1\n" in text, text[-200:]
        assert text.count("# TYPE") == text.count("# HELP")
    assert os.stat(path).st_mode & 0o777 == 0o644
    assert d.stop() == 0
    with open(path) as f:
        last = f.read()
    promtool(ctx, last)
    assert value(parse_prom(last), "execgate_daemon_up") == 0, "the last write says the daemon stopped"
    assert sorted(os.listdir(out)) == ["execgate.prom"], os.listdir(out)


def test_metrics_without_daemon(ctx):
    d = ctx.daemon()
    tok = token()
    subprocess.run(["/bin/true", tok])
    wait(lambda: recs(d, tok), what="the exec")
    d.proc.kill()  # SIGKILL: no stop, the counters stay pinned
    d.proc.wait()
    r = ctx.run([ctx.execgate, "metrics", "-p", d.pin_path], check=False)
    err = r.stderr.decode()
    assert r.returncode == 3, err  # the LSB's "not running", the pinned counters shown all the same
    assert err.count("\n") == 1 and err.startswith(
        "execgate metrics: no daemon is running on %s: the kernel's counters from the pinned maps" %
        d.pin_path), err
    text = r.stdout.decode()
    promtool(ctx, text)
    fams = parse_prom(text)
    assert value(fams, "execgate_daemon_up") == 0
    assert value(fams, "execgate_execs_total") >= 1
    assert "execgate_policy_decisions_total" not in fams, "only what the maps hold"
    none = "/sys/fs/bpf/egtest-none-%d" % os.getpid()
    r = ctx.run([ctx.execgate, "metrics", "-p", none], check=False)
    err = r.stderr.decode()
    assert r.returncode == 3 and err.count("\n") == 1, err
    assert err.startswith("execgate metrics: no daemon is running on %s" % none), err


# ---- volume control ------------------------------------------------------------

def test_exclude_comm_and_path(ctx):
    n = os.getpid() % 100000
    bindir = ctx.tmpdir()
    os.chmod(bindir, 0o755)
    comm_bin = os.path.join(bindir, "egtc%d" % n)
    path_bin = os.path.join(bindir, "egtp-%d" % n)
    for p in (comm_bin, path_bin):
        shutil.copy("/bin/true", p)
    d = ctx.daemon("--exclude-comm", "egtc%d*" % n, "--exclude-path", "*/egtp-%d" % n)
    start = d.events()[0]
    assert start["filters"] == {"uid": [], "exclude_comm": ["egtc%d*" % n],
                                "exclude_path": ["*/egtp-%d" % n]}, start["filters"]
    tok = token()
    subprocess.run([comm_bin, tok])
    subprocess.run([path_bin, tok])
    subprocess.run(["/bin/true", tok])
    got = wait(lambda: recs(d, tok), what="the exec no filter matches")
    # records come in exec order: the two before it were seen and left out
    assert [e["filename"] for e in recs(d, tok)] == ["/usr/bin/true"], got
    c = stats(ctx, d)
    # each left-out exec's exit record is left out with it
    wait(lambda: stats(ctx, d)["filtered"] == 4, what="the two exits left out too")
    c = stats(ctx, d)
    assert c["filtered_comm"] == 2 and c["filtered_path"] == 2 and c["filtered"] == 4, c
    fams = parse_prom(metrics(ctx, d))
    assert value(fams, "execgate_filtered_total", filter="comm") == 2
    assert value(fams, "execgate_filtered_total", filter="path") == 2
    assert c["exec"] >= 3, "the kernel still traced every exec"


FILTER_POLICY = """
commands:
  - {name: no-egtw, basenames: [%s], decision: deny, message: "egtw is refused"}
"""


def test_filters_never_hide_enforcement(ctx):
    name = "egtw%d" % (os.getpid() % 100000)
    bindir = ctx.tmpdir()
    os.chmod(bindir, 0o755)
    denied = os.path.join(bindir, name)
    allowed = os.path.join(bindir, "egtx-" + name)
    shutil.copy("/bin/true", denied)
    shutil.copy("/bin/true", allowed)
    pol = write(ctx, FILTER_POLICY % name, "policy.yaml")
    d = ctx.daemon("--policy", pol, "--exclude-comm", "egtw*", "--exclude-path", bindir + "/*")
    tok = token()
    # in a session: the excluded program is refused all the same, and the refusal is logged
    r = subprocess.run([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c",
                        "%s %s; echo rc=$?; %s %s && echo ran-%s" % (denied, tok, allowed, tok, tok)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    out = r.stdout.decode()
    assert "rc=126" in out and "ran-" + tok in out, (out, r.stderr.decode())
    assert "egtw is refused" in r.stderr.decode(), r.stderr
    blocked = wait(lambda: [e for e in d.events() if e.get("type") == "exec_failed" and
                            tok in e.get("argv", []) and e.get("action") == "blocked"], what="blocked")
    assert blocked[0]["rule"] == "no-egtw", blocked
    # outside a session the policy only audits: a deny is still shown, whatever the filters
    subprocess.run([denied, tok, "host"])
    host = wait(lambda: [e for e in recs(d, tok) if "host" in e["argv"]], what="the audited deny")
    assert host[0]["decision"] == "deny" and host[0]["action"] == "would-block", host
    # the allowed excluded exec ran (its output above) and is not in the log
    subprocess.run(["/bin/true", tok, "last"])
    wait(lambda: [e for e in recs(d, tok) if "last" in e["argv"]], what="the last exec")
    assert not [e for e in recs(d, tok) if e["filename"] == allowed], "filtered out"
    assert stats(ctx, d)["filtered_path"] >= 1


def test_exec_failed_none(ctx):
    pol = write(ctx, POLICY, "policy.yaml")
    r = ctx.run([ctx.execgate, "daemon", "-p", "/sys/fs/bpf/egtest-bad", "--output", "/dev/null",
                 "--exec-failed", "none", "--enforce", "--policy", pol], check=False, timeout=20)
    err = r.stderr.decode()
    assert r.returncode == 2 and "would hide the kernel's refusals" in err.splitlines()[0], err
    d = ctx.daemon("--exec-failed", "none")
    ef = d.events()[0]["exec_failed"]
    assert ef == {"mode": "none", "source": None, "programs": [
        "tracepoint/syscalls/sys_exit_execve", "tracepoint/syscalls/sys_exit_execveat"]}, ef
    progs = json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)[
        "counters"]["recursion_misses_by_program"]
    assert "handle_exit_execve" in progs and "handle_exec" in progs, progs
    tok = token()
    subprocess.run(["/usr/bin/env", "PATH=/egt-n1:/egt-n2", "nosuch-" + tok, tok],
                   stderr=subprocess.DEVNULL)
    subprocess.run(["/bin/true", tok])
    wait(lambda: recs(d, tok), what="the exec after the failures")
    assert not recs(d, tok, "exec_failed")
    assert stats(ctx, d)["exec_failed"] == 0, "no failed exec is even built"
    probe = json.loads(ctx.run([ctx.execgate, "probe", "--json"]).stdout)
    assert probe["mode"]["exec_failed_source"] == "syscall_tracepoints", probe["mode"]
    # sessions still work: an exec the supervisor allowed that then fails in the
    # kernel leaves no ticket behind that would get the next exec killed
    junk = write(ctx, "\x7fELF not really\n", "junk")
    os.chmod(junk, 0o755)
    script = ("import os\ntry:\n    os.execv(%r, [%r])\nexcept OSError as e:\n    print('errno', e.errno)\n"
              "os.execv('/bin/true', ['/bin/true', %r, 'after'])\n") % (junk, junk, tok)
    r = subprocess.run([ctx.execgate, "exec", "-p", d.pin_path, "--", "python3", "-c", script],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 0 and b"errno 8" in r.stdout, (r.returncode, r.stdout, r.stderr)
    after = wait(lambda: [e for e in recs(d, tok) if "after" in e["argv"]], what="the exec after")
    # (not its annotation: a session thread's quick exec chain shares one verdict slot)
    assert after[0]["session"] and after[0].get("action") != "killed" and not after[0].get("reason"), after


def test_exec_failed_collapse(ctx):
    d = ctx.daemon("--exec-failed", "collapse")
    assert d.events()[0]["exec_failed"]["mode"] == "collapse"
    assert d.events()[0]["exec_failed"]["source"] == "syscall_tracepoints"
    tok = token()
    subprocess.run(["/usr/bin/env", "PATH=/egt-c1:/egt-c2:/usr/bin", "true", tok])
    e = wait(lambda: [e for e in recs(d, tok) if e["filename"] == "/usr/bin/true"], what="true")[0]
    assert e["path_search"] == {"failed": 2, "dirs": ["/egt-c1", "/egt-c2"]}, e.get("path_search")
    # a script found on the PATH: its committed argv starts with the interpreter
    bindir = ctx.tmpdir()
    os.chmod(bindir, 0o755)
    script = os.path.join(bindir, "egts-" + tok)
    with open(script, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(script, 0o755)
    subprocess.run(["/usr/bin/env", "PATH=/egt-c3:" + bindir, "egts-" + tok, "a1", tok])
    s = wait(lambda: [e for e in recs(d, tok) if e["filename"] == script], what="the script")[0]
    assert s["path_search"] == {"failed": 1, "dirs": ["/egt-c3"]}, s
    # not found anywhere: every failure is still written, only later
    subprocess.run(["/usr/bin/env", "PATH=/egt-c4:/egt-c5", "nosuch-" + tok, tok], stderr=subprocess.DEVNULL)
    nf = wait(lambda: len(recs(d, tok, "exec_failed")) == 2 and recs(d, tok, "exec_failed"),
              what="the two failures")
    assert sorted(x["filename"] for x in nf) == ["/egt-c4/nosuch-" + tok, "/egt-c5/nosuch-" + tok], nf
    # a failure followed by another program is not folded into it
    py = ("import os\ntry:\n    os.execv('/egt-c6/egtq', ['egtq', %r])\nexcept OSError:\n    pass\n"
          "os.execv('/bin/true', ['true', 'other', %r])\n") % (tok, tok)
    subprocess.run(["python3", "-c", py])
    other = wait(lambda: [e for e in recs(d, tok) if "other" in e["argv"]], what="the other exec")[0]
    assert "path_search" not in other, other
    wait(lambda: [e for e in recs(d, tok, "exec_failed") if e["filename"] == "/egt-c6/egtq"],
         what="the unfolded failure")
    assert not [x for x in recs(d, tok, "exec_failed") if x["filename"].startswith(("/egt-c1", "/egt-c3"))]
    c = stats(ctx, d)
    assert c["exec_failed_collapsed"] >= 3, c
    assert value(parse_prom(metrics(ctx, d)), "execgate_exec_failed_collapsed_total") >= 3
    assert d.stop() == 0
    assert d.events()[-1]["exec_failed_collapsed"] >= 3


def test_exec_failed_collapse_never_hides_a_deny(ctx):
    """A failed exec the policy denies is a record the daemon must show:
    --exec-failed=collapse neither folds it into the exec that ends the
    PATH search nor leaves it out with an exec the filters drop."""
    tok = token()
    pol = write(ctx, "commands:\n  - {name: no-egtd, paths: [\"/egt-d1-%s/*\"], decision: deny}\n" % tok,
                "policy.yaml")
    bindir = ctx.tmpdir()
    os.chmod(bindir, 0o755)
    prog = os.path.join(bindir, "egtd-" + tok)
    shutil.copy("/bin/true", prog)
    d = ctx.daemon("--policy", pol, "--exec-failed", "collapse", "--exclude-path", bindir + "/*/dropped")
    path = "/egt-d1-%s:/egt-d2-%s:%s" % (tok, tok, bindir)
    subprocess.run(["/usr/bin/env", "PATH=" + path, "egtd-" + tok, tok])
    e = wait(lambda: [e for e in recs(d, tok) if e["filename"] == prog], what="the exec")[0]
    assert e["path_search"] == {"failed": 1, "dirs": ["/egt-d2-%s" % tok]}, e.get("path_search")
    denied = wait(lambda: recs(d, tok, "exec_failed"), what="the denied failure")
    assert [(x["filename"], x["decision"], x["rule"]) for x in denied] == \
        [("/egt-d1-%s/egtd-%s" % (tok, tok), "deny", "no-egtd")], denied
    # the exec that ends the search is filtered out: the denied failure is still written
    sub = os.path.join(bindir, "x")
    os.mkdir(sub)
    os.chmod(sub, 0o755)
    shutil.copy("/bin/true", os.path.join(sub, "dropped"))
    path = "/egt-d1-%s:%s" % (tok, sub)
    subprocess.run(["/usr/bin/env", "PATH=" + path, "dropped", tok, "filtered"])
    subprocess.run(["/bin/true", tok, "last"])
    wait(lambda: [x for x in recs(d, tok) if "last" in x["argv"]], what="the last exec")
    wait(lambda: [x for x in recs(d, tok, "exec_failed") if "filtered" in x["argv"]],
         what="the denied failure of a filtered exec")
    assert not [x for x in recs(d, tok) if x["filename"].endswith("/dropped")], "the exec is filtered out"
    assert d.stop() == 0


def test_text_table_fits_the_terminal(ctx):
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    pin = "/sys/fs/bpf/egtest-tty120-%d" % os.getpid()
    ctx.on_cleanup(lambda: shutil.rmtree(pin, ignore_errors=True))
    p = subprocess.Popen([ctx.execgate, "daemon", "--pin-path", pin, "--exec-failed", "collapse"],
                         stdout=slave, stderr=subprocess.DEVNULL, start_new_session=True)
    os.close(slave)
    ctx.on_cleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
    out = b""
    tok = token()
    deadline = time.monotonic() + 30
    sent = False
    while time.monotonic() < deadline and tok.encode() not in out:
        if b"DEPTH" in out and not sent:
            subprocess.run(["/usr/bin/env", "PATH=/egt-t1:/usr/bin", "true", tok, "x" * 200])
            sent = True
        r, _, _ = select.select([master], [], [], 0.3)
        if r:
            try:
                out += os.read(master, 65536)
            except OSError:
                break
    st = ctx.run([ctx.execgate, "stats", "-p", pin]).stdout.decode()
    p.send_signal(signal.SIGTERM)
    p.wait(20)
    os.close(master)
    lines = out.decode("utf-8", "replace").replace("\r", "").split("\n")[:-1]
    assert lines, out
    assert all(len(l) <= 120 for l in lines), max(lines, key=len)
    assert any(l.startswith("# ") and "control socket" in l for l in lines), "the start comment, folded"
    line = [l for l in lines if tok in l]
    assert line, lines[-5:]
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} ", line[0]), line[0]
    assert "/usr/bin/true" in line[0] and " root " in line[0] and "[PATH +1]" in line[0], line[0]
    assert line[0].endswith("+") and len(line[0]) == 120, "cut at the width with a mark: " + line[0]
    # execgate stats: every value starts in one column
    rows = [l for l in st.splitlines() if l.strip()]
    assert any(l.startswith("exec_failed collapsed") for l in rows), st
    assert {len(l) - len(l[24:].lstrip()) for l in rows} == {25}, st


def test_stats_show_what_each_program_costs(ctx):
    """stats -j: each program's run count and run time while the kernel counts them, 0 while it does not."""
    d = ctx.daemon()
    sysctl = "/proc/sys/kernel/bpf_stats_enabled"
    before = open(sysctl).read().strip()

    def progs():
        st = json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)["counters"]
        return st["bpf_runs_by_program"], st["bpf_run_time_ns_by_program"], st["recursion_misses_by_program"]
    runs0, time0, misses = progs()
    assert set(runs0) == set(time0) == set(misses) and "handle_exec" in runs0, (runs0, time0)
    try:
        with open(sysctl, "w") as f:
            f.write("1")
        for _ in range(20):
            subprocess.run(["/bin/true", token()])
        runs1, time1, _ = progs()
    finally:
        with open(sysctl, "w") as f:
            f.write(before)
    # 20 execs of ours at least (the host's own may add some)
    assert runs1["handle_exec"] - runs0["handle_exec"] >= 20, (runs0, runs1)
    assert time1["handle_exec"] > time0["handle_exec"], (time0, time1)
    if before == "0":
        # off again: nothing more is counted
        runs2, _, _ = progs()
        subprocess.run(["/bin/true"])
        runs3, _, _ = progs()
        assert runs3["handle_exec"] == runs2["handle_exec"], (runs2, runs3)


# ---- nothing lost silently ---------------------------------------------------

def test_recursion_misses_reported(ctx):
    rel, cg, cgid = ctx.cgroup()
    d = ctx.daemon("--ringbuf-size", "32K", "--max-argv-bytes", "1024", "--cgroup", cg)
    st = json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)["counters"]
    per = st["recursion_misses_by_program"]
    assert {"handle_exec", "handle_fork", "handle_exit", "handle_exit_execve"} <= set(per), per
    assert st["recursion_misses"] == sum(per.values())
    # the kernel's early returns are all in stats, as in metrics
    early = ("storage_failed", "scratch_missing", "record_too_big", "stash_lost", "procs_failed")
    assert all(isinstance(st.get(k), int) for k in early), st
    fams = parse_prom(metrics(ctx, d))
    progs = {dict(k)["program"]: v for k, v in fams["execgate_bpf_recursion_misses_total"]["samples"].items()}
    assert set(progs) == set(per), (progs, per)
    assert value(fams, "execgate_lost_records_total", cause="bpf_recursion", record="any") == sum(progs.values())
    # a loss makes a "lost" record; it carries the recursion misses beside the ring's losses
    tok = token()
    d.proc.send_signal(signal.SIGSTOP)
    try:
        ctx.run([ctx.helper("burst"), cg, "300", tok])
    finally:
        d.proc.send_signal(signal.SIGCONT)
    lost = wait(lambda: [e for e in d.events() if e["type"] == "lost"], what="a lost record")
    assert "recursion_misses" in lost[0] and lost[0]["exec"] > 0, lost[0]
    assert d.stop() == 0
    stop = d.events()[-1]
    assert stop["event"] == "stop" and stop["recursion_misses"] == lost[-1]["recursion_misses"], stop
    assert stop["lost"] == sum(e["exec"] + e["exec_failed"] + e["exit"] for e in lost[-1:]), (stop, lost[-1])


def test_ringbuf_smaller_than_a_record_refused(ctx):
    r = ctx.run([ctx.execgate, "daemon", "-p", "/sys/fs/bpf/egtest-bad", "--output", "/dev/null",
                 "--ringbuf-size", "64K"], check=False, timeout=20)
    err = r.stderr.decode()
    assert r.returncode == 2 and err.startswith("execgate daemon: --ringbuf-size 65536 cannot hold one record"), err
    assert "--ringbuf-size 131072 or more" in err.splitlines()[0], err
    d = ctx.daemon("--ringbuf-size", "64K", "--max-argv-bytes", "16K")
    assert d.events()[0]["ringbuf_size"] == 65536


COMPAT = """
	.globl _start
	.text
_start:
	movl $11, %eax
	movl $bad, %ebx
	movl $argv32, %ecx
	xorl %edx, %edx
	int $0x80
	movl $11, %eax
	movl $good, %ebx
	movl $argv32, %ecx
	xorl %edx, %edx
	int $0x80
	movl $60, %eax
	movl $3, %edi
	syscall
	.data
bad:	.asciz "/nonexistent-egt-compat"
good:	.asciz "/bin/true"
tok:	.asciz "TOKEN"
	.align 4
argv32:	.long good, tok, 0
"""


def test_compat_exec_gap_is_as_documented(ctx):
    """docs/events.md: a 32-bit (compat) exec's failure is not reported, its success is."""
    if not (shutil.which("as") and shutil.which("ld")):
        raise eg.Skip("binutils (as, ld) are not installed")
    tok = token()
    tmp = ctx.tmpdir()
    src = os.path.join(tmp, "compat.s")
    with open(src, "w") as f:
        f.write(COMPAT.replace("TOKEN", tok))
    binp = os.path.join(tmp, "compat")
    ctx.run(["as", src, "-o", binp + ".o"])
    ctx.run(["ld", "-no-pie", binp + ".o", "-o", binp])
    d = ctx.daemon()
    r = subprocess.run([binp])
    if r.returncode == -signal.SIGSEGV:
        raise eg.Skip("this kernel runs no 32-bit syscalls (int $0x80 faults: ia32 emulation is off)")
    e = wait(lambda: recs(d, tok), what="the compat exec's record")[0]
    assert e["filename"] == "/usr/bin/true", e
    subprocess.run(["/bin/true", tok, "native"])
    wait(lambda: [x for x in recs(d, tok) if "native" in x["argv"]], what="a later native exec")
    assert not recs(d, tok, "exec_failed"), "the compat failure would be reported: update docs/events.md"


# ---- the control socket as an attack surface ----------------------------------

def ctl_socket(d):
    st = d.events()[0]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(st["socket"])
    return s


def read_all(s, timeout=60):
    s.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def test_ctl_hostile_peers_delay_nobody(ctx):
    d = ctx.daemon()
    # garbage, and JSON that is not a request: an error each, then the door
    for junk in (b"\x00\xffgarbage\n", b"[1,2,3]\n", b'{"op":"STATUS"}\n'):
        s = ctl_socket(d)
        s.sendall(junk)
        reply = read_all(s)
        s.close()
        assert reply.endswith(b"\n") and reply.count(b"\n") == 1, reply
        assert json.loads(reply)["ok"] is False, reply
    # one peer writes a 1 GiB line as fast as it can; others send half a line and wait
    big = ctl_socket(d)
    sent = [0, None]

    def pump():
        chunk = b"a" * (1 << 20)
        try:
            while sent[0] < (1 << 30):
                big.sendall(chunk)
                sent[0] += len(chunk)
        except OSError as e:
            sent[1] = e
    t = threading.Thread(target=pump)
    t.start()
    halves = []
    for _ in range(20):
        s = ctl_socket(d)
        s.sendall(b'{"op":"sta')
        halves.append(s)
    wait(lambda: sent[0] >= (1 << 20) or sent[1], what="the big writer going")
    st = json.loads(ctx.run([ctx.execgate, "status", "-j", "-p", d.pin_path], timeout=60).stdout)
    assert st.get("pid") == d.proc.pid and st["daemon_running"] is True, st
    t.join(120)
    assert not t.is_alive() and sent[1] is not None, "the 1 GiB line is cut off"
    assert sent[0] < (256 << 20), "cut off early, not read to the end: %d bytes" % sent[0]
    big.close()
    for s in halves:
        assert read_all(s) == b"", "a peer with half a request is dropped"
        s.close()
    fams = parse_prom(metrics(ctx, d))
    assert value(fams, "execgate_control_dropped_total", reason="too_large") >= 1
    assert value(fams, "execgate_control_dropped_total", reason="timeout") >= 20
    assert value(fams, "execgate_control_dropped_total", reason="bad_request") >= 3
    tok = token()
    subprocess.run(["/bin/true", tok])
    wait(lambda: recs(d, tok), what="tracing goes on")


FLOOD = r"""
import resource, select, socket, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
path, want = sys.argv[1], int(sys.argv[2])
socks, made = [], 0
while True:
    while len(socks) < want:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
        except OSError:
            s.close()
            break
        socks.append(s)
        made += 1
        if made == want:
            print("flooding", flush=True)
    r, _, _ = select.select(socks + [sys.stdin], [], [], 0.2)
    if sys.stdin in r:
        break
    for s in r:
        if not s.recv(1):
            socks.remove(s)
            s.close()
"""


def test_ctl_one_user_cannot_take_every_connection(ctx):
    d = ctx.daemon()
    sock = d.events()[0]["socket"]
    p = subprocess.Popen(["runuser", "-u", "nobody", "--", "python3", "-c", FLOOD, sock, "1500"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ctx.on_cleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
    line = p.stdout.readline()
    assert line == b"flooding\n", (line, p.stderr.read(2000) if p.poll() is not None else "")
    # 1500 connections from one user, replaced as fast as the daemon drops them
    for _ in range(3):
        st = json.loads(ctx.run([ctx.execgate, "status", "-j", "-p", d.pin_path], timeout=60).stdout)
        assert st.get("pid") == d.proc.pid, st
    p.stdin.close()
    p.wait(30)
    fams = parse_prom(metrics(ctx, d))
    assert value(fams, "execgate_control_dropped_total", reason="too_many") >= 1500 - 320


REQUESTS = r"""
import socket, sys, threading
path, n = sys.argv[1], int(sys.argv[2])
blob = b'{"op":"whoami"}\n' * 16000


def reader(s):
    try:
        while s.recv(1 << 20):
            pass
    except OSError:
        pass


def flood():
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            threading.Thread(target=reader, args=(s,), daemon=True).start()
            while True:
                s.sendall(blob)
        except OSError:
            s.close()
for _ in range(n):
    threading.Thread(target=flood, daemon=True).start()
print("flooding", flush=True)
sys.stdin.read()
"""


def ask(d, line):
    """One request on a connection of its own: (seconds to the answer, the answer)."""
    t = time.monotonic()
    s = ctl_socket(d)
    s.sendall(line)
    reply = s.makefile("rb").readline()
    s.close()
    return time.monotonic() - t, json.loads(reply)


def test_ctl_request_flood_delays_nobody(ctx):
    rel, cg, cgid = ctx.cgroup()
    # the smallest ring for the default argv cap: the tracer has no slack
    d = ctx.daemon("--ringbuf-size", "128K", "--cgroup", cg)
    p = subprocess.Popen(["runuser", "-u", "nobody", "--", "python3", "-c", REQUESTS,
                          d.events()[0]["socket"], "16"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ctx.on_cleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
    line = p.stdout.readline()
    assert line == b"flooding\n", (line, p.stderr.read(2000) if p.poll() is not None else "")
    # thousands of pipelined requests a connection, from 16 of them, while execs come in bursts
    tok = token()
    burst = subprocess.Popen([ctx.helper("burst"), cg, "1500", tok], stdout=subprocess.PIPE)
    ctx.on_cleanup(lambda: (burst.poll() is None and burst.kill(), burst.wait()))
    worst = 0
    for op in (b"whoami", b"status", b"whoami", b"status", b"whoami"):
        took, reply = ask(d, b'{"op":"%s"}\n' % op)
        assert reply["ok"] is True, reply
        worst = max(worst, took)
    assert int(burst.communicate(timeout=120)[0]) == 1500
    # the kernel's counters, from the pinned maps if the daemon does not answer in time
    lost = json.loads(ctx.run([ctx.execgate, "stats", "--json", "-p", d.pin_path]).stdout)["counters"]["lost"]
    p.stdin.close()
    p.wait(30)
    # another peer is answered at once, and the tracer keeps up
    assert worst < 1.0, "a request waited %.2fs behind another peer's flood" % worst
    assert lost == 0, "records lost during the flood: %s" % lost
    wait(lambda: len(recs(d, tok)) == 1500, what="every exec of the burst written")


def test_ctl_half_closed_peer_costs_nothing(ctx):
    rel, cg, cgid = ctx.cgroup()
    d = ctx.daemon("--cgroup", cg)  # nothing to trace: the daemon's CPU is the socket's
    # replies we do not read, until the daemon holds some it cannot send
    s = ctl_socket(d)
    queued = -1
    while True:
        s.sendall(b'{"op":"whoami"}\n' * 100)
        time.sleep(0.05)
        q = struct.unpack("i", fcntl.ioctl(s, termios.FIONREAD, b"\0" * 4))[0]
        if q == queued:
            break
        queued = q
    # a bad request: the daemon answers it, then closes; we half-close and wait
    s.sendall(b"garbage\n")
    s.shutdown(socket.SHUT_WR)
    c0 = eg.cpu_seconds(d.proc.pid)
    time.sleep(2)
    used = eg.cpu_seconds(d.proc.pid) - c0
    assert used < 0.5, "the daemon spun on a half-closed peer: %.2fs of CPU in 2s" % used
    lines = read_all(s).split(b"\n")
    s.close()
    assert lines[-1] == b"" and json.loads(lines[-2])["ok"] is False, lines[-2:]
    assert all(json.loads(l)["ok"] for l in lines[:-2]), "every whoami answered"
    # the same from a peer that stops reading and half-closes before its requests are read
    s = ctl_socket(d)
    s.setblocking(False)
    try:
        while True:
            s.send(b'{"op":"whoami"}\n' * 100)
    except BlockingIOError:
        pass
    s.shutdown(socket.SHUT_WR)
    c0 = eg.cpu_seconds(d.proc.pid)
    time.sleep(2)
    used = eg.cpu_seconds(d.proc.pid) - c0
    s.close()
    assert used < 0.5, "the daemon spun on a half-closed peer: %.2fs of CPU in 2s" % used


def test_ctl_answers_a_peer_that_half_closed(ctx):
    d = ctx.daemon()
    # printf '{"op":"whoami"}\n' | socat - UNIX-CONNECT:...: the request, then the end of it
    for n in (1, 1, 1, 100, 100):
        s = ctl_socket(d)
        s.sendall(b'{"op":"whoami"}\n' * n)
        s.shutdown(socket.SHUT_WR)
        lines = read_all(s).split(b"\n")
        s.close()
        assert len(lines) == n + 1 and all(json.loads(l)["ok"] for l in lines[:-1]), (n, lines[-3:])


def test_ctl_fds_go_with_their_request(ctx):
    d = ctx.daemon()
    run = json.dumps({"op": "run", "argv": ["/bin/true"], "background": False, "cwd": "/tmp",
                      "environ": ["PATH=/usr/bin:/bin"]}).encode() + b"\n"
    null = os.open("/dev/null", os.O_RDWR)
    fds = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("3i", null, null, null))]
    try:
        for i in range(10):
            # a request, then one that carries fds: one read may bring both
            s = ctl_socket(d)
            s.sendmsg([b'{"op":"whoami"}\n'])
            s.sendmsg([run], fds)
            f = s.makefile("rb")
            first, second = json.loads(f.readline()), json.loads(f.readline())
            assert first["ok"] is True, first
            assert second["ok"] is True, (i, second)
            exit_ = json.loads(f.readline())
            assert exit_["event"] == "exit" and exit_["exit_code"] == 0, exit_
            f.close()
            s.close()
        # and fds that came with a request are not the next one's
        s = ctl_socket(d)
        s.sendmsg([b'{"op":"whoami"}\n'], fds)
        s.sendmsg([run])
        f = s.makefile("rb")
        first, second = json.loads(f.readline()), json.loads(f.readline())
        assert first["ok"] is True and second["ok"] is False and "SCM_RIGHTS" in second["error"], second
        f.close()
        s.close()
    finally:
        os.close(null)


def test_ctl_group_members_only(ctx):
    if not (shutil.which("groupadd") and shutil.which("useradd") and shutil.which("runuser")):
        raise eg.Skip("groupadd, useradd or runuser missing")
    n = os.getpid() % 100000
    grp, member, other = "egtg%d" % n, "egtm%d" % n, "egtn%d" % n
    ctx.run(["groupadd", grp])
    ctx.on_cleanup(lambda: subprocess.run(["groupdel", grp]))
    for u, extra in ((member, ["-G", grp]), (other, [])):
        ctx.run(["useradd", "-M", "-N", "-g", "nogroup", "-s", "/usr/sbin/nologin"] + extra + [u])
        ctx.on_cleanup(lambda u=u: subprocess.run(["userdel", u]))
    out = ctx.tmpdir()
    os.chmod(out, 0o755)
    d = ctx.daemon("--ctl-group", grp, output=os.path.join(out, "events.jsonl"))
    gid = int(ctx.run(["getent", "group", grp]).stdout.split(b":")[2])

    def as_user(u, *argv):
        return subprocess.run(["runuser", "-u", u, "--"] + list(argv), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60)
    r = as_user(member, ctx.execgate, "status", "-p", d.pin_path)
    assert r.returncode == 0 and ("running, pid %d" % d.proc.pid) in r.stdout.decode(), r.stderr
    r = as_user(member, ctx.execgate, "metrics", "-p", d.pin_path)
    assert r.returncode == 0 and "execgate_daemon_up 1" in r.stdout.decode(), r.stderr
    r = as_user(other, ctx.execgate, "status", "-p", d.pin_path)
    err = r.stderr.decode()
    assert r.returncode == 1 and err.count("\n") == 1, (r.returncode, err)
    assert err.startswith("execgate status: status: permission denied") and "--ctl-group" in err, err
    r = as_user(other, ctx.execgate, "metrics", "-p", d.pin_path)
    assert r.returncode == 1 and "permission denied" in r.stderr.decode(), r.stderr
    # the output file: group-readable by the members, nobody else
    st = os.stat(d.output)
    assert st.st_gid == gid and stat.S_IMODE(st.st_mode) == 0o640, (st.st_gid, oct(st.st_mode))
    assert as_user(member, "head", "-c", "1", d.output).returncode == 0
    assert as_user(other, "head", "-c", "1", d.output).returncode != 0


def test_ctl_group_among_many_groups(ctx):
    gid = 3999999  # a number: --ctl-group takes one, no group file entry needed
    out = ctx.tmpdir()
    os.chmod(out, 0o755)
    d = ctx.daemon("--ctl-group", str(gid), output=os.path.join(out, "events.jsonl"))
    many = list(range(3000000, 3001200))  # "Groups:" in /proc/PID/status runs to 9.6 KB

    def status(groups):
        return subprocess.run([ctx.execgate, "status", "-j", "-p", d.pin_path], user=65534, group=65534,
                              extra_groups=groups, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    r = status(many + [gid])
    assert r.returncode == 0 and json.loads(r.stdout)["pid"] == d.proc.pid, r.stdout
    r = status(many)
    assert r.returncode == 1 and "permission denied" in json.loads(r.stdout)["error"], r.stdout


# ---- the output: disk full, rotation ------------------------------------------

def test_disk_full_whole_lines_and_resume(ctx):
    rel, cg, cgid = ctx.cgroup()
    mnt = ctx.tmpdir()
    ctx.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", mnt])
    ctx.on_cleanup(lambda: subprocess.run(["umount", "-l", mnt]))
    d = ctx.daemon("--cgroup", cg, output=os.path.join(mnt, "events.jsonl"))
    tok = token()
    big = "x" * 2000
    for i in range(60):
        subprocess.run(["/bin/true", tok, str(i), big], preexec_fn=in_cgroup(cg))
    c = wait(lambda: (lambda c: c["output_dropped"] > 0 and c)(stats(ctx, d)), what="drops counted")
    assert d.proc.poll() is None, "the daemon keeps running on a full disk"
    with open(d.output, "rb") as f:
        data = f.read()
    assert data.endswith(b"\n"), "no cut line at the end"
    lines = [json.loads(l) for l in data.split(b"\n")[:-1]]  # every line is whole JSON
    written = [e for e in lines if e["type"] == "exec" and tok in e["argv"]]
    assert 0 < len(written) < 60, len(written)
    # room again: writing resumes, and the drops are reported
    ctx.run(["mount", "-o", "remount,size=8m", mnt])
    subprocess.run(["/bin/true", tok, "resumed"], preexec_fn=in_cgroup(cg))
    wait(lambda: [e for e in recs(d, tok) if "resumed" in e["argv"]], what="writing resumed")
    wait(lambda: [e for e in d.events() if e["type"] == "lost" and e["output_dropped"] > 0],
         what="a lost record for the drops")
    fams = parse_prom(metrics(ctx, d))
    c = stats(ctx, d)
    assert d.stop() == 0
    evs = d.events()
    stop = evs[-1]
    assert stop["event"] == "stop" and stop["output_dropped"] == c["output_dropped"], (stop, c)
    lost = [e for e in evs if e["type"] == "lost"]
    assert lost[-1]["output_dropped"] == stop["output_dropped"], "every drop reported: %s" % lost
    # every exec of the cgroup is written or counted as dropped
    execs = [e for e in evs if e["type"] == "exec"]
    dropped_exec = value(fams, "execgate_output_dropped_total", record="exec")
    assert c["lost"] == 0, c
    assert len(execs) + dropped_exec == c["exec"], (len(execs), dropped_exec, c["exec"])


def handover_setup(ctx, check_ms):
    """A daemon running a copy of the binary (which replace() swaps) under an
    enforced policy in a cgroup: (daemon, cgroup, policy file, replace)."""
    bindir = ctx.tmpdir()
    os.chmod(bindir, 0o755)
    exe = os.path.join(bindir, "execgate")
    shutil.copy(ctx.execgate, exe)
    pf = os.path.join(ctx.tmpdir(), "policy.yaml")
    with open(pf, "w") as f:
        f.write("commands:\n  - {name: no-evil, basenames: [true], args: [EVIL], decision: deny}\n")
    rel, cg, _ = ctx.cgroup()
    d = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg, exe=exe,
                   env=dict(os.environ, EXECGATE_HANDOVER_CHECK_MS=str(check_ms)))
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def replace(src=None, script="echo 'a binary that loads no policy' >&2\nexit 1\n"):
        tmp = exe + ".new"
        if src:
            shutil.copy(src, tmp)
        else:
            with open(tmp, "w") as f:
                f.write("#!/bin/sh\n" + script)
        os.chmod(tmp, 0o755)
        os.rename(tmp, exe)
    return d, cg, pf, replace


def children(pid):
    out = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[1] == str(pid):
                out.append(int(p))
        except (OSError, IndexError):
            pass
    return out


def test_a_handover_to_a_binary_that_cannot_load_the_policy_keeps_the_daemon(ctx):
    """SIGUSR2 re-executes the binary at the daemon's path, which a package
    upgrade may have replaced: one that does not load the policy in force
    (here a stand-in that fails everything), or whose BPF programs this
    kernel refuses, would start, fail, and end enforcement with it. The
    daemon has it check first (`daemon --check`: the policy in force, the
    programs loaded and attached switched off) and goes on when the check
    fails; with a binary that starts, the handover happens."""
    d, cg, pf, replace = handover_setup(ctx, 30000)
    replace()
    d.proc.send_signal(signal.SIGUSR2)
    wait(lambda: "its check failed" in d.err(), what="the refused handover")
    assert "would not start here" in d.err() and "a binary that loads no policy" in d.err(), d.err()
    tok = token()
    subprocess.run(["/bin/true", tok], preexec_fn=in_cgroup(cg))
    d.wait_for(lambda e: e.get("type") == "exec" and tok in e.get("argv", []), what="an exec after it")
    assert d.proc.poll() is None, d.err()
    assert not [e for e in d.events() if e.get("event") == "start" and e.get("takeover")]
    # one that loads the policy, but whose BPF programs this kernel refuses (the verifier's
    # EACCES for one of them): its policy check passes, its start would fail; no handover
    replace(script='exec env LD_PRELOAD=%s EG_FAIL_PROG=handle_exec %s "$@"\n'
            % (ctx.helper("preload_fail_bpf"), ctx.execgate))
    d.proc.send_signal(signal.SIGUSR2)
    wait(lambda: d.err().count("its check failed") >= 2, timeout=40, what="the second refused handover")
    assert "cannot load the tracer" in d.err(), d.err()
    tok = token()
    subprocess.run(["/bin/true", tok], preexec_fn=in_cgroup(cg))
    d.wait_for(lambda e: e.get("type") == "exec" and tok in e.get("argv", []), what="an exec after it")
    assert d.proc.poll() is None, d.err()
    assert not [e for e in d.events() if e.get("event") == "start" and e.get("takeover")]
    r = subprocess.run(["/bin/true", "EVIL"], preexec_fn=in_cgroup(cg))
    assert r.returncode == -signal.SIGKILL, r
    # one from before --check existed (a usage error): refused, and the message says how to downgrade
    replace(script='case " $* " in *" --check "*) echo "execgate: unrecognized option" >&2; exit 2;; esac\n'
            'exec %s "$@"\n' % ctx.execgate)
    d.proc.send_signal(signal.SIGUSR2)
    wait(lambda: "does not take this command line" in d.err(), timeout=40, what="the older binary refused")
    assert d.proc.poll() is None, d.err()
    # a binary that loads it: the handover goes through
    replace(ctx.execgate)
    d.proc.send_signal(signal.SIGUSR2)
    d.wait_for(lambda e: e.get("type") == "daemon" and e.get("event") == "start" and e.get("takeover"),
               timeout=60, what="the new daemon's start")
    assert d.proc.poll() is None, d.err()
    r = subprocess.run(["/bin/true", "EVIL"], preexec_fn=in_cgroup(cg))
    assert r.returncode == -signal.SIGKILL, r


def test_a_handover_check_runs_beside_the_loop_and_ends_with_the_daemon(ctx):
    """While the new binary's check runs (here one that never ends), the
    daemon goes on: execs are traced and enforced. It is killed at the
    daemon's limit (5 s here) and nothing is handed over; a SIGUSR2 while
    it ran has the binary checked again after it, and a stop kills that
    check and exits cleanly."""
    d, cg, pf, replace = handover_setup(ctx, 5000)
    replace(script="exec sleep 60\n")
    d.proc.send_signal(signal.SIGUSR2)
    check = wait(lambda: children(d.proc.pid), what="the check's process")
    tok = token()
    subprocess.run(["/bin/true", tok], preexec_fn=in_cgroup(cg))
    d.wait_for(lambda e: e.get("type") == "exec" and tok in e.get("argv", []), timeout=10,
               what="an exec's record while the check runs")
    r = subprocess.run(["/bin/true", "EVIL"], preexec_fn=in_cgroup(cg))
    assert r.returncode == -signal.SIGKILL, r
    assert "did not end in time" not in d.err(), d.err()
    d.proc.send_signal(signal.SIGUSR2)
    wait(lambda: "being checked already" in d.err(), what="the second SIGUSR2 said")
    assert children(d.proc.pid) == check, (children(d.proc.pid), check)
    wait(lambda: "did not end in time" in d.err(), what="the check's time limit")
    again = wait(lambda: [c for c in children(d.proc.pid) if c not in check], what="the check again")
    assert d.proc.poll() is None, d.err()
    assert not [e for e in d.events() if e.get("event") == "start" and e.get("takeover")]
    d.proc.send_signal(signal.SIGTERM)
    assert d.proc.wait(20) == 0, d.err()
    for c in check + again:
        assert not os.path.exists("/proc/%d" % c) or \
            open("/proc/%d/stat" % c).read().rsplit(")", 1)[1].split()[0] == "Z", "a check outlived the daemon"


def standin(ctx, tag, log, flag=None):
    """A stand-in for a new binary: as `daemon --check` it writes TAG and the
    policy it was given to log (then waits for flag, if any), and runs the
    real binary."""
    return ('case " $* " in *" --check "*)\n'
            '  p=; prev=; for a in "$@"; do [ "$prev" = --policy ] && p=$a; prev=$a; done\n'
            '  echo "%s $(tr "\\n" " " < "$p")" >> %s\n'
            '  %s;;\nesac\nexec %s "$@"\n'
            % (tag, log, ("while [ ! -e %s ]; do sleep 0.05; done" % flag) if flag else ":", ctx.execgate))


def test_what_changes_during_a_handover_check_is_checked_again(ctx):
    """What changes while the new binary is checked is checked again before
    the handover: another binary put at the path during the check (the
    second check runs it), and, on another daemon, a reload with other
    rules (the second check gets the new policy); each handover then goes
    through with what was checked last."""
    def takeovers(d):
        return [e for e in d.events() if e.get("event") == "start" and e.get("takeover")]
    log = os.path.join(ctx.tmpdir(), "checks.log")
    flags = [os.path.join(ctx.tmpdir(), "go%d" % i) for i in range(2)]

    def checks(n):
        return wait(lambda: os.path.exists(log) and len(open(log).read().splitlines()) >= n and
                    open(log).read().splitlines(), what="%d checks" % n)
    # another binary at the path
    d, cg, pf, replace = handover_setup(ctx, 30000)
    replace(script=standin(ctx, "first", log, flags[0]))
    d.proc.send_signal(signal.SIGUSR2)
    checks(1)
    replace(script=standin(ctx, "second", log))
    open(flags[0], "w").close()
    wait(lambda: takeovers(d), timeout=60, what="the new daemon's start")
    assert "checking it again" in d.err(), d.err()
    # a reload with other rules
    d2, cg2, pf2, replace2 = handover_setup(ctx, 30000)
    replace2(script=standin(ctx, "third", log, flags[1]))
    d2.proc.send_signal(signal.SIGUSR2)
    checks(3)
    with open(pf2, "w") as f:
        f.write("commands:\n  - {name: no-evil, basenames: [true], args: [WICKED], decision: deny}\n")
    r = subprocess.run([ctx.execgate, "policy", "reload", "-p", d2.pin_path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode == 0, r.stderr
    open(flags[1], "w").close()
    wait(lambda: takeovers(d2), timeout=60, what="the second new daemon's start")
    c = checks(4)
    assert len(c) == 4 and [x.split()[0] for x in c] == ["first", "second", "third", "third"] and \
        all("EVIL" in x for x in c[:3]) and "WICKED" in c[3], c
    r = subprocess.run(["/bin/true", "WICKED"], preexec_fn=in_cgroup(cg2))
    assert r.returncode == -signal.SIGKILL, r
    assert subprocess.run(["/bin/true", "EVIL"], preexec_fn=in_cgroup(cg2)).returncode == 0
    r = subprocess.run(["/bin/true", "EVIL"], preexec_fn=in_cgroup(cg))
    assert r.returncode == -signal.SIGKILL, r


def pins_of(pin_path):
    """Every pin under pin_path (links/ too), by path: its inode (a pin made again has another),
    and the control map's bytes (the generation switch)."""
    pins = {}
    for root, dirs, files in os.walk(pin_path):
        for n in dirs + files:
            p = os.path.join(root, n)
            pins[os.path.relpath(p, pin_path)] = os.stat(p).st_ino
    r = subprocess.run(["bpftool", "-j", "map", "dump", "pinned", os.path.join(pin_path, "control")],
                       stdout=subprocess.PIPE, check=True)
    return pins, r.stdout


def test_daemon_check_loads_and_leaves_a_running_daemon_alone(ctx):
    """`execgate daemon --check` with a running daemon's own pin path: the
    policy and the programs load, nothing of the daemon's changes (its pins
    and links, its generation switch, its tracing and enforcement); a broken
    policy, a policy --enforce cannot hold whole, an API token file the
    start would refuse, and programs the kernel refuses each exit 1 with
    the reason."""
    rel, cg, _ = ctx.cgroup()
    pf = os.path.join(ctx.tmpdir(), "policy.yaml")
    with open(pf, "w") as f:
        f.write("commands:\n  - {name: no-evil, basenames: [true], args: [EVIL], decision: deny}\n")
    d = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg, "--persist")
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    pins = pins_of(d.pin_path)
    assert any(p.startswith("links/") for p in pins[0]), pins[0]

    def check(*args, env=None):
        return subprocess.run([ctx.execgate, "daemon", "-p", d.pin_path, "--check"] + list(args),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
    r = check("--policy", pf, "--enforce", "--cgroup", cg, "--persist")
    assert r.returncode == 0 and "would start a daemon here (policy %s;" % pf in r.stdout.decode(), r
    assert pins_of(d.pin_path) == pins and d.proc.poll() is None
    r = subprocess.run(["/bin/true", "EVIL"], preexec_fn=in_cgroup(cg))
    assert r.returncode == -signal.SIGKILL, r
    bad = os.path.join(ctx.tmpdir(), "bad.yaml")
    with open(bad, "w") as f:
        f.write("commands:\n  - {name: x, basenames: [true], decision: deny\n")
    r = check("--policy", bad)
    assert r.returncode == 1 and ("%s:3:1: error" % bad) in r.stderr.decode(), r.stderr
    regex = os.path.join(ctx.tmpdir(), "regex.yaml")
    with open(regex, "w") as f:
        f.write("commands:\n  - {name: rx, basenames: [sh], args_patterns: ['-c .*rm'], decision: deny}\n")
    r = check("--policy", regex, "--enforce")
    assert r.returncode == 1 and "cannot hold every rule" in r.stderr.decode(), r.stderr
    assert check("--policy", regex, "--enforce", "--allow-partial").returncode == 0
    tokens = os.path.join(ctx.tmpdir(), "tokens")
    with open(tokens, "w") as f:
        f.write("ops short\n")
    os.chmod(tokens, 0o600)
    r = check("--api-listen", "127.0.0.1:0", "--api-token-file", tokens)
    assert r.returncode == 1 and ("--api-token-file %s:1: want 'NAME TOKEN'" % tokens) in r.stderr.decode(), r
    r = check(env=dict(os.environ, LD_PRELOAD=ctx.helper("preload_fail_bpf"), EG_FAIL_PROG="handle_exec"))
    assert r.returncode == 1 and "cannot load the tracer" in r.stderr.decode(), r.stderr
    assert pins_of(d.pin_path) == pins and d.proc.poll() is None, d.err()
    tok = token()
    subprocess.run(["/bin/true", tok], preexec_fn=in_cgroup(cg))
    d.wait_for(lambda e: e.get("type") == "exec" and tok in e.get("argv", []), what="an exec after the checks")
    r = subprocess.run(["/bin/true", "EVIL"], preexec_fn=in_cgroup(cg))
    assert r.returncode == -signal.SIGKILL, r
    killed = wait(lambda: [e for e in d.events() if e.get("type") == "exec" and e.get("argv") == ["/bin/true", "EVIL"]
                           and e.get("action") == "killed"][1:], what="both killed execs recorded")
    assert len(killed) == 1, killed


def test_handover_on_a_full_disk(ctx):
    """SIGUSR2 while the output's disk is full: the new daemon goes on (its
    start record and first --metrics-textfile write fail, counted), the
    drops before the handover are carried over, and once there is room they
    are reported."""
    rel, cg, cgid = ctx.cgroup()
    mnt = ctx.tmpdir()
    # 1 KiB blocks: a full disk leaves less room in the output's last block than a start
    # record takes (tmpfs counts 4 KiB pages, and a partial page held the next start record)
    img = os.path.join(ctx.tmpdir(), "small.img")
    with open(img, "wb") as f:
        f.truncate(384 * 1024)
    ctx.run(["mkfs.ext2", "-q", "-F", "-b", "1024", "-m", "0", img])
    ctx.run(["mount", "-o", "loop", img, mnt])
    ctx.on_cleanup(lambda: subprocess.run(["umount", "-l", mnt]))
    os.chmod(mnt, 0o755)
    prom = os.path.join(mnt, "execgate.prom")
    d = ctx.daemon("--cgroup", cg, "--metrics-textfile", prom, "--metrics-interval", "1",
                   output=os.path.join(mnt, "events.jsonl"))
    filler = os.path.join(mnt, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    # full to the last byte: what is left after the big writes would hold a small record
    for size in (4096, 256, 16, 1):
        try:
            while os.write(fd, b"\0" * size):
                pass
        except OSError:
            pass
    os.close(fd)
    tok = token()
    for i in range(30):
        subprocess.run(["/bin/true", tok, str(i), "x" * 2000], preexec_fn=in_cgroup(cg))
    before = wait(lambda: (lambda c: c["output_dropped"] > 0 and c["written_exec"] + c["output_dropped"] >= 30 and c)(
        stats(ctx, d)), what="drops counted")
    d.reexec()
    st = wait(lambda: d.proc.poll() is not None or (lambda st: "pid" in st and st)(
        json.loads(ctx.run([ctx.execgate, "status", "--json", "-p", d.pin_path], check=False).stdout)),
        what="status from the new daemon")
    assert d.proc.poll() is None, "the daemon died at the handover: %s" % d.err()
    assert st["pid"] == d.proc.pid and st["uptime_ms"] < 20000, (st, d.err())
    c = stats(ctx, d)
    assert c["output_dropped"] > before["output_dropped"], ("the drops carried over, and the start record's", c)
    assert "cannot write the start record" in d.err() and "--metrics-textfile" in d.err(), d.err()
    # room again: writing resumes, every drop is reported, the textfile is written again
    os.unlink(filler)
    subprocess.run(["/bin/true", tok, "resumed"], preexec_fn=in_cgroup(cg))
    wait(lambda: [e for e in recs(d, tok) if "resumed" in e["argv"]], what="writing resumed")
    c = stats(ctx, d)
    wait(lambda: [e for e in d.events() if e["type"] == "lost" and e["output_dropped"] == c["output_dropped"]],
         what="a lost record with every drop, those before the handover too")

    def textfile():
        with open(prom) as f:
            fams = parse_prom(f.read())
        # the new daemon's: its first write failed
        return value(fams, "execgate_metrics_textfile_errors_total") >= 1 and fams
    fams = wait(textfile, what="the textfile written again")
    assert value(fams, "execgate_daemon_up") == 1
    assert sum(fams["execgate_output_dropped_total"]["samples"].values()) == c["output_dropped"]
    assert d.stop() == 0
    stop = d.events()[-1]
    assert stop["event"] == "stop" and stop["output_dropped"] == c["output_dropped"], (stop, c)


def test_rotation_gzip_and_continuation(ctx):
    rel, cg, cgid = ctx.cgroup()
    out = ctx.tmpdir()
    path = os.path.join(out, "events.jsonl")
    d = ctx.daemon("--cgroup", cg, "--output-max-size", "4096", "--output-keep", "3", output=path)
    tok = token()
    # a rotation happens at a flush past the size: keep writing until five happened
    for last in range(5000):
        subprocess.run(["/bin/true", tok, str(last), "y" * 300], preexec_fn=in_cgroup(cg))
        if last % 10 == 9 and stats(ctx, d)["output_rotations"] >= 5:
            break
    assert stats(ctx, d)["output_rotations"] >= 5
    assert d.stop() == 0
    names = sorted(n for n in os.listdir(out) if not n.endswith(".stderr"))
    # rotated files are named by the time of their rotation (UTC): names sort oldest first
    assert names[0] == "events.jsonl" and len(names) == 4, names
    assert all(ROTATED.match(n) for n in names[1:]), names
    seen, numbers, prev = [], [], None
    for name in names[1:]:
        r = ctx.run(["zcat", os.path.join(out, name)])
        lines = r.stdout.split(b"\n")
        assert lines[-1] == b"", name
        evs = [json.loads(l) for l in lines[:-1]]
        assert evs[0]["type"] == "daemon" and evs[0]["event"] == "rotated", (name, evs[0])
        assert evs[0]["file"] == path and evs[0]["hostname"] and evs[0]["boot_id"], evs[0]
        if prev:
            assert evs[0]["continues"] == prev, (name, evs[0], prev)
        prev = name
        seen.append(evs[0]["rotations"])
        numbers += [int(e["argv"][2]) for e in evs if e["type"] == "exec"]
    assert seen == sorted(seen) and len(set(seen)) == 3, seen
    cur = d.events()
    assert cur[0]["event"] == "rotated" and cur[0]["rotations"] == seen[-1] + 1, cur[0]
    assert cur[0]["continues"] == names[-1], (cur[0], names)
    assert cur[-1]["event"] == "stop", "the stop record ends the file it is in"
    numbers += [int(e["argv"][2]) for e in cur if e["type"] == "exec"]
    # across the kept files, the execs follow one another to the last: none lost or repeated
    assert numbers == list(range(numbers[0], last + 1)), numbers
    # execgate query reads them all, oldest first, the live file last; with the daemon
    # stopped, it finds them through the record the daemon left in /run/execgate
    q = ctx.run([ctx.execgate, "query", "-p", d.pin_path, "--json", "--type", "exec"])
    assert [int(json.loads(l)["argv"][2]) for l in q.stdout.splitlines()] == numbers


ROTATED = re.compile(r"^events\.jsonl\.[0-9]{8}T[0-9]{6}\.[0-9]{3}Z\.gz$")


def rotated_names(out):
    """The output and its rotated files, shapes only: the rotated ones' names are times."""
    return sorted("events.jsonl.TIME.gz" if ROTATED.match(n) else n
                  for n in os.listdir(out) if not n.endswith(".stderr"))


def first_rotations(ctx, path):
    """The gz files' first records' rotation numbers, newest first."""
    got = []
    d = os.path.dirname(path)
    for n in sorted((n for n in os.listdir(d) if ROTATED.match(n)), reverse=True):
        r = ctx.run(["zcat", os.path.join(d, n)])
        first = json.loads(r.stdout.split(b"\n")[0])
        assert first["event"] == "rotated", first
        got.append(first["rotations"])
    return got


def test_rotation_failure_keeps_rotated_files(ctx):
    """A rotation that cannot be done moves no kept file: the output removed
    under the daemon is written again by its path, a new file that cannot be
    made leaves everything where it is; each failure is counted, a streak is
    said once on stderr, and the next try (seconds later, not at every
    flush) rotates as usual."""
    rel, cg, cgid = ctx.cgroup()
    out = ctx.tmpdir()
    path = os.path.join(out, "events.jsonl")
    full = ["events.jsonl"] + ["events.jsonl.TIME.gz"] * 3
    d = ctx.daemon("--cgroup", cg, "--output-max-size", "4096", "--output-keep", "3", output=path)
    tok = token()
    n = [0]

    def execs(count):
        for _ in range(count):
            subprocess.run(["/bin/true", tok, str(n[0]), "y" * 1000], preexec_fn=in_cgroup(cg))
            n[0] += 1
        wait(lambda: stats(ctx, d)["written_exec"] >= n[0], what="%d execs written" % n[0])

    def execs_until(pred, what):
        # a rotation is tried when there is something to write past the size
        for _ in range(100):
            execs(1)
            if pred():
                return
        raise AssertionError("no %s" % what)

    execs_until(lambda: stats(ctx, d)["output_rotations"] >= 4, "four rotations")
    wait(lambda: rotated_names(out) == full, what="three compressed generations")
    kept = first_rotations(ctx, path)

    # the output removed under the daemon: each flush past the size used to
    # delete one more kept file
    os.unlink(path)
    try:
        execs_until(lambda: os.path.exists(path), "output written again by its path")
    finally:
        assert rotated_names(out) == full, rotated_names(out)
    assert first_rotations(ctx, path) == kept, "the kept files did not move"
    c = stats(ctx, d)
    assert c["output_rotation_failures"] == 1 and c["output_write_errors"] == 0, c
    evs = d.events()
    assert evs[0]["event"] == "rotated" and evs[0]["continues"] is None, evs[0]
    assert evs[0]["rotations"] == kept[0] + 1, (evs[0], kept)  # no rotation since the removed file
    again = [e for e in evs if e.get("type") == "exec" and tok in e["argv"]]
    assert again and int(again[-1]["argv"][2]) == n[0] - 1, "the last exec is in the new file"
    assert d.err().count("was removed or replaced") == 1, d.err()

    # the new file cannot be made: nothing moves, the failure is said once
    os.mkdir(path + ".new")
    with open(os.path.join(path + ".new", "x"), "w"):
        pass
    rot = c["output_rotations"]
    execs_until(lambda: stats(ctx, d)["output_rotation_failures"] >= 2, "the failure counted")
    for _ in range(10):
        execs(1)  # ten flushes past the size: no retry at each
    c = stats(ctx, d)
    assert c["output_rotations"] == rot and rotated_names(out) == full + ["events.jsonl.new"], (c, rotated_names(out))
    assert c["output_rotation_failures"] <= 3, c
    assert first_rotations(ctx, path) == kept
    assert d.err().count("cannot rotate") == 1, d.err()
    assert d.proc.poll() is None
    fams = parse_prom(metrics(ctx, d))
    assert value(fams, "execgate_output_rotation_failures_total") >= 2, fams["execgate_output_rotation_failures_total"]
    # room again: a later try rotates, the newest kept file is the one just written
    shutil.rmtree(path + ".new")
    execs_until(lambda: stats(ctx, d)["output_rotations"] > rot, "a rotation again")
    wait(lambda: rotated_names(out) == full, what="three compressed generations again")
    now = first_rotations(ctx, path)
    assert now[1:] == kept[:2], (now, kept)
    wait(lambda: "rotates again" in d.err(), what="the end of the streak said")
    assert d.stop() == 0


def daemon_records(first, n, pad=0):
    """n records from the time first ("2026-01-19T10"), in order, of a kind the schema takes in
    a daemon's file; pad random bytes each (base64: gzip cannot shrink them much)."""
    import base64
    return b"".join(b'{"v":1,"type":"daemon","time":"%s:%02d:%02d.%09dZ","event":"policy_error","rules":%d,'
                    b'"error":"%s"}\n' % (first.encode(), i // 60 % 60, i % 60, i, i,
                                          base64.b64encode(os.urandom(pad)) if pad else b"x")
                    for i in range(n))


def own(path, data):
    """A file as the daemon makes them: root's, 0640."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def test_a_compression_cut_short_is_finished_at_the_next_start(ctx):
    """What a compressor killed with its daemon leaves (a handover's exec, kill -9): a plain
    rotated file with a half-written .gz.tmp beside it, a plain one whose .gz was renamed into
    place just before, a plain one never started, a .gz.tmp whose plain file is gone. The next
    daemon on the output finishes it in the background: the newest --output-keep generations
    compressed, every .gz whole, no .gz.tmp left; a plain file goes only once its .gz is in
    place. query reads each record once throughout, never a .gz.tmp."""
    out = ctx.tmpdir()
    path = os.path.join(out, "events.jsonl")
    d0 = ctx.daemon(output=path)
    assert d0.stop() == 0       # its record in /run/execgate: query finds the files through it
    gen = {h: path + ".20260119T%s0000.000Z" % h for h in ("09", "10", "11", "12", "13")}
    data = {h: daemon_records("2026-01-19T" + h, 300, 100) for h in gen}
    own(gen["09"] + ".gz.tmp", gzip.compress(data["09"])[:500])    # its plain file pruned since
    own(gen["10"], data["10"])                                      # beyond --output-keep 3
    own(gen["10"] + ".gz.tmp", gzip.compress(data["10"])[:700])
    own(gen["11"], data["11"])
    own(gen["11"] + ".gz.tmp", gzip.compress(data["11"])[:900])    # cut mid-way
    own(gen["12"], data["12"])
    own(gen["12"] + ".gz", gzip.compress(data["12"]))              # killed between rename and unlink
    own(gen["13"], data["13"])                                      # killed before it began
    want = data["10"] + data["11"] + data["12"] + data["13"]

    def query():
        q = ctx.run([ctx.execgate, "query", "--json", "-p", d0.pin_path], check=False)
        assert q.returncode == 0 and not q.stderr, (q.returncode, q.stderr)
        return b"".join(l + b"\n" for l in q.stdout.splitlines() if b'"event":"policy_error"' in l)
    got = query()
    assert got == want, (len(got), len(want), [got.count(b"T%s:" % h.encode()) for h in gen])
    d = ctx.daemon("--output-max-size", "16M", "--output-keep", "3", output=path)

    def state():
        return sorted(n[len("events.jsonl.20260119T"):] for n in os.listdir(out) if n.startswith("events.jsonl.2"))
    done = ["100000.000Z", "110000.000Z.gz", "120000.000Z.gz", "130000.000Z.gz"]
    try:
        wait(lambda: state() == done, timeout=30, what="the leftovers finished")
    except AssertionError as e:
        raise AssertionError("%s: %s" % (e, state()))
    for h in ("11", "12", "13"):
        with gzip.open(gen[h] + ".gz") as g:
            assert g.read() == data[h], h
    with open(gen["10"], "rb") as f:
        assert f.read() == data["10"], "left plain, whole"
    assert query() == want
    assert d.stop() == 0 and d.proc.returncode == 0


def test_a_query_beside_a_compression_in_place_and_a_fifo(ctx):
    """logrotate's compress writes the .gz under its own name while gzip fills it, and removes
    the plain file after: a query in between took the .gz for whole (the daemon's own compressor
    renames a whole one into place) and left the plain file out, so every record past what gzip
    had flushed was missing, exit 0, nothing said. A FIFO named like a rotated file held the
    query in open() for good. Now the plain file is read while it is there, and only files are
    listed."""
    out = ctx.tmpdir()
    path = os.path.join(out, "events.jsonl")
    d0 = ctx.daemon(output=path)
    assert d0.stop() == 0       # its record in /run/execgate: query finds the files through it
    gen = path + ".20260119T090000.000Z"
    data = daemon_records("2026-01-19T09", 400, 100)
    own(gen, data)
    z = gzip.compress(data)
    own(gen + ".gz", z[:len(z) // 3])                          # gzip half way
    os.mkfifo(path + ".20260119T080000.000Z")
    q = subprocess.run([ctx.execgate, "query", "--json", "-p", d0.pin_path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    assert q.returncode == 0, (q.returncode, q.stderr)
    got = b"".join(l + b"\n" for l in q.stdout.splitlines() if b'"event":"policy_error"' in l)
    assert got == data, (len(got), len(data))
    # ... while a pipe given as the FILE is read to its end, however slowly it is written
    # (docs/fleet.md: kubectl logs ... | execgate query ... /dev/stdin)
    p = subprocess.Popen([ctx.execgate, "query", "--json", "/dev/stdin"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    half = data.index(b"\n", len(data) // 2) + 1
    p.stdin.write(data[:half])
    p.stdin.flush()
    time.sleep(0.5)
    p.stdin.write(data[half:])
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and out == data, (p.returncode, len(out), len(data), err[-300:])


def test_a_rotation_after_the_clock_went_back_keeps_what_it_rotated(ctx):
    """Rotated files are named by the time of their rotation, and the oldest names go past
    --output-keep. After the wall clock went back (NTP, a VM resumed), the file just rotated
    took the smallest name and was the one removed, its records lost. Here a rotated file
    named a day ahead stands for the clock having gone back a day: the next rotation is named
    after it, and that file is the one that goes."""
    rel, cg, cgid = ctx.cgroup()
    out = ctx.tmpdir()
    path = os.path.join(out, "events.jsonl")
    day = time.gmtime(time.time() + 86400)
    ahead = path + "." + time.strftime("%Y%m%dT%H%M%S", day) + ".000Z"
    own(ahead, daemon_records(time.strftime("%Y-%m-%dT%H", day), 5))
    d = ctx.daemon("--cgroup", cg, "--output-max-size", "4096", "--output-keep", "1", output=path)
    tok = token()
    for i in range(2000):
        subprocess.run(["/bin/true", tok, str(i), "y" * 300], preexec_fn=in_cgroup(cg))
        if i % 10 == 9 and stats(ctx, d)["output_rotations"] >= 1:
            break
    assert d.stop() == 0
    names = sorted(n for n in os.listdir(out) if ROTATED.match(n))
    assert len(names) == 1 and names[0] > os.path.basename(ahead), names
    with gzip.open(os.path.join(out, names[0])) if names[0].endswith(".gz") else \
            open(os.path.join(out, names[0]), "rb") as f:
        first = json.loads(f.readline())
    assert first["event"] == "rotated", first


def test_a_fifo_among_the_leftovers_holds_no_stop(ctx):
    """A FIFO named like a rotated file, with a .gz.tmp beside it, is no leftover to finish:
    the start's recovery opened it to see whether a compressor held it, and that open waited
    for a writer for good, so the daemon's stop (which waits for the recovery) never ended."""
    out = ctx.tmpdir()
    path = os.path.join(out, "events.jsonl")
    fifo = path + ".20260119T090000.000Z"
    os.mkfifo(fifo)
    own(fifo + ".gz.tmp", gzip.compress(b"x" * 100)[:20])
    d = ctx.daemon("--output-max-size", "16M", "--output-keep", "3", output=path)
    wait(lambda: not os.path.exists(fifo + ".gz.tmp"), timeout=10, what="the .gz.tmp beside no held file gone")
    assert d.stop(timeout=10) == 0
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO is no file of the daemon's"


def test_a_handover_a_stop_or_a_kill_during_a_compression(ctx):
    """A rotated file being compressed when the daemon hands over (the exec ends the
    compressor), is killed, or stops: nothing is lost or left half-done. The new daemon, or the
    next one, compresses the file again; a stop finishes the compression first. No .gz.tmp is
    left, and the plain file goes only once its .gz is whole."""
    import hashlib
    big = daemon_records("2026-01-19T10", 150000, 300)     # 80 MB: seconds of gzip -6
    for how in ("handover", "kill", "stop"):
        out = ctx.tmpdir()
        path = os.path.join(out, "events.jsonl")
        own(path, big)
        # past --output-max-size already: the start record's flush rotates it, the compressor takes it
        d = ctx.daemon("--output-max-size", "16M", "--output-keep", "3", output=path)

        def names():
            return sorted(n for n in os.listdir(out) if n.startswith("events.jsonl.") and not n.endswith(".stderr"))
        tmp = wait(lambda: [n for n in names() if n.endswith(".gz.tmp")], what="the compression under way")[0]
        gz = os.path.join(out, tmp[:-len(".tmp")])
        if how == "handover":
            d.reexec()
            assert d.proc.poll() is None, d.err()
        elif how == "kill":
            d.kill()
            d = ctx.daemon("--output-max-size", "16M", "--output-keep", "3", output=path)
        else:
            assert d.stop() == 0
            assert names() == [os.path.basename(gz)], names()
        try:
            wait(lambda: names() == [os.path.basename(gz)], timeout=60, what="the compression finished")
        except AssertionError as e:
            raise AssertionError("%s (%s): %s" % (e, how, names()))
        with gzip.open(gz) as g:
            assert hashlib.sha256(g.read()).digest() == hashlib.sha256(big).digest(), how
        if d.proc.poll() is None:
            assert d.stop() == 0
