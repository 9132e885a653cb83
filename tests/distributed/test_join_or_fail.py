"""A driver that is meant to join a Ray cluster and cannot find it says so and exits; it never starts a
Ray of its own instead (which would run the whole job on one machine and look like success)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.short_tmp import short_tmp

DRIVER = """
import ray
from ding_ray.distributed.cluster import init_ray
from ding_ray.distributed.config import RayConfig
from ding_ray.errors import DingRayError

try:
    init_ray(RayConfig.default_config(), "join-or-fail")
except DingRayError as err:
    print("refused:", err)
    raise SystemExit(3)
print("started its own Ray" if ray.is_initialized() else "nothing")
"""


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # free once closed: nothing listens there


@pytest.fixture
def home():
    """A HOME and temp dir of the driver's own: short, as Ray's socket paths must stay under 108 bytes."""
    folder = short_tmp("djoin")
    yield Path(folder)
    shutil.rmtree(folder, ignore_errors=True)


def run_driver(home: Path, **env) -> subprocess.CompletedProcess:
    # its own HOME and temp dir: no `ray start` of this machine's, no ~/ray_bootstrap_config.yaml but ours
    base = {k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")}
    env = {**base, "HOME": str(home), "TMPDIR": str(home), **env}
    return subprocess.run(
        [sys.executable, "-c", DRIVER], env=env, capture_output=True, text=True, timeout=120
    )


def test_a_driver_given_ray_address_that_nothing_answers_at_refuses(home):
    address = f"127.0.0.1:{closed_port()}"
    done = run_driver(home, RAY_ADDRESS=address)
    assert done.returncode == 3, done.stdout + done.stderr[-2000:]
    assert f"meant to join a Ray cluster (RAY_ADDRESS is set) but nothing answers at {address}" in done.stdout
    assert "does not start a Ray of its own" in done.stdout


def test_a_driver_on_the_head_that_ray_up_made_refuses_when_no_ray_runs_there(home):
    (home / "ray_bootstrap_config.yaml").write_text("cluster_name: x\n")  # what `ray up` leaves
    done = run_driver(home)
    assert done.returncode == 3, done.stdout + done.stderr[-2000:]
    assert "the head of a cluster that `ray up` started" in done.stdout
    assert "no `ray start` on this machine left an address" in done.stdout


@pytest.mark.parametrize("stale", [False, True])
def test_elsewhere_a_driver_with_no_cluster_to_join_starts_its_own_ray(home, stale):
    if stale:  # a `ray start` that has since stopped: its address file is left, nothing answers
        (home / "ray").mkdir()
        (home / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{closed_port()}")
    done = run_driver(home)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "started its own Ray" in done.stdout
    assert ("ignoring the stale Ray address" in done.stderr) == stale
