# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Real containers (podman with runc and the cgroupfs manager, an image
imported from a busybox tarball with no registry): events name the
container an exec ran in, and a rule scoped to one container's cgroup
refuses there, not in a second container and not on the host."""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import eg
from eg import token

PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]
RUN_FLAGS = ["--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
PARENT = "libpod_parent"


def need_podman(ctx):
    for tool in ("podman", "runc", "busybox"):
        if not shutil.which(tool) and not os.path.exists("/bin/" + tool):
            raise eg.Skip("%s is not installed (tools/install-deps.sh installs it)" % tool)


def content_tag(name, files, salt=""):
    """name:<hash of the files' content>: an image made once per content."""
    h = hashlib.sha256(salt.encode())
    for p in files:
        with open(p, "rb") as f:
            h.update(f.read())
    return "%s:%s" % (name, h.hexdigest()[:12])


def image(ctx):
    """localhost/egtest:<hash of its content>, imported once from a tarball."""
    static_true = ctx.helper("static_true")
    tag = content_tag("localhost/egtest", ("/bin/busybox", static_true))
    if subprocess.run(PODMAN + ["image", "exists", tag]).returncode == 0:
        return tag
    root = tempfile.mkdtemp(prefix="egimg.")
    try:
        os.makedirs(os.path.join(root, "bin"))
        os.makedirs(os.path.join(root, "tmp"))
        shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
        for applet in ("sh", "cat", "sleep", "echo", "ls"):
            os.symlink("busybox", os.path.join(root, "bin", applet))
        shutil.copy(static_true, os.path.join(root, "bin", "static_true"))
        tar = os.path.join(root, "..", os.path.basename(root) + ".tar")
        subprocess.run(["tar", "-C", root, "-cf", tar, "."], check=True)
        r = subprocess.run(PODMAN + ["import", tar, tag], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.unlink(tar)
        assert r.returncode == 0, r.stderr.decode()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return tag


def container(ctx, tag, extra=()):
    """A running container (sleeping); its full id."""
    r = subprocess.run(PODMAN + ["run", "-d", "--rm"] + RUN_FLAGS + list(extra) + [tag, "/bin/sleep", "120"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    cid = r.stdout.decode().strip()
    ctx.on_cleanup(lambda: subprocess.run(PODMAN + ["rm", "-f", "-t", "0", cid],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return cid


def pexec(cid, *argv):
    return subprocess.run(PODMAN + ["exec", cid] + list(argv), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)


def scope():
    path = os.path.join(eg.CGROUP2, PARENT)
    os.makedirs(path, exist_ok=True)
    return path


def test_events_name_the_container(ctx):
    """The container's name and image from podman's own state, the pod from
    the CRI annotations in the OCI bundle (what a kubelet sets), on execs
    and exits alike."""
    need_podman(ctx)
    tag = image(ctx)
    d = ctx.daemon("--cgroup", scope())
    name = "eg-" + token()
    cid = container(ctx, tag, ["--name", name, "--annotation", "io.kubernetes.pod.name=shop-7f9",
                               "--annotation", "io.kubernetes.pod.namespace=prod",
                               "--annotation", "io.kubernetes.pod.uid=1b6f3c9e-0000-4000-8000-000000000001"])
    t = token()
    r = pexec(cid, "/bin/static_true", t)
    assert r.returncode == 0, r.stderr
    e = d.wait_for(lambda e: e.get("type") == "exec" and t in e.get("argv", []), 15, "exec in the container")[0]
    assert e["container"] == {"id": cid, "runtime": "podman", "name": name, "image": tag,
                              "pod_uid": "1b6f3c9e-0000-4000-8000-000000000001"}, e
    assert e["pod"] == {"name": "shop-7f9", "namespace": "prod", "uid": "1b6f3c9e-0000-4000-8000-000000000001"}, e
    x = d.wait_for(lambda x: x.get("type") == "exit" and x.get("exec_id") == e["exec_id"], 15, "its exit")[0]
    assert x["container"] == e["container"] and x["pod"] == e["pod"] and x["exit_code"] == 0, x
    # execgate query finds it by the container's name and by the pod
    q = ctx.run([ctx.execgate, "query", "--json", "--container", name, "--type", "exec",
                 "--filename", "/bin/static_true", d.output])
    assert [json.loads(l)["exec_id"] for l in q.stdout.splitlines()] == [e["exec_id"]], q.stdout
    q = ctx.run([ctx.execgate, "query", "--json", "--pod", "shop-7f9", "--type", "exit",
                 "--filename", "/bin/static_true", d.output])
    assert [json.loads(l)["exec_id"] for l in q.stdout.splitlines()] == [e["exec_id"]], q.stdout
    assert e["cgroup"] == "/%s/libpod-%s" % (PARENT, cid), e
    assert e["filename"] == "/bin/static_true" and e["foreign_ns"] is True, e
    # a user's own cgroup (systemd delegates user@UID.service) named after that container is the
    # user's: the container's id as named, and nothing read from podman's state about it
    spoof = os.path.join(scope(), "user.slice", "user@1000.service", "libpod-%s.scope" % cid)
    os.makedirs(spoof)
    ctx.on_cleanup(lambda: [os.rmdir(p) for p in (spoof, os.path.dirname(spoof), os.path.dirname(os.path.dirname(spoof)))])

    def join():
        with open(os.path.join(spoof, "cgroup.procs"), "w") as f:
            f.write("0")
    t = token()
    assert subprocess.run(["/bin/true", t], preexec_fn=join).returncode == 0
    e = d.wait_for(lambda e: e.get("type") == "exec" and t in e.get("argv", []), 15, "exec in the user's cgroup")[0]
    assert e["container"]["id"] == cid and not e["container"].get("name") and not e.get("pod"), e


def test_rule_for_one_container(ctx):
    need_podman(ctx)
    tag = image(ctx)
    a = container(ctx, tag)
    b = container(ctx, tag)
    policy = """
commands:
  - name: no-cat-in-a
    cgroups: ["/%s/libpod-%s"]
    basenames: [cat]
    decision: deny
  - name: no-static-true-in-containers
    cgroups: ["/%s/libpod-*"]
    paths: [/bin/static_true]
    args: [EVIL]
    decision: deny
""" % (PARENT, a, PARENT)
    pdir = ctx.tmpdir()
    pf = os.path.join(pdir, "p.yaml")
    with open(pf, "w") as f:
        f.write(policy)
    d = ctx.daemon("--policy", pf, "--enforce", "--cgroup", scope())
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    # cat is busybox: the rule meets the name the caller spelled
    t = token()
    r = pexec(a, "/bin/cat", "/etc/hostname", t)
    assert r.returncode == 137 and not r.stdout, (r.returncode, r.stdout, r.stderr)
    e = d.wait_for(lambda e: e.get("type") == "exec" and t in e.get("argv", []), 15, "killed exec in a")[0]
    assert e["action"] == "killed" and e["layer"] == "kernel-kill" and e["rule"] == "no-cat-in-a", e
    assert e["container"]["id"] == a and e["filename"] == "/bin/busybox", e
    # the second container and the host are not that container
    r = pexec(b, "/bin/cat", "/etc/hostname")
    assert r.returncode == 0 and r.stdout.strip(), (r.returncode, r.stderr)
    assert subprocess.run(["/bin/cat", "/etc/hostname"], stdout=subprocess.PIPE).returncode == 0
    # a glob over every container's cgroup: both, and still not the host
    for cid in (a, b):
        assert pexec(cid, "/bin/static_true", "EVIL").returncode == 137, cid
        assert pexec(cid, "/bin/static_true", "fine").returncode == 0, cid
    assert subprocess.run([ctx.helper("static_true"), "EVIL"], stdout=subprocess.DEVNULL).returncode == 0


def test_scope_follows_a_restarted_container(ctx):
    """`podman restart` makes a new cgroup (a new id) at the same path: a
    --cgroup scope follows the path, so the restarted container's first
    command is judged, and the daemon says the scope was gone and is back.
    The container's first process is container_depth 0."""
    need_podman(ctx)
    tag = image(ctx)
    r = subprocess.run(PODMAN + ["run", "-d"] + RUN_FLAGS + [tag, "/bin/sh", "-c", "static_true egscope; sleep 120"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    cid = r.stdout.decode().strip()
    ctx.on_cleanup(lambda: subprocess.run(PODMAN + ["rm", "-f", "-t", "0", cid],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    path = "/%s/libpod-%s" % (PARENT, cid)
    pol = os.path.join(ctx.tmpdir(), "p.yaml")
    with open(pol, "w") as f:
        f.write("commands:\n  - {name: no-static, basenames: [static_true], decision: deny}\n")
    os.chmod(os.path.dirname(pol), 0o755)
    d = ctx.daemon("--policy", pol, "--enforce", "--cgroup", path)
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    r = subprocess.run(PODMAN + ["restart", "-t", "0", cid], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    killed = d.wait_for(lambda e: e.get("type") == "exec" and e.get("argv") == ["static_true", "egscope"]
                        and e.get("action") == "killed", timeout=20, what="the restarted container's exec")
    sh = d.wait_for(lambda e: e.get("type") == "exec" and e.get("argv", [None])[0] == "/bin/sh" and
                    e.get("cgroup") == path, what="the container's command")[0]
    assert sh["container_depth"] == 0 and killed[0]["container_depth"] == 1, (sh, killed[0])
    states = [e["state"] for e in d.events() if e.get("type") == "daemon" and e.get("event") == "scope"]
    assert states[:2] == ["gone", "back"], states
    st = json.loads(ctx.run([ctx.execgate, "status", "--json", "-p", d.pin_path]).stdout)
    assert st["scopes"][0]["state"] == "present" and st["scopes"][0]["path"] == path, st["scopes"]


def dyn_image(ctx):
    """The test image with a glibc of its own: its ld.so is a file of the
    image (another file than the host's), and /bin/denied, /bin/ok copies of
    true, a dynamic program."""
    base = image(ctx)
    real_ld = os.path.realpath("/lib64/ld-linux-x86-64.so.2")
    libc = os.path.realpath("/lib/x86_64-linux-gnu/libc.so.6")
    tag = content_tag("localhost/egtest-dyn", (real_ld, libc, "/usr/bin/true"), base)
    if subprocess.run(PODMAN + ["image", "exists", tag]).returncode == 0:
        return tag
    root = tempfile.mkdtemp(prefix="egimg.")
    try:
        for d in ("lib64", "lib/x86_64-linux-gnu", "bin"):
            os.makedirs(os.path.join(root, d))
        shutil.copy(real_ld, os.path.join(root, "lib64", "ld-linux-x86-64.so.2"))
        shutil.copy(libc, os.path.join(root, "lib/x86_64-linux-gnu", "libc.so.6"))
        for name in ("denied", "ok"):
            shutil.copy("/usr/bin/true", os.path.join(root, "bin", name))
        ctr = subprocess.run(PODMAN + ["create", base, "/bin/true"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, timeout=60)
        assert ctr.returncode == 0, ctr.stderr.decode()
        cid = ctr.stdout.decode().strip()
        try:
            r = subprocess.run(PODMAN + ["cp", root + "/.", cid + ":/"], stderr=subprocess.PIPE, timeout=60)
            assert r.returncode == 0, r.stderr.decode()
            r = subprocess.run(PODMAN + ["commit", "-q", cid, tag], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=120)
            assert r.returncode == 0, r.stderr.decode()
        finally:
            subprocess.run(PODMAN + ["rm", "-f", cid], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return tag


def test_a_containers_own_loader_is_a_loader(ctx):
    """An image brings its own ld.so, another file than the host's: run as
    a command, what it maps is judged all the same, in a container started
    before the daemon (found at its start) and in one started after (found
    at its first exec)."""
    need_podman(ctx)
    tag = dyn_image(ctx)
    before = container(ctx, tag)
    pol = os.path.join(ctx.tmpdir(), "p.yaml")
    with open(pol, "w") as f:
        f.write("commands:\n  - {name: no-denied, cgroups: [\"/%s/libpod-*\"], paths: [/bin/denied], "
                "decision: deny}\n" % PARENT)
    os.chmod(os.path.dirname(pol), 0o755)
    d = ctx.daemon("--policy", pol, "--enforce", "--cgroup", scope())
    ctx.on_cleanup(lambda: subprocess.run([ctx.execgate, "unload", "-p", d.pin_path],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    after = container(ctx, tag)
    # the record of its first command: its root was searched by then
    d.wait_for(lambda e: e.get("type") == "exec" and e.get("container", {}).get("id") == after,
               timeout=20, what="the later container's first exec")
    ld = "/lib64/ld-linux-x86-64.so.2"
    for cid in (before, after):
        assert pexec(cid, "/bin/ok").returncode == 0, cid
        assert pexec(cid, "/bin/denied").returncode == 137, cid
        t = token()
        r = pexec(cid, ld, "/bin/denied", t)
        assert r.returncode == 137, (cid, r.returncode, r.stderr[-300:])
        e = d.wait_for(lambda e: e.get("type") == "exec" and t in e.get("argv", []), 15, "the loader's exec")[0]
        assert e["loader"] is True and e["action"] == "killed" and e["loaded"]["filename"] == "/bin/denied", e
        assert pexec(cid, ld, "/bin/ok").returncode == 0, cid
    assert "dynamic loader mnt:[" in d.err(), d.err()
    # a mount namespace a user made is not searched: what it holds is the user's to choose
    # (a FUSE mount there could keep the daemon waiting), however loader-like
    cg = os.path.join(scope(), "egtest-user-%d" % os.getpid())
    os.makedirs(cg, exist_ok=True)
    ctx.on_cleanup(lambda: os.rmdir(cg))
    # made out of the scope, then in it: its first exec the daemon sees finds the fake there
    fake = ("mount -t tmpfs egfake /usr/local/lib && cp %s /usr/local/lib/ld-linux-fake.so.2 && "
            "readlink /proc/self/ns/mnt && echo $$ > %s/cgroup.procs && exec sleep 1"
            % (os.path.realpath("/lib64/ld-linux-x86-64.so.2"), cg))
    r = subprocess.run(["unshare", "-Urm", "sh", "-c", fake], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode == 0, r.stderr
    ns = r.stdout.decode().strip()
    # sleep's record: it was alive to be looked at (the daemon searches before it writes a record)
    d.wait_for(lambda e: e.get("type") == "exec" and e.get("argv", [None])[0] == "sleep" and
               e.get("mnt_ns") == int(ns.strip("mnt:[]")), 15, "the exec in the user's namespace")
    assert ns + ":" not in d.err(), d.err()
