"""Stop a Ray run's driver with SIGTERM, then with SIGKILL mid-training, resume it each time, and reach
the stop value.

The driver is ``python examples/apex_dqn.py``: it starts its own Ray (as on a laptop), in a process of
its own with its own ``RAY_TMPDIR``. SIGTERM (what ``ray job stop`` and schedulers send) ends it in one
line with a checkpoint written on the way out; SIGKILL takes the driver at once, and Ray's processes go
with it (they share its fate). Each resumed run starts from the latest checkpoint the stopped one
committed. One chain of three runs, so the path to 475 is trained once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ding_ray.utils.checkpoint import CheckpointStore
from tests.distributed.conftest import REPO
from tests.short_tmp import short_tmp

pytestmark = [pytest.mark.ray, pytest.mark.slow]

EXAMPLE = os.path.join(REPO, "examples", "apex_dqn.py")
ARGS = ["--set", "checkpoint.freq=300", "ray.progress_bar=False"]


def _start(cwd: str, env: dict, *args: str) -> subprocess.Popen:
    """The example in the background, its stderr to ``<cwd>/driver.err`` (a pipe nobody reads
    while it runs could fill up and block it)."""
    with open(os.path.join(cwd, "driver.err"), "w") as err:
        return subprocess.Popen(
            [sys.executable, EXAMPLE, *args, *ARGS], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err
        )


def _stderr(cwd: str) -> str:
    with open(os.path.join(cwd, "driver.err")) as f:
        return f.read()


def _wait_for_checkpoint(proc: subprocess.Popen, store: CheckpointStore, past_iter: int, cwd: str) -> None:
    deadline = time.monotonic() + 240
    while (latest := store.latest()) is None or latest.train_iter <= past_iter:
        assert proc.poll() is None, _stderr(cwd)[-3000:]
        assert time.monotonic() < deadline, f"no checkpoint past iteration {past_iter} in 240 s"
        time.sleep(0.1)


def test_sigterm_then_sigkill_mid_training_and_the_resumed_ray_example_solves(tmp_path):
    env = {**os.environ, "PYTHONPATH": REPO, "RAY_TMPDIR": short_tmp("drrs")}
    exp = str(tmp_path / "apex_dqn_seed4")
    store = CheckpointStore(exp)

    # 1. SIGTERM: one line, exit 130, a checkpoint written on the way out
    proc = _start(str(tmp_path), env, "--seed", "4")
    _wait_for_checkpoint(proc, store, -1, str(tmp_path))
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    err = _stderr(str(tmp_path))
    assert proc.returncode == 130 and "Traceback" not in err, err[-3000:]  # one line, as ding-ray's
    assert err.strip().splitlines()[-1].startswith("apex_dqn.py: interrupted (stopped by signal SIGTERM)")
    with open(os.path.join(exp, "result.json")) as f:
        stopped = json.load(f)
    assert "KeyboardInterrupt" in stopped["error"] and "SIGTERM" in stopped["error"], err[-2000:]
    termed = store.latest()
    assert termed.folder == stopped["last_checkpoint"]  # the one written on the way out
    assert termed.meta["env_steps"] == stopped["env_steps"]

    # 2. resumed, then SIGKILL two checkpoints on: nothing is written on the way out
    proc = _start(str(tmp_path), env, "--resume", exp)
    _wait_for_checkpoint(proc, store, termed.train_iter + 300, str(tmp_path))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    killed = store.latest()
    assert killed.train_iter > termed.train_iter and killed.has_buffer
    assert killed.meta["buffer_count"] > 0 and killed.meta["env_steps"] > termed.meta["env_steps"]

    # 3. resumed again, to the stop value
    done = subprocess.run(
        [sys.executable, EXAMPLE, "--resume", exp, *ARGS], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["stop"] and result["best_eval_return"] >= 475, result
    assert result["resumed_from"] == killed.folder and "error" not in result
    # no --seed: the run's own 4, not the example's default 0 (issue 27 item 2)
    assert result["seed"] == 4, result
    with open(os.path.join(exp, "total_config.json")) as f:
        assert json.load(f)["seed"] == 4
    # counters continue from the checkpoint instead of starting again
    assert result["train_iter"] > killed.train_iter and result["env_steps"] > killed.meta["env_steps"]
    # the rate counts the steps of the resumed process only (issue 27 item 3)
    own_steps = result["env_steps"] - killed.meta["env_steps"]
    assert abs(result["env_steps_per_s"] * result["wall_s"] - own_steps) <= 0.01 * own_steps + 5, result
