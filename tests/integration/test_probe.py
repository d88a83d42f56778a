# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""`execgate probe`: the features this kernel has, found by trying them.

The answers are checked against what the kernel itself says where it can
(the active LSM list), and for consistency otherwise: no test here pins the
errno a particular host refuses a program type with. tests/vm runs the
probe under a kernel with BPF LSM, where bpf_lsm must be available.
"""
import json
import os
import re

FEATURES = ["btf", "ringbuf", "task_storage", "tracepoint", "tp_btf", "fentry", "bpf_lsm",
            "bpf_lsm_cgroup", "send_signal", "seccomp_notif", "wait_killable_recv", "pidfd"]
ALWAYS = ["btf", "ringbuf", "task_storage", "tracepoint", "tp_btf", "send_signal",
          "seccomp_notif", "pidfd"]


def lsm_list():
    """The active LSMs, or None without securityfs (as on this project's hosts).
    Read after a probe: the probe mounts securityfs when it needs the list."""
    try:
        with open("/sys/kernel/security/lsm") as f:
            return f.read().strip().split(",")
    except OSError:
        return None


def bpf_lsm_active():
    return "bpf" in (lsm_list() or [])


def probe(ctx, *args):
    r = ctx.run([ctx.execgate, "probe"] + list(args), check=False)
    out = r.stdout.decode()
    assert r.returncode == 0, "exit %d: %s %s" % (r.returncode, out, r.stderr.decode())
    return out


def probe_json(ctx):
    return json.loads(probe(ctx, "--json"))


def test_json_shape(ctx):
    d = probe_json(ctx)
    assert sorted(d) == ["features", "mode"], d
    assert sorted(d["features"]) == sorted(FEATURES), sorted(d["features"])
    for name, r in d["features"].items():
        assert isinstance(r["available"], bool), (name, r)
        if r["available"]:
            assert "errno" not in r, (name, r)
        else:
            assert r["errno"].startswith("E"), (name, r)
            assert r["reason"].startswith(r["errno"] + " at "), (name, r)


def test_json_available(ctx):
    f = probe_json(ctx)["features"]
    for name in ALWAYS:
        assert f[name]["available"], (name, f[name])


def test_json_lsm(ctx):
    f = probe_json(ctx)["features"]
    if bpf_lsm_active():
        assert f["bpf_lsm"]["available"], f["bpf_lsm"]
        return
    # A program that loads is not enough: without bpf in lsm= it never runs.
    assert not f["bpf_lsm"]["available"], f["bpf_lsm"]
    assert not f["bpf_lsm_cgroup"]["available"], f["bpf_lsm_cgroup"]
    for name in ("bpf_lsm", "bpf_lsm_cgroup"):
        r = f[name]
        # the reason names the step that failed and what to do about it
        assert re.match(r"E[A-Z0-9]+ at [\w/ ]+: \S", r["reason"]), r
        assert "lsm=" in r["reason"] or "BPF LSM" in r["reason"] or "refused" in r["reason"] or \
            "lockdown" in r["reason"], r


def test_json_mode(ctx):
    m = probe_json(ctx)["mode"]
    assert m["tracer"] == "tp_btf", m
    assert m["session_enforcement"] == "seccomp_notify", m
    want = "bpf_lsm" if bpf_lsm_active() else "kill_on_exec"
    assert m["kernel_enforcement"] == want, (want, m)


def test_plain(ctx):
    out = probe(ctx)
    lines = out.splitlines()
    for name in FEATURES:
        row = [l for l in lines if l.split()[:1] == [name]]
        assert len(row) == 1, (name, out)
        assert row[0].split()[1] in ("available", "unavailable"), row
    if not bpf_lsm_active():
        row = [l for l in lines if l.startswith("bpf_lsm ")][0]
        assert row.split()[1] == "unavailable" and "lsm=" in row, row
    want = "bpf_lsm" if bpf_lsm_active() else "kill_on_exec"
    assert lines[-1] == ("mode: tracer=tp_btf kernel_enforcement=%s "
                         "session_enforcement=seccomp_notify exec_failed_source=syscall_tracepoints" % want), \
        lines[-1]


def test_repeatable(ctx):
    # The daemon runs the probes at every start: they leave nothing behind
    # that changes the next answer.
    a = probe_json(ctx)
    b = probe_json(ctx)
    assert a == b, (a, b)


def test_usage_errors(ctx):
    for args in (["--bogus"], ["extra"]):
        r = ctx.run([ctx.execgate, "probe"] + args, check=False)
        assert r.returncode == 2, (args, r.returncode)
        assert r.stdout == b"", (args, r.stdout)
        assert r.stderr, args
    r = ctx.run([ctx.execgate, "probe", "--help"], check=False)
    assert r.returncode == 0 and b"--json" in r.stdout, r


def test_not_root(ctx):
    if not os.access(ctx.execgate, os.X_OK):
        ctx.skip("no binary")
    kw = dict(user=65534, group=65534, extra_groups=[], check=False)
    try:
        r = ctx.run([ctx.execgate, "probe", "--json"], **kw)
    except PermissionError:
        ctx.skip("binary not reachable by nobody")
    assert r.returncode == 1, r
    err = json.loads(r.stdout)["error"]
    assert "root" in err, err
    r = ctx.run([ctx.execgate, "probe"], **kw)
    assert r.returncode == 1 and b"root" in r.stderr and r.stdout == b"", r
