"""The README's local cluster path, for real: ``ray start --head``, then ``ray job submit`` of
``examples/apex_dqn.py`` with a small budget.

The head runs with ``--block`` in its own process group (killed at the end, never ``ray stop``,
which would stop every Ray on the machine) and its own ``RAY_TMPDIR``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from tests.distributed.conftest import REPO, free_port

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def wait_for_job_server(
    ray_bin: str, port: int, head: subprocess.Popen, env: dict, timeout_s: float = 120
) -> None:
    """Until ``ray job list`` answers: the dashboard's job server starts after the head is up."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert head.poll() is None, "ray start --head exited early"
        listed = subprocess.run(
            [ray_bin, "job", "list", f"--address=http://127.0.0.1:{port}"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if listed.returncode == 0:
            return
        time.sleep(2)
    raise TimeoutError(f"the head's job server did not come up: {listed.stderr[-1500:]}")


@pytest.fixture(scope="module")
def head():
    """A ``ray start --head`` cluster: yields (ray binary, env, dashboard port, Ray Client port)."""
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    env = {**os.environ, "RAY_TMPDIR": tempfile.mkdtemp(prefix="drjs", dir="/tmp"), "RAY_AUTH_MODE": "token"}
    dashboard, client = free_port(), free_port()
    head = subprocess.Popen(
        [
            ray_bin, "start", "--head", "--block", f"--port={free_port()}", "--num-cpus=2",
            "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}",
            f"--metrics-export-port={free_port()}", f"--ray-client-server-port={client}",
            # Other Rays on this machine (the session's, other sessions') hold the default ports.
            f"--dashboard-agent-listen-port={free_port()}",
            f"--dashboard-agent-grpc-port={free_port()}", f"--runtime-env-agent-port={free_port()}",
        ],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_job_server(ray_bin, dashboard, head, env)
        yield ray_bin, env, dashboard, client
    finally:
        stop_group(head)


def test_ray_job_submit_runs_the_example_to_completion(head, tmp_path):
    ray_bin, env, dashboard, _ = head
    # The dashboard answers before its job agent has registered; on a loaded machine the
    # first submissions are refused with "No available agent", so retry for a while.
    deadline = time.monotonic() + 90
    while True:
        submit = subprocess.run(
            [
                ray_bin, "job", "submit", f"--address=http://127.0.0.1:{dashboard}", "--",
                sys.executable, os.path.join(REPO, "examples", "apex_dqn.py"), "--max-env-step", "6000",
                "--num-collectors", "1", "--set", "ray.publish_freq=16",
            ],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if "No available agent" not in submit.stderr + submit.stdout or time.monotonic() > deadline:
            break
        time.sleep(3)
    assert submit.returncode == 0, submit.stdout[-2000:] + submit.stderr[-2000:]
    assert "succeeded" in submit.stdout.lower()
    assert '"pipeline": "ray-async"' in submit.stdout and '"env_steps": ' in submit.stdout
    assert '"num_collectors": 1' in submit.stdout  # the script's own overrides reach the run


CLIENT_DRIVER = """
import sys
from ding_ray.entry import ray_pipeline
from tests.distributed.configs import small_config

main, create = small_config("client_run", address=sys.argv[1])
ray_pipeline((main, create), seed=0, max_env_step=3000)
"""


def test_ray_client_address_joins_the_cluster_and_runs(head, tmp_path):
    """``ray.address='ray://host:port'``: the driver runs here, its actors on the cluster."""
    _, env, _, client = head
    env = {**env, "PYTHONPATH": REPO}
    run = subprocess.run(
        [sys.executable, "-c", CLIENT_DRIVER, f"ray://127.0.0.1:{client}"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "joining the Ray cluster at ray://" in run.stderr
    result = json.loads((tmp_path / "client_run" / "result.json").read_text())
    assert result["pipeline"] == "ray-async" and result["env_steps"] >= 3000 and result["train_iter"] > 0


def stop_group(head: subprocess.Popen) -> None:
    """SIGTERM the head's process group, then SIGKILL what is left (GCS may linger)."""
    os.killpg(head.pid, signal.SIGTERM)
    try:
        head.wait(timeout=20)
    except subprocess.TimeoutExpired:
        pass
    time.sleep(2)
    try:
        os.killpg(head.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    head.wait()
