# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Installing and running execgate as a service.

`make install` into a DESTDIR (every file, modes, a policy of the operator's
kept, `make uninstall` taking back exactly what it put), the man pages
(rendered without a warning, true to the binary's verbs and options), the
bash completion (run in bash against the binary's own --usage), the systemd
unit (`systemd-analyze verify`, and the daemon run with exactly the unit's
capabilities, each one shown to be needed), the sd_notify protocol, the
logrotate snippet run by logrotate, `make run | jq .`, and `make deb`
installed with dpkg, probed and purged to the last file.
"""
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
import subprocess
import termios
import time

import eg

ROOT = eg.ROOT
UNIT_IN = os.path.join(ROOT, "dist", "execgate.service.in")
LOGROTATE = os.path.join(ROOT, "dist", "execgate.logrotate")
MAN8 = os.path.join(ROOT, "man", "execgate.8")
MAN5 = os.path.join(ROOT, "man", "execgate-policy.5")
POLICIES = sorted(f for f in os.listdir(os.path.join(ROOT, "policy")) if f.endswith(".yaml"))
DOCS = ["README.md", "events.md", "events.schema.json", "control.md", "metrics.md", "shipping.md", "api.md", "fleet.md",
        "maps.md", "install.md", "policy.md"]


def make_env():
    """The environment of someone typing make in a shell: `make test` runs
    these tests, and its MAKEFLAGS (jobserver fds this process closed) and
    MAKELEVEL must not reach the make under test."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "MAKEFILES")}
    env["OUTPUT"] = os.path.relpath(eg.OUT, ROOT)
    return env


def make(ctx, *args, check=True, **kw):
    env = make_env()
    r = subprocess.run(["make", "-s", "--no-print-directory"] + list(args), cwd=ROOT, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    if check:
        assert r.returncode == 0, "make %s: exit %d\n%s%s" % (
            " ".join(args), r.returncode, r.stdout.decode(), r.stderr.decode())
    return r


def files_under(top):
    """Every non-directory below top, as paths relative to it."""
    out = set()
    for d, dirs, files in os.walk(top):
        for f in files:
            out.add(os.path.relpath(os.path.join(d, f), top))
        for x in dirs:
            if os.path.islink(os.path.join(d, x)):
                out.add(os.path.relpath(os.path.join(d, x), top))
    return out


def expected_install(prefix):
    p = prefix.lstrip("/")
    return {p + "/sbin/execgate", p + "/sbin/execgate-shim",
            p + "/share/man/man8/execgate.8",
            p + "/share/man/man5/execgate-policy.5",
            p + "/share/bash-completion/completions/execgate",
            p + "/lib/systemd/system/execgate.service",
            "etc/logrotate.d/execgate"} | \
        {p + "/share/doc/execgate/" + d for d in DOCS} | \
        {"etc/execgate/" + f for f in POLICIES}


def help_text(ctx, *args):
    r = ctx.run([ctx.execgate] + list(args), env={"LC_ALL": "C", "PATH": os.environ["PATH"]})
    return r.stdout.decode()


def verbs(ctx):
    text = help_text(ctx, "--help")
    block = text.split("Commands:", 1)[1].split("\n\n", 2)[1]
    return [l.split()[0] for l in block.splitlines() if l.startswith("  ")]


def policy_verbs(ctx):
    return re.findall(r"^  ([a-z]+)\s{2,}\S", help_text(ctx, "help", "policy"), re.M)


def usage_longs(ctx, *verb):
    """Long options from argp's --usage: a second source, besides --help."""
    return set(re.findall(r"--([a-z0-9][a-z0-9-]*)", help_text(ctx, *verb, "--usage")))


def all_verbs(ctx):
    out = []
    for v in verbs(ctx):
        if v == "policy":
            out += [("policy", s) for s in policy_verbs(ctx)]
        else:
            out.append((v,))
    return out


def unit_settings(path):
    s = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith(("#", "[")) and "=" in line:
            k, v = line.split("=", 1)
            s.setdefault(k, []).append(v)
    return s


def install_to(ctx, prefix="/usr/local"):
    dest = ctx.tmpdir()
    make(ctx, "install", "DESTDIR=" + dest, "PREFIX=" + prefix)
    return dest


# ---- make install / uninstall -------------------------------------------------

def test_install_destdir(ctx):
    dest = ctx.tmpdir()
    mine = os.path.join(dest, "etc", "execgate", "host-audit.yaml")
    os.makedirs(os.path.dirname(mine))
    with open(mine, "w") as f:
        f.write("# the operator's own\ndefault_decision: audit\n")
    r = make(ctx, "install", "DESTDIR=" + dest, "PREFIX=/usr/local")
    assert b"KEEP" in r.stderr and mine.encode() in r.stderr, r.stderr
    assert files_under(dest) == expected_install("/usr/local"), \
        sorted(files_under(dest) ^ expected_install("/usr/local"))
    with open(mine) as f:
        assert f.read() == "# the operator's own\ndefault_decision: audit\n"

    b = os.path.join(dest, "usr/local/sbin/execgate")
    assert open(b, "rb").read() == open(ctx.execgate, "rb").read()
    assert stat.S_IMODE(os.stat(b).st_mode) == 0o755
    shim = os.path.join(dest, "usr/local/sbin/execgate-shim")
    assert stat.S_IMODE(os.stat(shim).st_mode) == 0o755 and b"execgate-shell-shim-v1" in open(shim, "rb").read()
    for f in files_under(dest) - {"usr/local/sbin/execgate", "usr/local/sbin/execgate-shim"}:
        m = stat.S_IMODE(os.stat(os.path.join(dest, f)).st_mode)
        assert m == 0o644, (f, oct(m))
    for p in POLICIES:
        if p != "host-audit.yaml":
            assert open(os.path.join(dest, "etc/execgate", p), "rb").read() == \
                open(os.path.join(ROOT, "policy", p), "rb").read(), p
    unit = unit_settings(os.path.join(dest, "usr/local/lib/systemd/system/execgate.service"))
    assert unit["ExecStart"][0].split()[:2] == ["/usr/local/sbin/execgate", "daemon"], unit
    assert "/etc/execgate/host-audit.yaml" in unit["ExecStart"][0].split(), unit
    assert unit["ExecReload"] == ["/usr/local/sbin/execgate policy reload"], unit

    # again: the same files, the operator's policy still theirs
    make(ctx, "install", "DESTDIR=" + dest, "PREFIX=/usr/local")
    assert files_under(dest) == expected_install("/usr/local")
    with open(mine) as f:
        assert f.read().startswith("# the operator's own")

    # an edited example policy stays; everything else goes
    with open(os.path.join(dest, "etc/execgate/restricted.yaml"), "a") as f:
        f.write("# edited\n")
    r = make(ctx, "uninstall", "DESTDIR=" + dest, "PREFIX=/usr/local")
    assert files_under(dest) == {"etc/execgate/host-audit.yaml", "etc/execgate/restricted.yaml"}, \
        files_under(dest)
    os.unlink(os.path.join(dest, "etc/execgate/restricted.yaml"))
    os.unlink(mine)
    make(ctx, "uninstall", "DESTDIR=" + dest, "PREFIX=/usr/local")
    assert files_under(dest) == set() and not os.path.exists(os.path.join(dest, "etc/execgate"))


def test_install_other_prefix(ctx):
    dest = install_to(ctx, "/opt/eg")
    assert files_under(dest) == expected_install("/opt/eg"), sorted(files_under(dest))
    unit = unit_settings(os.path.join(dest, "opt/eg/lib/systemd/system/execgate.service"))
    assert unit["ExecStart"][0].startswith("/opt/eg/sbin/execgate daemon "), unit
    make(ctx, "uninstall", "DESTDIR=" + dest, "PREFIX=/opt/eg")
    assert files_under(dest) == set()


# ---- man pages ----------------------------------------------------------------

def render(page, width=80):
    env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH=str(width), MAN_KEEP_FORMATTING="")
    r = subprocess.run(["man", "--warnings", "-l", page], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env)
    assert r.returncode == 0 and not r.stderr, (page, r.returncode, r.stderr.decode())
    g = subprocess.run(["groff", "-man", "-ww", "-z", page], stderr=subprocess.PIPE)
    assert g.returncode == 0 and not g.stderr, (page, g.stderr.decode())
    return r.stdout.decode()


def test_man_pages_render(ctx):
    if not shutil.which("man") or not shutil.which("groff"):
        ctx.skip("man-db and groff are not installed (tools/install-deps.sh)")
    for page in (MAN8, MAN5):
        for width in (80, 60):
            text = render(page, width)
            assert len(text.splitlines()) > 100, (page, text[:200])
            # roff that man shows as it is: an unknown request or a stray escape
            assert not re.search(r"^\s*\.[a-zA-Z]{1,2}\b|\\f[BIRP]|\\-", text, re.M), \
                re.search(r".*(^\s*\.[a-zA-Z]{1,2}\b|\\f[BIRP]|\\-).*", text, re.M).group(0)
    # man finds the installed pages by name
    dest = install_to(ctx)
    env = dict(os.environ, MANPATH=os.path.join(dest, "usr/local/share/man"))
    for args, rel in ((["execgate"], "man8/execgate.8"), (["5", "execgate-policy"], "man5/execgate-policy.5")):
        r = subprocess.run(["man", "-w"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert r.stdout.decode().strip() == os.path.join(dest, "usr/local/share/man", rel), r


def test_man8_matches_binary(ctx):
    src = open(MAN8).read()
    text = render(MAN8, 200) if shutil.which("man") else src
    version = help_text(ctx, "--version").split()[-1]
    assert re.search(r'^\.TH EXECGATE 8 \S+ "execgate %s"' % re.escape(version), src, re.M), \
        "execgate.8 .TH does not name version %s" % version
    missing = []
    for verb in all_verbs(ctx):
        title = "execgate " + " ".join(verb)
        if not re.search(r'^\.SS "%s( |\\)' % re.escape(title), src, re.M):
            missing.append("no section for '%s'" % title)
        for o in usage_longs(ctx, *verb):
            if "--" + o not in text:
                missing.append("'%s' option --%s is not described" % (title, o))
    assert not missing, "execgate.8 is behind the binary: " + "; ".join(missing)


def test_man5_matches_schema(ctx):
    src = open(MAN5).read()
    text = render(MAN5, 200) if shutil.which("man") else src
    # every key policy/README.md's tables define
    readme = open(os.path.join(ROOT, "policy", "README.md")).read()
    keys = set(re.findall(r"^\| `([a-z_]+)` \|", readme, re.M))
    assert len(keys) > 15, keys
    missing = sorted(k for k in keys if not re.search(r"\b%s\b" % k, text))
    assert not missing, "execgate-policy.5 does not describe: %s" % missing
    # the example is a policy that passes the strict check
    if shutil.which("man"):
        ex = render(MAN5, 80).split("\nEXAMPLE\n", 1)[1]
        ex = ex[:re.search(r"^[A-Z]", ex, re.M).start()]
        d = ctx.tmpdir()
        p = os.path.join(d, "example.yaml")
        with open(p, "w") as f:
            f.write("\n".join(l[11:] for l in ex.splitlines()))
        # the schema is what is checked here, not this host's multi-call binaries (busybox)
        r = ctx.run([ctx.execgate, "policy", "check", "--strict", p], check=False,
                    env=dict(os.environ, EXECGATE_NO_MULTICALL_LINT="1"))
        assert r.returncode == 0, (r.stdout.decode(), r.stderr.decode())
        assert b"3 rules" in r.stdout, r.stdout


# ---- bash completion ----------------------------------------------------------

def completion_script(ctx):
    make(ctx, os.path.relpath(os.path.join(eg.OUT, "execgate.bash"), ROOT))
    return os.path.join(eg.OUT, "execgate.bash")


def complete(script, words, cwd=None):
    """COMPREPLY for a command line whose last word is being typed."""
    prog = 'source %s || exit 9\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\n_execgate\n' \
           'printf "%%s\\n" "${COMPREPLY[@]}"\n' % (
               script, " ".join("'%s'" % w for w in words), len(words) - 1)
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", prog], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, cwd=cwd)
    assert r.returncode == 0 and not r.stderr, (words, r.returncode, r.stderr.decode())
    return set(l for l in r.stdout.decode().splitlines() if l)


def test_completion_verbs_and_options(ctx):
    script = completion_script(ctx)
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", "source %s; complete -p execgate" % script],
                       stdout=subprocess.PIPE)
    assert r.stdout.decode().strip() == "complete -F _execgate execgate", r.stdout
    vs = verbs(ctx)
    assert len(vs) >= 10, vs
    assert complete(script, ["execgate", ""]) == set(vs) | {"help", "--help", "--usage", "--version"}
    assert complete(script, ["execgate", "help", ""]) == set(vs)
    assert complete(script, ["execgate", "policy", ""]) == set(policy_verbs(ctx)) | {"--help"}
    assert complete(script, ["execgate", "help", "policy", ""]) == set(policy_verbs(ctx))
    assert complete(script, ["execgate", "st"]) == {v for v in vs if v.startswith("st")}
    for verb in all_verbs(ctx):
        got = complete(script, ["execgate"] + list(verb) + ["--"])
        want = {"--" + o for o in usage_longs(ctx, *verb)}
        assert got == want, (verb, sorted(got ^ want))


def test_completion_values(ctx):
    script = completion_script(ctx)
    d = ctx.tmpdir()
    os.mkdir(os.path.join(d, "sub"))
    open(os.path.join(d, "pol.yaml"), "w").close()
    c = lambda *w: complete(script, ["execgate"] + list(w), cwd=d)
    assert c("daemon", "--format", "") == {"json", "text"}
    assert c("daemon", "--format", "=", "") == {"json", "text"}
    assert c("daemon", "--format", "=", "t") == {"text"}
    assert c("daemon", "--policy", "po") == {"pol.yaml"}
    assert c("daemon", "-o", "") == {"pol.yaml", "sub"}
    assert c("daemon", "--pin-path", "") == {"sub"}
    assert c("daemon", "--ctl-group", "roo") == {"root"}
    # after an option's value, options again
    assert "--enforce" in c("daemon", "--policy", "pol.yaml", "--en")
    assert c("policy", "check", "p") == {"pol.yaml"}
    # policy test FILE -- ARGV: a command, then files
    assert "true" in c("policy", "test", "pol.yaml", "--", "tru")
    assert c("policy", "test", "pol.yaml", "--depth", "1", "--", "true", "s") == {"sub"}
    assert "/bin/true" in c("exec", "--", "/bin/tru")
    assert c("exec", "--session", "x", "--", "ls", "po") == {"pol.yaml"}
    assert str(os.getpid()) in c("task", str(os.getpid())[:-1])
    assert c("nosuchverb", "") == set()


# ---- the systemd unit ---------------------------------------------------------

def test_unit_verify(ctx):
    if not shutil.which("systemd-analyze"):
        ctx.skip("systemd-analyze is not installed (Debian package systemd)")
    dest = install_to(ctx)
    # the standard units (sysinit.target, ...) the unit's dependencies name
    shutil.copytree("/lib/systemd/system", os.path.join(dest, "lib/systemd/system"), symlinks=True)
    env = dict(os.environ, MANPATH=os.path.join(dest, "usr/local/share/man"))
    r = subprocess.run(["systemd-analyze", "verify", "--root=" + dest,
                        "/usr/local/lib/systemd/system/execgate.service"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    # verify exits 0 on unknown keys and capabilities: any output is a finding
    assert r.returncode == 0 and not r.stdout, r.stdout.decode()
    r = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--root=" + dest,
                        "execgate.service"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    m = re.search(r"Overall exposure level for execgate.service: ([0-9.]+)", r.stdout.decode())
    assert m, r.stdout.decode()[-500:]
    assert float(m.group(1)) <= 5.0, "the unit's sandbox got weaker: exposure %s" % m.group(1)

    u = unit_settings(os.path.join(dest, "usr/local/lib/systemd/system/execgate.service"))
    assert u["Type"] == ["notify"] and u["Restart"] == ["on-failure"], u
    assert u["NoNewPrivileges"] == ["yes"], u
    # a run sees the host's files (`execgate run -- touch ~/x`), confined by its session's
    # Landlock policy instead (issue 18); its cgroup is below the daemon's (Delegate=)
    for k in ("ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices", "ProtectControlGroups"):
        assert k not in u, (k, u[k])
    assert u["Delegate"] == ["yes"], u
    assert "AF_NETLINK" in u["RestrictAddressFamilies"][0].split(), u
    # hardening that breaks the daemon (docs/install.md says why)
    for k in ("ProtectKernelTunables", "ProtectKernelLogs", "MemoryDenyWriteExecute",
              "ProtectProc", "ProcSubset", "PrivateNetwork"):
        assert k not in u, k


def unit_caps():
    caps = unit_settings(UNIT_IN)["CapabilityBoundingSet"][0].split()
    assert caps and all(c.startswith("CAP_") for c in caps), caps
    return [c[4:].lower() for c in caps]


class CapDaemon:
    """The daemon with only the given capabilities (and no_new_privs), as the unit runs it."""

    def __init__(self, ctx, caps, args=()):
        self.ctx = ctx
        self.pin_path = "/sys/fs/bpf/egtest-pkg-%d-%d" % (os.getpid(), ctx.seq())
        self.dir = ctx.tmpdir()
        self.output = os.path.join(self.dir, "events.jsonl")
        self.errf = open(os.path.join(self.dir, "stderr"), "wb")
        cmd = ["setpriv", "--bounding-set", ",".join(["-all"] + ["+" + c for c in caps]),
               "--inh-caps=-all", "--no-new-privs",
               ctx.execgate, "daemon", "--output", self.output, "--pin-path", self.pin_path] + list(args)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.errf,
                                     start_new_session=True)
        ctx.on_cleanup(self.kill)
        self.start = self.wait(lambda e: e.get("type") == "daemon" and e.get("event") == "start",
                               what="start record", timeout=60)[0]

    def err(self):
        return open(os.path.join(self.dir, "stderr"), "rb").read().decode(errors="replace")

    def events(self):
        try:
            data = open(self.output, "rb").read()
        except FileNotFoundError:
            return []
        return [json.loads(l) for l in data.split(b"\n")[:-1]]

    def wait(self, pred, what="event", timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None and not [e for e in self.events() if pred(e)]:
                raise AssertionError("daemon exited (%s): %s" % (self.proc.returncode, self.err()))
            evs = [e for e in self.events() if pred(e)]
            if evs:
                return evs
            time.sleep(0.05)
        raise AssertionError("no %s within %ss; stderr: %s" % (what, timeout, self.err()))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.errf.close()
        shutil.rmtree(self.pin_path, ignore_errors=True)


def script_run(ctx, d):
    """Runs a #! script through a symlink; the tracer names the script itself."""
    tok = eg.token()
    scr = os.path.join(d, "s-" + tok)
    with open(scr, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(scr, 0o755)
    link = os.path.join(d, "l-" + tok)
    os.symlink(scr, link)
    subprocess.run([link], check=True)
    return scr, link


def session_in_private_dir(ctx, dm):
    """nobody runs ./prog in a directory only nobody may enter, in a session."""
    d = ctx.tmpdir()
    os.chmod(d, 0o755)
    priv = os.path.join(d, "priv")
    os.mkdir(priv, 0o700)
    prog = os.path.join(priv, "prog-" + eg.token())
    shutil.copy("/bin/true", prog)
    os.chown(prog, 65534, 65534)
    os.chmod(prog, 0o700)
    os.chown(priv, 65534, 65534)
    r = subprocess.run([ctx.execgate, "exec", "-p", dm.pin_path, "--", "/bin/sh", "-c", "./" + os.path.basename(prog)],
                       cwd=priv, user=65534, group=65534, extra_groups=[], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    return r, prog


def run_as_nobody(ctx, dm, *args, pre=()):
    return subprocess.run(list(pre) + [ctx.execgate, "run", "-p", dm.pin_path] + list(args), cwd="/",
                          user=65534, group=65534, extra_groups=[], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)


def test_unit_capabilities_suffice(ctx):
    """The daemon, with only the unit's capabilities, does all it does as root."""
    caps = unit_caps()
    assert "sys_admin" not in caps, caps
    d = ctx.tmpdir()
    pol = os.path.join(d, "deny.yaml")
    deny = "egdenied" + eg.token()
    with open(pol, "w") as f:
        f.write("default_decision: allow\ncommands:\n  - name: deny-it\n    basenames: [%s]\n"
                "    decision: deny\n" % deny)
    dm = CapDaemon(ctx, caps, ["--policy", pol, "--enforce", "--ctl-group", "nogroup", "--state-dir", d])
    assert dm.start["mode"]["tracer"] == "tp_btf", dm.start
    # CAP_CHOWN: the output belongs to --ctl-group
    st = os.stat(dm.output)
    assert st.st_gid == 65534 and stat.S_IMODE(st.st_mode) == 0o640, (st.st_gid, oct(st.st_mode))

    # CAP_SYSLOG: the script behind the interpreter is named
    if open("/proc/sys/kernel/kptr_restrict").read().strip() != "2":
        scr, link = script_run(ctx, d)
        e = dm.wait(lambda e: e.get("path_requested") == link, what="script exec")[0]
        assert e["filename"] == scr and "script_resolved" not in e, e

    # CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH: a session of another user, in a private directory
    r, prog = session_in_private_dir(ctx, dm)
    assert r.returncode == 0, (r.returncode, r.stderr.decode(), dm.err())
    e = dm.wait(lambda e: e.get("filename") == prog, what="session exec")[0]
    assert e["session"] and e["uid"] == 65534, e

    # kernel enforcement (kill where there is no BPF LSM)
    bin_ = os.path.join(d, deny)
    shutil.copy("/bin/true", bin_)
    r = subprocess.run([bin_])
    if "kill_on_exec" == dm.start["mode"]["kernel_enforcement"]:
        assert r.returncode == -signal.SIGKILL, r.returncode
    else:
        assert r.returncode != 0, r.returncode
    e = dm.wait(lambda e: e.get("filename") == bin_, what="denied exec")[0]
    assert e["decision"] == "deny", e

    # CAP_SETUID, CAP_SETGID, CAP_KILL, CAP_SYS_RESOURCE: `execgate run` for another user,
    # with that user's process limit, and its timeout
    r = run_as_nobody(ctx, dm, "--", "bash", "-c", "id -u; ulimit -Hu", pre=["prlimit", "--nproc=100:300"])
    assert r.returncode == 0 and r.stdout == b"65534\n300\n", (r, dm.err())
    start = time.monotonic()
    r = run_as_nobody(ctx, dm, "--timeout", "1s", "--", "sleep", "30")
    assert r.returncode == 128 + 9 and time.monotonic() - start < 20, r

    # ExecReload, through the control socket
    r = ctx.run([ctx.execgate, "policy", "reload", "-p", dm.pin_path], check=False)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert dm.stop() == 0, dm.err()
    assert dm.events()[-1]["event"] == "stop", dm.events()[-1]


def test_unit_capabilities_needed(ctx):
    """Each capability the unit keeps is one the daemon cannot do without."""
    caps = unit_caps()
    d = ctx.tmpdir()

    without = [c for c in caps if c != "syslog"]
    if open("/proc/sys/kernel/kptr_restrict").read().strip() == "0" and \
            open("/proc/sys/kernel/perf_event_paranoid").read().strip() not in ("-1", "0", "1"):
        dm = CapDaemon(ctx, without)
        scr, link = script_run(ctx, d)
        e = dm.wait(lambda e: e.get("path_requested") == link, what="script exec")[0]
        assert e.get("script_resolved") is False, ("CAP_SYSLOG is not needed after all", e)
        dm.kill()

    for cap in ("sys_ptrace", "dac_read_search"):
        dm = CapDaemon(ctx, [c for c in caps if c != cap])
        r, prog = session_in_private_dir(ctx, dm)
        assert r.returncode != 0, "CAP_%s is not needed after all" % cap.upper()
        dm.kill()

    # without CAP_SETUID a run for another user cannot start, and says why
    dm = CapDaemon(ctx, [c for c in caps if c != "setuid"], ["--state-dir", d])
    r = run_as_nobody(ctx, dm, "--", "true")
    assert r.returncode == 1 and r.stderr.startswith(b"execgate run: cannot become uid 65534"), \
        ("CAP_SETUID is not needed after all", r)
    dm.kill()

    # without CAP_AUDIT_READ the sessions' Landlock refusals are not counted, and status says why
    dm = CapDaemon(ctx, [c for c in caps if c != "audit_read"])
    st = json.loads(ctx.run([ctx.execgate, "status", "-j", "-p", dm.pin_path]).stdout)["boundary"]["denials"]
    if st["counted"] or "CAP_AUDIT_READ" not in (st["why"] or ""):
        # a kernel before Landlock ABI 7 counts nothing anyway
        assert "ABI" in (st["why"] or ""), ("CAP_AUDIT_READ is not needed after all", st)
    dm.kill()

    dm = None
    out = os.path.join(d, "out.jsonl")
    r = subprocess.run(["setpriv", "--bounding-set", ",".join(["-all"] + ["+" + c for c in caps if c != "chown"]),
                        "--inh-caps=-all", "--no-new-privs", ctx.execgate, "daemon", "--output", out,
                        "--ctl-group", "nogroup", "--pin-path", "/sys/fs/bpf/egtest-pkg-%d-%d" % (os.getpid(), ctx.seq())],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 1 and r.stderr.startswith(b"execgate daemon: "), \
        ("CAP_CHOWN is not needed after all", r.returncode, r.stderr)


# ---- sd_notify ----------------------------------------------------------------

class Notify:
    def __init__(self, ctx, abstract):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        if abstract:
            self.name = "@egtest-notify-%s" % eg.token()
            self.s.bind("\0" + self.name[1:])
        else:
            self.name = os.path.join(ctx.tmpdir(), "notify")
            self.s.bind(self.name)
        ctx.on_cleanup(self.s.close)

    def recv(self, timeout=60):
        r, _, _ = select.select([self.s], [], [], timeout)
        assert r, "no notification within %ss" % timeout
        msg, anc, _, _ = self.s.recvmsg(4096, socket.CMSG_SPACE(12))
        pid = None
        for lvl, typ, data in anc:
            if lvl == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
                pid = int.from_bytes(data[:4], "little")
        return msg.decode(), pid


def notify_run(ctx, abstract):
    n = Notify(ctx, abstract)
    d = ctx.tmpdir()
    pol = os.path.join(d, "p.yaml")
    shutil.copy(os.path.join(ROOT, "policy", "host-audit.yaml"), pol)
    env = dict(os.environ, NOTIFY_SOCKET=n.name)
    dm = ctx.daemon("--policy", pol, env=env, ready=False)
    msg, pid = n.recv()
    # ready only once the start record is in the output
    assert msg.split("\n")[0] == "READY=1" and pid == dm.proc.pid, (msg, pid, dm.proc.pid)
    assert [e for e in dm.events() if e.get("event") == "start"], dm.events()

    r = ctx.run([ctx.execgate, "policy", "reload", "-p", dm.pin_path], check=False)
    assert r.returncode == 0, r.stderr
    msg, pid = n.recv()
    assert re.fullmatch(r"RELOADING=1\nMONOTONIC_USEC=\d+", msg) and pid == dm.proc.pid, msg
    assert n.recv() == ("READY=1", dm.proc.pid)

    with open(pol, "a") as f:
        f.write("nonsense: [\n")
    r = ctx.run([ctx.execgate, "policy", "reload", "-p", dm.pin_path], check=False)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert n.recv()[0].startswith("RELOADING=1\n")
    assert n.recv() == ("READY=1", dm.proc.pid)    # the old policy is in force

    # a handover keeps the pid, which is what the service manager follows
    dm.proc.send_signal(signal.SIGUSR2)
    assert n.recv()[0].startswith("RELOADING=1\n")
    msg, pid = n.recv()
    assert msg.startswith("READY=1") and pid == dm.proc.pid, (msg, pid)

    dm.proc.send_signal(signal.SIGTERM)
    assert n.recv() == ("STOPPING=1", dm.proc.pid)
    assert dm.proc.wait(60) == 0


def test_notify_socket_path(ctx):
    notify_run(ctx, abstract=False)


def test_notify_socket_abstract(ctx):
    notify_run(ctx, abstract=True)


def test_notify_socket_unreachable(ctx):
    """A manager that is not there does not stop the daemon; it says so once."""
    env = dict(os.environ, NOTIFY_SOCKET=os.path.join(ctx.tmpdir(), "nobody-listens"))
    dm = ctx.daemon(env=env)
    assert dm.stop() == 0
    warn = [l for l in dm.err().splitlines() if "NOTIFY_SOCKET" in l]
    assert len(warn) == 1 and warn[0].startswith("execgate daemon: warning: "), dm.err()


# ---- logrotate ----------------------------------------------------------------

def test_logrotate_snippet(ctx):
    if not shutil.which("logrotate"):
        ctx.skip("logrotate is not installed (tools/install-deps.sh installs it)")
    d = ctx.tmpdir()
    out = os.path.join(d, "events.jsonl")
    dm = ctx.daemon(output=out)
    start = dm.wait_for(lambda e: e.get("event") == "start")[0]
    pidfile = start["socket"][:-len(".sock")] + ".pid"
    assert int(open(pidfile).read()) == dm.proc.pid
    conf = open(LOGROTATE).read()
    assert "copytruncate" not in re.sub(r"#.*", "", conf)
    conf = conf.replace("/var/log/execgate/events.jsonl", out).replace("/run/execgate/execgate.pid", pidfile)
    cf = os.path.join(d, "logrotate.conf")
    with open(cf, "w") as f:
        f.write(conf)
    state = os.path.join(d, "state")

    def rotate():
        r = subprocess.run(["logrotate", "-f", "-s", state, cf], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert r.returncode == 0, r.stdout.decode()

    def mark():
        tok = eg.token()
        subprocess.run(["/bin/true", tok])
        return tok

    t1 = mark()
    dm.wait_for(lambda e: t1 in e.get("argv", []), what="first mark")
    rotate()
    # the daemon reopened: a new events.jsonl gets the next execs
    t2 = mark()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if os.path.exists(out) and t2.encode() in open(out, "rb").read():
            break
        time.sleep(0.05)
    else:
        raise AssertionError("no events in the reopened file: %s" % os.listdir(d))
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o640
    first = open(out + ".1", "rb").read()
    assert first.endswith(b"\n") and t1.encode() in first
    rotate()  # delaycompress: .1 becomes .2.gz now
    assert os.path.exists(out + ".2.gz") and os.path.exists(out + ".1"), os.listdir(d)
    assert gzip.open(out + ".2.gz").read() == first
    assert dm.stop() == 0
    lines = b"".join(open(p, "rb").read() for p in (out + ".1", out)).split(b"\n")
    assert lines[-1] == b""
    evs = [json.loads(l) for l in lines[:-1]] + [json.loads(l) for l in first.split(b"\n")[:-1]]
    assert evs and any(e.get("event") == "stop" for e in evs)


# ---- make run -----------------------------------------------------------------

def parse(line):
    try:
        return json.loads(line)
    except ValueError as e:
        raise AssertionError("jq printed a line that is not JSON: %r (%s)" % (line[:300], e))


def test_make_run_jq(ctx):
    """`make run | jq .`: only the daemon writes to stdout; RUN_ARGS adds to the default policy."""
    if not shutil.which("jq"):
        ctx.skip("jq is not installed (tools/install-deps.sh)")
    pin = "/sys/fs/bpf/egtest-run-%d" % os.getpid()
    ctx.on_cleanup(lambda: shutil.rmtree(pin, ignore_errors=True))
    env = make_env()
    errf = open(os.path.join(ctx.tmpdir(), "make.stderr"), "w+b")
    # a terminal for make's input, its controlling terminal: ^C there stops the daemon in its
    # foreground (a daemon with no terminal goes to a session of its own, docs/sessions.md)
    master, slave = pty.openpty()
    ctx.on_cleanup(lambda: os.close(master))
    mk = subprocess.Popen(["make", "run", "RUN_ARGS=-p %s" % pin], cwd=ROOT, env=env, stdin=slave,
                          stdout=subprocess.PIPE, stderr=errf, start_new_session=True,
                          preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    # unbuffered on our side too: communicate() below reads the fd itself and
    # would skip what a buffered readline() had taken in already
    jq = subprocess.Popen(["jq", "--unbuffered", "-c", "."], bufsize=0, stdin=mk.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    mk.stdout.close()

    def stop_all():
        for p in (mk, jq):
            if p.poll() is None:
                try:
                    os.killpg(mk.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.kill()
                p.wait()
    ctx.on_cleanup(stop_all)

    lines = []
    deadline = time.monotonic() + 300   # make run builds what is missing first
    tok = None
    while time.monotonic() < deadline:
        r, _, _ = select.select([jq.stdout], [], [], 1)
        if r:
            line = jq.stdout.readline()
            if not line:
                break
            if not line.strip():
                continue
            lines.append(line)
            if parse(line).get("event") == "start":
                tok = eg.token()
                subprocess.run(["/bin/true", tok])
            if tok and tok.encode() in line:
                break
        elif mk.poll() is not None:
            break
    assert tok and lines and tok.encode() in lines[-1], \
        (lines[:3], open(errf.name, "rb").read().decode()[-2000:])
    os.write(master, b"\x03")  # a ^C at the terminal
    rest, jerr = jq.communicate(timeout=60)
    mk.wait(60)
    lines += [l for l in rest.splitlines(keepends=True) if l.strip()]
    assert jq.returncode == 0, (jq.returncode, jerr)
    evs = [parse(l) for l in lines]
    assert evs[0]["type"] == "daemon" and evs[0]["event"] == "start", evs[0]
    assert evs[0]["pin_path"] == pin, evs[0]
    assert evs[0]["policy"] == "policy/host-audit.yaml", evs[0]
    assert evs[-1]["type"] == "daemon" and evs[-1]["event"] == "stop", evs[-1]


# ---- make deb, dpkg -i, dpkg --purge ------------------------------------------

SNAPSHOT_ROOTS = ["/etc", "/usr", "/var/lib", "/var/log", "/opt", "/srv"]


def snapshot():
    out = set()
    for top in SNAPSHOT_ROOTS:
        for d, dirs, files in os.walk(top):
            dirs[:] = [x for x in dirs if os.path.join(d, x) not in ("/var/lib/containers", "/var/lib/docker")]
            for x in dirs + files:
                out.add(os.path.join(d, x))
    return out


def dpkg(*args, check=True):
    """dpkg, waiting while another dpkg or apt holds the lock."""
    deadline = time.monotonic() + 900
    while True:
        r = subprocess.run(["dpkg"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        if r.returncode != 0 and b"lock" in r.stderr and time.monotonic() < deadline:
            time.sleep(2)
            continue
        break
    if check:
        assert r.returncode == 0, "dpkg %s: %s%s" % (" ".join(args), r.stdout.decode(), r.stderr.decode())
    return r


def test_deb(ctx):
    for t in ("dpkg-deb", "dpkg-shlibdeps"):
        if not shutil.which(t):
            ctx.skip("%s is not installed (dpkg-dev, tools/install-deps.sh)" % t)
    st = subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Status}", "execgate"],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    if st.strip() not in (b"", b"not-installed", b"config-files") or os.path.exists("/usr/sbin/execgate"):
        ctx.skip("an execgate is already installed on this host; not touching it")

    make(ctx, "deb")
    version = help_text(ctx, "--version").split()[-1]
    arch = subprocess.run(["dpkg", "--print-architecture"], stdout=subprocess.PIPE).stdout.decode().strip()
    deb = os.path.join(eg.OUT, "execgate_%s_%s.deb" % (version, arch))
    info = subprocess.run(["dpkg-deb", "-f", deb], stdout=subprocess.PIPE, check=True).stdout.decode()
    fields = dict(re.findall(r"^(\S+): (.*)$", info, re.M))
    assert fields["Package"] == "execgate" and fields["Version"] == version, fields
    deps = {d.strip().split()[0] for d in fields["Depends"].split(",")}
    # every library the binary links comes from a package in Depends
    x = ctx.tmpdir()
    subprocess.run(["dpkg-deb", "-x", deb, x], check=True)
    needed = re.findall(r"NEEDED\s+(\S+)", subprocess.run(["objdump", "-p", os.path.join(x, "usr/sbin/execgate")],
                                                        stdout=subprocess.PIPE).stdout.decode())
    assert len(needed) >= 7, needed
    for so in needed:
        # libm.so.6 is in libc6 and libc6-i386 alike: one of its owners will do
        found = subprocess.run(["dpkg", "-S", so], stdout=subprocess.PIPE).stdout.decode()
        owners = {l.split(":")[0] for l in found.splitlines() if ":" in l}
        assert owners & deps, (so, owners, fields["Depends"])
    conff = subprocess.run(["dpkg-deb", "--ctrl-tarfile", deb], stdout=subprocess.PIPE).stdout
    conffiles = subprocess.run(["tar", "-xO", "./conffiles"], input=conff, stdout=subprocess.PIPE).stdout.decode()
    assert sorted(conffiles.split()) == sorted(["/etc/execgate/" + p for p in POLICIES] + ["/etc/logrotate.d/execgate"]), conffiles

    before = snapshot()
    ctx.on_cleanup(lambda: dpkg("--purge", "execgate", check=False))
    dpkg("-i", deb)
    listed = subprocess.run(["dpkg", "-L", "execgate"], stdout=subprocess.PIPE, check=True).stdout.decode().split()
    assert "/usr/sbin/execgate" in listed and "/lib/systemd/system/execgate.service" in listed, listed
    r = subprocess.run(["/usr/sbin/execgate", "probe"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode == 0 and b"mode: tracer=" in r.stdout, (r.returncode, r.stdout, r.stderr)
    r = subprocess.run(["/usr/sbin/execgate", "policy", "check", "--strict", "/etc/execgate/host-audit.yaml"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(["man", "-w", "execgate"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.stdout.decode().strip() == "/usr/share/man/man8/execgate.8.gz", (r.stdout, r.stderr)

    # what an operator and the service leave: an edited conffile, an enabled
    # unit with a drop-in, logs and state
    with open("/etc/execgate/host-audit.yaml", "a") as f:
        f.write("# edited\n")
    r = subprocess.run(["systemctl", "enable", "execgate.service"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    assert os.path.islink("/etc/systemd/system/multi-user.target.wants/execgate.service"), r.stdout
    os.makedirs("/etc/systemd/system/execgate.service.d", exist_ok=True)
    with open("/etc/systemd/system/execgate.service.d/override.conf", "w") as f:
        f.write("[Service]\nLimitNOFILE=4096\n")
    for dd in ("/var/log/execgate", "/var/lib/execgate"):
        os.makedirs(dd, exist_ok=True)
    with open("/var/log/execgate/events.jsonl", "w") as f:
        f.write("{}\n")

    dpkg("--purge", "execgate")
    after = snapshot()
    left = sorted(p for p in after - before if "execgate" in p)
    assert not left, "left behind by dpkg --purge: %s" % left
    # every file the package listed is gone, and every directory of its own
    # (/etc, /usr/share/man/man8 and the like are the system's)
    left = [p for p in listed if p not in before and os.path.lexists(p)
            and (not os.path.isdir(p) or "execgate" in p)]
    assert not left, left
    st = subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Status}", "execgate"],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    assert st.strip() in (b"", b"not-installed"), st


# ---- docs ---------------------------------------------------------------------

def test_docs_speak_of_the_project(ctx):
    """Docs say what a feature does, not which work item brought it."""
    paths = [os.path.join(ROOT, "README.md"), MAN8, MAN5, LOGROTATE, UNIT_IN] + \
        [os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md")] + \
        [os.path.join(ROOT, "policy", f) for f in os.listdir(os.path.join(ROOT, "policy"))]
    bad = []
    for p in paths:
        for n, line in enumerate(open(p, errors="replace"), 1):
            if re.search(r"\bseeds?\b|\bissue\s*#?\d|\bpoint \d+\b|acceptance criteri", line, re.I):
                bad.append("%s:%d: %s" % (os.path.relpath(p, ROOT), n, line.strip()))
    assert not bad, "\n".join(bad)


def test_capabilities_documented_as_the_unit_has_them(ctx):
    """docs/install.md's table and the man page list the unit's CapabilityBoundingSet, no more, no less."""
    unit = open(UNIT_IN).read()
    caps = re.search(r"^CapabilityBoundingSet=(.*)$", unit, re.M).group(1).split()
    doc = open(os.path.join(ROOT, "docs", "install.md")).read()
    table = doc.split("### Capabilities and sandbox", 1)[1].split("\n\n", 3)[2]
    listed = re.findall(r"`(CAP_[A-Z_]+)`", "\n".join(l for l in table.splitlines() if l.startswith("| `CAP")))
    assert listed == caps, (listed, caps)
    man = open(MAN8).read().split(".SH SERVICE", 1)[1].split(".SH FILES", 1)[0]
    in_man = re.findall(r"CAP_[A-Z_]+", man)
    assert sorted(set(in_man)) == sorted(caps), (in_man, caps)
