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


LSM_LIST = "/sys/kernel/security/lsm"
LOAD_STEPS = ("open", "load", "BPF_PROG_LOAD", "attach")  # where a program's load can fail


def reason_parts(r):
    """(errno, step, hint) of an unavailable feature's reason, "<ERRNO> at <step>: <hint>"."""
    m = re.fullmatch(r"(E[A-Z0-9]+) at ([\w/ ]+): (\S.*)", r["reason"])
    assert m and m.group(1) == r["errno"], r
    return m.groups()


def kernel_has_bpf_lsm():
    """Whether the kernel was built with BPF LSM (CONFIG_BPF_LSM): its hooks are kernel symbols."""
    with open("/proc/kallsyms") as f:
        return any(l.rstrip().endswith(" bpf_lsm_bprm_check_security") for l in f)


def test_json_lsm(ctx):
    f = probe_json(ctx)["features"]
    if bpf_lsm_active():
        assert f["bpf_lsm"]["available"], f["bpf_lsm"]
        return
    # A program that loads is not enough: without bpf in lsm= it never runs.
    assert not f["bpf_lsm"]["available"], f["bpf_lsm"]
    assert not f["bpf_lsm_cgroup"]["available"], f["bpf_lsm_cgroup"]
    # bpf_lsm: which case holds, from what the kernel has, whether the LSM list can be read
    # (None: no securityfs), and whether the program loaded (the probe then went on to the list)
    r = f["bpf_lsm"]
    errno, step, hint = reason_parts(r)
    listed = lsm_list()
    if not kernel_has_bpf_lsm():
        case, step_ok, want = ("no BPF LSM in this kernel, the program does not load",
                               step in LOAD_STEPS and errno in ("ESRCH", "ENOENT"),
                               "no bpf_lsm_bprm_check_security in vmlinux BTF; kernel built without CONFIG_BPF_LSM")
    elif step == LSM_LIST and listed is not None:
        case, step_ok, want = ("the program loads and the LSM list names no bpf", errno == "EOPNOTSUPP",
                               "loads, but would never run: bpf is not an active LSM; add bpf to the lsm= boot "
                               "parameter")
    elif step == LSM_LIST:
        case, step_ok, want = ("the program loads and the LSM list cannot be read", True,
                               "loads, but whether bpf is an active LSM is unknown; mount securityfs")
    elif listed is not None:
        case, step_ok, want = ("the program is refused and the LSM list names no bpf", step in LOAD_STEPS,
                               "BPF LSM not enabled (bpf not in %s); add bpf to the lsm= boot parameter" % LSM_LIST)
    else:
        case, step_ok, want = ("the program is refused and the LSM list cannot be read (no securityfs)",
                               step in LOAD_STEPS,
                               "BPF LSM probably not enabled; add bpf to the lsm= boot parameter (LSM list "
                               "unknown: no securityfs)")
    assert step_ok and hint == want, "bpf_lsm: %s, so %r; the probe says %r" % (case, want, r["reason"])
    # bpf_lsm_cgroup: the same hooks, so it runs only where bpf_lsm does, and says so
    c = f["bpf_lsm_cgroup"]
    c_errno, c_step, c_hint = reason_parts(c)
    if c_step == "bpf_lsm":
        case, step_ok = "the program loads, but bpf_lsm is unavailable (its errno)", c_errno == errno
    else:
        case, step_ok = "the program is refused", c_step in LOAD_STEPS
    assert step_ok and c_hint == "needs BPF LSM (see bpf_lsm)", \
        "bpf_lsm_cgroup: %s, so 'needs BPF LSM (see bpf_lsm)'; the probe says %r" % (case, c["reason"])


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
