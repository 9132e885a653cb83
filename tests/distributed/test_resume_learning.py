"""Kill a Ray run's driver with SIGKILL mid-training, resume it, and reach the stop value.

The driver starts its own Ray (as ``python examples/apex_dqn.py`` does on a laptop), in a process of
its own with its own ``RAY_TMPDIR``; SIGKILL takes the driver, and Ray's processes go with it
(they share its fate). The resumed run starts from the latest checkpoint the killed one committed.
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

RUN = """
import copy, sys
from ding_ray.configs.apex_dqn import create_config, main_config
from ding_ray.entry import ray_pipeline
cfg = copy.deepcopy(main_config)
cfg["exp_name"], cfg["checkpoint"] = sys.argv[1], dict(freq=500)
cfg["ray"]["progress_bar"] = False
ray_pipeline((cfg, create_config), seed=0, max_env_step=200_000, resume=sys.argv[2] or None)
"""


def _start(exp: str, resume: str, ray_tmp: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": REPO, "RAY_TMPDIR": ray_tmp}
    return subprocess.Popen(
        [sys.executable, "-c", RUN, exp, resume], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True
    )


def test_a_sigkilled_ray_run_resumes_from_its_checkpoint_and_solves(tmp_path):
    exp = str(tmp_path / "apex")
    store = CheckpointStore(exp)
    ray_tmp = short_tmp("drrs")
    proc = _start(exp, "", ray_tmp)
    deadline = time.monotonic() + 240
    while (store.latest() is None or store.latest().train_iter < 1000) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    ckpt = store.latest()
    assert ckpt is not None and ckpt.train_iter >= 1000 and ckpt.has_buffer
    assert ckpt.meta["buffer_count"] > 0 and ckpt.meta["env_steps"] > 0

    start = time.monotonic()
    proc = _start(exp, exp, ray_tmp)
    err = proc.communicate(timeout=300)[1]
    assert proc.returncode == 0, err[-3000:]
    with open(os.path.join(exp, "result.json")) as f:
        result = json.load(f)
    assert result["stop"] and result["best_eval_return"] >= 475, result
    assert result["resumed_from"] == ckpt.folder
    # counters continue from the checkpoint instead of starting again
    assert result["train_iter"] > ckpt.train_iter and result["env_steps"] > ckpt.meta["env_steps"]
    print(f"resumed run: {time.monotonic() - start:.1f} s to 475 from iteration {ckpt.train_iter}")


def test_sigterm_checkpoints_the_ray_example_and_its_resume_flag_goes_on(tmp_path):
    example = os.path.join(REPO, "examples", "apex_dqn.py")
    env = {**os.environ, "PYTHONPATH": REPO, "RAY_TMPDIR": short_tmp("drst")}
    args = ["--set", "checkpoint.freq=300", "ray.progress_bar=False"]
    proc = subprocess.Popen(
        [sys.executable, example, "--seed", "4", *args],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    exp = str(tmp_path / "apex_dqn_seed4")
    store = CheckpointStore(exp)
    deadline = time.monotonic() + 240
    while store.latest() is None and time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)  # what `ray job stop` and schedulers send
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130 and "Traceback" not in err, err[-3000:]  # one line, as ding-ray's
    assert err.strip().splitlines()[-1].startswith("apex_dqn.py: interrupted (stopped by signal SIGTERM)")
    with open(os.path.join(exp, "result.json")) as f:
        stopped = json.load(f)
    assert "KeyboardInterrupt" in stopped["error"] and "SIGTERM" in stopped["error"], err[-2000:]
    last = store.latest()
    assert last.folder == stopped["last_checkpoint"]  # the one written on the way out
    assert last.meta["env_steps"] == stopped["env_steps"]

    budget = ["--max-env-step", str(last.meta["env_steps"] + 1000)]  # more than the run's own
    done = subprocess.run(
        [sys.executable, example, "--resume", exp, *budget, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["resumed_from"] == last.folder and "error" not in result
    # no --seed: the run's own 4, not the example's default 0 (issue 27 item 2)
    assert result["seed"] == 4, result
    with open(os.path.join(exp, "total_config.json")) as f:
        assert json.load(f)["seed"] == 4
    # the rate counts the steps of the resumed process only (issue 27 item 3)
    own_steps = result["env_steps"] - last.meta["env_steps"]
    assert abs(result["env_steps_per_s"] * result["wall_s"] - own_steps) <= 0.01 * own_steps + 5, result
    # the counters go on from the checkpoint's to the budget (reached: the run stops there, as the
    # serial entries do; the learner may not have trained much in so short a run)
    assert result["env_steps"] >= last.meta["env_steps"] + 1000 and result["train_iter"] >= last.train_iter
