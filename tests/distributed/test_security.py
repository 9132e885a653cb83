"""Security defaults: a Ray that ding_ray starts listens on 127.0.0.1 only, and its dashboard
API wants the token.

Each test starts Ray through ding_ray's own start path (``init_ray``) in a fresh interpreter with
its own ``RAY_TMPDIR`` (nobody else's ``ray.init()`` can join it) and its own ``HOME`` (Ray writes
``~/.ray/auth_token`` when it starts a cluster), then lists the TCP sockets that the processes of
that Ray listen on, read from ``/proc`` (every process is a descendant of the driver).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from ding_ray.distributed.config import RayConfig
from tests.distributed.conftest import REPO, free_port, run_python

pytestmark = [pytest.mark.ray]

LOOPBACK = ("127.0.0.1", "::1", "::ffff:127.0.0.1")

# Runs in the child: start Ray as ding_ray does, wait for the ports that open last (the dashboard
# agent's metrics endpoint), print the listening sockets and the dashboard API's answers as JSON.
PROBE = """
import glob, json, os, socket, sys, time, urllib.error, urllib.request
os.environ.pop("RAY_AUTH_MODE", None)  # Ray's own default, whatever the calling shell says
import ray
from ding_ray.distributed.cluster import init_ray
from ding_ray.distributed.config import RayConfig

def listeners():
    inodes = {}
    todo, pids = [os.getpid()], []
    while todo:
        pid = todo.pop()
        pids.append(pid)
        for path in glob.glob(f"/proc/{pid}/task/*/children"):
            try:
                todo += [int(c) for c in open(path).read().split()]
            except OSError:  # the thread (or process) ended since the glob
                continue
    for pid in pids:
        for fd in glob.glob(f"/proc/{pid}/fd/*"):
            try:
                link = os.readlink(fd)
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes[link[8:-1]] = pid
    found = []
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        for row in open(table).read().splitlines()[1:]:
            cols = row.split()
            if cols[3] != "0A" or cols[9] not in inodes:  # 0A: LISTEN
                continue
            hexip, hexport = cols[1].split(":")
            raw = bytes.fromhex(hexip)
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))  # host-order words
            found.append([socket.inet_ntop(family, raw), int(hexport, 16)])
    return found

def get(url, token=None):
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        return urllib.request.urlopen(req, timeout=60).status
    except urllib.error.HTTPError as err:
        return err.code

settings = json.loads(sys.argv[1])
check_token = settings.pop("check_token", False)
cfg = RayConfig.default_config()
cfg.update(settings)
init_ray(cfg, "security-test")
info = ray._private.worker.global_worker.node.address_info
deadline = time.time() + 30
while time.time() < deadline and info["metrics_export_port"] not in {p for _, p in listeners()}:
    time.sleep(0.5)
out = dict(listeners=listeners(), node_ip=info["node_ip_address"], gcs=info["gcs_address"],
           metrics_port=info["metrics_export_port"], dashboard=info["webui_url"])
if check_token:
    url = "http://127.0.0.1:" + info["webui_url"].rsplit(":", 1)[1] + "/api/version"
    token = open(os.path.expanduser("~/.ray/auth_token")).read().strip()
    out.update(no_token=get(url), wrong_token=get(url, "x" * 32), token=get(url, token))
ray.shutdown()
print(json.dumps(out))
"""


def _start(ray_settings: dict) -> dict:
    env = {"RAY_TMPDIR": tempfile.mkdtemp(prefix="drsec", dir="/tmp"), "PYTHONPATH": REPO}
    env["HOME"] = tempfile.mkdtemp(prefix="drsechome", dir="/tmp")
    code = f"import sys; sys.argv = ['probe', {json.dumps(ray_settings)!r}]\n" + PROBE
    proc = run_python(code, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout[-1000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_ray_config_defaults_keep_the_dashboard_off_and_on_loopback():
    ray_cfg = RayConfig.default_config()
    assert ray_cfg.include_dashboard is False
    assert ray_cfg.dashboard_host == "127.0.0.1"
    assert ray_cfg.address is None  # start Ray here (on loopback) unless told where a cluster is


def test_every_port_of_an_embedded_ray_listens_on_loopback_and_the_dashboard_wants_the_token():
    out = _start({"include_dashboard": True, "num_cpus": 1, "check_token": True})
    listening = {port: host for host, port in out["listeners"]}
    dashboard_port = int(out["dashboard"].rsplit(":", 1)[1])
    gcs_port = int(out["gcs"].rsplit(":", 1)[1])
    assert out["node_ip"] == "127.0.0.1"
    # the dashboard, the GCS and the metrics endpoint, then every other socket of this Ray
    for port in (dashboard_port, gcs_port, out["metrics_port"]):
        assert listening.get(port) in LOOPBACK, (port, out["listeners"])
    exposed = [(host, port) for host, port in out["listeners"] if host not in LOOPBACK]
    assert not exposed, f"listening beyond loopback: {exposed} (all: {out['listeners']})"
    assert len(out["listeners"]) >= 6  # GCS, raylet, driver, dashboard, agents: the probe saw them
    # Ray 2.60 turns token authentication on for a cluster that ray.init() starts
    assert (out["no_token"], out["wrong_token"], out["token"]) == (401, 403, 200)


def test_a_dashboard_host_the_user_sets_is_the_only_port_off_loopback():
    out = _start({"include_dashboard": True, "dashboard_host": "0.0.0.0", "num_cpus": 1})
    dashboard_port = int(out["dashboard"].rsplit(":", 1)[1])
    exposed = {(host, port) for host, port in out["listeners"] if host not in LOOPBACK}
    assert exposed == {("0.0.0.0", dashboard_port)}, out


def _stop(head: subprocess.Popen, ray_tmp: str) -> None:
    """End the ``ray start --block`` this test began (its own processes only; never ``ray stop``,
    which stops every Ray on the machine)."""
    head.send_signal(signal.SIGTERM)
    head.wait(timeout=60)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                mine = ray_tmp.encode() in f.read()
            if mine:
                os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


def test_a_driver_joins_a_token_guarded_cluster_found_on_this_machine():
    """``ray start --head`` with ``~/.ray/auth_token`` present guards the cluster with the token;
    ding_ray joins it as a plain ``ray.init()`` does, without RAY_AUTH_MODE being set."""
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    home, ray_tmp = (
        tempfile.mkdtemp(prefix="drsechome", dir="/tmp"),
        tempfile.mkdtemp(prefix="drsec", dir="/tmp"),
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_AUTH", "RAY_ADDRESS"))}
    env.update(HOME=home, RAY_TMPDIR=ray_tmp, PYTHONPATH=REPO)
    subprocess.run([ray_bin, "get-auth-token", "--generate"], env=env, check=True, capture_output=True)
    port = free_port()
    head = subprocess.Popen(
        [
            ray_bin,
            "start",
            "--head",
            f"--port={port}",
            "--num-cpus=3",
            "--include-dashboard=false",
            "--block",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.time() + 60
        while not os.path.exists(os.path.join(ray_tmp, "ray", "ray_current_cluster")):
            assert head.poll() is None and time.time() < deadline, (
                head.stdout.read() if head.poll() else "slow"
            )
            time.sleep(0.5)
        socket.create_connection(("127.0.0.1", port), timeout=10).close()
        code = (
            "import ray\nfrom ding_ray.distributed.cluster import init_ray\n"
            "from ding_ray.distributed.config import RayConfig\n"
            "init_ray(RayConfig.default_config(), 'security-test')\n"
            "print(ray.get_runtime_context().gcs_address, ray.cluster_resources()['CPU'])\nray.shutdown()\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        gcs_address, cpus = proc.stdout.split()[-2:]
        assert gcs_address.endswith(f":{port}") and float(cpus) == 3.0  # that cluster, not a new Ray
    finally:
        _stop(head, ray_tmp)
