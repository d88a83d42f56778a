# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The daemon with --policy: every event annotated, reload by 'execgate
policy reload' (SIGHUP only reopens the output), a bad policy never replaces
a good one."""
import json
import os
import signal
import subprocess
import time

from eg import token
from test_tracer import execs, my_depth_is, wait_execs

POLICY = """
sandbox:
  seccomp:
    execve:
      internal_bypass: ["*/egbypass-*"]
default_decision: allow
commands:
  - name: deny-nested-marker
    basenames: [echo]
    args: ["deny-me"]
    context: [nested]
    decision: deny
    message: no nested deny-me
  - name: ask-marker
    basenames: [echo]
    args_patterns: ["ask-me"]
    decision: approval
  - name: audit-marker
    paths: ["/bin/ech?", "/usr/bin/echo"]
    args: ["audit-me"]
    decision: audit
    message: seen
"""


def write(ctx, text):
    path = os.path.join(ctx.tmpdir(), "policy.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def one(d, tok, typ="exec"):
    return wait_execs(d, tok, typ=typ)[0]


def test_every_decision_annotated(ctx):
    d = ctx.daemon("--policy", write(ctx, POLICY))
    my_depth_is(ctx, d, 0)  # what we run directly is depth 1: nested
    t = token()
    subprocess.run(["/bin/echo", "deny-me", t], stdout=subprocess.DEVNULL)
    subprocess.run(["/bin/echo", "please ask-me", t + "a"], stdout=subprocess.DEVNULL)
    subprocess.run(["/bin/echo", "audit-me", t + "b"], stdout=subprocess.DEVNULL)
    subprocess.run(["/bin/echo", "plain", t + "c"], stdout=subprocess.DEVNULL)
    e = one(d, t)
    assert (e["decision"], e["rule"], e["message"], e["action"]) == \
        ("deny", "deny-nested-marker", "no nested deny-me", "would-block"), e
    e = one(d, t + "a")
    assert (e["decision"], e["rule"], e["action"]) == ("approval", "ask-marker", "would-ask"), e
    e = one(d, t + "b")
    assert (e["decision"], e["rule"], e["message"], e["action"]) == ("audit", "audit-marker", "seen", "audited"), e
    e = one(d, t + "c")
    assert (e["decision"], e["rule"], e["message"], e["action"]) == ("allow", None, None, "allowed"), e


def test_depth_decides_direct_vs_nested(ctx):
    d = ctx.daemon("--policy", write(ctx, POLICY))
    my_depth_is(ctx, d, -1)  # what we run is depth 0: direct
    t = token()
    subprocess.run(["/bin/echo", "deny-me", t], stdout=subprocess.DEVNULL)
    e = one(d, t)
    assert e["depth"] == 0 and e["decision"] == "allow", e
    subprocess.run(["/bin/sh", "-c", "/bin/echo deny-me %sx" % t], stdout=subprocess.DEVNULL)
    e = one(d, t + "x")
    assert e["depth"] == 1 and e["decision"] == "deny", e


def test_exec_failed_annotated(ctx):
    d = ctx.daemon("--policy", write(ctx, POLICY))
    my_depth_is(ctx, d, 0)
    t = token()
    subprocess.run(["/usr/bin/env", "PATH=/egt-none", "echo", "deny-me", t], stderr=subprocess.DEVNULL)
    e = one(d, t, typ="exec_failed")
    assert e["filename"] == "/egt-none/echo"
    assert e["decision"] == "deny" and e["rule"] == "deny-nested-marker", e


def test_internal_bypass_logged(ctx):
    """internal_bypass names a file: the real one gets it (and is logged), a
    copy with the same name in a directory others can write does not."""
    pol = ("sandbox: {seccomp: {execve: {internal_bypass: [/usr/bin/printf]}}}\n"
           "commands:\n  - {name: no-printf, basenames: [printf], decision: deny}\n")
    d = ctx.daemon("--policy", write(ctx, pol))
    t = token()
    subprocess.run(["/usr/bin/printf", "%s", t], stdout=subprocess.DEVNULL)
    e = one(d, t)
    assert e["rule"] == "internal_bypass" and e["decision"] == "allow", e
    copy = os.path.join(ctx.tmpdir(), "printf")
    subprocess.run(["cp", "/usr/bin/printf", copy], check=True)
    t = token()
    subprocess.run([copy, "%s", t], stdout=subprocess.DEVNULL)
    e = one(d, t)
    assert e["rule"] == "no-printf" and e["decision"] == "deny", e


def test_cgroup_rule(ctx):
    rel, cg, _ = ctx.cgroup()
    pol = "commands:\n  - name: in-test-cgroup\n    cgroups: [%s]\n    decision: deny\n" % rel
    d = ctx.daemon("--policy", write(ctx, pol))
    t = token()
    ctx.run([ctx.helper("burst"), cg, "1", t])
    subprocess.run(["/bin/true", t + "out"])
    inside = [e for e in wait_execs(d, t, n=2) if e["argv"][0] == "/bin/true"][0]
    assert inside["rule"] == "in-test-cgroup", inside
    assert one(d, t + "out")["rule"] is None


def test_start_and_policy_records(ctx):
    path = write(ctx, POLICY)
    d = ctx.daemon("--policy", path)
    evs = d.events()
    assert evs[0]["event"] == "start" and evs[0]["policy"] == path
    assert evs[1]["event"] == "policy" and evs[1]["rules"] == 3 and evs[1]["reload"] is False
    import hashlib
    with open(path, "rb") as f:
        assert evs[1]["sha256"] == hashlib.sha256(f.read()).hexdigest()


def wait_event(d, pred, timeout=10):
    return d.wait_for(pred, timeout)[-1]


def test_reload_by_command_not_by_sighup(ctx):
    path = write(ctx, POLICY)
    d = ctx.daemon("--policy", path)
    with open(path, "a") as f:
        f.write("  - name: new-rule\n    basenames: [true]\n    decision: audit\n")
    # SIGHUP is logrotate's signal: it reopens the output and leaves the policy alone
    d.proc.send_signal(signal.SIGHUP)
    t = token()
    subprocess.run(["/bin/true", t])
    assert one(d, t)["rule"] is None, "SIGHUP must not reload the policy"
    assert not [e for e in d.events() if e.get("event") == "policy" and e.get("reload")]

    r = ctx.run([ctx.execgate, "policy", "reload", "--pin-path", d.pin_path], check=False)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    rec = wait_event(d, lambda e: e.get("event") == "policy" and e.get("reload"))
    assert rec["rules"] == 4
    assert rec["sha256"] in out and "4 rules" in out, out
    t = token()
    subprocess.run(["/bin/true", t])
    assert one(d, t)["rule"] == "new-rule"

    with open(path, "a") as f:
        f.write("  - name: newer-rule\n    basenames: [false]\n    decision: audit\n")
    r = ctx.run([ctx.execgate, "policy", "reload", "--json", "--pin-path", d.pin_path], check=False)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["ok"] is True and j["rules"] == 5 and len(j["sha256"]) == 64, j
    rec = wait_event(d, lambda e: e.get("event") == "policy" and e.get("rules") == 5)
    assert rec["reload"] is True and rec["sha256"] == j["sha256"]


def test_bad_reload_keeps_old_policy(ctx):
    path = write(ctx, POLICY)
    d = ctx.daemon("--policy", path)
    good = d.events()[1]["sha256"]
    with open(path, "a") as f:
        f.write("  - name: broken\n    basenamez: [x]\n    decision: deny\n")
    r = ctx.run([ctx.execgate, "policy", "reload", "--pin-path", d.pin_path], check=False)
    assert r.returncode == 1, (r.returncode, r.stderr)
    line = open(path).read().count("\n") - 1  # the line before the last
    stderr = r.stderr.decode()
    assert ":%d:5:" % line in stderr and "basenamez" in stderr, stderr
    assert good in stderr, "the kept policy's sha256 is named: " + stderr
    err = wait_event(d, lambda e: e.get("event") == "policy_error")
    assert err["kept_sha256"] == good
    assert any(":%d:5:" % line in x and "basenamez" in x for x in err["errors"]), err["errors"]
    r = ctx.run([ctx.execgate, "policy", "reload", "--json", "--pin-path", d.pin_path], check=False)
    j = json.loads(r.stdout)
    assert r.returncode == 1 and j["ok"] is False and j["kept_sha256"] == good, j
    my_depth_is(ctx, d, 0)
    t = token()
    subprocess.run(["/bin/echo", "deny-me", t], stdout=subprocess.DEVNULL)
    assert one(d, t)["rule"] == "deny-nested-marker", "the old policy is still in force"
    assert d.proc.poll() is None


def test_bad_policy_at_start_is_refused(ctx):
    path = write(ctx, "commands:\n  - name: x\n    decision: maybe\n")
    r = ctx.run([ctx.execgate, "daemon", "--policy", path, "--pin-path", "/sys/fs/bpf/egtest-badpol",
                 "--output", os.path.join(ctx.tmpdir(), "ev")], check=False, timeout=30)
    assert r.returncode == 1
    err = r.stderr.decode()
    assert "%s:3:15:" % path in err, err
    assert not os.path.exists("/sys/fs/bpf/egtest-badpol")


def test_reload_without_daemon(ctx):
    r = ctx.run([ctx.execgate, "policy", "reload", "--pin-path", "/sys/fs/bpf/egtest-nodaemon"], check=False)
    assert r.returncode != 0 and r.stderr.strip()
