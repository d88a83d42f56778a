# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Agent contexts by ancestry: whatever an agent starts, at any depth, is
judged by its context's rules in the kernel, without a launcher.

The agent is a program of our own making (a copy of bash, or a script, or a
node script) named by its path in the policy's `contexts:`. Each test tries
to leave the context the way a tool would (a double fork and setsid, a
daemon started before the tracer, shells inside shells, a deep tree) and
fails to: the denied program never writes its line to the marker file."""
import json
import os
import shutil
import signal
import subprocess
import time

import eg
from eg import token
from test_enforce import enforcing, held_daemon, in_cg, write
from test_what_runs import LDSO, MARKER, marks

KILL = -signal.SIGKILL


def agent_files(ctx):
    """work/agent (bash by another name and content), work/denied (the marker), work/ok."""
    work = ctx.tmpdir()
    os.chmod(work, 0o755)
    for name, src in (("agent", "/bin/bash"), ("denied", ctx.helper("marker"))):
        shutil.copy(src, os.path.join(work, name))
        os.chmod(os.path.join(work, name), 0o755)
        # content of its own: no rule names it by a system file's content
        with open(os.path.join(work, name), "ab") as f:
            f.write(b"\0" + name.encode() + token().encode())
    return work


def ctx_policy(work, limits="", extra_rules="", identities=None):
    ids = identities or "[{paths: [%s/agent]}]" % work
    return """
default_decision: allow
contexts:
  - name: agent
    identities: %s
%s
commands:
  - {name: no-denied-in-agent, paths: [%s/denied], contexts: [agent], decision: deny, message: "not for agents"}
%s
""" % (ids, ("    limits: " + limits) if limits else "", work, extra_rules)


def events_of(d, tok):
    return [e for e in d.events() if e.get("type") == "exec" and any(tok in a for a in e.get("argv", []))]


def wait_mark_or_kill(d, tok, timeout=10):
    """The exec event of the marker run with tok."""
    evs = d.wait_for(lambda e: e.get("type") == "exec" and tok in e.get("argv", [])
                     and e.get("filename", "").endswith("/denied"), timeout, "marker exec %s" % tok)
    return evs[0]


def enforcing_in(ctx, cg, policy):
    """A daemon enforcing policy (text) in cgroup cg, unloaded at the end: (daemon, policy file)."""
    pf = write(ctx, policy)
    d = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg)
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return d, pf


def reload_while_it_runs(ctx, d, pf, pid, policy):
    """Once the daemon knows process pid (the procs view), pf rewritten to policy and reloaded."""
    eg.wait_until(lambda: pid in eg.procs_view(d.pin_path), what="the agent in the procs view")
    write(ctx, policy, path=pf)
    r = ctx.run([ctx.execgate, "policy", "reload", "-p", d.pin_path], check=False)
    assert r.returncode == 0, r
    d.wait_for(lambda e: e.get("type") == "daemon" and e.get("event") == "policy" and e.get("reload"),
               what="the reload's policy record")


def test_double_fork_and_setsid_stay_in_the_context(ctx):
    work = agent_files(ctx)
    d, rel, cg = enforcing(ctx, ctx_policy(work))
    start = d.events()[0]
    assert start["contexts"][0]["name"] == "agent" and start["contexts"][0]["entered_in_kernel"], start
    denied = os.path.join(work, "denied")
    # outside any context the same program runs
    t_out = "out-" + token()
    r = in_cg(cg, [denied, t_out])
    assert r.returncode == 0 and marks(t_out), (r.returncode, r.stderr)
    e = wait_mark_or_kill(d, t_out)
    assert e["context"] is None and e["action"] == "allowed", e
    # the agent daemonizes a child (fork, setsid, fork again: reparented to init) that runs it
    t_in = "in-" + token()
    script = "( setsid sh -c '( sleep 0.3; %s %s; echo $? > %s/rc ) &' & ) ; exit 0" % (denied, t_in, work)
    r = in_cg(cg, [os.path.join(work, "agent"), "-c", script])
    assert r.returncode == 0, r.stderr
    e = wait_mark_or_kill(d, t_in)
    assert not marks(t_in), "the denied program ran inside the agent's context"
    assert e["action"] == "killed" and e["decision"] == "deny" and e["rule"] == "no-denied-in-agent", e
    assert e["context"]["name"] == "agent" and e["context"]["depth"] >= 3, e
    ident = e["context"]["identity_exec_id"]
    agent_ev = [x for x in d.events() if x.get("type") == "exec" and x.get("exec_id") == ident]
    assert agent_ev and agent_ev[0]["filename"] == os.path.join(work, "agent"), (ident, agent_ev)
    assert agent_ev[0]["context"]["depth"] == 0, agent_ev[0]
    assert e["kernel"]["decision"] == "deny" and e["reason"] == "kernel-rule", e
    # its parent had left the agent's process group and session, and was reparented
    deadline = time.time() + 5
    while not os.path.exists(os.path.join(work, "rc")) and time.time() < deadline:
        time.sleep(0.05)
    with open(os.path.join(work, "rc")) as f:
        assert f.read().strip() == str(128 + 9)
    # query by context, the tree from the agent's exec, the metrics by context
    r = ctx.run([ctx.execgate, "query", "-p", d.pin_path, "--json", "--context", "agent", d.output])
    got = [json.loads(l) for l in r.stdout.decode().splitlines()]
    assert got and all(g["context"]["name"] == "agent" for g in got), got[:3]
    assert any(t_in in g.get("argv", []) for g in got) and not any(t_out in g.get("argv", []) for g in got)
    r = ctx.run([ctx.execgate, "query", "-p", d.pin_path, "--tree", ident, d.output])
    tree = r.stdout.decode()
    assert "[context agent]" in tree and t_in in tree, tree
    m = ctx.run([ctx.execgate, "metrics", "-p", d.pin_path]).stdout.decode()
    execs = [l for l in m.splitlines() if l.startswith('execgate_context_execs_total{context="agent"}')]
    denied = [l for l in m.splitlines() if l.startswith('execgate_context_denied_total{context="agent"}')]
    assert execs and int(float(execs[0].split()[-1])) >= 3, execs
    assert denied and int(float(denied[0].split()[-1])) >= 1, denied


def test_rules_for_outside_any_context(ctx):
    """contexts: [none]: a rule that holds only outside every context."""
    work = agent_files(ctx)
    pol = ctx_policy(work, extra_rules="  - {name: only-outside, basenames: [true], args: [NOPE], "
                                       "contexts: [none], decision: deny}")
    d, rel, cg = enforcing(ctx, pol)
    t = token()
    r = in_cg(cg, ["/bin/true", "NOPE", t])
    assert r.returncode == KILL, r.returncode
    r = in_cg(cg, [os.path.join(work, "agent"), "-c", "/bin/true NOPE %s; echo rc=$?" % t])
    assert b"rc=0" in r.stdout, r.stdout


def test_an_identity_allows_nothing_by_itself(ctx):
    """An identity says which programs start a context, not which may run: under
    default_decision: deny a program an identity names, and nothing else allows, is
    killed (and judged the same by the daemon: no rule named). The kernel's rule
    range for an ordinary judgement once ran on into the identities, each an allow."""
    work = agent_files(ctx)
    pol = ("default_decision: deny\ncontexts:\n  - name: agent\n    identities: [{paths: [%s/agent]}]\n"
           "commands:\n  - {name: system, paths: ['/usr/*', '/bin/*'], decision: allow}\n" % work)
    d, rel, cg = enforcing(ctx, pol)
    t = token()
    r = in_cg(cg, [os.path.join(work, "agent"), "-c", "exit 0", t])
    assert r.returncode == KILL, "a program only an identity names ran under default deny (%d)" % r.returncode
    e = d.wait_for(lambda e: e.get("type") == "exec" and t in e.get("argv", []), 10, "the agent's exec")[0]
    assert e["action"] == "killed" and e["decision"] == "deny" and not e.get("rule"), e
    # the system's programs still run, and in the context once it is entered... by no one here
    r = in_cg(cg, ["/bin/true", t])
    assert r.returncode == 0, r.returncode


def test_a_name_spelled_does_not_move_a_task_to_another_context(ctx):
    """A task in a context enters another only by a file the kernel opens (the program, its
    scripts), not by an interpreter's argument naming another context's script: `sh -s
    OTHER.js` inside the agent would otherwise leave the agent's rules (the denied program ran
    there) and start its depth again. Outside every context the same spelling still enters."""
    work = agent_files(ctx)
    other = os.path.join(work, "other.js")
    with open(other, "w") as f:
        f.write("// another agent\n")
    ids = "[{paths: [%s/agent]}]\n  - name: other\n    identities: [{paths: [%s]}]" % (work, other)
    d, rel, cg = enforcing(ctx, ctx_policy(work, identities=ids))
    t = token()
    r = in_cg(cg, [os.path.join(work, "agent"), "-c",
                   "echo '%s/denied %s; echo rc=$?' | sh -s %s; exit 0" % (work, t, other)])
    e = wait_mark_or_kill(d, t)
    assert not marks(t), "the denied program ran after an argument named another context's script"
    assert e["action"] == "killed" and e["context"]["name"] == "agent", e
    assert b"rc=137" in r.stdout, r.stdout
    # outside any context, the spelling enters 'other' (where the agent's rule does not hold)
    t2 = token()
    r = in_cg(cg, ["sh", "-c", "echo '%s/denied %s' | sh -s %s" % (work, t2, other)])
    e = wait_mark_or_kill(d, t2)
    assert marks(t2) and e["context"]["name"] == "other", e


def test_a_task_moves_to_another_context_only_by_a_file_only_root_made(ctx):
    """From one context to another only by a program only root could have made (owned by root,
    written by no one else): a copy the agent makes of another agent's program is its own file,
    and running it would leave the agent's rules (the denied program ran) and start its limits
    again. Outside every context the same file still enters its context."""
    work = agent_files(ctx)
    other = os.path.join(work, "other")
    shutil.copy(os.path.join(work, "agent"), other)
    ids = "[{paths: [%s/agent]}]\n  - name: other\n    identities: [{paths: [%s]}]" % (work, other)
    d, rel, cg = enforcing(ctx, ctx_policy(work, identities=ids))

    def from_agent(t, how=""):
        r = in_cg(cg, [os.path.join(work, "agent"), "-c", "%s%s -c '%s/denied %s; echo rc=$?'; exit 0"
                       % (how, other, work, t)])
        return r, wait_mark_or_kill(d, t)
    # by its exec, and through the dynamic loader (the file it maps)
    for owner, mode, how in ((12345, 0o755, ""), (12345, 0o755, LDSO + " "), (0, 0o775, ""), (0, 0o757, "")):
        os.chown(other, owner, owner)
        os.chmod(other, mode)
        t = token()
        r, e = from_agent(t, how)
        assert not marks(t), "the denied program ran in another context entered by a file %d owns (%o)" % (
            owner, mode)
        assert e["action"] == "killed" and e["context"]["name"] == "agent", (owner, mode, e)
        assert b"rc=137" in r.stdout, r.stdout
        # outside any context the file enters its own
        t2 = token()
        r = in_cg(cg, [other, "-c", "%s/denied %s" % (work, t2)])
        e = wait_mark_or_kill(d, t2)
        assert marks(t2) and e["context"]["name"] == "other", (owner, mode, e)
    # root's own file, written by no one else: the agent may start it, and it is that context
    os.chown(other, 0, 0)
    os.chmod(other, 0o755)
    t = token()
    r, e = from_agent(t)
    assert marks(t) and e["context"]["name"] == "other", e


def waiting_agent(ctx, work, cg, t):
    """The agent in cgroup cg, and its child shell, which runs the denied program with t (then
    writes its exit status to work/rc) once a line is written to the fifo: (agent, fifo)."""
    def join():
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write("0")
    fifo = os.path.join(work, "go")
    os.mkfifo(fifo)
    agent = subprocess.Popen([os.path.join(work, "agent"), "-c",
                              "sh -c 'read x < %s; %s %s; echo $? > %s/rc'; exit 0"
                              % (fifo, os.path.join(work, "denied"), t, work)], preexec_fn=join)
    ctx.on_cleanup(agent.kill)
    return agent, fifo


def released_and_killed(d, agent, fifo, work, t, what):
    """waiting_agent's shell told to go: the denied program is killed in the agent's context
    (exit status 137), never runs. Its record."""
    with open(fifo, "w") as f:
        f.write("go\n")
    agent.wait(timeout=20)
    e = wait_mark_or_kill(d, t)
    assert not marks(t), "the denied program ran in an agent " + what
    assert e["action"] == "killed" and e["context"]["name"] == "agent", e
    with open(os.path.join(work, "rc")) as f:
        assert f.read().strip() == str(128 + 9)
    return e


def test_a_context_started_before_the_daemon(ctx):
    """An agent already running when the daemon starts is in its context from its next exec."""
    work = agent_files(ctx)
    rel, cg, _ = ctx.cgroup()
    t = "early-" + token()
    agent, fifo = waiting_agent(ctx, work, cg, t)
    time.sleep(0.3)
    d, pf = enforcing_in(ctx, cg, ctx_policy(work))
    seeded = d.events()[0]["seeded"]
    assert seeded["contexts"] == 2, seeded   # the agent and its shell, each once
    e = released_and_killed(d, agent, fifo, work, t, "started before the daemon")
    assert e["context"]["inferred"] is True and e["context"]["identity_exec_id"] is None, e


def test_a_child_forked_while_the_daemon_marks_the_agents_is_in_the_context(ctx):
    """An agent running before the daemon forks a child after the daemon's
    /proc walk read the processes and before it marked the agent (held
    there by an LD_PRELOAD helper): the child's storage was copied from an
    agent not yet marked. The daemon walks again until a walk marks no
    one, so the child is in the context too and the denied program it
    runs is killed."""
    if os.environ.get("EG_ASAN"):
        ctx.skip("an ASan build takes no LD_PRELOAD helper (its runtime must come first)")
    work = agent_files(ctx)
    rel, cg, _ = ctx.cgroup()
    t = "forked-" + token()

    def join():
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write("0")
    fork, go = os.path.join(work, "fork"), os.path.join(work, "go")
    os.mkfifo(fork)
    os.mkfifo(go)
    agent = subprocess.Popen([os.path.join(work, "agent"), "-c",
                              "read x < %s; sh -c 'read y < %s; %s %s; echo $? > %s/rc'; exit 0"
                              % (fork, go, os.path.join(work, "denied"), t, work)], preexec_fn=join)
    ctx.on_cleanup(agent.kill)
    time.sleep(0.3)
    pf = write(ctx, ctx_policy(work))
    d, mark = held_daemon(ctx, "--policy", pf, "--enforce", "--cgroup", cg)
    try:
        with open(fork, "w") as f:
            f.write("go\n")
        children = "/proc/%d/task/%d/children" % (agent.pid, agent.pid)

        def forked():
            with open(children) as f:
                return f.read().split()
        eg.wait_until(forked, what="the agent's child")
    finally:
        os.unlink(mark)
    start = d.wait_for(lambda e: e.get("type") == "daemon" and e.get("event") == "start", timeout=60)[0]
    assert start["seeded"]["contexts"] == 2 and start["seeded"]["failed"] == 0, start["seeded"]
    with open(go, "w") as f:
        f.write("go\n")
    agent.wait(timeout=20)
    e = wait_mark_or_kill(d, t)
    assert not marks(t), "the denied program ran in a child the agent forked during the walk"
    assert e["action"] == "killed" and e["context"]["name"] == "agent", e


def test_a_context_for_an_agent_the_kernel_knew_already(ctx):
    """An agent started under a daemon with no contexts is in its context once a daemon with the
    policy takes over (its task storage kept: the context is written into it, in the kernel)."""
    work = agent_files(ctx)
    rel, cg, _ = ctx.cgroup()
    t = "known-" + token()
    pin = "/sys/fs/bpf/egtest-known-%d" % os.getpid()
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", pin],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    d1 = ctx.daemon(pin_path=pin)
    agent, fifo = waiting_agent(ctx, work, cg, t)
    eg.wait_until(lambda: agent.pid in eg.procs_view(pin), what="the agent in the procs view")
    assert d1.stop() == 0
    # as a version that kept no names for context numbers leaves its pins: the start says it cannot tell
    os.unlink(os.path.join(pin, "ctxnames"))
    pf = write(ctx, ctx_policy(work))
    d = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg, pin_path=pin)
    start = d.events()[0]
    assert start.get("tasks_reused") is True, start
    assert "kept no names for its context numbers" in d.err(), d.err()
    assert start["seeded"]["contexts"] == 2 and start["seeded"]["failed"] == 0, start["seeded"]
    released_and_killed(d, agent, fifo, work, t, "the kernel knew before the policy")


def test_a_context_a_reload_adds_holds_a_running_agent(ctx):
    """A reload that adds a context puts agents already running in it, as a
    start with that policy would: the denied program is killed in the
    agent's context, not only after the agent's next identity exec."""
    work = agent_files(ctx)
    rel, cg, _ = ctx.cgroup()
    t = "reloaded-" + token()
    d, pf = enforcing_in(ctx, cg, "default_decision: allow\n")
    agent, fifo = waiting_agent(ctx, work, cg, t)
    reload_while_it_runs(ctx, d, pf, agent.pid, ctx_policy(work))
    released_and_killed(d, agent, fifo, work, t, "after a reload added its context")


def threaded_agent(ctx, work, cg):
    """work/tagent (tests/helpers/thread_fork, with content of its own) in cgroup cg, running
    work/denied from the thread it is told: its worker thread starts with it (eg.ThreadFork)."""
    path = os.path.join(work, "tagent")
    shutil.copy(ctx.helper("thread_fork"), path)
    with open(path, "ab") as f:
        f.write(b"\0tagent" + token().encode())
    os.chmod(path, 0o755)

    def join():
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write("0")
    return eg.ThreadFork(ctx, os.path.join(work, "denied"), exe=path, preexec_fn=join)


def tagent_policy(work):
    return ctx_policy(work, identities="[{paths: [%s/tagent]}]" % work)


def every_thread_killed(d, agent, what):
    """The denied program, forked and exec'd by the agent's first thread and by its worker thread,
    is killed in the agent's context both times."""
    for who, name in (("main", "first"), ("thread", "worker")):
        t = "%s-%s" % (who, token())
        rc = agent.run(who, t)
        e = wait_mark_or_kill(d, t)
        assert not marks(t) and rc == 128 + 9, "the denied program ran from the agent's %s thread %s: " \
            "status %d, %r" % (name, what, rc, e)
        assert e["action"] == "killed" and e["context"]["name"] == "agent", e


def test_a_context_a_reload_adds_holds_every_thread_of_a_running_agent(ctx):
    """A thread's task storage is its own, copied from its creator's when it started: a worker
    thread the agent started before a reload added the context has none in it. The reload puts
    every thread of the agent in the context, so what the worker thread forks and execs is
    judged in it as what the first thread does."""
    work = agent_files(ctx)
    rel, cg, _ = ctx.cgroup()
    d, pf = enforcing_in(ctx, cg, "default_decision: allow\n")
    agent = threaded_agent(ctx, work, cg)
    reload_while_it_runs(ctx, d, pf, agent.pid, tagent_policy(work))
    every_thread_killed(d, agent, "after a reload added its context")


def test_every_thread_of_an_agent_started_before_the_daemon_is_in_its_context(ctx):
    """An agent with a worker thread, both running before the daemon: the daemon's start gives the
    worker thread the storage it gives the agent (context included), so what the worker thread
    forks and execs is in the context, not a task the kernel knows nothing of."""
    work = agent_files(ctx)
    rel, cg, _ = ctx.cgroup()
    agent = threaded_agent(ctx, work, cg)
    d, pf = enforcing_in(ctx, cg, tagent_policy(work))
    seeded = d.events()[0]["seeded"]
    assert seeded["contexts"] == 1 and seeded["failed"] == 0, seeded   # a process, counted once
    every_thread_killed(d, agent, "started before the daemon")


def test_every_thread_of_an_agent_the_kernel_knew_already_is_in_its_context(ctx):
    """The agent and its worker thread started under a daemon with no contexts; a daemon with the
    policy starts on the same pins: the context is written into every thread's storage."""
    work = agent_files(ctx)
    rel, cg, _ = ctx.cgroup()
    pin = "/sys/fs/bpf/egtest-tknown-%d" % os.getpid()
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", pin],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    d1 = ctx.daemon(pin_path=pin)
    agent = threaded_agent(ctx, work, cg)
    eg.wait_until(lambda: agent.pid in eg.procs_view(pin), what="the agent in the procs view")
    assert d1.stop() == 0
    pf = write(ctx, tagent_policy(work))
    d = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg, pin_path=pin)
    seeded = d.events()[0]["seeded"]
    assert seeded["contexts"] == 1 and seeded["failed"] == 0, seeded
    every_thread_killed(d, agent, "the kernel knew before the policy")


def test_a_reload_that_renumbers_contexts_is_refused(ctx):
    """Running agents carry their context's number (its place in
    contexts:). A reload that reorders the contexts would move a running
    agent under another context's rules: refused, and the agent stays in
    its own context. One that adds a context at the end is taken."""
    work = agent_files(ctx)
    rel, cg, _ = ctx.cgroup()
    t = "renumbered-" + token()
    other = "  - name: other\n    identities: [{paths: [%s/other]}]\n" % work
    base = ctx_policy(work)
    d, pf = enforcing_in(ctx, cg, base.replace("commands:", other + "commands:"))
    agent, fifo = waiting_agent(ctx, work, cg, t)
    eg.wait_until(lambda: agent.pid in eg.procs_view(d.pin_path), what="the agent in the procs view")
    # 'other' first: the agent's number would name it
    write(ctx, base.replace("contexts:\n", "contexts:\n" + other), path=pf)
    r = ctx.run([ctx.execgate, "policy", "reload", "-p", d.pin_path], check=False)
    out = r.stdout.decode() + r.stderr.decode()
    assert r.returncode != 0 and "was 'agent'" in out and "at the end" in out, r
    d.wait_for(lambda e: e.get("type") == "daemon" and e.get("event") == "policy_error",
               what="the refused reload's record")
    released_and_killed(d, agent, fifo, work, t, "after a reload that would renumber its context")
    # a context added at the end keeps every number
    third = "  - name: third\n    identities: [{paths: [%s/third]}]\n" % work
    write(ctx, base.replace("commands:", other + third + "commands:"), path=pf)
    r = ctx.run([ctx.execgate, "policy", "reload", "-p", d.pin_path], check=False)
    assert r.returncode == 0, r
    # the last two dropped: taken; a number freed so is not given another name (tasks may carry it)
    write(ctx, base, path=pf)
    r = ctx.run([ctx.execgate, "policy", "reload", "-p", d.pin_path], check=False)
    assert r.returncode == 0, r
    write(ctx, base.replace("commands:", third + "commands:"), path=pf)
    r = ctx.run([ctx.execgate, "policy", "reload", "-p", d.pin_path], check=False)
    out = r.stdout.decode() + r.stderr.decode()
    assert r.returncode != 0 and "was 'other'" in out, r


def test_a_daemon_started_anew_keeps_the_context_numbers(ctx):
    """Tasks keep their context's number when the daemon stops (task storage
    stays pinned), and the numbers keep their names with them ("ctxnames"):
    a daemon started anew on the same pins with the contexts reordered is
    refused. It would have put a child the agent left behind (reparented
    to init: no walk from an identity finds it) under the other context,
    where the denied program runs. In the same order it starts, and the
    child is still in 'agent'; a context a reload adds keeps its name for
    the next start too; after `execgate unload` any order starts."""
    work = agent_files(ctx)
    rel, cg, _ = ctx.cgroup()
    t = "anew-" + token()
    other = "  - name: other\n    identities: [{paths: [%s/other]}]\n" % work
    base = ctx_policy(work)
    ordered = base.replace("commands:", other + "commands:")
    reordered = base.replace("contexts:\n", "contexts:\n" + other)
    pf = write(ctx, ordered)
    d = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg)
    pin = d.pin_path
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", pin],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    fifo = os.path.join(work, "go")
    os.mkfifo(fifo)
    denied = os.path.join(work, "denied")
    script = ("( setsid sh -c '( read x < %s; %s %s; echo $? > %s/rc ) &' </dev/null >/dev/null 2>&1 & ) ; exit 0"
              % (fifo, denied, t, work))
    r = in_cg(cg, [os.path.join(work, "agent"), "-c", script])
    assert r.returncode == 0, r.stderr
    ctx.on_cleanup(lambda: subprocess.run(["pkill", "-f", t]))

    def contexts():
        """(id, name) of each live process of the child's (the shell that forks it may be exiting)."""
        out = []
        for pid in subprocess.run(["pgrep", "-f", t], stdout=subprocess.PIPE).stdout.split():
            r = ctx.run([ctx.execgate, "task", "-j", "-p", pin, pid.decode()], check=False)
            if r.returncode == 0:
                c = json.loads(r.stdout)["context"]
                out.append(c and (c["id"], c["name"], c["depth"] >= 1))
        return out
    def waiting():
        """The child once it waits on the fifo: every fork of the double fork is done by then
        (one after the daemon stops would make a process with no task storage)."""
        for pid in subprocess.run(["pgrep", "-f", t], stdout=subprocess.PIPE).stdout.split():
            try:
                with open("/proc/%s/wchan" % pid.decode()) as f:
                    if f.read().strip() == "wait_for_partner":
                        return pid
            except OSError:
                pass
        return None
    eg.wait_until(waiting, what="the agent's child waiting on the fifo")
    found = eg.wait_until(contexts, what="the agent's child")
    assert set(found) == {(1, "agent", True)}, found
    assert d.stop() == 0, d.err()
    # the contexts reordered: 'other' would get the number the child carries
    write(ctx, reordered, path=pf)
    d2 = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg, pin_path=pin, ready=False)
    eg.wait_until(lambda: d2.proc.poll() is not None or [e for e in d2.events() if e.get("event") == "start"],
                  timeout=30, what="the reordered daemon's exit or start")
    if d2.proc.poll() is None:
        with open(fifo, "w") as f:
            f.write("go\n")
        eg.wait_until(lambda: os.path.exists(os.path.join(work, "rc")), what="the child's exit status")
        raise AssertionError("a daemon with the contexts reordered started on the pins, and the agent's "
                             "child then %s the denied program" % ("ran" if marks(t) else "did not run"))
    err = d2.err()
    assert d2.proc.returncode != 0 and "was 'agent'" in err and "execgate unload" in err, err
    # the refused start left the number and its name as they were
    found = contexts()
    assert found and set(found) == {(1, "agent", True)}, found
    # the same order: the child is still in 'agent', and the denied program is killed there
    write(ctx, ordered, path=pf)
    d3 = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg, pin_path=pin)
    with open(fifo, "w") as f:
        f.write("go\n")
    e = wait_mark_or_kill(d3, t)
    assert not marks(t), "the denied program ran in the agent's child after a restart"
    assert e["action"] == "killed" and e["context"]["name"] == "agent", e
    # a context a reload adds is kept too: a start that names its number otherwise is refused
    third = "  - name: third\n    identities: [{paths: [%s/third]}]\n" % work
    write(ctx, base.replace("commands:", other + third + "commands:"), path=pf)
    assert ctx.run([ctx.execgate, "policy", "reload", "-p", pin], check=False).returncode == 0
    assert d3.stop() == 0, d3.err()
    fourth = third.replace("third", "fourth")
    write(ctx, base.replace("commands:", other + fourth + "commands:"), path=pf)
    d5 = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg, pin_path=pin, ready=False)
    assert d5.proc.wait(30) != 0 and "was 'third'" in d5.err(), d5.err()
    # unload forgets the numbers (and the tasks that carried them): any order starts
    r = ctx.run([ctx.execgate, "unload", "-p", pin], check=False)
    assert r.returncode == 0, r
    write(ctx, reordered, path=pf)
    d4 = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg, pin_path=pin)
    assert [c["name"] for c in d4.events()[0]["contexts"]] == ["other", "agent"], d4.events()[0]


def test_a_start_that_failed_names_no_context(ctx):
    """The names are kept only once the start switches to its programs (no
    task carries its policy's numbers before): a first start that fails
    before (its kernel rules refused, made so by LD_PRELOAD) leaves none,
    and the next start may order its contexts otherwise."""
    if os.environ.get("EG_ASAN"):
        ctx.skip("an ASan build takes no LD_PRELOAD helper (its runtime must come first)")
    work = agent_files(ctx)
    rel, cg, _ = ctx.cgroup()
    other = "  - name: other\n    identities: [{paths: [%s/other]}]\n" % work
    base = ctx_policy(work)
    pf = write(ctx, base.replace("commands:", other + "commands:"))
    env = dict(os.environ, LD_PRELOAD=ctx.helper("preload_fail_bpf"), EG_FAIL_MAP="krules")
    d = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg, env=env, ready=False)
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    assert d.proc.wait(60) != 0 and "cannot load the kernel rules" in d.err(), d.err()
    assert os.path.exists(os.path.join(d.pin_path, "ctxnames")), os.listdir(d.pin_path)
    write(ctx, base.replace("contexts:\n", "contexts:\n" + other), path=pf)
    d2 = ctx.daemon("--policy", pf, "--enforce", "--cgroup", cg, pin_path=d.pin_path)
    assert [c["name"] for c in d2.events()[0]["contexts"]] == ["other", "agent"], d2.events()[0]
    # an empty ctxnames is this version's: no warning that the numbers cannot be told
    assert "kept no names" not in d2.err(), d2.err()


def test_context_numbers_keep_their_names_across_a_handover(ctx):
    """The names context ids had under a daemon go with its handover
    (SIGUSR2, a package upgrade): a number a reload freed before the
    handover is not given another name after it."""
    work = agent_files(ctx)
    rel, cg, _ = ctx.cgroup()
    other = "  - name: other\n    identities: [{paths: [%s/other]}]\n" % work
    third = "  - name: third\n    identities: [{paths: [%s/third]}]\n" % work
    base = ctx_policy(work)
    pf = write(ctx, base.replace("commands:", other + "commands:"))
    d = ctx.daemon("--policy", pf, "--cgroup", cg)
    write(ctx, base, path=pf)
    r = ctx.run([ctx.execgate, "policy", "reload", "-p", d.pin_path], check=False)
    assert r.returncode == 0, r
    d.proc.send_signal(signal.SIGUSR2)
    d.wait_for(lambda e: e.get("type") == "daemon" and e.get("event") == "start" and e.get("takeover"),
               timeout=60, what="the new daemon's start")
    write(ctx, base.replace("commands:", third + "commands:"), path=pf)
    r = ctx.run([ctx.execgate, "policy", "reload", "-p", d.pin_path], check=False)
    out = r.stdout.decode() + r.stderr.decode()
    assert r.returncode != 0 and "was 'other'" in out, r


def test_max_consecutive_shells(ctx):
    """sh -c "sh -c 'sh -c X'": the third shell in a row is refused; a program between resets the count."""
    work = agent_files(ctx)
    d, rel, cg = enforcing(ctx, ctx_policy(work, limits="{max_consecutive_shells: 2}"))
    agent = os.path.join(work, "agent")
    denied = os.path.join(work, "denied")
    t = "sh3-" + token()
    # the third shell itself is what dies; the second says so
    cmd = "sh -c \"sh -c 'sh -c \\\"/bin/true %s\\\"; echo third=\\$?'\"; echo second=$?" % t
    r = in_cg(cg, [agent, "-c", cmd])
    out = r.stdout.decode()
    assert "third=137" in out and "second=0" in out, (out, r.stderr)
    evs = d.wait_for(lambda e: e.get("type") == "exec" and e.get("action") == "killed" and
                     any(t in a for a in e.get("argv", [])), 10, "the killed shell")
    assert evs[0]["rule"] == "context_limit" and evs[0]["reason"] == "context-limit", evs
    assert evs[0]["argv"][0] == "sh" and evs[0]["context"]["name"] == "agent", evs[0]
    # outside the context shells nest freely
    t2 = "sh3out-" + token()
    r = in_cg(cg, ["/bin/sh", "-c", "sh -c 'sh -c \"sh -c \\\"/bin/true %s\\\"\"'; echo rc=$?" % t2])
    assert "rc=0" in r.stdout.decode(), r.stdout
    # a program between shells ends the row: sh, env, sh, sh is two in a row at most
    t3 = "shenv-" + token()
    r = in_cg(cg, [agent, "-c", "sh -c '/usr/bin/env sh -c \"sh -c \\\"/bin/true %s\\\"; echo in=\\$?\"'" % t3])
    assert "in=0" in r.stdout.decode(), (r.stdout, r.stderr)


def test_an_agent_run_by_the_dynamic_loader_is_in_its_context(ctx):
    """`ld.so AGENT` runs the agent with no exec of its own: the program the
    loader was asked for (after the loader's options too), and the file it
    maps (by a link of another name, spelled relative), is an identity all
    the same, and so is the script of an interpreter it runs (`ld.so
    python3 agent.py`): what the agent runs is judged in its context. And
    `ld.so /bin/sh` is a shell image like `sh`, by whatever name:
    max_consecutive_shells counts it."""
    work = agent_files(ctx)
    py = os.path.join(work, "agent.py")
    with open(py, "w") as f:
        f.write("import os, sys\nos.system('%s %s; echo rc=$?' % (sys.argv[1], sys.argv[2]))\n")
    os.chmod(py, 0o644)
    ids = "[{paths: [%s/agent]}, {paths: [%s]}]" % (work, py)
    d, rel, cg = enforcing(ctx, ctx_policy(work, limits="{max_consecutive_shells: 2}", identities=ids))
    agent, denied = os.path.join(work, "agent"), os.path.join(work, "denied")
    for pre in ([LDSO], [LDSO, "--inhibit-cache", "--argv0", "agent"]):
        t = "ld-" + token()
        r = in_cg(cg, pre + [agent, "-c", "%s %s; echo rc=$?" % (denied, t)])
        assert "rc=137" in r.stdout.decode() and not marks(t), (pre, r.stdout, r.stderr[-300:])
        e = wait_mark_or_kill(d, t)
        assert e["action"] == "killed" and e["rule"] == "no-denied-in-agent", (pre, e)
        assert e["context"]["name"] == "agent" and e["context"]["depth"] == 1, (pre, e)
    # the loader running a shell starts the row: it, sh, and the third (sh) is refused
    t = "ldsh-" + token()
    cmd = "%s /bin/sh -c \"sh -c 'sh -c \\\"/bin/true %s\\\"; echo third=\\$?'\"; echo second=$?" % (LDSO, t)
    r = in_cg(cg, [agent, "-c", cmd])
    out = r.stdout.decode()
    assert "third=137" in out and "second=0" in out, (out, r.stderr[-300:])
    evs = d.wait_for(lambda e: e.get("type") == "exec" and e.get("action") == "killed" and
                     any(t in a for a in e.get("argv", [])), 10, "the killed shell")
    assert evs[0]["rule"] == "context_limit" and evs[0]["argv"][0] == "sh", evs[0]
    loaded = [e for e in d.events() if e.get("type") == "exec" and e.get("loader") and
              any(t in a for a in e.get("argv", []))]
    assert loaded and loaded[0]["context"]["name"] == "agent", loaded
    # by another name: a link, spelled relative. The file the loader maps is the agent's
    os.symlink(agent, os.path.join(work, "helper"))
    os.symlink("/bin/dash", os.path.join(work, "notashell"))
    t = "ldlink-" + token()
    r = in_cg(cg, [LDSO, "./helper", "-c", "%s %s; echo rc=$?" % (denied, t)], cwd=work)
    assert "rc=137" in r.stdout.decode() and not marks(t), (r.stdout, r.stderr[-300:])
    e = wait_mark_or_kill(d, t)
    assert e["action"] == "killed" and e["context"]["name"] == "agent", e
    # a shell by a name that is not a shell's, run by the loader: the row counts it all the same
    t = "ldnsh-" + token()
    cmd = "%s %s/notashell -c \"sh -c 'sh -c \\\"/bin/true %s\\\"; echo third=\\$?'\"" % (LDSO, work, t)
    r = in_cg(cg, [agent, "-c", cmd])
    assert "third=137" in r.stdout.decode(), (r.stdout, r.stderr[-300:])
    # an interpreter the loader runs, given the agent's script: the script is the identity
    t = "ldpy-" + token()
    r = in_cg(cg, [LDSO, "/usr/bin/python3", "-B", py, denied, t])
    assert "rc=137" in r.stdout.decode() and not marks(t), (r.stdout, r.stderr[-300:])
    e = wait_mark_or_kill(d, t)
    assert e["action"] == "killed" and e["context"]["name"] == "agent", e


def test_max_depth(ctx):
    work = agent_files(ctx)
    d, rel, cg = enforcing(ctx, ctx_policy(work, limits="{max_depth: 2}"))
    agent = os.path.join(work, "agent")
    t = "deep-" + token()
    # agent (0) -> env (1) -> env (2) -> true (3): refused
    r = in_cg(cg, [agent, "-c", "/usr/bin/env /usr/bin/env /bin/true %s; echo rc=$?" % t])
    assert "rc=137" in r.stdout.decode(), r.stdout
    d.wait_for(lambda e: e.get("type") == "exec" and e.get("action") == "killed" and t in e.get("argv", []),
               10, "the killed exec")
    killed = [e for e in events_of(d, t) if e.get("action") == "killed"]
    assert len(killed) == 1 and killed[0]["filename"] == "/usr/bin/true", killed
    assert killed[0]["context"]["depth"] == 3 and killed[0]["rule"] == "context_limit", killed[0]
    t2 = "shallow-" + token()
    r = in_cg(cg, [agent, "-c", "/usr/bin/env /bin/true %s; echo rc=$?" % t2])
    assert "rc=0" in r.stdout.decode(), r.stdout


def test_script_identities(ctx):
    """A '#!/usr/bin/env python3' script and a node script are identities by their own paths."""
    work = agent_files(ctx)
    py = os.path.join(work, "agent.py")
    js = os.path.join(work, "cli.js")
    denied = os.path.join(work, "denied")
    with open(py, "w") as f:
        f.write("#!/usr/bin/env python3\nimport subprocess, sys\n"
                "r = subprocess.run([%r, sys.argv[1]])\nprint('rc=%%d' %% r.returncode)\n" % denied)
    os.chmod(py, 0o755)
    with open(js, "w") as f:
        f.write("const r = require('child_process').spawnSync(%s, [process.argv[2]]);\n"
                "console.log('rc=' + (r.signal === 'SIGKILL' ? 137 : r.status));\n" % json.dumps(denied))
    ids = "[{paths: [%s]}, {paths: [%s]}]" % (py, js)
    d, rel, cg = enforcing(ctx, ctx_policy(work, identities=ids))
    for argv in ([py], ["/usr/bin/node", js]):
        t = "script-" + token()
        r = in_cg(cg, argv + [t])
        out = r.stdout.decode()
        assert "rc=-9" in out or "rc=137" in out, (argv, out, r.stderr[-300:])
        assert not marks(t), argv
        e = wait_mark_or_kill(d, t)
        assert e["context"]["name"] == "agent" and e["action"] == "killed", e
    # the same programs outside: python3 running another script, node another file
    t = "plain-" + token()
    r = in_cg(cg, ["/usr/bin/python3", "-c", "import subprocess; subprocess.run([%r, %r])" % (denied, t)])
    assert r.returncode == 0 and marks(t), r.stderr


def test_audit_mode_tracks_contexts(ctx):
    """Without --enforce the kernel still puts tasks in their context: the events say so, nothing dies."""
    work = agent_files(ctx)
    rel, cg, _ = ctx.cgroup()
    d = ctx.daemon("--policy", write(ctx, ctx_policy(work, limits="{max_depth: 1}")), "--cgroup", cg)
    t = "audit-" + token()
    r = in_cg(cg, [os.path.join(work, "agent"), "-c", "/usr/bin/env %s %s; echo rc=$?" %
                   (os.path.join(work, "denied"), t)])
    assert "rc=0" in r.stdout.decode() and marks(t), r.stdout
    e = wait_mark_or_kill(d, t)
    assert e["context"]["name"] == "agent" and e["context"]["depth"] == 2, e
    assert e["decision"] == "deny" and e["action"] == "would-block", e
    assert e["rule"] in ("no-denied-in-agent", "context_limit"), e
    start = d.events()[0]
    assert start["contexts"][0]["limits_enforced"] is False, start


def test_a_session_inside_a_context_is_judged_by_both(ctx):
    """execgate exec started by an agent: the daemon's context rules judge the session's execs too."""
    work = agent_files(ctx)
    d, rel, cg = enforcing(ctx, ctx_policy(work))
    t = "sess-" + token()
    r = in_cg(cg, [os.path.join(work, "agent"), "-c",
                   "%s exec -- %s %s; echo rc=$?" % (ctx.execgate, os.path.join(work, "denied"), t)],
              env=dict(os.environ, EXECGATE_SOCKET=d.pin_path), timeout=60)
    assert not marks(t), "ran in a session inside the agent's context"
    assert "rc=0" not in r.stdout.decode(), (r.stdout, r.stderr[-400:])


def test_policy_errors_name_the_place(ctx):
    bad = """
contexts:
  - name: a
    identities: [{paths: [/x], decision: allow}]
  - name: none
    identities: [{basenames: [y]}]
commands:
  - {name: r, basenames: [z], contexts: [b], decision: deny}
"""
    r = subprocess.run([ctx.execgate, "policy", "check", write(ctx, bad)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert ":4:" in err and "'decision' does not belong in an identity" in err, err
    assert ":5:" in err and "'none' is reserved" in err, err
    assert ":8:" in err and "names context 'b'" in err, err


def test_a_run_the_agent_asks_for_stays_in_its_context(ctx):
    """`execgate run` hands the command to the daemon, whose child it is: it
    still carries the asking agent's context (and depth), so an agent cannot
    leave its context by asking the daemon to run a program for it."""
    work = agent_files(ctx)
    pf = write(ctx, ctx_policy(work))
    ws, state = ctx.tmpdir(), ctx.tmpdir()
    os.chmod(ws, 0o755)
    d = ctx.daemon("--policy", pf, "--state-dir", state, "--workspace", ws)
    denied = os.path.join(work, "denied")
    run = "%s run -p %s --" % (ctx.execgate, d.pin_path)
    # outside the context the daemon runs it
    t_out = "out-" + token()
    r = subprocess.run(["sh", "-c", "%s %s %s" % (run, denied, t_out)], cwd=ws, capture_output=True, timeout=60)
    assert r.returncode == 0 and marks(t_out), (r.returncode, r.stderr)
    # asked for by the agent, it is judged in the agent's context: refused
    t_in = "in-" + token()
    r = subprocess.run([os.path.join(work, "agent"), "-c", "%s %s %s; echo rc=$?" % (run, denied, t_in)],
                       cwd=ws, capture_output=True, timeout=60)
    assert b"rc=126" in r.stdout and b"not for agents" in r.stderr, (r.stdout, r.stderr[-400:])
    assert not marks(t_in), "the denied program ran for the agent through the daemon"
    e = d.wait_for(lambda x: x.get("type") == "exec_failed" and t_in in x.get("argv", []),
                   what="the refusal")[0]
    assert e["rule"] == "no-denied-in-agent" and e["action"] == "blocked" and e["layer"] == "seccomp", e


def test_contexts_without_enforce_do_not_depend_on_the_rules_size(ctx):
    """Without --enforce only the contexts' identities go to the kernel: a policy whose rules
    hold more globs than the kernel maps starts and reloads (it was compiled whole, and
    refused). A reload the kernel cannot take (identities past its maps) keeps the contexts it
    holds, and a later policy with no contexts still takes them out of the kernel."""
    def policy(identities, rules):
        ids = ", ".join("{paths: [%s]}" % ",".join("'/eg-ctx-%d/x%d*'" % (s, i) for i in range(s, min(identities, s + 20000)))
                        for s in range(0, identities, 20000)) or "{paths: [/eg-ctx/agent]}"
        text = "contexts:\n  - name: agent\n    identities: [%s]\ncommands:\n" % ids
        for r in range(0, rules, 25000):
            text += "  - name: r%d\n    paths: [%s]\n    decision: deny\n" % (
                r, ",".join("'/eg-rule-%d/x%d*'" % (r, i) for i in range(r, min(rules, r + 25000))))
        return text if rules else text.replace("commands:\n", "commands: []\n")

    def kernel(d):
        r = ctx.run([ctx.execgate, "status", "-j", "-p", d.pin_path], check=False)
        return json.loads(r.stdout)["kernel"]["rules_loaded"]

    def reload(d):
        return ctx.run([ctx.execgate, "policy", "reload", "-p", d.pin_path], check=False)
    pf = write(ctx, policy(0, 75000))
    d = ctx.daemon("--policy", pf)
    assert kernel(d) is True
    # no verdict of the kernel's on an exec, nor on what a loader run as the command maps
    t = token()
    subprocess.run([LDSO, "/bin/true", t], check=True)
    subprocess.run(["/bin/true", t], check=True)
    evs = d.wait_for(lambda e: e.get("type") == "exec" and t in e.get("argv", []) and
                     len([x for x in d.events() if x.get("type") == "exec" and t in x.get("argv", [])]) == 2,
                     10, "both execs")
    assert [e.get("kernel") for e in evs] == [None, None], evs
    write(ctx, policy(0, 0), path=pf)
    assert reload(d).returncode == 0
    write(ctx, policy(0, 75000), path=pf)
    assert reload(d).returncode == 0
    # identities past the kernel's maps: refused, the kernel keeps what it holds
    write(ctx, policy(70000, 0), path=pf)
    r = reload(d)
    assert r.returncode != 0 and b"could not load the policy's contexts" in r.stderr, r
    assert kernel(d) is True
    write(ctx, "commands: []\n", path=pf)
    assert reload(d).returncode == 0
    assert kernel(d) is False


def test_a_bypassed_interpreter_leaves_its_script_to_the_context_limits(ctx):
    """internal_bypass skips the judgement of a program, not the context's limits on what it
    runs: a script whose '#!' interpreter is a bypassed program, run too deep in a context, got
    the interpreter's bypass from the kernel (rank 0, as the script's allow) and ran; the daemon
    judged it past the limit. Refused now."""
    work = agent_files(ctx)
    t0 = token()
    shell = "/usr/local/bin/egtest-agentsh-" + t0
    shutil.copy("/bin/sh", shell)
    os.chmod(shell, 0o755)
    ctx.on_cleanup(lambda: os.unlink(shell))
    script = os.path.join(work, "s.sh")
    with open(script, "w") as f:
        f.write("#!%s\n/bin/true \"$1\"\n" % shell)
    os.chmod(script, 0o755)
    pol = ctx_policy(work, limits="{max_depth: 1}").replace(
        "default_decision: allow\n",
        "default_decision: allow\nsandbox: {seccomp: {execve: {internal_bypass: [%s]}}}\n" % shell)
    d, rel, cg = enforcing(ctx, pol)
    t = "bypass-" + token()
    # agent (0) -> env (1) -> s.sh (2): past max_depth 1
    r = in_cg(cg, [os.path.join(work, "agent"), "-c", "/usr/bin/env %s %s; echo rc=$?" % (script, t)])
    assert "rc=137" in r.stdout.decode(), r.stdout
    e = d.wait_for(lambda e: e.get("type") == "exec" and e.get("action") == "killed" and
                   any(t in a for a in e.get("argv", [])), 10, "the killed exec")[0]
    # the script itself, not what it would have run
    assert e["rule"] == "context_limit" and e["filename"] == script and e["interpreter"] == shell, e
