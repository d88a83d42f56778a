# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The redirect decision (policy/README.md, "Redirects"): policy check's
checks and what it says of the kernel; in sessions the launcher's own
command and every name found through PATH run the redirect (with its
message on stderr, recorded as redirected), any other way to the command
is refused naming the target (blocked); the kernel denies it."""
import json
import os
import signal
import subprocess

import eg
from eg import token

POLICY = """
sandbox: {seccomp: {execve: {approval_timeout: 4s}}}
commands:
  - name: use-printf
    basenames: [grep]
    decision: redirect
    redirect_to: {command: /usr/bin/printf, args: ["redirected:%s\\\\n"]}
    message: "grep goes to printf here"
  - {name: plain, basenames: [egrep], decision: redirect, redirect_to: /usr/bin/true, message: "egrep is true"}
"""


def write(ctx, text):
    d = ctx.tmpdir()
    os.chmod(d, 0o755)
    p = os.path.join(d, "policy.yaml")
    with open(p, "w") as f:
        f.write(text)
    os.chmod(p, 0o644)
    return p


def session(ctx, d, cmd, env=None):
    return subprocess.run([ctx.execgate, "exec", "-p", d.pin_path, "--"] + cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60, env=env)


def test_policy_check_verifies_and_says_the_kernel_denies(ctx):
    r = ctx.run([ctx.execgate, "policy", "check", write(ctx, POLICY)], check=False)
    out = r.stdout.decode()
    assert r.returncode == 0, (out, r.stderr)
    assert "use-printf  redirect" in out and "kernel (as deny), sessions (redirect)" in out, out
    assert "redirects to /usr/bin/printf redirected:%s\\n" in out, out
    j = json.loads(ctx.run([ctx.execgate, "policy", "check", "--json", write(ctx, POLICY)], check=False).stdout)
    rule = [x for x in j["rules"] if x["name"] == "plain"][0]
    assert rule["decision"] == "redirect" and rule["enforced_in"][0] == "kernel (as deny)", rule
    plain = os.path.join(ctx.tmpdir(), "not-executable")
    with open(plain, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(plain, 0o644)
    bad = [("redirect_to: /nonexistent/x", "is not an executable file here"),
           ("redirect_to: %s" % plain, "is not an executable file here"),
           ("redirect_to: /usr/bin", "is not an executable file here"),
           ("redirect_to: rel/x", "must be an absolute path"),
           ("redirect_to: {args: [a]}", "needs 'command'"),
           ("redirect_to: [x]", "redirect_to"),
           ("", "has no 'redirect_to'")]
    for extra, msg in bad:
        pol = "commands:\n  - {name: r, basenames: [grep], decision: redirect%s}\n" % (", " + extra if extra else "")
        r = ctx.run([ctx.execgate, "policy", "check", write(ctx, pol)], check=False)
        assert r.returncode != 0 and msg in r.stderr.decode(), (extra, r.returncode, r.stderr)
    r = ctx.run([ctx.execgate, "policy", "check", write(
        ctx, "commands:\n  - {name: r, basenames: [grep], decision: deny, redirect_to: /bin/ls}\n")], check=False)
    assert r.returncode != 0 and b"its decision is not redirect" in r.stderr, r.stderr
    # policy test: the command as asked does not run
    r = ctx.run([ctx.execgate, "policy", "test", write(ctx, POLICY), "--", "grep", "x"], check=False)
    assert r.returncode == 1 and b"redirect" in r.stdout, (r.returncode, r.stdout)


def test_sessions_redirect_their_command_and_path_names(ctx):
    d = ctx.daemon("--policy", write(ctx, POLICY))
    t = token()
    # the session's own command: the launcher runs the redirect, args first, then the original arguments
    r = session(ctx, d, ["grep", t, "file"])
    assert r.returncode == 0 and r.stdout.decode() == "redirected:%s\nredirected:file\n" % t, r
    assert b"execgate: redirect: grep goes to printf here (rule use-printf)" in r.stderr, r.stderr
    ev = d.wait_for(lambda e: e.get("type") == "exec" and e.get("action") == "redirected" and t in e.get("argv", []),
                    what="the redirected record")[0]
    assert ev["decision"] == "redirect" and ev["rule"] == "use-printf", ev
    assert ev["redirect_to"] == {"command": "/usr/bin/printf", "args": ["redirected:%s\\n"]}, ev
    ran = d.wait_for(lambda e: e.get("type") == "exec" and e.get("filename") == "/usr/bin/printf" and
                     t in e.get("argv", []), what="the target's record")[0]
    assert ran["argv"] == ["/usr/bin/printf", "redirected:%s\\n", t, "file"], ran
    # a name found through PATH inside the session, and the fallbacks: an absolute path, a changed PATH
    t2 = token()
    r = session(ctx, d, ["sh", "-c", "grep %s; echo rc=$?; /usr/bin/grep %s; echo rc=$?; "
                         "PATH=/usr/bin:/bin grep %s; echo rc=$?; egrep %s; echo rc=$?" % (t2, t2, t2, t2)])
    out = r.stdout.decode()
    assert out == "redirected:%s\nrc=0\nrc=126\nrc=126\nrc=0\n" % t2, (out, r.stderr)
    err = r.stderr.decode()
    assert err.count("execgate: denied: grep goes to printf here (rule use-printf); this command is redirected: "
                     "run /usr/bin/printf redirected:%s\\n") == 2, err
    d.wait_for(lambda e: e.get("type") == "exec_failed" and e.get("argv") == ["grep", t2], what="the second")
    # (the changed PATH's search tries /usr/bin/grep and /bin/grep: a record each)
    blocked = [e for e in d.events() if e.get("type") == "exec_failed" and t2 in e.get("argv", [])]
    assert len(blocked) >= 2 and all(e["action"] == "blocked" and e["decision"] == "redirect" and
                                     e["redirect_to"]["command"] == "/usr/bin/printf" for e in blocked), blocked
    # nothing of a session's redirect directory is left after it
    left = [x for x in os.listdir("/run/execgate/redirect") if x.startswith("%d-" % d.proc.pid)] \
        if os.path.isdir("/run/execgate/redirect") else []
    eg.wait_until(lambda: not [x for x in os.listdir("/run/execgate/redirect")
                               if x.startswith("%d-" % d.proc.pid)], what="the redirect directories gone: %s" % left)


def test_a_deny_of_another_policy_wins_over_a_redirect(ctx):
    """The daemon's policy redirects grep; a session's own policy denies
    it. Deny wins, as everywhere policies stack: the PATH entry of the
    redirect is refused, the redirect does not run."""
    d = ctx.daemon("--policy", write(ctx, POLICY))
    own = write(ctx, "commands:\n  - {name: no-grep, basenames: [grep], decision: deny}\n")
    t = token()
    r = subprocess.run([ctx.execgate, "exec", "-p", d.pin_path, "--policy", own, "--", "sh", "-c",
                        "grep %s; echo rc=$?" % t], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert r.stdout.decode() == "rc=126\n", (r.stdout, r.stderr)
    assert "rule no-grep" in r.stderr.decode(), r.stderr


def test_run_and_shell_redirect_too(ctx):
    """execgate run and execgate shell start their sessions through the launcher."""
    d = ctx.daemon("--policy", write(ctx, POLICY))
    t = token()
    r = subprocess.run([ctx.execgate, "run", "-p", d.pin_path, "--", "grep", t], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 0 and r.stdout.decode() == "redirected:%s\n" % t, r
    assert b"execgate: redirect: grep goes to printf here" in r.stderr, r.stderr
    r = subprocess.run([ctx.execgate, "shell", "-p", d.pin_path], input=("grep %s\necho rc=$?\n" % t).encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert r.stdout.decode() == "redirected:%s\nrc=0\n" % t, (r.stdout, r.stderr)
    # one redirected record each (the run's and the shell's entries)
    eg.wait_until(lambda: len([e for e in d.events() if e.get("type") == "exec" and e.get("action") == "redirected"
                               and t in e.get("argv", [])]) == 2, what="two redirected records")


def test_an_entry_cannot_be_planted(ctx):
    """The redirect directory is root's: a session process (not root) cannot add to it."""
    d = ctx.daemon("--policy", write(ctx, POLICY))
    r = subprocess.run([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c",
                        'd=$(echo "$PATH" | cut -d: -f1); ls -ld "$d" | cut -c1-10; '
                        'echo x > "$d/evil" && echo planted; ls "$d"'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                       user="nobody", group="nogroup", extra_groups=[])
    out = r.stdout.decode()
    assert out.startswith("drwxr-xr-x\n") and "planted" not in out and "egrep\ngrep\n" in out, (out, r.stderr)


def test_the_kernel_denies_a_redirect(ctx):
    rel, cg, _ = ctx.cgroup()
    d = ctx.daemon("--policy", write(ctx, POLICY), "--enforce", "--cgroup", cg)
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    t = token()

    def join():
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write("0")
    r = subprocess.run(["/usr/bin/grep", t, "/etc/hostname"], preexec_fn=join, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)
    assert r.returncode in (-signal.SIGKILL, 126) or r.returncode < 0 or b"denied" in r.stderr, r
    assert r.returncode != 1, "grep ran (exit 1: no match)"
    e = d.wait_for(lambda e: e.get("type") in ("exec", "exec_failed") and t in e.get("argv", []),
                   what="the record")[0]
    assert e["decision"] == "redirect" and e["kernel"]["decision"] == "deny", e
    assert e["redirect_to"]["command"] == "/usr/bin/printf", e


def test_a_session_keeps_its_redirects_across_a_handover(ctx):
    d = ctx.daemon("--policy", write(ctx, POLICY))
    t = token()
    fifo = os.path.join(ctx.tmpdir(), "go")
    os.mkfifo(fifo)
    p = subprocess.Popen([ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c",
                          "read x < %s; grep %s; echo rc=$?" % (fifo, t)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    eg.wait_until(lambda: [e for e in d.events() if e.get("type") == "session" and e.get("event") == "start"],
                  what="the session")
    d.proc.send_signal(signal.SIGUSR2)
    d.wait_for(lambda e: e.get("type") == "daemon" and e.get("event") == "start" and e.get("takeover"),
               what="the new daemon's start record")
    with open(fifo, "w") as f:
        f.write("go\n")
    out, err = p.communicate(timeout=30)
    assert out.decode() == "redirected:%s\nrc=0\n" % t, (out, err)
    ev = d.wait_for(lambda e: e.get("type") == "exec" and e.get("action") == "redirected" and t in e.get("argv", []),
                    what="the redirected record")[0]
    assert ev["redirect_to"]["command"] == "/usr/bin/printf", ev


def test_a_file_mounted_over_an_entry_is_not_the_redirect(ctx):
    """A session started in a user namespace of its caller's (root there)
    can bind another file over an entry's name in its own mount
    namespace: the name is the entry's, the file is not, and it is refused
    as any other way to the command."""
    d = ctx.daemon("--policy", write(ctx, POLICY))
    t = token()
    script = ('d=$(echo "$PATH" | cut -d: -f1); mount --bind /usr/bin/id "$d/grep" && echo mounted; '
              '"$d/grep" %s; echo rc=$?; grep %s /dev/null; echo plain=$?' % (t, t))
    r = subprocess.run(["unshare", "-Urm", "--", ctx.execgate, "exec", "-p", d.pin_path, "--", "sh", "-c", script],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    out = r.stdout.decode()
    assert "mounted" in out and "rc=126" in out and "uid=" not in out, (out, r.stderr)
    # the name looked up through PATH is the same mounted file: refused too, not redirected
    assert "plain=126" in out, (out, r.stderr)
    # what ran of it: nothing (the PATH search's misses are let fail, the files found refused)
    e = eg.wait_until(lambda: [x for x in d.events() if t in x.get("argv", []) and x["argv"][0].endswith("grep")
                               and x["action"] == "blocked"][1:] and
                      [x for x in d.events() if t in x.get("argv", []) and x["argv"][0].endswith("grep")],
                      what="the refusals")
    assert all(x["type"] == "exec_failed" for x in e), e
    entry = [x for x in e if x["argv"][0].startswith("/run/execgate/redirect/")]
    assert len(entry) == 1 and entry[0]["action"] == "blocked" and entry[0]["decision"] == "redirect", entry
