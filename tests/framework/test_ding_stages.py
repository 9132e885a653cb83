"""Stages DI-engine's framework scripts use under their DI-engine names: ``CkptSaver``, the
exchangers, ``nstep_reward_enhancer`` and ``final_ctx_saver``."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from easydict import EasyDict

from ding_ray.errors import StageError
from ding_ray.framework import OnlineRLContext, Task, current_task
from ding_ray.framework.middleware import (
    CkptSaver,
    final_ctx_saver,
    nstep_reward_enhancer,
)
from ding_ray.policy import create_policy
from tests.framework.test_collect_train_eval import compiled


@pytest.mark.parametrize("save_dir", ["run", os.path.join("run", "ckpt")])
def test_ckpt_saver_takes_di_engine_arguments(tmp_path, save_dir):
    policy = create_policy(compiled(tmp_path).policy)

    def _train(ctx):
        ctx.eval_value = float(ctx.total_step)
        ctx.train_iter += 60

    with Task(OnlineRLContext()) as task:
        task.use(_train)
        task.use(CkptSaver(policy, str(tmp_path / save_dir), train_freq=100))
        task.run(max_step=4)
    files = sorted(os.listdir(tmp_path / "run" / "ckpt"))  # "ckpt" is not doubled
    assert files == ["eval.pth.tar", "final.pth.tar", "iteration_120.pth.tar", "iteration_240.pth.tar"]
    assert "model" in torch.load(tmp_path / "run" / "ckpt" / "final.pth.tar", weights_only=True)


EXCHANGERS = """
import logging, torch
from ding_ray.framework import OnlineRLContext
from ding_ray.framework.middleware import ContextExchanger, ModelExchanger

logging.basicConfig(level=logging.INFO, format="%(name)s|%(message)s", force=True)
ctx = OnlineRLContext(env_step=3)
stages = [ContextExchanger(skip_n_iter=1), ModelExchanger(torch.nn.Linear(2, 2)), ContextExchanger()]
for stage in stages:
    assert stage(ctx) is None
assert ctx == OnlineRLContext(env_step=3)
"""


def test_exchangers_do_nothing_in_one_process_and_say_why_once():
    """In a process of its own, so that no earlier test has had the exchangers say why already."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    run = subprocess.run(
        [sys.executable, "-c", EXCHANGERS], capture_output=True, text=True, timeout=120, cwd=root
    )
    assert run.returncode == 0, run.stderr
    logger = "ding_ray.compat.exchange|"
    messages = [line[len(logger) :] for line in run.stderr.splitlines() if line.startswith(logger)]
    assert len(messages) == 2 and "ContextExchanger does nothing" in messages[0]
    assert "ModelExchanger does nothing" in messages[1] and "Ray" in messages[1]


def transition(t, done=False):
    return {"obs": np.float32([t]), "next_obs": np.float32([t + 1]), "reward": np.float32(t), "done": done}


def test_nstep_reward_enhancer_builds_windows_within_each_trajectory():
    cfg = EasyDict(policy=dict(nstep=3, discount_factor=0.5))
    # env 0: an episode of 2 steps ending in a terminal step, then 2 steps cut by the collect;
    # env 1: 4 steps cut by the collect
    trajectories = [transition(1), transition(2, done=True), transition(10), transition(11)]
    trajectories += [transition(20), transition(21), transition(22), transition(23)]
    ctx = OnlineRLContext(trajectories=trajectories, trajectory_end_idx=[1, 3, 7])
    nstep_reward_enhancer(cfg)(ctx)
    samples = ctx.trajectories
    assert [s["reward"].tolist() for s in samples] == [
        [1, 2, 0],
        [2, 0, 0],
        [10, 11, 0],
        [11, 0, 0],
        [20, 21, 22],
        [21, 22, 23],
        [22, 23, 0],
        [23, 0, 0],
    ]
    assert [float(s["value_gamma"]) for s in samples] == [0.25, 0.5, 0.25, 0.5, 0.125, 0.125, 0.25, 0.5]
    # the bootstrap is the state after the window's last step, and its end
    assert [float(s["next_obs"][0]) for s in samples] == [3, 3, 12, 12, 23, 24, 24, 24]
    assert [s["done"] for s in samples] == [True, True, False, False, False, False, False, False]
    assert trajectories[0]["reward"] == 1  # the collected transitions are left as they were


def run_with_saver(tmp_path, fail=False):
    def _stage(ctx):
        ctx.env_step += 8
        ctx.train_iter += 2
        if ctx.total_step == 1:
            ctx.last_eval_iter, ctx.last_eval_value = ctx.train_iter, 195.0
            current_task().finish = True  # the run ends before final_ctx_saver is reached
        if fail:
            raise RuntimeError("boom")

    with Task(OnlineRLContext()) as task:
        task.use(_stage)
        task.use(final_ctx_saver(str(tmp_path)))
        task.run(max_step=10)


def test_final_ctx_saver_records_the_last_iteration_as_json(tmp_path):
    run_with_saver(tmp_path)
    record = json.loads((tmp_path / "final_ctx.json").read_text())
    assert record == {
        "total_step": 1,
        "train_iter": 4,
        "last_eval_iter": 4,
        "eval_value": 195.0,
        "env_step": 16,
        "env_episode": 0,
    }


def test_final_ctx_saver_writes_nothing_after_an_error(tmp_path):
    with pytest.raises(StageError, match="boom"):
        run_with_saver(tmp_path, fail=True)
    assert not (tmp_path / "final_ctx.json").exists()
