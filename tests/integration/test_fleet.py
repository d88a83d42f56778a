# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The fleet: the OCI image (make image) traces the host it runs on, and
the DaemonSet has what a node's agent needs."""
import json
import os
import select
import shutil
import signal
import subprocess
import time

import yaml

import eg
from eg import token

PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]


def test_image_traces_the_host(ctx):
    if not shutil.which("podman") or not shutil.which("runc"):
        ctx.skip("podman and runc are needed (tools/install-deps.sh)")
    r = subprocess.run(["make", "-s", "image", "OUTPUT=" + os.path.relpath(ctx.out, ctx.root)], cwd=ctx.root,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    info = json.loads(subprocess.run(PODMAN + ["image", "inspect", "localhost/execgate:latest"],
                                     stdout=subprocess.PIPE, check=True).stdout)[0]
    assert info["Config"]["Entrypoint"] == ["/usr/sbin/execgate"], info["Config"]
    assert info["Config"]["Cmd"] == ["daemon", "--format", "json"], info["Config"]
    pin = "/sys/fs/bpf/egtest-img-%d" % os.getpid()
    name = "egtest-img-%d" % os.getpid()
    ctx.on_cleanup(lambda: shutil.rmtree(pin, ignore_errors=True))
    ctx.on_cleanup(lambda: subprocess.run(PODMAN + ["rm", "-f", "-t", "0", name], stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
    # privileged, the host's pid namespace and bpffs: as the DaemonSet runs it
    p = subprocess.Popen(PODMAN + ["run", "--rm", "--name", name, "--privileged", "--pid=host", "--network", "none",
                                   "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                                   "-v", "/sys/fs/bpf:/sys/fs/bpf", "localhost/execgate:latest",
                                   "daemon", "--format", "json", "--pin-path", pin],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ctx.on_cleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
    t = token()
    out, deadline, started = b"", time.monotonic() + 60, False
    while time.monotonic() < deadline:
        r, _, _ = select.select([p.stdout], [], [], 0.2)
        if r:
            chunk = os.read(p.stdout.fileno(), 1 << 20)
            if not chunk:
                break
            out += chunk
        if not started and b'"event":"start"' in out:
            started = True
        if started:
            subprocess.run(["/bin/true", t])  # on the host, outside the container
        if t.encode() in out.split(b"\n", 1)[-1]:
            break
    recs = [json.loads(l) for l in out.split(b"\n")[:-1]]
    assert recs and recs[0]["event"] == "start", (out[:300], p.stderr.read1(2000) if p.poll() is not None else "")
    mine = [e for e in recs if e.get("type") == "exec" and t in e.get("argv", [])]
    assert mine, "no host exec seen from the container: %s" % out[-500:]
    # the host's exec, in the host's namespaces (foreign_ns depends on reading /proc/1/ns, which
    # this machine's PID 1 refuses even to root on the host)
    assert mine[0]["filename"] == "/usr/bin/true", mine[0]
    assert mine[0]["mnt_ns"] == os.stat("/proc/self/ns/mnt").st_ino, mine[0]
    assert mine[0]["pid"] > 1 and mine[0]["cwd"] == os.getcwd(), mine[0]
    # SIGTERM: the daemon stops as on a host (how long podman takes to pass it on varies with load)
    subprocess.run(PODMAN + ["kill", "--signal", "TERM", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        pass


def test_daemonset_structure(ctx):
    with open(os.path.join(ctx.root, "dist", "kubernetes", "execgate.yaml")) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    kinds = {d["kind"]: d for d in docs}
    assert set(kinds) == {"Namespace", "ConfigMap", "DaemonSet"}, kinds.keys()
    ds = kinds["DaemonSet"]
    spec = ds["spec"]["template"]["spec"]
    assert ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
    assert spec["hostPID"] is True
    c = spec["containers"][0]
    assert c["image"] == "localhost/execgate:latest" and c["args"][0] == "daemon", c
    assert c["securityContext"].get("privileged") is True or \
        {"BPF", "PERFMON"} <= set(c["securityContext"]["capabilities"]["add"]), c["securityContext"]
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    vols = {v["name"]: v for v in spec["volumes"]}
    for path in ("/sys/fs/bpf", "/sys/fs/cgroup", "/run/execgate"):
        assert path in mounts and vols[mounts[path]]["hostPath"]["path"] == path, path
    # a bpffs the daemon mounts (a node without one) must reach the node, or the pins die with the pod
    bpffs = [m for m in c["volumeMounts"] if m["mountPath"] == "/sys/fs/bpf"][0]
    assert bpffs.get("mountPropagation") == "Bidirectional", bpffs
    # every runtime state the daemon reads (trace/containers.c), read-only
    for path in ("/run/containerd", "/run/runc", "/var/lib/containers", "/run/containers", "/run/crun"):
        m = [m for m in c["volumeMounts"] if m["mountPath"] == path]
        assert m and m[0].get("readOnly") is True and vols[m[0]["name"]]["hostPath"]["path"] == path, path
    # the records name the node, not the pod: its name (the pod's hostname is the pod's) and
    # its machine id (the image has none), read-only
    env = {e["name"]: e for e in c.get("env", [])}
    var = [a for a in c["args"] if a.startswith("--hostname=")]
    assert var and var[0].startswith("--hostname=$(") and var[0].endswith(")"), c["args"]
    assert env[var[0][len("--hostname=$("):-1]]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName", env
    mid = [m for m in c["volumeMounts"] if m["mountPath"] == "/etc/machine-id"]
    assert mid and mid[0].get("readOnly") is True, mid
    assert vols[mid[0]["name"]]["hostPath"] == {"path": "/etc/machine-id", "type": "File"}, vols[mid[0]["name"]]
    # the policy comes from the ConfigMap, and is the shipped one that loads
    pol = [m for m in c["volumeMounts"] if vols[m["name"]].get("configMap")][0]
    assert vols[pol["name"]]["configMap"]["name"] == kinds["ConfigMap"]["metadata"]["name"]
    arg = [a for a in c["args"] if a.startswith("--policy=")][0].split("=", 1)[1]
    key = os.path.relpath(arg, pol["mountPath"])
    text = kinds["ConfigMap"]["data"][key]
    # the shipped host policy itself, not a copy that drifts from it
    with open(os.path.join(eg.ROOT, "policy", "host-audit.yaml")) as f:
        assert text == f.read(), "dist/kubernetes/execgate.yaml's policy is not policy/host-audit.yaml"
    p = os.path.join(ctx.tmpdir(), "p.yaml")
    with open(p, "w") as f:
        f.write(text)
    ctx.run([ctx.execgate, "policy", "check", "--strict", p])
    # metrics: the port the daemon listens on, announced for Prometheus
    listen = [a for a in c["args"] if a.startswith("--metrics-listen=")][0]
    port = int(listen.rsplit(":", 1)[1])
    assert {"name": "metrics", "containerPort": port, "protocol": "TCP"} in c["ports"], c["ports"]
    ann = ds["spec"]["template"]["metadata"]["annotations"]
    assert ann["prometheus.io/scrape"] == "true" and int(ann["prometheus.io/port"]) == port, ann
    # liveness through the control socket: `execgate status` exits 0 only when the daemon answers
    probe = c["livenessProbe"]["exec"]["command"]
    assert probe[:2] == ["/usr/sbin/execgate", "status"], probe
    # every argument is one the binary takes
    r = ctx.run([ctx.execgate, "daemon", "--help"])
    for a in c["args"][1:]:
        assert a.split("=")[0].encode() in r.stdout, a


def test_the_records_name_the_node(ctx):
    """As in the DaemonSet's pod: a UTS namespace named like a pod, and --hostname the node's
    name. The start record, the first record of a file after SIGHUP, and the syslog datagrams
    name the node; machine_id is /etc/machine-id's (the DaemonSet mounts the node's there)."""
    import socket
    sock = os.path.join(ctx.tmpdir(), "syslog.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock)
    s.settimeout(0.2)
    ctx.on_cleanup(s.close)
    pod = "execgate-x7k2p"
    wrap = os.path.join(ctx.tmpdir(), "in-a-pod")
    with open(wrap, "w") as f:
        f.write('#!/bin/sh\nexec unshare --uts sh -c \'hostname %s && exec "$0" "$@"\' %s "$@"\n' % (pod, ctx.execgate))
    os.chmod(wrap, 0o755)
    rel, cg, cgid = ctx.cgroup()
    d = ctx.daemon("--cgroup", cg, "--hostname=node-7.example", "--syslog=" + sock, exe=wrap)
    r = ctx.run(["nsenter", "--uts=/proc/%d/ns/uts" % d.proc.pid, "hostname"])
    assert r.stdout.decode().strip() == pod, ("the daemon runs under the pod's name", r.stdout)
    with open("/etc/machine-id") as f:
        machine = f.read().strip()
    start = d.events()[0]
    assert start["event"] == "start" and start["hostname"] == "node-7.example", start
    assert start["machine_id"] == machine, start
    d.proc.send_signal(signal.SIGHUP)
    reopened = d.wait_for(lambda e: e.get("event") == "reopened", what="the reopened record")[0]
    assert reopened["hostname"] == "node-7.example" and reopened["machine_id"] == machine, reopened
    # RFC 5424: <PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID ...
    got, deadline = [], time.monotonic() + 10
    while time.monotonic() < deadline and not any(b'"event":"reopened"' in m for m in got):
        try:
            got.append(s.recv(1 << 20))
        except socket.timeout:
            pass
    assert got and all(m.split(b" ")[2] == b"node-7.example" for m in got), [m[:80] for m in got]
    assert d.stop() == 0
