# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""execgate shell: one command per line, each in a fresh bash inside a session,
the working directory and the exported environment carried between them."""
import os
import shutil
import signal
import subprocess
import time

import eg


def shell(ctx, dm, lines, env=None, name=None, cwd=None, timeout=120):
    args = [ctx.execgate, "shell", "-p", dm.pin_path] + (["--session", name] if name else [])
    base = {k: v for k, v in os.environ.items()}
    base.update(env or {})
    return subprocess.run(args, input=("\n".join(lines) + "\n").encode(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=base, cwd=cwd or ctx.tmpdir(), timeout=timeout)


def test_shell_state_carries(ctx):
    dm = ctx.daemon()
    home = ctx.tmpdir()
    r = shell(ctx, dm, [
        "cd /usr", "pwd",
        "cd /etc; pwd",
        "cd - >/dev/null; pwd",
        "cd ~; pwd",
        "export FOO='bar baz' EMPTY=",
        "echo \"[$FOO][${EMPTY-unset}]\"",
        "unset FOO",
        "echo \"[${FOO-unset}]\"",
        "false",
        "echo \"prev=$?\"",
        "sh -c 'exit 3'",
        "echo \"prev=$?\"",
        "pushd /var >/dev/null; pushd /opt >/dev/null; dirs -l",
        "dirs -l",
        "popd >/dev/null; pwd",
        "f() { echo fn; }; alias ll=ls; trap 'echo trapped' EXIT",
        "type f >/dev/null 2>&1 || echo no-function; alias ll >/dev/null 2>&1 || echo no-alias",
        "exit 7",
    ], env={"HOME": home})
    out = r.stdout.decode().splitlines()
    assert out == ["/usr", "/etc", "/usr", home, "[bar baz][]", "[unset]", "prev=1", "prev=3",
                   "/opt /var %s" % home, "/opt /var %s" % home, "/var", "trapped",
                   "no-function", "no-alias"], (out, r.stderr)
    assert r.returncode == 7, r.returncode
    # every command ran in the session, by its name
    dm.wait_for(lambda e: e.get("type") == "exec" and e.get("session") and e.get("argv") == ["sh", "-c", "exit 3"],
                what="a command's exec in the session")


def test_shell_state_survives_ifs(ctx):
    """export IFS=/ (or a function named printf) does not lose the state: the directory, the
    exports and the pushd stack still carry to the commands after it."""
    dm = ctx.daemon()
    r = shell(ctx, dm, [
        "export A=1",
        "export IFS=/",
        "cd /usr; pushd /etc >/dev/null",
        "export B=2; printf() { :; }",
        "echo \"A=$A B=$B PWD=$PWD\"; dirs -l",
        "export IFS=0; exit 10",
        "echo \"after=$? A=$A\"",
    ])
    out = r.stdout.decode().splitlines()
    assert out == ["A=1 B=2 PWD=/etc", "/etc /usr", "after=10 A=1"], (out, r.stderr)


def test_shell_sanitizes_every_cycle(ctx):
    dm = ctx.daemon()
    env = {"LD_PRELOAD": "/inherited.so", "GITHUB_TOKEN": "t0k", "PAGER": "evil", "KEEP_ME": "yes"}
    r = shell(ctx, dm, [
        "echo \"start: ${LD_PRELOAD-unset} ${GITHUB_TOKEN-unset} ${PAGER-unset} $KEEP_ME\"",
        "export LD_PRELOAD=/tmp/evil.so BASH_ENV=/tmp/x PROMPT_COMMAND=x MY_API_KEY=k DB_PASSWORD=p "
        "CDPATH=/ SHELLOPTS=x PYTHONPATH=/p OK=1",
        "env | grep -E '^(LD_PRELOAD|BASH_ENV|PROMPT_COMMAND|MY_API_KEY|DB_PASSWORD|CDPATH|PYTHONPATH)=' "
        "|| echo none-passed",
        "echo \"ok=$OK\"",
    ], env=env)
    out = r.stdout.decode().splitlines()
    assert out == ["start: unset unset unset yes", "none-passed", "ok=1"], (out, r.stderr)


def test_shell_blocklist_as_run_stateful(ctx):
    """The same blocklist as run --stateful: private keys, DATABASE_URL, names in any case."""
    dm = ctx.daemon()
    env = {"DATABASE_URL": "postgres://secret", "SSH_PRIVATE_KEY": "pk", "github_token": "ghp_x"}
    r = shell(ctx, dm, [
        "echo \"start: ${DATABASE_URL-unset} ${SSH_PRIVATE_KEY-unset} ${github_token-unset}\"",
        "export AWS_PRIVATE_KEY_X=k DATABASE_URL=postgres://u:pw@h/db openai_api_key=sk-1 Db_Password=p OK=1",
        "echo \"carried: ${AWS_PRIVATE_KEY_X-unset} ${DATABASE_URL-unset} ${openai_api_key-unset} "
        "${Db_Password-unset} $OK\"",
    ], env=env)
    out = r.stdout.decode().splitlines()
    assert out == ["start: unset unset unset", "carried: unset unset unset unset 1"], (out, r.stderr)


def test_shell_state_pipe_is_the_shells_own(ctx):
    """A program the command starts cannot write a state: fd 63 is closed for it."""
    dm = ctx.daemon()
    fake = ("import os\n"
            "for fd in range(3, 1024):\n"
            "    try: os.write(fd, b'FAKE=1\\0__EG_PWD=/\\0')\n"
            "    except OSError: pass\n"
            "print('tried')\n")
    d = ctx.tmpdir()
    with open(os.path.join(d, "fake.py"), "w") as f:
        f.write(fake)
    r = shell(ctx, dm, ["cd %s" % d, "python3 fake.py", "echo \"FAKE=${FAKE-unset}\"; pwd",
                        "ls -l /proc/self/fd | grep -c pipe: || true"])
    out = r.stdout.decode().splitlines()
    assert out[:3] == ["tried", "FAKE=unset", d], (out, r.stderr)


def test_shell_background_jobs_do_not_stall(ctx):
    """A background job holds bash's copy of the state pipe: the next command does not wait for it."""
    dm = ctx.daemon()
    d = ctx.tmpdir()
    pids = os.path.join(d, "pids")

    def kill():
        for p in open(pids).read().split():
            try:
                os.kill(int(p), signal.SIGKILL)
            except ProcessLookupError:
                pass
    ctx.on_cleanup(kill)
    t0 = time.monotonic()
    r = shell(ctx, dm, [
        "(sleep 10; true) >/dev/null 2>&1 & echo $! >> %s" % pids,
        "cd /usr; export AFTER=1",
        "(while :; do sleep 0.1; done) >/dev/null 2>&1 & echo $! >> %s" % pids,
        "echo \"$AFTER $PWD\"",
    ], timeout=60)
    took = time.monotonic() - t0
    assert r.stdout.decode().splitlines() == ["1 /usr"], r
    assert took < 5, took


def test_shell_policy_applies(ctx):
    d = ctx.tmpdir()
    pol = os.path.join(d, "p.yaml")
    with open(pol, "w") as f:
        f.write("commands:\n  - {name: no-denyme, basenames: [denyme], decision: deny, message: not here}\n")
    shutil.copy("/usr/bin/true", os.path.join(d, "denyme"))
    dm = ctx.daemon("--policy", pol)
    tok = eg.token()
    r = shell(ctx, dm, ["%s/denyme" % d, "echo \"rc=$?\"", "echo out-%s; echo err-%s >&2" % (tok, tok)],
              name="agent-" + tok)
    assert r.stdout.decode().splitlines() == ["rc=126", "out-" + tok], r
    assert b"execgate: denied: not here (rule no-denyme)" in r.stderr and ("err-" + tok).encode() in r.stderr, r
    dm.wait_for(lambda e: e.get("type") == "session" and e.get("name") == "agent-" + tok, what="the named session")


def test_shell_errors(ctx):
    r = subprocess.run([ctx.execgate, "shell", "-p", "/sys/fs/bpf/egtest-noshell-%d" % os.getpid()],
                       input=b"echo hi\n", stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 2 and r.stdout == b"" and b"execgate exec:" in r.stderr, r
    r = subprocess.run([ctx.execgate, "shell", "extra"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode == 2 and r.stderr.startswith(b"execgate shell: "), r


def test_shell_state_too_big_is_drained(ctx):
    """A state past the cap (about 8 MiB read) is read to its end and dropped:
    the shell that writes it is not left blocked on a full pipe, the previous
    state is kept, and the next command runs."""
    dm = ctx.daemon()
    r = shell(ctx, dm, [
        "export SMALL=kept",
        "export BIG=$(head -c 9000000 /dev/zero | tr '\\0' a); echo big=${#BIG}",
        "echo \"[${BIG-unset}][$SMALL]\"",
    ], timeout=60)
    out = r.stdout.decode().splitlines()
    assert out == ["big=9000000", "[unset][kept]"], (out, r.stderr[-2000:])
    assert b"the environment came back bigger than 4 MiB; the previous one is kept" in r.stderr, r.stderr
    assert r.returncode == 0, r.returncode


# Run inside a session: writes the parent's waitpid() in libc, through /proc/PPID/mem, with code
# that execs CMD (argv[1]) -- outside the session, if the parent lets us.
ESCAPE = r'''
import ctypes, os, struct, sys
cmd = sys.argv[1].encode()
pp = os.getppid()
if sys.argv[2:] == ["grandparent"]:  # past the shell that runs us
    pp = int(open("/proc/%d/stat" % pp).read().rsplit(")", 1)[1].split()[1])
def libc_base(pid):
    for l in open("/proc/%s/maps" % pid):
        if "libc.so.6" in l and " 00000000 " in l:
            return int(l.split("-")[0], 16)
try:
    addr = libc_base(pp) + ctypes.cast(ctypes.CDLL("libc.so.6").waitpid, ctypes.c_void_p).value - libc_base("self")
    fd = os.open("/proc/%d/mem" % pp, os.O_RDWR)
except OSError as e:
    print("refused:", e.strerror)
    sys.exit(1)
# lea rdi,[sh]; lea rax,[-c]; lea rbx,[cmd]; xor edx,edx; push rdx,rbx,rax,rdi; mov rsi,rsp; mov eax,59; syscall
hdr = 37
code = b"".join(op + struct.pack("<i", tgt - end) for op, end, tgt in
                ((b"\x48\x8d\x3d", 7, hdr), (b"\x48\x8d\x05", 14, hdr + 8), (b"\x48\x8d\x1d", 21, hdr + 11)))
code += b"\x31\xd2\x52\x53\x50\x57\x48\x89\xe6\xb8\x3b\x00\x00\x00\x0f\x05"
assert len(code) == hdr
os.pwrite(fd, code + b"/bin/sh\0-c\0" + cmd + b"\0", addr)
print("patched", pp)
'''

USER = ["setpriv", "--reuid", "12345", "--regid", "12345", "--clear-groups"]


def test_shell_parent_out_of_reach(ctx):
    """A command cannot write the memory of `execgate shell` (outside the session, same uid)
    to make it run a denied program unsupervised: the parent is not dumpable."""
    if os.uname().machine != "x86_64":
        ctx.skip("the escape's code is x86-64")
    d = ctx.tmpdir()
    os.chmod(d, 0o777)
    pol = os.path.join(d, "p.yaml")
    with open(pol, "w") as f:
        f.write("commands:\n  - {name: no-denyme, basenames: [denyme], decision: deny, message: not here}\n")
    shutil.copy("/bin/echo", os.path.join(d, "denyme"))
    with open(os.path.join(d, "escape.py"), "w") as f:
        f.write(ESCAPE)
    dm = ctx.daemon("--policy", pol)
    mark = os.path.join(d, "escaped")
    esc = "python3 %s/escape.py '%s/denyme ran > %s' grandparent" % (d, d, mark)
    r = subprocess.run(USER + [ctx.execgate, "shell", "-p", dm.pin_path],
                       input=("%s/denyme inside; echo rc=$?\n%s\necho after\n" % (d, esc)).encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=d, timeout=60)
    # the escape said it was refused (it wrote nothing), and the shell went on: no mark can come later
    assert r.stdout.decode().splitlines() == ["rc=126", "refused: Permission denied", "after"], r
    assert not os.path.exists(mark), (open(mark).read(), r)
    # the same for the relay of exec --pty, CMD's parent
    r = subprocess.run(USER + [ctx.execgate, "exec", "--pty", "-p", dm.pin_path, "--"] +
                       ["python3", os.path.join(d, "escape.py"), "%s/denyme ran > %s" % (d, mark)],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=d, timeout=60)
    assert b"refused: Permission denied" in r.stdout and r.returncode == 1, r
    assert not os.path.exists(mark), (open(mark).read(), r)


def test_shell_state_an_exec_cannot_take(ctx):
    """A variable over 128 KiB (MAX_ARG_STRLEN) or past 1 MiB of them is dropped with a warning,
    not kept to fail every later exec (E2BIG); an exec that fails says why."""
    dm = ctx.daemon()
    r = shell(ctx, dm, [
        "export BIG=$(head -c 200000 /dev/zero | tr '\\0' x) SMALL=kept; echo set",
        "echo \"hello ${BIG-unset} $SMALL\"",
        "for i in $(seq 1 12); do export V$i=$(head -c 100000 /dev/zero | tr '\\0' y); done",
        "echo carried=$(env | grep -c '^V[0-9]*=y')",
        "echo " + "z" * 140000,
        "echo \"rc=$?\"",
    ], timeout=60)
    out = r.stdout.decode().splitlines()
    assert out == ["set", "hello unset kept", "carried=10", "rc=126"], (out, r.stderr[-2000:])
    err = r.stderr.decode()
    assert "BIG (200004 bytes) is not carried: longer than one variable of an exec can be" in err, err
    assert err.count("(100003 bytes) is not carried: the environment would pass 1 MiB") == 2, err
    assert "cannot run the command: Argument list too long" in err, err
