"""Security defaults: a Ray that ding_ray starts (for a pipeline or a Tune sweep) listens on 127.0.0.1
only, its dashboard API wants the token, and a run folder never chooses code to run or a cluster.

Each Ray test starts Ray through ding_ray's own start path (``init_ray``, ``tune_pipeline``) in a
fresh interpreter with its own ``RAY_TMPDIR`` (nobody else's ``ray.init()`` can join it) and its own
``HOME`` (Ray writes ``~/.ray/auth_token`` when it starts a cluster), then lists the TCP sockets that
the processes of that Ray listen on, read from ``/proc`` (every process is a descendant of the driver).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from ding_ray.distributed.config import RayConfig
from tests.distributed.conftest import REPO, free_port, run_python
from tests.short_tmp import short_tmp

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
sweep = settings.pop("tune_sweep", False)
if sweep:  # a one-trial Tune sweep, Ray left to ding_ray's tune_pipeline to start; its Ray stays up
    from ding_ray.entry.tune import tune_pipeline
    tune_pipeline("cartpole_dqn", {"env.collector_env_num": 1, "env.evaluator_env_num": 1,
                  "env.n_evaluator_episode": 1}, max_train_iter=1, storage_path=sweep)
else:
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
    env = {"RAY_TMPDIR": short_tmp("drsec"), "PYTHONPATH": REPO}
    env["HOME"] = short_tmp("drsechome")
    code = f"import sys; sys.argv = ['probe', {json.dumps(ray_settings)!r}]\n" + PROBE
    proc = run_python(code, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout[-1000:] + proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]), stderr=proc.stderr)


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
    # Ray 2.60 turns token authentication on for a cluster that ray.init() starts; ding_ray makes
    # the same choice, so Ray's warning that it chose by itself is not shown
    assert (out["no_token"], out["wrong_token"], out["token"]) == (401, 403, 200)
    assert "Token authentication is enabled" not in out["stderr"], out["stderr"][-2000:]


def test_every_port_of_the_ray_a_tune_sweep_starts_listens_on_loopback(tmp_path):
    pytest.importorskip("ray.tune", reason="needs the tune extra: pip install 'ding_ray[tune]'")
    out = _start({"tune_sweep": str(tmp_path / "tune")})
    exposed = [(host, port) for host, port in out["listeners"] if host not in LOOPBACK]
    assert out["node_ip"] == "127.0.0.1"
    assert not exposed, f"listening beyond loopback: {exposed} (all: {out['listeners']})"
    assert len(out["listeners"]) >= 5  # GCS, raylet, driver, agents: the probe saw them


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
        short_tmp("drsechome"),
        short_tmp("drsec"),
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


# ----- a run folder is data ---------------------------------------------------------------------------

# A module file dropped into a run folder: imported, it leaves a file named after itself beside it.
TRAP = "import os\nopen(os.path.join(os.path.dirname(__file__), __name__ + '.ran'), 'w').close()\n"


@pytest.fixture(scope="module")
def trapped_run(tmp_path_factory):
    """A tiny serial CartPole DQN run (``run``, in its own working directory) whose
    ``total_config.json`` and checkpoint ``meta.json`` were edited as someone sharing the folder
    could: two modules of the folder in ``import_names``, a cluster in ``ray.address``."""
    from ding_ray.configs.cartpole_dqn import create_config, main_config
    from ding_ray.entry import serial_pipeline

    cwd = tmp_path_factory.mktemp("shared")
    cfg = json.loads(json.dumps(main_config))
    cfg["exp_name"] = str(cwd / "run")
    cfg["env"].update(evaluator_env_num=1, n_evaluator_episode=1)
    serial_pipeline((cfg, create_config), seed=0, max_env_step=300)
    run = cwd / "run"
    for name in ("in_model", "at_top"):
        (run / f"{name}.py").write_text(TRAP)

    def plant(config: dict) -> None:
        config["policy"]["model"].update(type="dqn", import_names=["run.in_model"])
        config["import_names"] = ["run.at_top"]
        config.setdefault("ray", {})["address"] = "127.0.0.1:1"

    path = run / "total_config.json"
    config = json.loads(path.read_text())
    plant(config)
    path.write_text(json.dumps(config))
    for meta_path in run.glob("checkpoints/iter_*/meta.json"):
        meta = json.loads(meta_path.read_text())
        plant(meta["config"])
        meta_path.write_text(json.dumps(meta))
    return cwd


def _ran(cwd) -> list[str]:
    return sorted(p.name for p in (cwd / "run").glob("*.ran"))


def _python(cwd, code: str) -> subprocess.CompletedProcess:
    """``python -c code`` in ``cwd``: the working directory is on ``sys.path``, so the run folder is
    an importable namespace package there."""
    env = {**os.environ, "PYTHONPATH": REPO}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_loading_evaluating_and_exporting_a_run_folder_imports_none_of_its_modules(trapped_run):
    cli = "import sys; from ding_ray.entry.cli import main; sys.exit(main(sys.argv[1:]))"
    for code in (
        "import ding_ray; print(ding_ray.load_policy('run'))",
        cli.replace("sys.argv[1:]", "['eval', 'run/ckpt/ckpt_best.pth.tar', '--episodes', '1']"),
        cli.replace("sys.argv[1:]", "['export', 'run', 'policy.pt']"),
    ):
        proc = _python(trapped_run, code)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert _ran(trapped_run) == [], code
        assert "run.in_model" in proc.stderr and "never imports code" in proc.stderr  # the warning


def test_a_module_the_user_names_is_imported(trapped_run):
    code = (
        "import sys; from ding_ray.entry.cli import main; "
        "sys.exit(main(['eval', 'run/ckpt/ckpt_best.pth.tar', '--episodes', '1', "
        "'--import', 'run.in_model']))"
    )
    try:
        proc = _python(trapped_run, code)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert _ran(trapped_run) == ["run.in_model.ran"]
    finally:
        for p in (trapped_run / "run").glob("*.ran"):
            p.unlink()


def test_a_resumed_run_takes_neither_the_modules_nor_the_cluster_its_checkpoint_names(trapped_run):
    from ding_ray.utils.resume import resume_config

    cfg = resume_config(str(trapped_run / "run"))
    assert cfg.ray.address is None
    assert cfg.import_names == [] and cfg.policy.model.import_names == []
    code = (
        "import sys; from ding_ray.entry.cli import main; "
        "sys.exit(main(['train', '--resume', 'run', '--max-env-step', '400']))"
    )
    proc = _python(trapped_run, code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _ran(trapped_run) == []
    assert "127.0.0.1:1" in proc.stderr and "never picks a cluster" in proc.stderr
