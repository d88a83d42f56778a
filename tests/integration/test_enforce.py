# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Kernel enforcement: `execgate daemon --enforce` on this kernel.

This kernel has no BPF LSM, so the kernel rules act at sched_process_exec:
a denied exec is killed before its new image runs an instruction (the
LSM layer is tested under qemu, tests/vm/). Every daemon here is scoped to
a test cgroup (--cgroup) and the commands it judges run in it: the host's
own execs are never at stake.

What is checked: the kernel's verdict equals the policy's for every exec
(a differential run of 10,000+ generated execs), spellings, links, bind
mounts, namespaces and scripts do not get around a rule, the rules
survive kill -9 and are visible without a daemon, a reload switches
policies atomically (1,000 reloads under a stream of execs), and what the
kernel cannot hold is refused or said."""
import collections
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import threading
import time

import eg
from eg import token


def write(ctx, text, name="policy.yaml", path=None):
    if not path:
        d = ctx.tmpdir()
        os.chmod(d, 0o755)
        path = os.path.join(d, name)
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.rename(tmp, path)
    return path


def in_cg(cg_abs, argv, timeout=30, **kw):
    """Runs argv inside the cgroup cg_abs (the child joins it before exec)."""
    def join():
        with open(os.path.join(cg_abs, "cgroup.procs"), "w") as f:
            f.write("0")
    return subprocess.run(argv, preexec_fn=join, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout, **kw)


def enforcing(ctx, policy, *extra, ready=True):
    """A daemon enforcing policy (text) in a fresh cgroup: (daemon, cgroup rel, cgroup abs)."""
    rel, cg, _ = ctx.cgroup()
    pf = write(ctx, policy)
    d = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg, *extra, ready=ready)
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    d.policy_file = pf
    return d, rel, cg


def drained(d, cg):
    """Until the record of an exec made now in cg is written: every earlier exec's is by then
    (one ring buffer, read in order)."""
    tok = token()
    in_cg(cg, ["/bin/true", tok])
    d.wait_for(lambda e: e.get("type") == "exec" and tok in e.get("argv", []), 60,
               "the record of a later exec (/bin/true %s)" % tok)


def execs_with(d, tok):
    return [e for e in d.events() if e.get("type") == "exec" and tok in e.get("argv", [])]


def one(d, tok, timeout=10):
    evs = d.wait_for(lambda e: e.get("type") == "exec" and tok in e.get("argv", []), timeout,
                     "exec event with %s" % tok)
    assert len(evs) == 1, evs
    return evs[0]


DENY_CAT = """
default_decision: allow
commands:
  - {name: no-cat, basenames: [cat], decision: deny, message: "no cats"}
  - {name: no-id-by-path, paths: [/usr/bin/id], decision: deny}
  - {name: no-force, basenames: [true], args: ["--force|-f"], decision: deny}
  - {name: no-evil, basenames: [true], args: [EVIL], decision: deny}
"""


def test_the_root_cgroup_glob_is_every_cgroup_in_the_kernel(ctx):
    """`cgroups: ["/"]` is every cgroup to the daemon's judge and sessions;
    in the kernel it met only the root cgroup's own tasks, so a deny the
    record said was in force let the exec run."""
    t = token()
    d, rel, cg = enforcing(ctx, "commands:\n  - {name: no-t, cgroups: [\"/\"], basenames: [true], "
                                "args: [%s], decision: deny}\n" % t)
    r = in_cg(cg, ["/bin/true", t])
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stderr)
    assert in_cg(cg, ["/bin/true", "other"]).returncode == 0


def test_denied_exec_is_killed_and_reported(ctx):
    d, rel, cg = enforcing(ctx, DENY_CAT)
    start = d.events()[0]
    assert start["enforcement"][0] == "kernel-kill", start
    assert start["kernel"]["rules"] == 4 and start["kernel"]["partial"] is False, start
    assert "bpf_lsm" not in start["available"], start
    t = token()
    r = in_cg(cg, ["/bin/cat", "/etc/hostname", t])
    assert r.returncode == -signal.SIGKILL and r.stdout == b"", (r.returncode, r.stdout)
    e = one(d, t)
    assert e["action"] == "killed" and e["layer"] == "kernel-kill" and e["reason"] == "kernel-rule", e
    assert e["decision"] == "deny" and e["rule"] == "no-cat" and e["message"] == "no cats", e
    assert e["kernel"]["decision"] == "deny" and e["kernel"]["rule"] == "no-cat", e
    # an allowed exec runs, and says the kernel judged it
    t2 = token()
    r = in_cg(cg, ["/bin/true", "ok", t2])
    assert r.returncode == 0, r
    e = one(d, t2)
    assert e["kernel"]["decision"] == "allow" and e["action"] == "allowed", e
    # argv words: only the whole argument counts
    t3 = token()
    assert in_cg(cg, ["/bin/true", "--force", t3]).returncode == -signal.SIGKILL
    assert in_cg(cg, ["/bin/true", "--forced", t3]).returncode == 0
    # outside the scope nothing is judged
    t4 = token()
    r = subprocess.run(["/bin/cat", "/etc/hostname"], stdout=subprocess.PIPE)
    assert r.returncode == 0 and r.stdout
    st = json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)
    assert st["counters"]["kernel_denied"] >= 2 and st["counters"]["kernel_errors"] == 0, st
    assert t4


def test_spellings_links_and_scripts_do_not_get_around(ctx):
    d, rel, cg = enforcing(ctx, DENY_CAT)
    work = ctx.tmpdir()
    os.chmod(work, 0o755)
    kitty = os.path.join(work, "kitty")
    os.symlink("/bin/cat", kitty)
    # a bind mount is the same file under another path: the path rule names the file
    dog = os.path.join(work, "dog")
    open(dog, "w").close()
    subprocess.run(["mount", "--bind", "/usr/bin/id", dog], check=True)
    ctx.on_cleanup(lambda: subprocess.run(["umount", "-l", dog]))
    # a script whose interpreter is denied, and a script named like a denied program
    interp = os.path.join(work, "hello")
    with open(interp, "w") as f:
        f.write("#!/usr/bin/cat\nhello\n")
    named = os.path.join(work, "cat")
    with open(named, "w") as f:
        f.write("#!/bin/sh\necho should-not-run\n")
    for p in (interp, named):
        os.chmod(p, 0o755)
    tries = {
        "symlink": [kitty, "/etc/hostname"],
        "dotdot": ["/usr/lib/../bin/cat", "/etc/hostname"],
        "double-slash": ["//usr//bin/cat", "/etc/hostname"],
        "bind-mount": [dog],
        "script-interp": [interp],
        "script-named": [named],
        "env-path": ["/usr/bin/env", "cat", "/etc/hostname"],
        "relative": ["./cat"],
    }
    for what, argv in tries.items():
        t = token()
        r = in_cg(cg, argv + [t], cwd=work if what == "relative" else None)
        assert r.returncode != 0 and b"should-not-run" not in r.stdout, (what, r.returncode, r.stdout)
        killed = d.wait_for(lambda e: e.get("type") == "exec" and t in e.get("argv", []) and
                            e.get("action") == "killed", 10, "killed exec (%s)" % what)
        assert killed and killed[-1]["layer"] == "kernel-kill", (what, execs_with(d, t))
    # another mount namespace with the file bound elsewhere: the identity still holds
    t = token()
    other = os.path.join(work, "other")
    open(other, "w").close()
    r = in_cg(cg, ["unshare", "-m", "sh", "-c",
                   "mount --bind /usr/bin/id %s && exec %s %s" % (other, other, t)])
    assert r.returncode != 0, r
    e = d.wait_for(lambda e: e.get("type") == "exec" and t in e.get("argv", []) and
                   e.get("action") == "killed", 10, "killed exec in another namespace")
    assert e and e[0]["filename"] == other and e[0]["rule"] == "no-id-by-path", execs_with(d, t)


def test_exec_by_fd_is_judged(ctx):
    d, rel, cg = enforcing(ctx, DENY_CAT)
    t = token()
    r = in_cg(cg, [ctx.helper("fexec"), "fd", "/usr/bin/cat", "cat", "/etc/hostname", t])
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stderr)
    e = d.wait_for(lambda e: e.get("type") == "exec" and t in e.get("argv", []) and
                   e["argv"][0] == "cat", 10, "the exec by fd")[0]
    assert e["path_requested"].startswith("/dev/fd/") and e["filename"] == "/usr/bin/cat", e
    assert e["action"] == "killed" and e["rule"] == "no-cat", e


def test_argv_flipped_by_a_thread_is_judged_as_committed(ctx):
    """A racing thread rewrites argv (SAFE <-> EVIL) while the exec copies
    it: the kernel judges the argv the new image got, so EVIL never runs."""
    d, rel, cg = enforcing(ctx, DENY_CAT)
    tries = int(os.environ.get("EG_RACE_TRIES", "1200"))
    r = in_cg(cg, [ctx.helper("racer"), "argv", str(tries), "/bin/true"], timeout=600)
    print("    racer: " + r.stdout.decode().strip())
    drained(d, cg)
    evs = [e for e in d.events() if e.get("type") == "exec" and e.get("filename") == "/usr/bin/true"
           and e.get("argv", [None])[0] == "/bin/true"]
    assert len(evs) >= tries * 0.9, len(evs)
    for e in evs:
        evil = "EVIL" in e["argv"]
        assert evil == (e.get("action") == "killed"), e


def test_rules_survive_kill9_and_unload_removes_them(ctx):
    d, rel, cg = enforcing(ctx, DENY_CAT)
    os.kill(d.proc.pid, signal.SIGKILL)
    d.proc.wait()
    assert in_cg(cg, ["/bin/cat", "/etc/hostname"]).returncode == -signal.SIGKILL
    # visible with no daemon (exit 3: the LSB's "not running")
    r = ctx.run([ctx.execgate, "status", "-j", "-p", d.pin_path], check=False)
    assert r.returncode == 3, r
    st = json.loads(r.stdout)
    assert st["daemon_running"] is False, st
    k = st["kernel"]
    assert k["rules_loaded"] is True and k["rules"] == 4 and k["enforcing"] is True, k
    assert {l["pin"] for l in k["links"]} >= {"handle_exec", "handle_fork"}, k
    plain = ctx.run([ctx.execgate, "status", "-p", d.pin_path], check=False).stdout.decode()
    assert "kernel rules" in plain and "4 (policy sha256" in plain, plain
    # a new daemon takes the rules over without a gap, then its own policy applies
    d2 = ctx.daemon("--policy", write(ctx, "commands: [{name: no-true, basenames: [true], decision: deny}]"),
                    "--enforce", "--cgroup", cg, pin_path=d.pin_path)
    assert in_cg(cg, ["/bin/cat", "/etc/hostname"]).returncode == 0
    assert in_cg(cg, ["/bin/true"]).returncode == -signal.SIGKILL
    d2.stop()
    # an orderly stop without --persist takes the rules away
    assert in_cg(cg, ["/bin/true"]).returncode == 0
    st = json.loads(ctx.run([ctx.execgate, "status", "-j", "-p", d.pin_path], check=False).stdout)
    assert st["kernel"]["rules_loaded"] is False and not st["kernel"]["links"], st


def test_unload_after_a_kill_removes_its_pid_file_and_socket(ctx):
    """A killed daemon leaves its pid file and socket in /run/execgate; unload removes them (and
    keeps its output's record, which query reads with no daemon)."""
    d = ctx.daemon()
    pid, sock = d.pidfile_and_socket()
    assert os.path.exists(pid) and os.path.exists(sock), (pid, sock)
    d.proc.kill()
    d.proc.wait()
    assert os.path.exists(pid) and os.path.exists(sock), (pid, sock)
    r = ctx.run([ctx.execgate, "unload", "-p", d.pin_path])
    assert r.returncode == 0, r
    assert not os.path.exists(pid) and not os.path.exists(sock), (pid, sock)
    assert os.path.exists(pid[:-len(".pid")] + ".output")


def pinned_prog_ids(pin):
    """The ids of the programs that the links pinned under pin hold."""
    links = json.loads(subprocess.run(["bpftool", "-j", "-f", "link", "show"], stdout=subprocess.PIPE,
                                      check=True).stdout)
    return {lk["prog_id"] for lk in links if any(p.startswith(pin + "/") for p in lk.get("pinned", []))}


def test_persist_and_unload(ctx):
    d, rel, cg = enforcing(ctx, DENY_CAT, "--persist")
    assert d.stop() == 0
    assert "stay in force" in d.err(), d.err()
    assert in_cg(cg, ["/bin/cat", "/etc/hostname"]).returncode == -signal.SIGKILL
    held = pinned_prog_ids(d.pin_path)
    assert len(held) >= 5, held
    r = ctx.run([ctx.execgate, "unload", "-p", d.pin_path])
    assert r.returncode == 0, r
    # gone when unload returns: the kernel frees an unpinned link tens of ms after the unlink
    still = held & {p["id"] for p in json.loads(ctx.run(["bpftool", "-j", "prog", "show"]).stdout)}
    assert not still, still
    r = in_cg(cg, ["/bin/cat", "/etc/hostname"])
    assert r.returncode == 0, (r, "still pinned: %r" % (os.listdir(d.pin_path) if os.path.exists(d.pin_path) else None))
    assert not os.path.exists(d.pin_path)


def still_in_force_and_removable(ctx, pin, cg):
    """DENY_CAT's rule kills cat in cg, status sees the rules, and unload removes them."""
    for _ in range(3):
        r = in_cg(cg, ["/bin/cat", "/etc/hostname"])
        assert r.returncode == -signal.SIGKILL, r
    st = json.loads(ctx.run([ctx.execgate, "status", "-j", "-p", pin], check=False).stdout)
    assert st["kernel"]["rules_loaded"] is True and st["kernel"]["links"], st
    assert ctx.run([ctx.execgate, "unload", "-p", pin]).returncode == 0
    assert in_cg(cg, ["/bin/cat", "/etc/hostname"]).returncode == 0


def test_a_start_that_fails_after_the_switch_puts_the_rules_before_back(ctx):
    """A daemon that switched to its programs and then could not load its
    rules (the kernel out of memory, made so by LD_PRELOAD) exits; the
    copy it switched away from (a --persist daemon's, pinned) acts again,
    and its rules with it. Nothing enforcing at all would be the other way."""
    if os.environ.get("EG_ASAN"):
        ctx.skip("an ASan build takes no LD_PRELOAD helper (its runtime must come first)")
    d, rel, cg = enforcing(ctx, DENY_CAT, "--persist")
    assert d.stop() == 0
    assert in_cg(cg, ["/bin/cat", "/etc/hostname"]).returncode == -signal.SIGKILL
    env = dict(os.environ, LD_PRELOAD=ctx.helper("preload_fail_bpf"), EG_FAIL_MAP="krules")
    b = ctx.daemon("--policy", d.policy_file, "--enforce", "--cgroup", cg, pin_path=d.pin_path, env=env,
                   ready=False)
    assert b.proc.wait(60) == 1
    assert "cannot load the kernel rules" in b.err(), b.err()
    still_in_force_and_removable(ctx, d.pin_path, cg)


def test_a_start_that_fails_late_leaves_no_programs_behind(ctx):
    """--metrics-listen on a port in use fails the start after the rules are
    in force and the links pinned. Without --persist a failed start is a
    stop: rules off, links unpinned. Links left pinned beside unpinned maps
    would go on killing with nothing to see or remove them, and act beside
    the next daemon's programs (every exec counted twice in the depths)."""
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    ctx.on_cleanup(busy.close)
    rel, cg, _ = ctx.cgroup()
    pf = write(ctx, DENY_CAT)
    d = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg, "--metrics-listen",
                   "127.0.0.1:%d" % busy.getsockname()[1], ready=False)
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    assert d.proc.wait(60) == 1
    assert "--metrics-listen" in d.err(), d.err()
    links = os.path.join(d.pin_path, "links")
    assert not os.path.isdir(links) or not os.listdir(links), os.listdir(links)
    assert in_cg(cg, ["/bin/cat", "/etc/hostname"]).returncode == 0
    # the next daemon's depths: one step an exec
    d2 = ctx.daemon(pin_path=d.pin_path)
    tok = token()
    r = in_cg(cg, ["/bin/sh", "-c", "/bin/true %s; :" % tok])
    assert r.returncode == 0, r
    d2.wait_for(lambda e: e.get("type") == "exec" and tok in e.get("argv", []))
    ev = d2.events()
    true = [e for e in ev if e.get("type") == "exec" and e.get("argv") == ["/bin/true", tok]][0]
    sh = [e for e in ev if e.get("type") == "exec" and e.get("exec_id") == true["parent_exec_id"]]
    assert sh and true["depth"] == sh[0]["depth"] + 1, (true, sh)


def test_a_start_that_fails_late_keeps_the_rules_it_found(ctx):
    """Rules in force before a start (a --persist daemon's) stay in force when
    the new daemon, without --persist, fails after it took them over: a
    failed start never leaves the host less enforced than it found it."""
    d, rel, cg = enforcing(ctx, DENY_CAT, "--persist")
    assert d.stop() == 0
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    ctx.on_cleanup(busy.close)
    b = ctx.daemon("--policy", d.policy_file, "--enforce", "--cgroup", cg, "--metrics-listen",
                   "127.0.0.1:%d" % busy.getsockname()[1], pin_path=d.pin_path, ready=False)
    assert b.proc.wait(60) == 1
    assert "stay in force" in b.err(), b.err()
    still_in_force_and_removable(ctx, d.pin_path, cg)


def held_daemon(ctx, *args, stall_map=None, unload=True, **kw):
    """A daemon started under preload_stall_bpf (EG_STALL_MAP=stall_map if given), once it waits
    at its stall: (daemon, mark). Removing mark lets it go on; unload: its pins go at cleanup."""
    mark = os.path.join(ctx.tmpdir(), "stalled")
    env = dict(os.environ, LD_PRELOAD=ctx.helper("preload_stall_bpf"), EG_STALL_MARK=mark)
    if stall_map:
        env["EG_STALL_MAP"] = stall_map
    d = ctx.daemon(*args, env=env, ready=False, **kw)
    ctx.on_cleanup(lambda: os.path.exists(mark) and os.unlink(mark))
    if unload:
        ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    deadline = time.monotonic() + 60
    while not os.path.exists(mark):
        assert d.proc.poll() is None and time.monotonic() < deadline, d.err()
        time.sleep(0.02)
    return d, mark


def kernel_status(ctx, pin):
    """execgate status's kernel object: rules_loaded, seq, sha256, links."""
    return json.loads(ctx.run([ctx.execgate, "status", "-j", "-p", pin], check=False).stdout)["kernel"]


def pinned_link_progs(pin):
    """{link pin name: program id} under pin/links."""
    ldir = os.path.join(pin, "links")
    out = {}
    for name in sorted(os.listdir(ldir)):
        r = subprocess.run(["bpftool", "-j", "link", "show", "pinned", os.path.join(ldir, name)],
                           stdout=subprocess.PIPE, check=True)
        out[name] = json.loads(r.stdout)["prog_id"]
    return out


def links_pins_fail(ctx, policy, **fail):
    """A --persist daemon enforcing DENY_CAT, stopped; then a daemon with policy on its pins under
    preload_fail_bpf with the fail settings, which exits saying it cannot pin its links:
    (first daemon, cgroup, its link pins' programs, its kernel status, the failed daemon)."""
    if os.environ.get("EG_ASAN"):
        ctx.skip("an ASan build takes no LD_PRELOAD helper (its runtime must come first)")
    d, rel, cg = enforcing(ctx, DENY_CAT, "--persist")
    assert d.stop() == 0
    before = pinned_link_progs(d.pin_path)
    assert len(before) >= 4, before
    rules = kernel_status(ctx, d.pin_path)
    env = dict(os.environ, LD_PRELOAD=ctx.helper("preload_fail_bpf"), **fail)
    b = ctx.daemon("--policy", write(ctx, policy, name="next.yaml"), "--enforce", "--cgroup", cg,
                   pin_path=d.pin_path, env=env, ready=False)
    assert b.proc.wait(60) == 1
    assert "cannot pin the links" in b.err(), b.err()
    return d, cg, before, rules, b


def test_a_start_that_cannot_pin_its_links_leaves_the_pins_before(ctx):
    """A daemon that switched to its programs and then cannot pin every
    link (the third pin fails, made so by LD_PRELOAD) leaves the pins of
    the copy before it as they were, and that copy acts again: never some
    links of each copy pinned, where the new copy's programs would act
    with some hooks and the old one's with the others, inactive."""
    # the new daemon's policy lets cat run: its rules must not be the ones left in force
    loose = DENY_CAT.replace("  - {name: no-cat, basenames: [cat], decision: deny, message: \"no cats\"}\n", "")
    d, cg, before, rules, b = links_pins_fail(ctx, loose, EG_FAIL_PIN="/links/", EG_FAIL_PIN_SKIP="2")
    assert pinned_link_progs(d.pin_path) == before
    assert kernel_status(ctx, d.pin_path)["sha256"] == rules["sha256"]
    # the copy before acts again, with its rules
    still_in_force_and_removable(ctx, d.pin_path, cg)


def test_a_start_whose_renames_stop_partway_leaves_every_hook_its_program(ctx):
    """A daemon whose link pins are all made (as new_NAME) but whose renames
    over the earlier copy's pins stop partway (the third fails, made so by
    LD_PRELOAD) has switched the rules and programs to its own: the pins it
    could not rename stay, so every hook keeps a program of the copy that
    acts, and its rules act there after it exits. The next start takes the
    leftovers over and leaves only its own pins."""
    head = ["/usr/bin/head", "-c1", "/etc/hostname"]
    # the new daemon's policy denies head too: it is its rules that are left in force
    stricter = DENY_CAT + "  - {name: no-head, basenames: [head], decision: deny}\n"
    d, cg, before, _, b = links_pins_fail(ctx, stricter, EG_FAIL_RENAME="/links/new_", EG_FAIL_RENAME_SKIP="2")
    assert "kernel rules stay in force" in b.err(), b.err()
    after = pinned_link_progs(d.pin_path)
    renamed = [h for h in before if after.get(h) not in before.values()]
    left = [h for h in before if "new_" + h in after]
    assert len(renamed) == 2 and left, (before, after)
    for h in before:
        # each hook: the new copy's program, under its name or as the new_ pin the rename left
        assert after.get(h) not in before.values() or after.get("new_" + h) not in (None, *before.values()), \
            (h, before, after)
    # status says which pins wait for a rename
    pending = sorted(l["pin"] for l in kernel_status(ctx, d.pin_path)["links"] if l["pending"])
    assert pending == sorted("new_" + h for h in left), pending
    text = ctx.run([ctx.execgate, "status", "-p", d.pin_path], check=False).stdout.decode()
    assert "pending links" in text and "%d new_ pins" % len(left) in text, text
    for _ in range(3):
        assert in_cg(cg, head).returncode == -signal.SIGKILL
        assert in_cg(cg, ["/bin/cat", "/etc/hostname"]).returncode == -signal.SIGKILL
    # the next start renames the leftovers, then its own pins over them: only its pins remain
    c = ctx.daemon("--policy", d.policy_file, "--enforce", "--persist", "--cgroup", cg, pin_path=d.pin_path)
    mine = pinned_link_progs(d.pin_path)
    assert sorted(mine) == sorted(before), mine
    assert not set(mine.values()) & (set(before.values()) | set(after.values())), (before, after, mine)
    assert in_cg(cg, head).returncode == 0
    assert not [l for l in kernel_status(ctx, d.pin_path)["links"] if l["pending"]]
    assert c.stop() == 0
    still_in_force_and_removable(ctx, d.pin_path, cg)


def test_an_upgrade_across_the_rule_maps_layout_leaves_no_gap(ctx):
    """A daemon that cannot share the rule maps in force (an upgrade that
    changed their layout; here the krules pin of a --persist daemon is made
    a map of another layout) puts its rules into its own maps before it
    switches to its programs: at no moment do its programs act with no
    rules. It is held (an LD_PRELOAD helper) at its first write of kstate
    (the numbering of its rule sets, right before they are written and
    switched on; after its switch to its programs, were the order the old
    one) while execs are tried; each is refused, by the rules before it."""
    if os.environ.get("EG_ASAN"):
        ctx.skip("an ASan build takes no LD_PRELOAD helper (its runtime must come first)")
    d, rel, cg = enforcing(ctx, DENY_CAT, "--persist")
    assert d.stop() == 0
    krules = os.path.join(d.pin_path, "krules")
    os.unlink(krules)
    ctx.run(["bpftool", "map", "create", krules, "type", "array", "key", "4", "value", "8",
             "entries", "1", "name", "krules"])
    assert in_cg(cg, ["/bin/cat", "/etc/hostname"]).returncode == -signal.SIGKILL
    before = kernel_status(ctx, d.pin_path)
    assert before["rules_loaded"] is True, before
    b, mark = held_daemon(ctx, "--policy", d.policy_file, "--enforce", "--cgroup", cg, stall_map="kstate",
                          unload=False, pin_path=d.pin_path)
    try:
        for _ in range(5):
            r = in_cg(cg, ["/bin/cat", "/etc/hostname"])
            assert r.returncode == -signal.SIGKILL, r
        # the pins still name the rules in force, not the new daemon's maps before its switch
        assert kernel_status(ctx, d.pin_path) == before
    finally:
        os.unlink(mark)
    start = b.wait_for(lambda e: e.get("type") == "daemon" and e.get("event") == "start", timeout=60)[0]
    assert start["kernel"]["rules"] == 4, start["kernel"]
    # its rule sets are numbered on from the earlier copy's: a record of that copy names no set of these
    after = kernel_status(ctx, d.pin_path)
    assert after["rules_loaded"] is True and after["seq"] > before["seq"], (before, after)
    for _ in range(3):
        r = in_cg(cg, ["/bin/cat", "/etc/hostname"])
        assert r.returncode == -signal.SIGKILL, r
    # its own rules, which an orderly stop removes
    assert b.stop() == 0
    assert in_cg(cg, ["/bin/cat", "/etc/hostname"]).returncode == 0


def test_a_scope_made_again_while_the_daemon_loads_is_in_scope(ctx):
    """A --cgroup directory removed and made again (a container restarted)
    while a daemon loads its programs has a new id that no active program
    saw made: the daemon looks again right after its switch. Its execs are
    judged, not left out of the scope for good. The daemon is held (an
    LD_PRELOAD helper) just before the switch while the cgroup is re-made."""
    if os.environ.get("EG_ASAN"):
        ctx.skip("an ASan build takes no LD_PRELOAD helper (its runtime must come first)")
    rel, cg, _ = ctx.cgroup()
    pf = write(ctx, DENY_CAT)
    d, mark = held_daemon(ctx, "--policy", pf, "--enforce", "--cgroup", cg, stall_map="control")
    before = os.stat(cg).st_ino
    os.rmdir(cg)
    os.mkdir(cg)
    assert os.stat(cg).st_ino != before
    os.unlink(mark)
    d.wait_for(lambda e: e.get("type") == "daemon" and e.get("event") == "start", timeout=60)
    for _ in range(3):
        r = in_cg(cg, ["/bin/cat", "/etc/hostname"])
        assert r.returncode == -signal.SIGKILL, r
    # said as the programs say a cgroup back (where BPF LSM runs per cgroup, attached to it again)
    back = d.wait_for(lambda e: e.get("type") == "daemon" and e.get("event") == "scope", 10, "the scope back")
    assert back[0]["state"] == "back" and back[0]["cgroup_id"] == os.stat(cg).st_ino, back


def test_a_scope_of_the_longest_path_follows_it(ctx):
    """A --cgroup path of 255 bytes (256 with its NUL) is the longest a
    scope takes. The kernel, comparing the path of a cgroup made, took
    such a path for one too long: made again, the cgroup stayed out of
    the scope and its execs ran unjudged."""
    rel, cg, _ = ctx.cgroup()
    longest = os.path.join(cg, "x" * (255 - len(rel) - 1))
    os.mkdir(longest)
    ctx.on_cleanup(lambda: os.path.isdir(longest) and os.rmdir(longest))
    d = ctx.daemon("--policy", write(ctx, DENY_CAT), "--enforce", "--cgroup", longest)
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    assert len(d.events()[0]["scopes"][0]["path"]) == 255, d.events()[0]["scopes"]
    assert in_cg(longest, ["/bin/cat", "/etc/hostname"]).returncode == -signal.SIGKILL
    os.rmdir(longest)
    os.mkdir(longest)
    r = in_cg(longest, ["/bin/cat", "/etc/hostname"])
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stdout)
    d.wait_for(lambda e: e.get("type") == "daemon" and e.get("event") == "scope" and e.get("state") == "back",
               10, "the scope back")


def test_what_the_kernel_cannot_hold_is_refused_or_said(ctx):
    partial = """
commands:
  - {name: rm-recursive, basenames: [rm], args: ["-[a-z]*r[a-z]*"], decision: deny}
  - {name: no-cat, basenames: [cat], decision: deny}
"""
    rel, cg, _ = ctx.cgroup()
    pf = write(ctx, partial)
    d = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg, ready=False)
    assert d.proc.wait(30) == 1
    err = d.err()
    assert "rm-recursive" in err and "--allow-partial" in err and "not a word" in err, err
    d = ctx.daemon("--policy", pf, "--enforce", "--allow-partial", "--cgroup", cg)
    k = d.events()[0]["kernel"]
    assert k["partial"] is True and k["rules"] == 1 and k["left_out"][0]["rule"] == "rm-recursive", k
    assert in_cg(cg, ["/bin/cat", "/etc/hostname"]).returncode == -signal.SIGKILL
    # policy check says where each rule is enforced, and why not in the kernel
    j = json.loads(ctx.run([ctx.execgate, "policy", "check", "--json", pf]).stdout)
    by = {r["name"]: r for r in j["rules"]}
    assert by["no-cat"]["enforced_in"] == ["kernel", "sessions"], by
    assert by["rm-recursive"]["enforced_in"] == ["sessions only"], by
    assert "regex" in by["rm-recursive"]["not_in_kernel_because"], by
    # and, with --enforce, fails where the daemon would refuse it (a handover checks the new binary so)
    r = ctx.run([ctx.execgate, "policy", "check", "--enforce", pf], check=False)
    assert r.returncode == 1 and b"--enforce would refuse it" in r.stderr, r
    assert ctx.run([ctx.execgate, "policy", "check", "--enforce", "--allow-partial", pf]).returncode == 0
    # a reload to a policy the kernel cannot hold keeps the old one everywhere
    write(ctx, partial.replace("no-cat", "no-cat2"), path=pf)
    d2pf = pf
    d.stop()
    d = ctx.daemon("--policy", d2pf, "--enforce", "--cgroup", cg, pin_path=d.pin_path, ready=False)
    assert d.proc.wait(30) == 1


def test_what_the_kernel_cannot_read_fails_closed(ctx):
    """A rule the kernel cannot decide (a path cut short, a glob out of
    steps, argv longer than a scan reads, a cgroup too deep to name) must
    refuse the exec, never let it through as "no match"."""
    work = ctx.tmpdir()
    os.chmod(work, 0o755)
    # the first glob of a judgement, made to run out of steps by a long path
    g = os.path.join(work, "g")
    short = os.path.join(g, "a" * 100, "evil")
    longp = os.path.join(g, *(["a" * 250] * 14 + ["a" * 100, "evil"]))
    # a program deeper than a path walk reads
    t = os.path.join(work, "t")
    shallow = os.path.join(t, "b", "x")
    deep = os.path.join(t, *(["b"] * 70 + ["x"]))
    # the same depth, but a name no rule with a path names: judged as usual
    deep_other = os.path.join(t, *(["b"] * 70 + ["other"]))
    for p in (short, longp, shallow, deep, deep_other):
        os.makedirs(os.path.dirname(p), exist_ok=True)
        shutil.copy("/bin/true", p)
        os.chmod(p, 0o755)
    for root, dirs, _ in os.walk(work):
        for x in dirs:
            os.chmod(os.path.join(root, x), 0o755)
    policy = """
default_decision: allow
commands:
  - {name: no-evil-glob, paths: ['%s/*%s/evil'], decision: deny}
  - {name: nothing-from-t, basenames: [x], paths: ['%s/*'], decision: deny}
  - {name: no-force, basenames: [true], args: ["--force"], decision: deny}
  - {name: not-in-box, cgroups: ['%%s/box'], basenames: [false], decision: deny}
""" % (g, "a" * 100, t)
    rel, cg, _ = ctx.cgroup()
    pf = write(ctx, policy % rel)
    d = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg)
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    KILL = -signal.SIGKILL

    def killed_as(tok, reason):
        e = one(d, tok)
        assert e["action"] == "killed" and e["reason"] == reason, e
        return e

    # the glob: the short path matches the rule; the long one is not let through
    tk = token()
    assert in_cg(cg, [short, tk]).returncode == KILL
    killed_as(tk, "kernel-rule")
    tk = token()
    assert in_cg(cg, [longp, tk]).returncode == KILL
    killed_as(tk, "kernel-error")
    # the deep program: its path is cut, so the path rule cannot be told
    tk = token()
    assert in_cg(cg, [shallow, tk]).returncode == KILL
    killed_as(tk, "kernel-rule")
    tk = token()
    assert in_cg(cg, [deep, tk]).returncode == KILL
    e = killed_as(tk, "kernel-error")
    assert e["filename_truncated"] is True, e
    # ... while a rule whose name does not match is not at stake
    tk = token()
    r = in_cg(cg, [deep_other, tk])
    assert r.returncode == 0, (r.returncode, r.stderr[-300:], [e for e in d.events() if tk in e.get("argv", [])])
    # argv words past what a scan reads
    tk = token()
    assert in_cg(cg, ["/bin/true", "--force", tk]).returncode == KILL
    killed_as(tk, "kernel-rule")
    tk = token()
    assert in_cg(cg, ["/bin/true"] + ["a"] * 70000 + ["--force", tk]).returncode == KILL
    tk2 = token()
    assert in_cg(cg, ["/bin/true"] + ["a"] * 70000 + [tk2]).returncode == KILL
    # a cgroup too deep to name: a cgroups rule cannot be told there
    box = os.path.join(cg, "box")
    os.mkdir(box)
    deepcg = os.path.join(box, *(["c"] * 70))
    os.makedirs(deepcg)
    ctx.on_cleanup(lambda: [os.rmdir(os.path.join(box, *(["c"] * n))) for n in range(70, -1, -1)])
    assert in_cg(box, ["/bin/false"]).returncode == KILL
    tk = token()
    assert in_cg(deepcg, ["/bin/false", tk]).returncode == KILL
    killed_as(tk, "kernel-error")
    tk = token()
    assert in_cg(deepcg, ["/bin/true", tk]).returncode == 0
    st = json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)["counters"]
    assert st["kernel_errors"] >= 4, st


def test_a_path_cut_short_is_refused_by_a_directory_glob(ctx):
    """A rule of paths alone (`/dir/*`) is found by its literal directory;
    a program deeper than a path walk reads has its path cut from the
    front, so that directory was never looked up, the rule never judged,
    and the exec ran where the rule denies. Now such a rule is the cut
    path's candidate: it cannot be told, so the exec is refused (an error),
    as docs/enforcement.md says; a program as deep that no rule is at stake
    for still runs when the policy has no such rule."""
    work = ctx.tmpdir()
    os.chmod(work, 0o755)
    u = os.path.join(work, "u")
    shallow, deep = os.path.join(u, "y"), os.path.join(u, *(["d"] * 70 + ["y"]))
    for p in (shallow, deep):
        os.makedirs(os.path.dirname(p), exist_ok=True)
        shutil.copy("/bin/true", p)
    for root, dirs, _ in os.walk(work):
        for x in dirs:
            os.chmod(os.path.join(root, x), 0o755)
    d, rel, cg = enforcing(ctx, "default_decision: allow\ncommands:\n"
                                "  - {name: nothing-from-u, paths: ['%s/*'], decision: deny}\n" % u)
    KILL = -signal.SIGKILL
    tk = token()
    assert in_cg(cg, [shallow, tk]).returncode == KILL
    e = one(d, tk)
    assert e["action"] == "killed" and e["reason"] == "kernel-rule", e
    tk = token()
    r = in_cg(cg, [deep, tk])
    assert r.returncode == KILL, ("the deep program ran", r.returncode)
    e = one(d, tk)
    assert e["action"] == "killed" and e["reason"] == "kernel-error" and e["filename_truncated"] is True, e
    # with a rule found by name alone, the same depth elsewhere is not at stake
    d2, rel2, cg2 = enforcing(ctx, "default_decision: allow\ncommands:\n"
                                   "  - {name: no-z, basenames: [z], decision: deny}\n")
    tk = token()
    assert in_cg(cg2, [deep, tk]).returncode == 0


def test_reload_refused_when_partial_keeps_everything(ctx):
    d, rel, cg = enforcing(ctx, DENY_CAT)
    write(ctx, "commands: [{name: x, basenames: [cat], args_patterns: [a], decision: deny}]",
          path=d.policy_file)
    r = subprocess.run([ctx.execgate, "policy", "reload", "-p", d.pin_path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    assert r.returncode != 0, r
    assert in_cg(cg, ["/bin/cat", "/etc/hostname"]).returncode == -signal.SIGKILL
    st = json.loads(ctx.run([ctx.execgate, "status", "-j", "-p", d.pin_path]).stdout)
    assert st["kernel"]["rules"] == 4, st


def test_approval_follows_kernel_approval(ctx):
    pol = "commands: [{name: ask-cat, basenames: [cat], decision: approval}]\n"
    d, rel, cg = enforcing(ctx, pol)
    assert in_cg(cg, ["/bin/cat", "/etc/hostname"]).returncode == -signal.SIGKILL
    d.stop()
    d, rel, cg = enforcing(ctx, "kernel_approval: audit\n" + pol)
    t = token()
    assert in_cg(cg, ["/bin/cat", "/etc/hostname", t]).returncode == 1  # cat: no such file t
    e = one(d, t)
    assert e["kernel"]["decision"] == "audit" and e["decision"] == "approval", e


# ---- atomic reloads ------------------------------------------------------------

RELOAD_A = """
commands:
  - {name: a-allow-t1, basenames: [t1], decision: allow}
  - {name: a-deny-both, basenames: [t1, t2], decision: deny}
"""
RELOAD_B = """
commands:
  - {name: b-deny-both, basenames: [t1, t2], decision: deny}
  - {name: b-allow-t2, basenames: [t2], decision: allow}
"""
# what each policy says: (decision, rule index)
EXPECT = {("A", "t1"): ("allow", 0), ("A", "t2"): ("deny", 1),
          ("B", "t1"): ("deny", 0), ("B", "t2"): ("deny", 0)}


def plan_under_reloads(ctx, d, cg, plan, pol_a, pol_b, reloads):
    """kplan runs plan (its lines) in cg while d's policy is reloaded `reloads` times, flipping
    from pol_a (in force) to pol_b and back; every reload must succeed. The exit statuses, in order."""
    runner = subprocess.Popen([ctx.helper("kplan")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              preexec_fn=lambda: open(os.path.join(cg, "cgroup.procs"), "w").write("0"))
    assert runner.stdout.readline().startswith(b"ready")
    runner.stdin.write(b"go\n")
    feeder = threading.Thread(target=lambda: (runner.stdin.write(plan.encode()), runner.stdin.close()))
    feeder.start()
    failures = 0
    for i in range(reloads):
        write(ctx, pol_b if i % 2 == 0 else pol_a, path=d.policy_file)
        r = subprocess.run([ctx.execgate, "policy", "reload", "-p", d.pin_path],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        failures += r.returncode != 0
    # the feeder owns stdin (it closes it): communicate() would flush it too
    out = runner.stdout.read().decode().split("\n")
    runner.wait(timeout=600)
    feeder.join()
    assert failures == 0, failures
    return [int(l.split()[1]) for l in out if l.strip()]


def test_reload_is_atomic_under_execs(ctx):
    d, rel, cg = enforcing(ctx, RELOAD_A)
    work = ctx.tmpdir()
    os.chmod(work, 0o755)
    for n in ("t1", "t2"):
        shutil.copy("/bin/true", os.path.join(work, n))
    # make soak: 8,000 execs under 5,000 reloads
    reloads = int(os.environ.get("EG_RELOADS", "180"))
    n = int(os.environ.get("EG_RELOAD_EXECS", "3000")) // 2
    plan = "".join("-\t0\t0\t%s/%s\t%s\tegr\n" % (work, n_, n_) for n_ in ("t1", "t2")) * n
    statuses = plan_under_reloads(ctx, d, cg, plan, RELOAD_A, RELOAD_B, reloads)
    drained(d, cg)
    evs = [e for e in d.events() if e.get("type") == "exec" and e.get("argv", [None])[-1] == "egr"]
    assert len(evs) == len(statuses) == 2 * n, (len(evs), len(statuses))
    seen = set()
    for e in evs:
        k = e["kernel"]
        # sequence 1 is the start (A); each reload flips: odd A, even B
        pol = "A" if k["seq"] % 2 == 1 else "B"
        name = e["argv"][0]
        want = EXPECT[(pol, name)]
        got = (k["decision"], k.get("rule_index"))
        assert got == want, (pol, name, k)
        assert (e.get("action") == "killed") == (want[0] == "deny"), e
        # the event is judged with the rules the kernel used, however many reloads ago
        assert k["seq"] > 0 and k["rule"] is not None, k
        assert (e["decision"], e["rule"]) == (want[0], k["rule"]), e
        seen.add(k["seq"])
    print("    %d execs judged under %d different rule sets during %d reloads" %
          (len(evs), len(seen), reloads))
    assert len(seen) > 10, seen
    st = json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)
    assert st["counters"]["kernel_errors"] == 0, st


SCRIPT_A = """
commands:
  - {name: a-no-script, basenames: [egscript], decision: deny}
"""
SCRIPT_B = """
commands:
  - {name: b-no-interp, basenames: [eginterp], decision: deny}
"""


def test_reload_never_mixes_two_policies_in_one_script_exec(ctx):
    """A script's exec is judged level by level (the interpreter that runs,
    the script). One policy denies the script, the other its interpreter:
    each refuses the exec, and a verdict made of one policy's level and the
    other's would allow it. Under reloads flipping between the two, no run
    of the script may complete."""
    d, rel, cg = enforcing(ctx, SCRIPT_A)
    work = ctx.tmpdir()
    os.chmod(work, 0o755)
    interp, script = os.path.join(work, "eginterp"), os.path.join(work, "egscript")
    shutil.copy("/bin/true", interp)
    with open(script, "w") as f:
        f.write("#!%s\n" % interp)
    os.chmod(script, 0o755)
    reloads = int(os.environ.get("EG_RELOADS", "180"))
    n = int(os.environ.get("EG_SCRIPT_EXECS", "2400"))
    plan = ("-\t0\t0\t%s\tegscript\tegs\n" % script) * n
    statuses = plan_under_reloads(ctx, d, cg, plan, SCRIPT_A, SCRIPT_B, reloads)
    assert len(statuses) == n, len(statuses)
    ran = sum(1 for st in statuses if st == 0)
    print("    %d script execs under %d reloads: %d ran" % (len(statuses), reloads, ran))
    assert ran == 0 and set(statuses) == {-signal.SIGKILL}, collections.Counter(statuses)


# ---- differential: the kernel's verdict is the policy's ---------------------------

NAMES = ["alpha", "beta", "gamma", "delta", "tool"]
WORDS = ["--force", "-f", "x", "yy", "-rf"]


def gen_policy(rng, work, rel):
    def pick(seq, lo=1, hi=3):
        return rng.sample(seq, rng.randint(lo, min(hi, len(seq))))

    rules = ["  - {name: helper, paths: ['%s'], decision: allow}" % os.path.join(work, "kplan")]
    for i in range(40):
        m = []
        kinds = rng.sample(["names", "paths", "args", "context", "uids", "cgroups"], rng.randint(1, 3))
        if "names" in kinds:
            names = pick(NAMES + ["ln-" + n for n in NAMES] + ["sc-" + n for n in NAMES])
            m.append("basenames: [%s]" % ", ".join(names))
        if "paths" in kinds:
            globs = [os.path.join(work, rng.choice(NAMES)), os.path.join(work, "sub", rng.choice(NAMES)),
                     os.path.join(work, "sub", "*"), os.path.join(work, "*a"),
                     os.path.join(work, "?eta"), os.path.join(work, "sc-*"), os.path.join(work, "*"),
                     # keyed by their tail, and by no key at all
                     "*ta", "*/sub/?e*a", "*"]
            m.append("paths: [%s]" % ", ".join("'%s'" % g for g in pick(globs, 1, 2)))
        if "args" in kinds:
            groups = []
            for _ in range(rng.randint(1, 2)):
                groups.append("'%s'" % "|".join(pick(WORDS, 1, 2)))
            m.append("args: [%s]" % ", ".join(groups))
        if "context" in kinds:
            m.append(rng.choice(["context: [direct]", "context: [nested]",
                                 "context: {min_depth: 1, max_depth: 2}", "context: {min_depth: 2}"]))
        if "uids" in kinds:
            m.append("uids: [%s]" % rng.choice(["0", "65534", "0, 65534"]))
        if "cgroups" in kinds:
            m.append("cgroups: ['%s']" % rng.choice([rel + "/a", rel, rel + "/*", "/egtest-*/b", "/"]))
        dec = rng.choice(["deny", "deny", "allow", "audit", "approval"])
        rules.append("  - {name: r%d, %s, decision: %s}" % (i, ", ".join(m), dec))
    return "default_decision: %s\ncommands:\n%s\n" % (rng.choice(["allow", "audit", "deny"]),
                                                       "\n".join(rules))


def test_kernel_verdict_equals_policy_differential(ctx):
    seed = int(os.environ.get("EG_SEED", str(int(time.time()))))
    rng = random.Random(seed)
    print("    seed %d (EG_SEED=%d reproduces)" % (seed, seed))
    work = ctx.tmpdir()
    os.chmod(work, 0o755)
    os.mkdir(os.path.join(work, "sub"))
    shutil.copy(ctx.helper("kplan"), os.path.join(work, "kplan"))
    for n in NAMES:
        # each a program of its own: the daemon (not the kernel) also
        # matches a literal path's file by its content, so no two alike
        for p in (os.path.join(work, n), os.path.join(work, "sub", n)):
            shutil.copy("/bin/true", p)
            with open(p, "ab") as f:
                f.write(p.encode())
        os.symlink(n, os.path.join(work, "ln-" + n))
        with open(os.path.join(work, "sc-" + n), "w") as f:
            f.write("#!%s %s\n" % (os.path.join(work, rng.choice(NAMES)), rng.choice(WORDS)))
        os.chmod(os.path.join(work, "sc-" + n), 0o755)
    rel, cg, _ = ctx.cgroup()
    for sub in ("a", "b"):
        os.mkdir(os.path.join(cg, sub))
        ctx.on_cleanup(lambda p=os.path.join(cg, sub): os.rmdir(p) if os.path.isdir(p) else None)
    pf = write(ctx, gen_policy(rng, work, rel))
    d = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg)
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    lines = int(os.environ.get("EG_DIFF_EXECS", "2500"))
    plan = []
    for i in range(lines):
        where = rng.choice(["", "/a", "/b"])
        procs = os.path.join(cg + where, "cgroup.procs")
        uid = rng.choice([0, 0, 65534])
        chain = rng.choice([0, 0, 1, 2])
        n = rng.choice(NAMES)
        path = rng.choice([os.path.join(work, n), os.path.join(work, "sub", n),
                           os.path.join(work, "ln-" + n), os.path.join(work, "sc-" + n),
                           os.path.join(work, "sub", "..", n)])
        args = [rng.choice(WORDS + ["\\e"]) for _ in range(rng.randint(0, 3))]
        plan.append("\t".join([procs, str(uid), str(chain), path, path] + args + ["egd%d" % i]))
    runner = subprocess.Popen([os.path.join(work, "kplan")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    pid = int(runner.stdout.readline().split()[1])
    # the plan's direct execs are depth 0: what a session's command would be
    ctx.run([ctx.execgate, "task", str(pid), "--set-depth", "-1", "-p", d.pin_path])
    out = runner.communicate(("go\n" + "\n".join(plan) + "\n").encode(), timeout=1200)[0]
    assert len(out.decode().strip().split("\n")) == lines
    drained(d, cg)
    d.stop()
    evs = [e for e in d.events() if e.get("type") == "exec" and (e.get("cgroup") or "").startswith(rel)]
    mismatches = []
    kmap = {"approval": "deny", "error": "error"}
    for e in evs:
        k = e.get("kernel")
        if not k:
            mismatches.append(("not judged", e))
            continue
        want = kmap.get(e["decision"], e["decision"])
        if k["decision"] != want or k.get("rule") != e.get("rule"):
            mismatches.append(((want, e.get("rule")), (k["decision"], k.get("rule")), e))
        elif (e.get("action") == "killed") != (want == "deny"):
            mismatches.append(("action", e))
    print("    %d execs judged by both; %d differ" % (len(evs), len(mismatches)))
    for m in mismatches[:3]:
        print("    differs: %s" % json.dumps(m)[:1500])
    # each line is an exec and, one time in two, a '#!' chain's one or two more (1.75 on average)
    assert len(evs) >= lines * 3 // 2, (len(evs), lines)
    assert not mismatches, (seed, mismatches[:3])


def test_a_pid_namespace_of_ones_own_makes_nothing_direct(ctx):
    """A rule scoped to cgroups judges the depth from a container's first
    exec. A pid namespace a user makes (unshare -Urp: owned by the user's
    own user namespace) starts no container: the host's depth goes on,
    and in one made inside it the count goes on too."""
    rel, cg, _ = ctx.cgroup()
    pf = write(ctx, "commands:\n  - {name: no-nested-rev, cgroups: [\"/%s\"], context: [nested], "
                    "basenames: [rev], decision: deny}\n" % rel.lstrip("/"))
    d = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg)
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    text = os.path.join(ctx.tmpdir(), "text")
    with open(text, "w") as f:
        f.write("abc\n")
    os.chmod(os.path.dirname(text), 0o755)
    os.chmod(text, 0o644)
    for argv in (["rev"], ["unshare", "-Urpf", "rev"], ["unshare", "-Urpf", "unshare", "-Urpf", "rev"]):
        t = token()
        r = in_cg(cg, argv + [text, t])
        assert r.returncode != 0 and b"cba" not in r.stdout, (argv, r.returncode, r.stdout, r.stderr[-300:])
        e = d.wait_for(lambda e: e.get("type") == "exec" and t in e.get("argv", []) and
                       e.get("action") == "killed", 10, "rev killed (%s)" % argv)[0]
        assert e["rule"] == "no-nested-rev", e


def test_a_path_of_ones_own_mount_lets_nothing_run(ctx):
    """A user who may make user namespaces can mount over any path in a
    mount namespace of their own and put a program of their own there: a
    path in such a namespace is the user's to spell, so an allow by a glob
    is not met by it. Each way tried here (a tmpfs over a directory, a bind
    of the user's directory there, a recursive bind that brings a host
    mount along, a bind over a single allowed file, a namespace nested in
    the user's, which locks the user's own mounts as the host's,
    pivot_root, which hands the lock to the user's new root, and a '#!'
    script whose interpreter is allowed) runs the
    user's own program by a path under /usr, which the policy allows by a
    glob, and each is killed. The host's programs there are known by the
    identity of a literal path (echo runs), not by a glob (printf is
    killed); on the host the glob holds."""
    tools = ["/usr/bin/setpriv", "/usr/bin/unshare", "/usr/bin/dash", "/usr/bin/mount", "/usr/bin/cp",
             "/usr/bin/mkdir", "/usr/bin/echo", "/usr/sbin/pivot_root", "/usr/bin/chmod"]
    d, rel, cg = enforcing(ctx, "default_decision: deny\ncommands:\n"
                                "  - {name: system, paths: [\"/usr/*\"], decision: allow}\n"
                                "  - {name: tools, paths: [%s], decision: allow}\n" % ", ".join(tools))
    top = ctx.tmpdir()
    own, host = os.path.join(top, "own"), os.path.join(top, "host")
    os.makedirs(os.path.join(host, "sub"))
    os.mkdir(own)
    subprocess.run(["mount", "-t", "tmpfs", "none", os.path.join(host, "sub")], check=True)
    ctx.on_cleanup(lambda: subprocess.run(["umount", "-l", os.path.join(host, "sub")]))
    for p in (os.path.join(own, "x"), os.path.join(host, "sub", "x")):
        shutil.copy("/usr/bin/echo", p)
    shutil.copy(ctx.helper("static_true"), os.path.join(own, "st"))
    for p in (top, own, host, os.path.join(host, "sub"), os.path.join(own, "x"), os.path.join(host, "sub", "x"),
              os.path.join(own, "st")):
        os.chmod(p, 0o755)
    root = ("mount -t tmpfs none /usr/local/src && mkdir -p /usr/local/src/usr/bin /usr/local/src/old && "
            "cp %s/st /usr/local/src/usr/bin/evil && cd /usr/local/src && pivot_root . old" % own)
    ways = [("host-echo", "true", "/usr/bin/echo", "tools"),
            ("host-printf", "true", "/usr/bin/printf", None),
            ("tmpfs", "mount -t tmpfs none /usr/local/games && cp %s/x /usr/local/games/x" % own,
             "/usr/local/games/x", None),
            ("bind", "mount --bind %s /usr/local/games" % own, "/usr/local/games/x", None),
            ("rbind", "mount --rbind %s /usr/local/src" % host, "/usr/local/src/sub/x", None),
            ("file", "mount --bind %s/x /usr/bin/true" % own, "/usr/bin/true", None),
            ("nested", "mount -t tmpfs none /usr/local/games && cp %s/x /usr/local/games/x" % own,
             "unshare -Urm /usr/local/games/x", None),
            ("pivot", root, "/usr/bin/evil", None),
            # a '#!' script of the user's own there, its interpreter allowed by its literal path
            ("script", "mount -t tmpfs none /usr/local/games && printf '#!/usr/bin/dash\\necho \"$1\"\\n' "
             "> /usr/local/games/s && chmod 755 /usr/local/games/s", "/usr/local/games/s", None)]
    for name, setup, prog, rule in ways:
        t = "%s-%s" % (name, token())
        script = "%s || exit 99; exec %s %s" % (setup, prog, t)
        r = in_cg(cg, ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                       "unshare", "-Urm", "sh", "-c", script])
        assert r.returncode != 99, (name, r.stderr[-300:])
        target = prog.split()[-1]
        e = d.wait_for(lambda e: e.get("type") == "exec" and t in e.get("argv", []) and
                       e.get("filename") == target, 10, name)[0]
        assert e["user_mount"] is True, (name, e)
        if rule:
            assert r.returncode == 0 and t.encode() in r.stdout, (name, r.returncode, r.stderr[-300:])
            assert e["action"] == "allowed" and e["rule"] == rule, (name, e)
            continue
        assert r.returncode != 0 and t.encode() not in r.stdout, (name, r.returncode, r.stdout)
        assert e["action"] == "killed", (name, e)
        # the kernel's verdict and the daemon's own judge of the record agree
        assert e["decision"] == "deny" and e["rule"] is None, (name, e)
        assert e["kernel"]["decision"] == "deny" and e["kernel"]["rule"] is None, (name, e)
    # on the host the glob holds, and the record says nothing of a user's mount
    t = "host-" + token()
    r = in_cg(cg, ["/usr/bin/printf", "%s\n", t])
    assert r.returncode == 0 and t.encode() in r.stdout, r
    e = d.wait_for(lambda e: e.get("type") == "exec" and t in e.get("argv", []), 10, "printf on the host")[0]
    assert "user_mount" not in e and e["rule"] == "system", e


def test_a_rule_of_many_cgroups_and_a_deep_cgroup_is_judged_whole(ctx):
    """The kernel matches a rule's cgroups one after another, each against the cgroup and its
    every ancestor (a step per byte of the path): with a path of nearly 4 KiB only about the first
    thousand were looked at, and the rest counted as no match. An exec in a cgroup below the one
    the 1,301st entry names ran under a deny. It is refused now (matched, or counted as a kernel error)."""
    rel, cg, _ = ctx.cgroup()
    deep = cg
    for i in range(16):
        deep = os.path.join(deep, ("d%02d" % i) + ("x" * 245 if i else ""))
        os.mkdir(deep)
    ctx.on_cleanup(lambda: [os.rmdir(p) for p in sorted(
        (os.path.join(r) for r, _, _ in os.walk(cg) if r != cg), key=len, reverse=True)])
    deep_rel = deep[len(eg.CGROUP2):]
    assert 3700 < len(deep_rel) < 4000, len(deep_rel)
    others = ["'%s/tenant-%04d'" % (rel, i) for i in range(1300)]
    pol = "commands:\n  - name: tenants\n    basenames: [cat]\n    cgroups: [%s, '%s/d00']\n    decision: deny\n" % (
        ", ".join(others), rel)
    pf = write(ctx, pol)
    d = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg)
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    r = in_cg(deep, ["/bin/cat", "/etc/hostname"])
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stdout)


def upgraded(path, tail):
    """As a package upgrade does it: a new file (/bin/true and tail) written beside path, then
    renamed over it."""
    with open("/bin/true", "rb") as src, open(path + ".dpkg-new", "wb") as f:
        f.write(src.read() + tail)
    os.chmod(path + ".dpkg-new", 0o755)
    os.rename(path + ".dpkg-new", path)


def refreshes(d):
    """The policy records of d that say the policy was loaded again (its files changed)."""
    return len([e for e in d.events() if e.get("type") == "daemon" and e.get("event") == "policy" and
                e.get("refresh")])


def wait_refreshed(d, past=0, what="the policy loaded again"):
    d.wait_for(lambda e: refreshes(d) > past, 15, what)


def test_a_file_a_rule_names_replaced_by_an_upgrade_is_the_one_judged(ctx):
    """A rule by path is bound at load to the file it found (device, inode): a package upgrade
    renames a new file into place, and that file under another name (a hard link here; a bind
    mount likewise) ran under the deny. The daemon watches the directories of the files its
    policy names and loads the policy again when what they hold changed: the new file is
    refused under any name, and a "policy" record says the policy was loaded again."""
    d0 = ctx.tmpdir()
    os.chmod(d0, 0o755)
    tool = os.path.join(d0, "tool")
    shutil.copy("/bin/true", tool)
    other = os.path.join(ctx.tmpdir(), "other")
    d, rel, cg = enforcing(ctx, "commands:\n  - {name: no-tool, paths: [%s], decision: deny}\n" % tool)
    assert in_cg(cg, [tool]).returncode == -signal.SIGKILL
    # the upgrade: a new file (other content) renamed over the old one, then linked elsewhere
    upgraded(tool, b"\0upgraded")
    os.link(tool, other)
    wait_refreshed(d)
    r = in_cg(cg, [other])
    assert r.returncode == -signal.SIGKILL, r.returncode
    # a change that leaves the named files as they were loads nothing again
    n = len([e for e in d.events() if e.get("event") == "policy"])
    with open(os.path.join(d0, "unrelated"), "w") as f:
        f.write("x")
    time.sleep(3)
    assert len([e for e in d.events() if e.get("event") == "policy"]) == n


def test_a_session_judges_by_the_files_the_policy_in_force_found(ctx):
    """A session's workers hash a program only when its size is a denied file's, by the sizes of
    the daemon's policy as they knew it, and knew it by the policy text's digest: a policy loaded
    again because its files changed has the same text, so they kept the old sizes, never hashed
    a program of the new file's size, and the judge refused it ("could not be compared"). Now
    the sizes follow each load."""
    d0 = ctx.tmpdir()
    os.chmod(d0, 0o755)
    tool = os.path.join(d0, "tool")
    shutil.copy("/bin/true", tool)
    pf = write(ctx, "commands:\n  - {name: no-tool, paths: [%s], decision: deny}\n" % tool)
    d = ctx.daemon("--policy", pf)
    with open("/bin/true", "rb") as f:
        true = f.read()
    # the upgrade: the denied file one byte longer; a program of that size that is not it
    upgraded(tool, b"\1")
    wait_refreshed(d)
    same_size = os.path.join(ctx.tmpdir(), "same-size")
    with open(same_size, "wb") as f:
        f.write(true + b"\2")
    os.chmod(same_size, 0o755)
    os.chmod(os.path.dirname(same_size), 0o755)
    r = subprocess.run([ctx.execgate, "exec", "-p", d.pin_path, "--", same_size], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 0, (r.returncode, r.stderr.decode()[-400:])
    r = subprocess.run([ctx.execgate, "exec", "-p", d.pin_path, "--", tool], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    assert r.returncode != 0, "the denied file ran in a session"


def test_a_file_a_rule_reaches_through_a_link_is_watched_where_it_is(ctx):
    """A rule's path is often a link to the package's file elsewhere (/usr/bin/clang-15 to
    /usr/lib/llvm-15/bin/clang): the upgrade replaces the file there, and the directory of the
    link never changes. That directory is watched too, and one not made yet is watched from the
    nearest that is."""
    links, pkg = ctx.tmpdir(), ctx.tmpdir()
    os.chmod(links, 0o755)
    os.chmod(pkg, 0o755)
    real = os.path.join(pkg, "lib", "bin", "tool")
    later = os.path.join(pkg, "later", "bin", "tool2")
    os.makedirs(os.path.dirname(real))
    shutil.copy("/bin/true", real)
    os.symlink(real, os.path.join(links, "tool"))
    other = os.path.join(ctx.tmpdir(), "other")
    d, rel, cg = enforcing(ctx, "commands:\n  - {name: no-tool, paths: [%s/tool, %s], decision: deny}\n"
                           % (links, later))
    upgraded(real, b"\0upgraded")
    os.link(real, other)
    wait_refreshed(d)
    assert in_cg(cg, [other]).returncode == -signal.SIGKILL
    # a directory made after the load: its file, once there, is bound
    n = refreshes(d)
    os.makedirs(os.path.dirname(later))
    upgraded(later, b"\0later")
    os.link(later, other + "2")
    wait_refreshed(d, n, "the policy loaded again for the new file")
    assert in_cg(cg, [other + "2"]).returncode == -signal.SIGKILL
