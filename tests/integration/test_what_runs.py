# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""No way around a verdict: the program that really runs is judged,
whatever loads it, at the host's true depth.

Each test here is an attack that worked before: the dynamic loader run as a
command (`ld.so /path/denied`), a rename raced under it, a '#!' chain whose
middle script is denied, a kernel that cannot pin a script, a session
launcher used to reset the exec depth, /proc/self/fd/N in a session, and a
package alias (gcc -> x86_64-linux-gnu-gcc-12) an allow must see. The
marker program writes a line when it runs: a denied one must never."""
import ctypes
import errno
import json
import os
import shlex
import shutil
import signal
import struct
import subprocess
import threading
import time

import eg
from eg import token
from test_enforce import enforcing, in_cg, one, write
from test_sessions import session, wait

LDSO = "/lib64/ld-linux-x86-64.so.2"
MARKER = eg.MARKER
KILL = -signal.SIGKILL


def marks(word):
    try:
        with open(MARKER) as f:
            return [l for l in f if l.split()[0] == word]
    except FileNotFoundError:
        return []


def files(ctx):
    """A directory with denied (the marker), forbidden (the marker by another name) and ok (true)."""
    work = ctx.tmpdir()
    os.chmod(work, 0o755)
    for name, src in (("denied", ctx.helper("marker")), ("forbidden", ctx.helper("marker")),
                      ("ok", "/bin/true")):
        shutil.copy(src, os.path.join(work, name))
        os.chmod(os.path.join(work, name), 0o755)
    # forbidden is denied by name only: give it content of its own so no path rule names it
    with open(os.path.join(work, "forbidden"), "ab") as f:
        f.write(b"\0forbidden")
    return work


def policy(work):
    return """
default_decision: allow
commands:
  - {name: no-denied, paths: [%s/denied], decision: deny, message: "denied by path"}
  - {name: no-forbidden, basenames: [forbidden], decision: deny}
  - {name: no-mid, paths: [%s/mid*.sh], decision: deny, message: "denied in the middle"}
""" % (work, work)


# ---- the dynamic loader ---------------------------------------------------------

def test_loaders_an_earlier_daemon_registered_are_forgotten(ctx):
    """The loaders map is pinned and kept across a handover, kill -9 and --persist, and nothing
    removed an entry: those of images long gone filled it (64 entries), and no new image's
    loader could be registered after (ld.so DENIED in a new container judged as ld.so alone).
    A start keeps what it finds now and forgets the rest."""
    def entries(pin):
        r = ctx.run(["bpftool", "map", "dump", "pinned", os.path.join(pin, "loaders"), "-j"])
        return json.loads(r.stdout)
    d = ctx.daemon()
    pin = d.pin_path
    found = entries(pin)
    assert found, "the host's loaders registered"
    d.proc.kill()           # kill -9: the pins stay
    d.proc.wait()
    for i in range(64 - len(found)):
        key = struct.pack("=QQ", 0xdead0000 + i, 0xbeef0000 + i)
        ctx.run(["bpftool", "map", "update", "pinned", os.path.join(pin, "loaders"), "key", "hex"] +
                ["%02x" % b for b in key] + ["value", "hex", "01", "00", "00", "00"])
    assert len(entries(pin)) == 64
    d2 = ctx.daemon(pin_path=pin)
    # the made-up ones are gone; the host's stay (a container may come or go meanwhile: not counted)
    left = [e["formatted"]["key"] for e in entries(pin)]
    assert not [k for k in left if k["dev"] & 0xffff0000 == 0xdead0000], left
    assert left and len(left) <= len(found) + 4, (found, left)
    assert "no longer found: forgotten" in d2.err(), d2.err()[-500:]


def test_a_32_bit_loader_run_as_the_command_is_refused(ctx):
    """A 32-bit loader maps its program with mmap2, a compat call that fires no syscall
    tracepoint, so what it maps is never judged: `ld-linux.so.2 DENIED` ran a 32-bit program
    the policy denies by path. Such a loader run as the command is refused (an error: what
    runs cannot be told); run as a program's PT_INTERP it is not a command and is not refused."""
    ld32 = "/lib32/ld-linux.so.2"
    if not os.path.exists(ld32):
        ctx.skip("no 32-bit loader (%s: libc6-i386)" % ld32)
    work = files(ctx)
    prog = os.path.join(work, "denied32")
    ctx.run([ctx.helper("elf32_exit"), prog, ld32])
    if subprocess.run([ld32, prog]).returncode != 0:
        ctx.skip("this kernel runs no 32-bit programs")
    pol = policy(work) + "  - {name: no-denied32, paths: [%s], decision: deny}\n" % prog
    d, rel, cg = enforcing(ctx, pol)
    t = token()
    r = in_cg(cg, [ld32, prog, t])
    assert r.returncode == KILL, "a program denied by path ran through the 32-bit loader (%d)" % r.returncode
    e = one(d, t)
    assert e["loader"] is True and e.get("loader_32bit") is True and e["action"] == "killed", e
    assert e["decision"] == "error", e
    # the 32-bit program run directly is judged as any exec: denied by its path, killed
    assert in_cg(cg, [prog, token()]).returncode == KILL
    # and a 32-bit program of another path runs
    other = os.path.join(work, "ok32")
    ctx.run([ctx.helper("elf32_exit"), other, ld32])
    with open(other, "ab") as f:
        f.write(b"ok32")	# content of its own: a copy of denied32 is denied32 to the daemon
    assert in_cg(cg, [other]).returncode == 0
    # in a session: the loader's ticket cannot be checked against what it maps, so it is refused
    allow = write(ctx, "default_decision: allow\n")
    r = ctx.run([ctx.execgate, "exec", "-p", d.pin_path, "--policy", allow, "--", ld32, other], check=False)
    assert r.returncode in (KILL, 128 + 9), "a 32-bit loader ran in a session (%d: %s)" % (r.returncode, r.stderr[-300:])
    r = ctx.run([ctx.execgate, "exec", "-p", d.pin_path, "--policy", allow, "--", other], check=False)
    assert r.returncode == 0, (r.returncode, r.stderr[-300:])


def test_loader_is_a_launcher_under_enforce(ctx):
    work = files(ctx)
    d, rel, cg = enforcing(ctx, policy(work))
    denied, forbidden = os.path.join(work, "denied"), os.path.join(work, "forbidden")
    tries = {
        "plain": [LDSO, denied],
        "options": [LDSO, "--library-path", "/nonexistent", "--argv0", "innocent", "--inhibit-cache", denied],
        "hwcaps": [LDSO, "--glibc-hwcaps-prepend", "x86-64-v2", "--glibc-hwcaps-mask", "x86-64-v2", denied],
        "by-name": [LDSO, forbidden],
        "relative": [LDSO, "./denied"],
    }
    for how, argv in tries.items():
        t = "ld-" + how + "-" + token()
        r = in_cg(cg, argv + [t], cwd=work)
        assert r.returncode == KILL, (how, r.returncode, r.stderr[-300:])
        assert not marks(t), (how, "the denied program ran")
        e = one(d, t)
        assert e["loader"] is True and e["action"] == "killed" and e["decision"] == "deny", (how, e)
        assert e["reason"] == "kernel-rule" and e["loaded"]["filename"] in (denied, forbidden), (how, e)
        assert e["loaded"]["path_requested"] == argv[-1], (how, e["loaded"])
        progs = {p["role"]: p for p in e["programs"]}
        assert progs["loader"]["decision"] == "allow" and progs["program"]["decision"] == "deny", (how, e)
    # allowed programs, and ldd, keep working through the loader
    t = token()
    assert in_cg(cg, [LDSO, os.path.join(work, "ok"), t]).returncode == 0
    e = one(d, t)
    assert e["action"] == "allowed" and e["loaded"]["filename"] == os.path.join(work, "ok"), e
    r = in_cg(cg, ["ldd", "/bin/true"])
    assert r.returncode == 0 and b"libc.so" in r.stdout, r
    # the loader alone (--help) is the loader alone
    assert in_cg(cg, [LDSO, "--help"]).returncode == 0


def test_a_loader_given_the_longest_path_judges_its_program(ctx):
    """A program path of 4095 bytes (PATH_MAX with its NUL) given to the
    loader was read as a word too long to read: which word is the program
    could not be told, the kernel refused it (an error) and the daemon
    judged it with the loader's arguments as its own (here: denied for the
    value of the loader's option)."""
    work = files(ctx)
    d, rel, cg = enforcing(ctx, policy(work) +
                           "  - {name: no-ok-x, paths: [%s/ok], args: [x], decision: deny}\n" % work)
    ok, denied = spelled(os.path.join(work, "ok"), 4095), spelled(os.path.join(work, "denied"), 4095)
    t = token()
    r = in_cg(cg, [LDSO, "--argv0", "x", ok, t])
    e = one(d, t)
    assert r.returncode == 0 and e["action"] == "allowed", (r.returncode, e)
    assert e["loaded"]["filename"] == os.path.join(work, "ok"), e
    for argv, rule in (([LDSO, ok, "x"], "no-ok-x"), ([LDSO, "--argv0", "x", denied], "no-denied")):
        t = token()
        assert in_cg(cg, argv + [t]).returncode == KILL, argv[1:]
        assert not marks(t)
        e = one(d, t)
        assert e["action"] == "killed" and e["reason"] == "kernel-rule" and e["rule"] == rule, e


def test_loader_is_a_launcher_in_sessions(ctx):
    work = files(ctx)
    d = ctx.daemon("--policy", write(ctx, policy(work)))
    t = token()
    r = session(ctx, d, [LDSO, os.path.join(work, "denied"), t])
    assert r.returncode == 126 and b"denied by path" in r.stderr, (r.returncode, r.stderr)
    assert not marks(t)
    e = wait(lambda: [x for x in d.events() if x.get("type") == "exec_failed" and t in x.get("argv", [])],
             what="the refusal")[0]
    assert e["decision"] == "deny" and e["rule"] == "no-denied", e
    # both programs, each with its own verdict, as in the kernel's records
    roles = {p["role"]: p for p in e["programs"]}
    assert roles["loader"]["decision"] == "allow" and os.path.realpath(LDSO) == roles["loader"]["filename"], e
    assert roles["program"]["decision"] == "deny" and roles["program"]["rule"] == "no-denied", e
    assert roles["program"]["filename"] == os.path.join(work, "denied"), e
    # a bare name the loader would look up itself (--library-path): no file to pin, refused
    t = token()
    r = session(ctx, d, [LDSO, "--library-path", work, "denied", t])
    assert r.returncode == 126 and b"rule loader" in r.stderr, r.stderr
    assert not marks(t)
    # an allowed program runs
    r = session(ctx, d, [LDSO, os.path.join(work, "ok"), token()])
    assert r.returncode == 0, r.stderr


def test_a_loader_exec_without_a_policy_has_no_verdict(ctx):
    """A daemon with no policy writes no verdict for a loader's exec (it
    wrote "decision": null, which the schema refuses), and still names the
    program the loader mapped."""
    d = ctx.daemon()
    t = token()
    subprocess.run([LDSO, "/bin/true", t], check=True)
    e = wait(lambda: [x for x in d.events() if x.get("type") == "exec" and t in x.get("argv", [])],
             what="the loader's exec")[0]
    assert e["loader"] is True and "decision" not in e and "action" not in e, e
    assert e["loaded"]["filename"] == os.path.realpath("/bin/true"), e


def race(ctx, run, work, n):
    """Flips work/prog between ok and denied while run() executes it n times; returns its codes."""
    prog = os.path.join(work, "prog")
    os.symlink("ok", prog)
    stop = threading.Event()

    def flip():
        i = 0
        while not stop.is_set():
            tmp = prog + ".new"
            try:
                os.symlink("denied" if i & 1 else "ok", tmp)
                os.replace(tmp, prog)
            except OSError:
                pass
            i += 1
    th = threading.Thread(target=flip)
    th.start()
    try:
        return run(prog, n)
    finally:
        stop.set()
        th.join()


def test_loader_race_in_a_session_never_runs_the_denied(ctx):
    """The supervisor judges the program the loader is asked for; a racer
    swaps the file under that name right after: the kernel checks the file
    the loader maps against the ticket, so the swap is killed, never run."""
    work = files(ctx)
    d = ctx.daemon("--policy", write(ctx, policy(work)))
    word = "race" + token()

    def run(prog, n):
        r = session(ctx, d, ["sh", "-c", 'i=0; while [ $i -lt %d ]; do %s %s %s; echo "rc=$?"; i=$((i+1)); done'
                             % (n, LDSO, prog, word)], timeout=300)
        return [l.split("=")[1] for l in r.stdout.decode().split() if l.startswith("rc=")]
    codes = race(ctx, run, work, 400)
    assert len(codes) == 400, codes[-5:]
    assert not marks(word), "the denied program ran %d times" % len(marks(word))
    killed = codes.count("137")
    print("    loader race in a session: %d allowed, %d refused, %d killed" %
          (codes.count("0"), codes.count("126"), killed))
    assert killed > 0, "the kernel's check at the mapping never fired: %s" % codes[:20]
    assert set(codes) <= {"0", "126", "137"}, set(codes)
    killed_ev = [e for e in d.events() if e.get("type") == "exec" and word in e.get("argv", []) and
                 e.get("action") == "killed"]
    assert killed_ev and all(e["reason"] == "ticket-mismatch" for e in killed_ev), killed_ev[:2]


def test_loader_race_under_enforce_never_runs_the_denied(ctx):
    work = files(ctx)
    d, rel, cg = enforcing(ctx, policy(work))
    word = "krace" + token()

    def run(prog, n):
        codes = []
        for _ in range(n):
            codes.append(in_cg(cg, [LDSO, prog, word]).returncode)
        return codes
    codes = race(ctx, run, work, 200)
    assert not marks(word), "the denied program ran"
    assert set(codes) <= {0, KILL}, set(codes)
    assert codes.count(KILL) > 0 and codes.count(0) > 0, codes


# ---- '#!' chains --------------------------------------------------------------

def chain(work, levels, denied_at=None, body="exit 0\n"):
    """levels scripts s0 -> s1 -> ... -> /bin/sh; s0 is what one runs. denied_at: that one is mid*.sh.
    body: what /bin/sh runs (the last script's lines)."""
    names = []
    for i in range(levels):
        names.append(os.path.join(work, ("mid%d.sh" if i == denied_at else "s%d.sh") % i))
    for i, n in enumerate(names):
        interp = names[i + 1] if i + 1 < len(names) else "/bin/sh"
        with open(n, "w") as f:
            f.write("#!%s\n" % interp + (body if i + 1 == len(names) else ""))
        os.chmod(n, 0o755)
    return names


def test_a_denied_script_in_the_middle_of_a_chain_is_killed(ctx):
    work = files(ctx)
    d, rel, cg = enforcing(ctx, policy(work))
    for levels, at in ((2, 1), (4, 2), (4, 3)):
        names = chain(work, levels, at)
        t = token()
        r = in_cg(cg, [names[0], t])
        assert r.returncode == KILL, (levels, at, r.returncode, r.stderr)
        e = one(d, t)
        assert e["action"] == "killed" and e["decision"] == "deny" and e["rule"] == "no-mid", e
        assert names[at] in e["script_chain"], (names, e["script_chain"])
        assert any(p["role"] == "chain" and p["decision"] == "deny" for p in e["programs"]), e
        for n in names:
            os.unlink(n)
    # a chain of allowed scripts runs, all the way (the kernel allows 4 levels and an interpreter)
    names = chain(work, 5)
    t = token()
    assert in_cg(cg, [names[0], t]).returncode == 0
    e = one(d, t)
    assert len(e["script_chain"]) == 4 and e["action"] == "allowed", e


def test_scripts_found_level_by_level_without_sched_prepare_exec(ctx):
    """Kernels before 6.10 have no sched_prepare_exec, where the scripts of a '#!' exec are
    found. There each level of the exec is noted at security_bprm_check (fentry), so a script
    is still judged by its own file: spelled relative, through a symlink or a hard link it is
    the file the policy denies (before: only its spelling was judged, and './deny.sh' ran);
    a chain's middle script too; and a session's script is pinned to its file and runs
    (before: killed, not-pinned). EXECGATE_SCRIPTS_BY_LEVELS=1 makes this kernel do it, where
    it has fentry (tests/vm/cases/52-scripts-by-levels.sh runs it on Debian's 6.1)."""
    probe = json.loads(ctx.run([ctx.execgate, "probe", "--json"]).stdout)
    fentry = probe["features"]["fentry"]
    if not fentry["available"]:
        ctx.skip("no fentry on this kernel (%s); the VM suite runs it" % fentry.get("reason"))
    work = files(ctx)
    rel, cg, _ = ctx.cgroup()
    pol = policy(work) + "  - {name: no-deny-sh, paths: [%s/deny.sh], decision: deny}\n" % work
    d = ctx.daemon("--policy", write(ctx, pol), "--enforce", "--cgroup", cg,
                   env=dict(os.environ, EXECGATE_SCRIPTS_BY_LEVELS="1"))
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    script = os.path.join(work, "deny.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\necho ran\n")
    os.chmod(script, 0o755)
    os.symlink(script, os.path.join(work, "link"))
    os.link(script, os.path.join(work, "hard"))
    for spelled in ("./deny.sh", ".//deny.sh", "./link", "./hard"):
        t = token()
        r = in_cg(cg, [spelled, t], cwd=work)
        assert r.returncode == KILL and b"ran" not in r.stdout, (spelled, r.returncode, r.stdout)
        e = one(d, t)
        assert e["script"] == script and e["rule"] == "no-deny-sh" and e["action"] == "killed", e
    names = chain(work, 4, denied_at=2)
    t = token()
    assert in_cg(cg, [names[0], t]).returncode == KILL
    e = one(d, t)
    assert e["rule"] == "no-mid" and names[2] in e["script_chain"], e
    for n in names:
        os.unlink(n)
    names = chain(work, 5)
    t = token()
    assert in_cg(cg, [names[0], t]).returncode == 0
    assert len(one(d, t)["script_chain"]) == 4
    # a session's script is pinned to its file: it runs
    r = session(ctx, d, [names[0], token()])
    assert r.returncode == 0, (r.returncode, r.stderr)


def test_chains_in_sessions(ctx):
    work = files(ctx)
    d = ctx.daemon("--policy", write(ctx, policy(work)))
    names = chain(work, 4)
    r = session(ctx, d, [names[0], token()])
    assert r.returncode == 0, r.stderr
    for n in names:
        os.unlink(n)
    names = chain(work, 3, denied_at=1)
    t = token()
    r = session(ctx, d, [names[0], t])
    assert r.returncode == 126 and b"denied in the middle" in r.stderr, (r.returncode, r.stderr)
    e = wait(lambda: [x for x in d.events() if x.get("type") == "exec_failed" and t in x.get("argv", [])],
             what="the refusal")[0]
    # every level with its own verdict: the script named, the one between, the interpreter
    assert [p["role"] for p in e["programs"]] == ["interpreter", "script", "chain", "chain"], e
    assert [p["decision"] for p in e["programs"]] == ["allow", "allow", "deny", "allow"], e
    assert e["programs"][2]["filename"] == names[1], (names, e)


def test_a_script_the_kernel_cannot_pin_fails_closed_in_a_session(ctx):
    """Without sched_prepare_exec and without BPF LSM the kernel cannot
    name a script's own file at exec: a session's script exec is killed
    (said: not-pinned), never run unchecked; an ELF still runs."""
    work = files(ctx)
    env = dict(os.environ, EXECGATE_NO_PREPARE_EXEC="1")
    d = ctx.daemon("--policy", write(ctx, policy(work)), env=env)
    names = chain(work, 1)
    t = token()
    r = session(ctx, d, [names[0], t])
    assert r.returncode == KILL, (r.returncode, r.stderr)   # the launcher's process became the script
    e = d.wait_for(lambda x: x.get("type") == "exec" and t in x.get("argv", []) and
                   x.get("interpreter") == "/usr/bin/dash", what="the kill")[0]
    assert e["action"] == "killed" and e["reason"] == "not-pinned", e
    assert session(ctx, d, ["/bin/true", token()]).returncode == 0


def spelled(path, size):
    """path spelled with exactly size bytes: "./" (and a "/") put in before its name."""
    d, name = os.path.split(path)
    pad = size - len(d) - 1 - len(name)
    assert pad >= 0, (path, size)
    return d + "/" + "/" * (pad % 2) + "./" * (pad // 2) + name


def scripts_policy(work):
    return """
default_decision: allow
commands:
  - {name: no-deny-sh, paths: [%s/deny.sh], decision: deny, message: "denied script"}
  - {name: no-evil-sh, paths: [%s/args.sh], args: [EVIL], decision: deny}
""" % (work, work)


def scripts(ctx):
    """deny.sh (denied by path), args.sh (denied with EVIL), ok.sh: each says it ran."""
    work = ctx.tmpdir()
    os.chmod(work, 0o755)
    for name in ("deny.sh", "args.sh", "ok.sh"):
        with open(os.path.join(work, name), "w") as f:
            f.write("#!/bin/sh\necho ran-%s\n" % name)
        os.chmod(os.path.join(work, name), 0o755)
    return work


def test_a_script_spelled_with_the_longest_path_is_judged(ctx):
    """A path the caller spells with 4095 bytes (PATH_MAX with its NUL)
    is the longest exec takes. The kernel finds where the script's own
    argv starts by that spelling in the committed argv; a word of 4095
    bytes was taken for one too long to read, the script was not judged,
    and a script denied by its path ran."""
    work = scripts(ctx)
    d, rel, cg = enforcing(ctx, scripts_policy(work))
    for size in (4094, 4095):
        deny, args, ok = (spelled(os.path.join(work, n), size) for n in ("deny.sh", "args.sh", "ok.sh"))
        assert len(deny) == size and os.path.samefile(deny, os.path.join(work, "deny.sh"))
        t = token()
        r = in_cg(cg, [deny, t])
        assert r.returncode == KILL and b"ran-" not in r.stdout, (size, r.returncode, r.stdout, r.stderr)
        e = one(d, t)
        assert e["action"] == "killed" and e["reason"] == "kernel-rule", (size, e)
        assert e["kernel"]["decision"] == "deny" and e["kernel"]["rule"] == "no-deny-sh", (size, e)
        assert e["decision"] == "deny" and e["rule"] == "no-deny-sh", (size, e)
        # the script's own argv, found by that spelling: an argument rule reads the right words
        t = token()
        r = in_cg(cg, [args, "EVIL", t])
        assert r.returncode == KILL and b"ran-" not in r.stdout, (size, r.returncode, r.stdout)
        assert one(d, t)["kernel"]["rule"] == "no-evil-sh"
        for argv in ([args, "SAFE"], [ok, "EVIL"]):
            t = token()
            r = in_cg(cg, argv + [t])
            assert r.returncode == 0 and b"ran-" in r.stdout, (size, argv[1:], r.returncode, r.stderr)
            e = one(d, t)
            assert e["kernel"]["decision"] == "allow" and e["action"] == "allowed", (size, e)


def test_a_script_whose_argv_the_kernel_cannot_find_fails_closed(ctx):
    """The record keeps argv up to --max-argv-bytes: with 16, the script's
    path as spelled is not in it and where the script's own argv starts
    cannot be told. The script is still judged: by its file, path and
    name; a rule that reads its argv cannot be told (an error). Before, it
    was not judged at all and a script denied by its path ran."""
    work = scripts(ctx)
    d, rel, cg = enforcing(ctx, scripts_policy(work), "--max-argv-bytes", "16")
    t = token()
    r = in_cg(cg, [os.path.join(work, "deny.sh"), t])
    assert r.returncode == KILL and b"ran-" not in r.stdout, (r.returncode, r.stdout, r.stderr)
    st = json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)["counters"]
    assert st["kernel_denied"] == 1 and st["kernel_errors"] == 0, st
    r = in_cg(cg, [os.path.join(work, "args.sh"), "SAFE"])
    assert r.returncode == KILL and b"ran-" not in r.stdout, (r.returncode, r.stdout, r.stderr)
    st = json.loads(ctx.run([ctx.execgate, "stats", "-j", "-p", d.pin_path]).stdout)["counters"]
    assert st["kernel_denied"] == 2 and st["kernel_errors"] == 1, st
    r = in_cg(cg, [os.path.join(work, "ok.sh"), "EVIL"])
    assert r.returncode == 0 and b"ran-ok.sh" in r.stdout, (r.returncode, r.stderr)


SYS_BPF, BPF_MAP_LOOKUP_ELEM, BPF_OBJ_GET = 321, 1, 7   # x86-64


def storage_holders(pin_path, name, pids):
    """Those of pids that have an entry in the pinned task storage map PIN/name (looked up by pidfd)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    attr = ctypes.create_string_buffer(128)
    path = ctypes.create_string_buffer(os.path.join(pin_path, name).encode())
    struct.pack_into("=QII", attr, 0, ctypes.addressof(path), 0, 0)
    mfd = libc.syscall(SYS_BPF, BPF_OBJ_GET, attr, ctypes.c_uint(len(attr)))
    assert mfd >= 0, (name, os.strerror(ctypes.get_errno()))
    held = []
    key, value = ctypes.c_int(), ctypes.create_string_buffer(64 * 1024)
    try:
        for pid in pids:
            key.value = os.pidfd_open(pid)
            try:
                attr = ctypes.create_string_buffer(128)
                struct.pack_into("=IIQQQ", attr, 0, mfd, 0, ctypes.addressof(key), ctypes.addressof(value), 0)
                if libc.syscall(SYS_BPF, BPF_MAP_LOOKUP_ELEM, attr, ctypes.c_uint(len(attr))) == 0:
                    held.append(pid)
                else:
                    assert ctypes.get_errno() == errno.ENOENT, (name, pid, os.strerror(ctypes.get_errno()))
            finally:
                os.close(key.value)
    finally:
        os.close(mfd)
    return held


def test_scripts_outside_the_scope_keep_nothing_in_task_storage(ctx):
    """The scripts of a '#!' exec are kept in task storage (maps scripts
    and chains, 4 KiB and 16 KiB a task) from sched_prepare_exec until the
    record reads them back. Outside a --cgroup scope no record is made:
    they stayed with the task as long as it lived, charged to the daemon's
    memory cgroup (a few hundred long-lived chains: megabytes, and then
    task storage that could not be made for tasks in scope)."""
    work = ctx.tmpdir()
    os.chmod(work, 0o755)
    names = chain(work, 5, body="echo up\nexec sleep 600\n")
    rel, cg, _ = ctx.cgroup()
    d = ctx.daemon("--policy", write(ctx, policy(work)), "--cgroup", cg)
    procs = []

    def stop():
        for p in procs:
            p.kill()
            p.wait()
    ctx.on_cleanup(stop)

    def start(n, **kw):
        ps = [subprocess.Popen([names[0]], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, **kw)
              for _ in range(n)]
        procs.extend(ps)
        for p in ps:
            assert p.stdout.readline() == b"up\n", p.pid   # past the chain's exec (sleep's is next)
        return [p.pid for p in ps]

    def join():
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write("0")
    inside = start(3, preexec_fn=join)
    outside = start(300)
    all_pids = inside + outside
    # every task has its entry in "tasks": the lookups find what is there
    assert storage_holders(d.pin_path, "tasks", all_pids) == all_pids
    d.wait_for(lambda e: e.get("type") == "exec" and e.get("pid") == inside[-1] and
               e.get("argv", [""])[0] == "sleep", 10, "the last exec in scope")
    held = {m: storage_holders(d.pin_path, m, all_pids) for m in ("scripts", "chains")}
    for m, h in held.items():
        print("    %s: %d of %d tasks out of scope, %d of %d in it hold an entry" %
              (m, len(set(h) & set(outside)), len(outside), len(set(h) & set(inside)), len(inside)))
    assert held == {"scripts": [], "chains": []}, {m: len(h) for m, h in held.items()}
    # the chain in scope was traced whole
    e = d.wait_for(lambda e: e.get("type") == "exec" and e.get("pid") == inside[0] and
                   e.get("script_chain"), 10, "the chain in scope")[0]
    assert len(e["script_chain"]) == 4, e
    # a session's exec is checked anywhere: out of scope too, the kernel names its scripts for
    # the ticket's check (a script it could not name: killed, not-pinned)
    other = ctx.tmpdir()
    os.chmod(other, 0o755)
    snames = chain(other, 5)
    r = session(ctx, d, [snames[0], token()])
    assert r.returncode == 0, (r.returncode, r.stderr[-300:])


# ---- depth ------------------------------------------------------------------------

def test_a_launcher_does_not_reset_the_hosts_depth(ctx):
    """`runuser -u nobody -- sh -c "sh -c 'execgate exec -- X'"` ran X at
    depth 0: host rules on depth were escaped. depth is the host's now;
    session_depth is the session's (0 for its command)."""
    work = files(ctx)
    x = os.path.join(work, "deepx")
    shutil.copy("/bin/true", x)
    os.chmod(x, 0o755)
    pol = """
default_decision: allow
commands:
  - {name: no-deep-x, basenames: [deepx], context: {min_depth: 3}, decision: deny, message: "too deep"}
"""
    d, rel, cg = enforcing(ctx, pol)
    t = token()
    inner = "%s exec -p %s -- %s %s; echo rc=$?" % (ctx.execgate, d.pin_path, x, t)
    r = in_cg(cg, ["runuser", "-u", "nobody", "--", "sh", "-c", "sh -c '%s'" % inner])
    out = r.stdout.decode()
    assert "rc=126" in out or "rc=137" in out, (out, r.stderr[-500:])
    e = d.wait_for(lambda e: e.get("type") in ("exec", "exec_failed") and t in e.get("argv", [])
                   and e.get("filename", "").endswith("deepx"), what="the deep exec")[0]
    assert e["depth"] >= 3 and e["session_depth"] == 0, e
    assert e["decision"] == "deny", e


def test_a_run_goes_on_from_its_callers_depth(ctx):
    """`execgate run` hands the command to the daemon, whose child it is:
    the run still counts from its caller's host depth (the launcher at the
    caller's + 1, the command at + 2), not from the daemon's, so a deep
    caller cannot reset its depth by asking the daemon to run it."""
    work = files(ctx)
    ws, state = ctx.tmpdir(), ctx.tmpdir()
    os.chmod(ws, 0o755)
    d = ctx.daemon("--state-dir", state, "--workspace", ws)
    t = token()
    inner = "%s run -p %s -- /bin/true %s; echo rc=$?" % (ctx.execgate, d.pin_path, t)
    # five shells deep, each one an exec
    cmd = inner
    for _ in range(5):
        cmd = "sh -c %s" % shlex.quote(cmd)
    r = subprocess.run(["sh", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ws, timeout=60)
    assert b"rc=0" in r.stdout, (r.stdout, r.stderr[-500:])
    client = d.wait_for(lambda e: e.get("type") == "exec" and e.get("argv", [None, None])[1:2] == ["run"]
                        and t in e.get("argv", []), what="the run client's exec")[0]
    cmd_ev = d.wait_for(lambda e: e.get("type") == "exec" and e.get("argv") == ["/bin/true", t],
                        what="the run's command")[0]
    assert client["depth"] >= 6, client
    assert cmd_ev["depth"] == client["depth"] + 2 and cmd_ev["session_depth"] == 0, (client, cmd_ev)


def test_a_session_policy_judges_the_sessions_depth(ctx):
    work = files(ctx)
    d = ctx.daemon()
    sp = write(ctx, """
default_decision: allow
commands:
  - {name: command-only, context: [nested], basenames: [ok], decision: deny, message: "not below"}
""")
    ok = os.path.join(work, "ok")
    # the session's own command is direct (session_depth 0) whatever the host's depth
    assert session(ctx, d, [ok, token()], "--policy", sp).returncode == 0
    r = session(ctx, d, ["sh", "-c", "%s; echo rc=$?" % ok], "--policy", sp)
    assert b"rc=126" in r.stdout and b"not below" in r.stderr, (r.stdout, r.stderr)


# ---- what a session's process names -------------------------------------------------

def test_proc_self_fd_runs_in_a_session(ctx):
    """A program named by the caller's own fd (/proc/self/fd/N, /dev/fd/N)
    is the caller's file, not the daemon's: allowed, it runs."""
    d = ctx.daemon()
    code = ("import os, sys\n"
            "fd = os.open('/bin/true', os.O_RDONLY)\n"
            "os.execv(sys.argv[1] % fd, ['true'])\n")
    for spelling in ("/proc/self/fd/%d", "/dev/fd/%d", "/proc/thread-self/fd/%d"):
        r = session(ctx, d, ["/usr/bin/python3", "-c", code, spelling])
        assert r.returncode == 0, (spelling, r.returncode, r.stderr[-300:])


def test_proc_self_exe_is_the_callers_own_program(ctx):
    """/proc/self/exe and /proc/thread-self/exe are the caller's own program
    (a Go, runc or busybox re-exec): judged as that, it runs. Reached from
    /proc as a relative path, or past the caller's own entry, it would be
    the daemon's program or another process's: refused, not killed."""
    d = ctx.daemon()
    for spelling in ("/proc/self/exe", "/proc/thread-self/exe"):
        r = session(ctx, d, ["/bin/sh", "-c", "exec %s -c 'echo ran'" % spelling])
        assert r.returncode == 0 and r.stdout == b"ran\n", (spelling, r.returncode, r.stderr[-300:])
    for cmd in ("cd /proc && exec self/exe -c 'echo ran'", "cd /proc/self && exec ./exe -c 'echo ran'",
                "exec /proc/self/../1/exe --version"):
        r = session(ctx, d, ["/bin/sh", "-c", cmd])
        assert b"ran" not in r.stdout and r.returncode not in (-9, 128 + 9, 0), (cmd, r.returncode, r.stderr[-300:])
        assert "rule unsupported" in r.stderr.decode(), (cmd, r.stderr[-300:])


def test_a_listener_of_ones_own_takes_no_exec_from_the_daemon(ctx):
    """A task in a session installs a seccomp listener of its own for
    execve and answers CONTINUE itself: the kernel refuses a second
    listener in the task's filters (EBUSY), and if one were had, the exec
    would still meet the ticket check. The denied program never runs."""
    d = ctx.daemon("--policy", write(ctx, "commands:\n  - {name: no-id, basenames: [id], decision: deny}\n"))
    helper = ctx.helper("own_listener")
    r = subprocess.run([helper, "/usr/bin/id", "-u"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode == 0 and b"listener ok" in r.stderr, (r.returncode, r.stderr)
    r = session(ctx, d, [helper, "/usr/bin/id", "-u"])
    assert not r.stdout.strip() and r.returncode != 0, (r.returncode, r.stdout, r.stderr[-300:])
    assert b"listener refused 16" in r.stderr or r.returncode in (-9, 137), r.stderr[-300:]


def test_an_allow_is_never_of_a_copy(ctx):
    """An allow of /usr/bin/id allows that file (a hard link too), never a
    copy known by its content: nothing pins a copy's bytes between the
    daemon's hash and the kernel's open, and its owner could rewrite it
    in between. A deny still knows copies (test_sessions)."""
    pol = write(ctx, "default_decision: deny\ncommands:\n"
                     "  - {name: ok-sh, basenames: [sh, dash], decision: allow}\n"
                     "  - {name: ok-id, paths: [/usr/bin/id], decision: allow}\n")
    work = files(ctx)
    copy = os.path.join(work, "myid")
    shutil.copy("/usr/bin/id", copy)
    os.chmod(copy, 0o755)
    r = ctx.run([ctx.execgate, "policy", "test", pol, "--json", "--", copy], check=False)
    assert json.loads(r.stdout)["decision"] == "deny", r.stdout
    d = ctx.daemon("--policy", pol)
    r = session(ctx, d, ["/bin/sh", "-c", "/usr/bin/id -u; echo rc=$?; %s -u; echo rc=$?" % copy])
    assert r.stdout.decode().split() == ["0", "rc=0", "rc=126"], (r.stdout, r.stderr[-300:])


def test_a_session_judges_no_more_argv_than_the_kernel_checks(ctx):
    """With --max-argv-bytes 1024 the kernel's check compares 1 KiB of argv:
    the daemon reads no more than that (what it judged past it, a thread
    could rewrite before the exec), and a longer argv is cut (on_truncated)."""
    d = ctx.daemon("--max-argv-bytes", "1024", "--policy", write(ctx, "commands: []\n"))
    t = token()
    r = session(ctx, d, ["/bin/sh", "-c", '/bin/true %s "$(printf "%%02000d" 0)"; echo rc=$?; '
                                          '/bin/true %s; echo rc=$?' % (t, t)])
    assert r.stdout.decode().split() == ["rc=126", "rc=0"], (r.stdout, r.stderr[-300:])
    assert "rule on_truncated" in r.stderr.decode(), r.stderr[-300:]


def test_a_scripts_argv_past_what_the_ticket_pins_is_judged_as_cut(ctx):
    """The caller's argv fits the 1 KiB the kernel's check compares, and is
    read whole; the script's interpreter gets more (its own name and the
    script's path before it), so the end of the caller's argv was judged
    and not pinned, and a thread could rewrite it between the read and the
    exec (an args rule, an approval's wait). Such an argv is judged as cut
    (on_truncated: refused), as one read in part is; a shorter one runs."""
    d = ctx.daemon("--max-argv-bytes", "1024", "--policy", write(ctx, "commands: []\n"))
    work = files(ctx)
    script = os.path.join(work, "s.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\necho ran\n")
    os.chmod(script, 0o755)
    fill = 1018 - len(script)   # the caller's argv: 1020 bytes; the interpreter's: 1028
    r = session(ctx, d, [script, "x" * fill])
    assert r.returncode == 126 and b"ran" not in r.stdout, (r.returncode, r.stdout, r.stderr[-300:])
    assert "rule on_truncated" in r.stderr.decode(), r.stderr[-300:]
    r = session(ctx, d, [script, "x" * (fill - 20)])
    assert r.returncode == 0 and r.stdout == b"ran\n", (r.returncode, r.stdout, r.stderr[-300:])


# ---- names the system gave ------------------------------------------------------------

def test_an_allow_sees_the_names_root_gave(ctx):
    """Debian's gcc is /usr/bin/gcc -> gcc-12 -> x86_64-linux-gnu-gcc-12:
    `basenames: [gcc]` allows it through root's own links; a user's link
    named gcc to something else grants nothing."""
    if not os.path.exists("/usr/bin/gcc"):
        ctx.skip("no gcc on this machine")
    work = files(ctx)
    pol = write(ctx, """
default_decision: deny
commands:
  - {name: allow-cc, basenames: [gcc, cc, editor], decision: allow}
""")

    def verdict(argv):
        r = ctx.run([ctx.execgate, "policy", "test", pol, "--json", "--"] + argv, check=False)
        return json.loads(r.stdout)["decision"]
    assert verdict(["gcc"]) == "allow"
    assert verdict(["cc"]) == "allow"
    if os.path.islink("/usr/bin/editor"):
        assert verdict(["editor"]) == "allow"
    userlink = os.path.join(work, "gcc")
    os.symlink(os.path.join(work, "denied"), userlink)
    assert verdict([userlink]) == "deny"
    # in the kernel too: the default denies, the alias allows
    d, rel, cg = enforcing(ctx, open(pol).read())
    assert in_cg(cg, ["/usr/bin/gcc", "--version"]).returncode == 0
    assert in_cg(cg, [userlink, token()]).returncode == KILL


# ---- other views of a file ------------------------------------------------------------

def overlay_view(ctx, lower):
    """An overlayfs mount over lower (unmounted at the end): its path. Skips where overlayfs cannot be mounted."""
    view, upper, wd = ctx.tmpdir(), ctx.tmpdir(), ctx.tmpdir()
    r = subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                        "lowerdir=%s,upperdir=%s,workdir=%s" % (lower, upper, wd), view],
                       stderr=subprocess.PIPE)
    if r.returncode:
        ctx.skip("overlayfs cannot be mounted here: %s" % r.stderr.decode().strip())
    ctx.on_cleanup(lambda: subprocess.run(["umount", "-l", view]))
    os.chmod(view, 0o755)
    return view


def test_an_overlay_view_of_a_denied_file_is_the_file(ctx):
    """overlayfs gives a file another device and inode: the file behind it
    is the one the literal path names, and the kernel judges that one."""
    work = files(ctx)
    view = overlay_view(ctx, work)
    d, rel, cg = enforcing(ctx, policy(work))
    t = token()
    assert in_cg(cg, [os.path.join(view, "denied"), t]).returncode == KILL
    assert not marks(t)
    e = one(d, t)
    assert e["backing"]["ino"] == os.stat(os.path.join(work, "denied")).st_ino, e
    assert e["action"] == "killed" and e["rule"] == "no-denied", e
    # an allowed program through the same view runs
    assert in_cg(cg, [os.path.join(view, "ok"), token()]).returncode == 0


def test_an_overlay_view_whose_file_behind_is_hidden_is_refused(ctx):
    """The file behind an overlay view is read from the new image's mapping, under a lock
    bpf_find_vma only tries. A process of the same user writing to the exec'ing child's
    /proc/PID/clear_refs holds that lock for writing: the view then had only its own device
    and inode, and a file the policy denies by its path ran through it (most of the tries).
    Not knowing the file behind the view refuses the exec."""
    work = files(ctx)
    view = overlay_view(ctx, work)
    d, rel, cg = enforcing(ctx, policy(work))
    t = token()
    r = in_cg(cg, [ctx.helper("clear_refs_race"), "200", "4", os.path.join(view, "denied"), t], timeout=120)
    assert r.returncode == 0, r.stderr
    assert not marks(t), "a denied file ran through an overlay view: " + r.stdout.decode()
    assert r.stdout.decode().startswith("ran=0 killed=200 "), r.stdout
    def execs():
        evs = [e for e in d.events() if e.get("type") == "exec" and t in e.get("argv", [])]
        return evs if len(evs) >= 200 else None
    evs = eg.wait_until(execs, timeout=20, what="the racer's 200 execs")
    hidden = [e for e in evs if e.get("backing_unknown")]
    assert hidden, "the lock was never held at the exec: the race did not run"
    assert all(e["action"] == "killed" and e["decision"] == "error" for e in hidden), hidden[0]


def test_a_file_on_btrfs_is_known_by_its_identity(ctx):
    """btrfs gives each subvolume (the top one too) a device number of its own in stat(),
    and the kernel's programs read the file system's: an identity taken from st_dev never
    matched there. A hard link of a file denied by path, in the top volume and in a
    subvolume, is the same file and killed; a session's program there runs (its ticket
    names the file by the kernel's numbers)."""
    if not shutil.which("mkfs.btrfs"):
        ctx.skip("no mkfs.btrfs (btrfs-progs) on this machine")
    img = os.path.join(ctx.tmpdir(), "btrfs.img")
    with open(img, "wb") as f:
        f.truncate(160 << 20)
    ctx.run(["mkfs.btrfs", "-q", "-f", img])
    mnt = ctx.tmpdir()
    r = subprocess.run(["mount", "-o", "loop", img, mnt], stderr=subprocess.PIPE)
    if r.returncode:
        ctx.skip("btrfs cannot be mounted here: %s" % r.stderr.decode().strip())
    ctx.on_cleanup(lambda: subprocess.run(["umount", "-l", mnt]))
    os.chmod(mnt, 0o755)
    ctx.run(["btrfs", "-q", "subvolume", "create", os.path.join(mnt, "sv")])
    os.chmod(os.path.join(mnt, "sv"), 0o755)
    st = os.stat(mnt)
    pol = "default_decision: allow\ncommands:\n"
    for where in (mnt, os.path.join(mnt, "sv")):
        shutil.copy(ctx.helper("marker"), os.path.join(where, "denied"))
        os.chmod(os.path.join(where, "denied"), 0o755)
        os.link(os.path.join(where, "denied"), os.path.join(where, "alias"))
        pol += "  - {name: no-%s, paths: [%s/denied], decision: deny}\n" % (os.path.basename(where), where)
    # the premise: stat() and the mount disagree on the device
    with open("/proc/self/mountinfo") as f:
        line = [l for l in f if l.split()[4] == mnt][0]
    assert line.split()[2] != "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev)), line
    d, rel, cg = enforcing(ctx, pol)
    for where in (mnt, os.path.join(mnt, "sv")):
        t = token()
        r = in_cg(cg, [os.path.join(where, "alias"), t])
        assert r.returncode == KILL and not marks(t), "a hard link of a denied file on btrfs ran (%s)" % where
    # a session's program on btrfs runs: the ticket's file is the one the kernel sees
    shutil.copy("/bin/true", os.path.join(mnt, "sv", "ok"))
    allow = write(ctx, "default_decision: allow\n")
    r = ctx.run([ctx.execgate, "exec", "-p", d.pin_path, "--policy", allow, "--",
                 os.path.join(mnt, "sv", "ok")], check=False)
    assert r.returncode == 0, (r.returncode, r.stderr[-400:])
    # each subvolume numbers its inodes from the same start: the file system's device with an
    # inode number names a file in each. An allow of one subvolume's first file is not one of
    # another's first file (a user may make subvolumes)
    subs = []
    for name in ("a", "b"):
        ctx.run(["btrfs", "-q", "subvolume", "create", os.path.join(mnt, name)])
        os.chmod(os.path.join(mnt, name), 0o755)
        subs.append(os.path.join(mnt, name))
    shutil.copy("/bin/true", os.path.join(subs[0], "ok"))
    shutil.copy(ctx.helper("marker"), os.path.join(subs[1], "evil"))
    os.chmod(os.path.join(subs[1], "evil"), 0o755)
    a, b = os.stat(os.path.join(subs[0], "ok")), os.stat(os.path.join(subs[1], "evil"))
    assert a.st_ino == b.st_ino and a.st_dev != b.st_dev, (a, b)
    d2, rel2, cg2 = enforcing(ctx, "default_decision: deny\ncommands:\n"
                              "  - {name: ok, paths: [%s/ok], decision: allow}\n" % subs[0])
    assert in_cg(cg2, [os.path.join(subs[0], "ok")]).returncode == 0
    t = token()
    r = in_cg(cg2, [os.path.join(subs[1], "evil"), t])
    assert r.returncode == KILL and not marks(t), "another subvolume's file of the same inode number ran"


def test_an_overlay_view_of_the_loader_is_the_loader(ctx):
    """The host's ld.so seen through an overlayfs mount (which an
    unprivileged user can make in a namespace of its own) has another
    device and inode: the file behind it is the loader, and what it maps
    is judged."""
    work = files(ctx)
    real = os.path.realpath(LDSO)
    view = overlay_view(ctx, os.path.dirname(real))
    ldso = os.path.join(view, os.path.basename(real))
    assert os.stat(ldso).st_ino != os.stat(real).st_ino or os.stat(ldso).st_dev != os.stat(real).st_dev
    d, rel, cg = enforcing(ctx, policy(work))
    t = token()
    r = in_cg(cg, [ldso, os.path.join(work, "denied"), t])
    assert r.returncode == KILL and not marks(t), (r.returncode, r.stderr[-300:])
    e = one(d, t)
    assert e["loader"] is True and e["action"] == "killed", e
    # an allowed program through the same loader runs
    assert in_cg(cg, [ldso, os.path.join(work, "ok"), token()]).returncode == 0


def test_policy_check_warns_about_multicall_names(ctx):
    if not any(os.path.exists(p) for p in ("/bin/busybox", "/usr/bin/busybox")):
        ctx.skip("no busybox on this machine")
    pol = write(ctx, "commands:\n  - {name: no-cat, basenames: [cat], decision: deny}\n")
    r = ctx.run([ctx.execgate, "policy", "check", "--strict", pol], check=False)
    assert r.returncode == 1 and b"multi-call binary" in r.stderr and b"busybox" in r.stderr, r.stderr
    # a policy that names the multi-call binary itself took it into account
    pol = write(ctx, "commands:\n  - {name: no-busybox, basenames: [busybox], decision: deny}\n"
                     "  - {name: no-cat, basenames: [cat], decision: deny}\n")
    assert ctx.run([ctx.execgate, "policy", "check", "--strict", pol], check=False).returncode == 0


# ---- events tell what happened -----------------------------------------------------------

def test_a_copy_is_known_by_content_however_short_it_lived(ctx):
    """The daemon compares a program's content with a file the policy names
    by its literal path; it reads the file the record names, so a copy that
    exited at once is judged as one that lived on."""
    work = files(ctx)
    d = ctx.daemon("--policy", write(ctx, policy(work)))
    copy = os.path.join(work, "innocent")
    shutil.copy(os.path.join(work, "denied"), copy)
    os.chmod(copy, 0o755)
    t = token()
    subprocess.run([copy, "SAFE", t])    # the marker exits at once for SAFE
    e = d.wait_for(lambda x: x.get("type") == "exec" and t in x.get("argv", []), what="the copy's exec")[0]
    assert e["decision"] == "deny" and e["rule"] == "no-denied" and e["action"] == "would-block", e


def test_kernel_counts_stay_16_bits_honest(ctx):
    """One rule with 65,536 paths compiled to 0 paths (a 16-bit count):
    such a rule is left out of the kernel, and said."""
    work = ctx.tmpdir()
    paths = ", ".join("/opt/egwide/p%d" % i for i in range(65536))
    pol = os.path.join(work, "p.yaml")
    with open(pol, "w") as f:
        f.write("commands:\n  - {name: wide, paths: [%s], decision: deny}\n" % paths)
    r = ctx.run([ctx.execgate, "policy", "check", "--json", pol], check=False)
    rules = json.loads(r.stdout)["rules"]
    assert rules[0]["kernel"] is False and "65535" in rules[0]["not_in_kernel_because"], rules[0]
