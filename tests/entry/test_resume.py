"""Kill a serial run with SIGKILL mid-training, resume it, and reach the stop value.

What a checkpoint holds is compared with what the resumed run starts from: the replay buffer item
for item, the learner's weights, optimizer and counters. SIGTERM and Ctrl-C save a checkpoint
before the process ends.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from ding_ray.configs.cartpole_dqn import create_config, main_config
from ding_ray.data.file_format import decode_state, encode_state
from ding_ray.entry import serial_pipeline
from ding_ray.entry.serial_entry import SerialRun
from ding_ray.errors import ConfigError, DataFormatError
from ding_ray.utils.checkpoint import (
    BUFFER_FILE,
    LEARNER_FILE,
    CheckpointStore,
    buffer_bytes,
    load_learner_bytes,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _config(exp_name: str, freq: int = 500, stop_value: float | None = None) -> dict:
    cfg = copy.deepcopy(main_config)
    cfg["exp_name"] = exp_name
    cfg["checkpoint"] = dict(freq=freq)
    if stop_value is not None:
        cfg["env"] = {**cfg["env"], "stop_value": stop_value}
    return cfg


def _start(exp_name: str, freq: int, stop_value: float | None = None) -> subprocess.Popen:
    """A serial CartPole DQN run in a subprocess; a ``stop_value`` out of reach keeps it running
    until a signal lands (CartPole solves in a few seconds: a loaded machine could miss it)."""
    code = (
        "from ding_ray.entry import serial_pipeline; from tests.entry.test_resume import _config; "
        "from ding_ray.configs.cartpole_dqn import create_config; "
        f"serial_pipeline((_config({exp_name!r}, {freq}, {stop_value!r}), create_config), seed=0, "
        "max_env_step=30000)"
    )
    env = {**os.environ, "PYTHONPATH": REPO}
    return subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True
    )


def _wait_for_checkpoint(
    proc: subprocess.Popen, store: CheckpointStore, train_iter: int, timeout: float = 120
):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ckpt = store.latest()
        if ckpt is not None and ckpt.train_iter >= train_iter:
            return ckpt
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        time.sleep(0.02)
    raise AssertionError(f"no checkpoint at iteration {train_iter} within {timeout} s")


@pytest.mark.slow
def test_a_sigkilled_serial_run_resumes_where_its_checkpoint_left_it_and_solves(tmp_path):
    exp = str(tmp_path / "killed")
    store = CheckpointStore(exp)
    proc = _start(exp, freq=500, stop_value=1e9)
    ckpt = _wait_for_checkpoint(proc, store, 1000)
    proc.send_signal(signal.SIGKILL)  # no chance to save anything more
    proc.wait(timeout=30)
    ckpt = store.latest()  # a later one may have been committed before the kill landed
    assert ckpt.meta["env_steps"] > 0 and ckpt.train_iter >= 1000

    # What the resumed run starts from is what the checkpoint holds.
    run = SerialRun(_config(exp), create_config, 0, None, None, True, False, resume=exp)
    run.restore(run.resumed)
    snapshot = decode_state(store.read(ckpt, BUFFER_FILE))
    assert encode_state(decode_state(buffer_bytes(run.buffer)), "x") == encode_state(snapshot, "x")
    saved = load_learner_bytes(store.read(ckpt, LEARNER_FILE), "learner.pth")
    for key, value in run.learner.policy.state_dict()["optimizer"]["state"][0].items():
        assert torch.equal(value, saved["policy"]["optimizer"]["state"][0][key]), key
    assert (run.learner.train_iter, run.collector.envstep) == (ckpt.train_iter, ckpt.meta["env_steps"])
    run.close()

    serial_pipeline((_config(exp), create_config), seed=0, max_env_step=30_000, resume=exp)
    with open(os.path.join(exp, "result.json")) as f:
        result = json.load(f)
    assert result["stop"] and result["best_eval_return"] >= 475, result
    assert result["resumed_from"] == ckpt.folder
    assert result["train_iter"] > ckpt.train_iter and result["env_steps"] > ckpt.meta["env_steps"]


def test_sigterm_saves_a_checkpoint_that_resume_continues(tmp_path):
    exp = str(tmp_path / "stopped")
    store = CheckpointStore(exp)
    proc = _start(exp, freq=200, stop_value=1e9)
    _wait_for_checkpoint(proc, store, 200)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode != 0 and "interrupted: saved" in err, err[-2000:]
    ckpt = store.latest()
    with open(os.path.join(exp, "result.json")) as f:
        result = json.load(f)
    # the checkpoint is of the moment it stopped, and result.json says why it stopped
    assert "KeyboardInterrupt" in result["error"] and result["train_iter"] == ckpt.train_iter
    serial_pipeline(
        (_config(exp, freq=200), create_config), seed=0, max_train_iter=ckpt.train_iter + 100, resume=exp
    )
    with open(os.path.join(exp, "result.json")) as f:
        resumed = json.load(f)
    assert resumed["resumed_from"] == ckpt.folder and resumed["train_iter"] >= ckpt.train_iter + 100
    assert "error" not in resumed


def test_a_burst_of_signals_on_the_way_out_loses_nothing(tmp_path):
    """SIGTERM, then SIGINTs and SIGTERMs every 5 ms (an impatient user, a scheduler that sends
    SIGTERM again): the last checkpoint, result.json and the lock are written and freed before the
    process ends, and nothing is left in its temp folder. Signals held during the run's end are
    let through once it is written, so the process may die of a late one after that."""
    exp = str(tmp_path / "stopped")
    store = CheckpointStore(exp)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code = (
        "from ding_ray.entry import serial_pipeline; from tests.entry.test_resume import _config; "
        "from ding_ray.configs.cartpole_dqn import create_config; "
        # neither the stop value nor the budget is in reach: only the signal ends the run (once, a run
        # this test watched on a loaded machine reached a 30,000-step budget first and ended cleanly)
        f"serial_pipeline((_config({exp!r}, 200, 1e9), create_config), seed=0, max_env_step=10**8)"
    )
    env = {**os.environ, "PYTHONPATH": REPO, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        _wait_for_checkpoint(proc, store, 400)
        proc.send_signal(signal.SIGTERM)
        for i in range(40):
            time.sleep(0.005)
            if proc.poll() is not None:
                break
            proc.send_signal(signal.SIGINT if i % 2 else signal.SIGTERM)
        err = proc.communicate(timeout=60)[1]
    finally:  # a run the signals did not end would go on for ever
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with open(os.path.join(exp, "result.json")) as f:
        result = json.load(f)
    ckpt = store.latest()
    assert result["last_checkpoint"] == ckpt.folder, err[-2000:]
    assert result["train_iter"] == ckpt.train_iter and result["env_steps"] == ckpt.meta["env_steps"]
    assert result["error"] == "KeyboardInterrupt: stopped by signal SIGTERM"
    assert not os.path.exists(os.path.join(exp, "run.lock"))
    assert list(tmp.iterdir()) == []
    assert "waits until the run's last checkpoint and result.json are written" in err


def test_resume_refuses_what_it_cannot_continue(tmp_path):
    exp = str(tmp_path / "nothing")
    os.makedirs(exp)
    with pytest.raises(ConfigError, match="no complete checkpoint"):
        serial_pipeline((_config(exp), create_config), seed=0, max_train_iter=10, resume=exp)
    serial_pipeline((_config(exp, freq=50), create_config), seed=0, max_train_iter=60, resume=None)
    done = [d for d in os.listdir(tmp_path) if d.startswith("nothing_")]  # a fresh folder beside
    (run_dir,) = done
    run_dir = str(tmp_path / run_dir)
    other = _config(run_dir)
    other["env"]["env_id"] = "Acrobot-v1"
    with pytest.raises(ConfigError, match="env.env_id='CartPole-v1'"):
        serial_pipeline((other, create_config), seed=0, max_train_iter=10, resume=run_dir)
    # a checkpoint of another format version is refused with the version it has
    ckpt = CheckpointStore(run_dir).latest()
    meta_path = os.path.join(ckpt.folder, "meta.json")
    with open(meta_path) as f:
        meta = json.load(f)
    meta["format_version"] = 99
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    with pytest.raises(DataFormatError, match="format version 99"):
        serial_pipeline((_config(run_dir), create_config), seed=0, max_train_iter=10, resume=run_dir)
