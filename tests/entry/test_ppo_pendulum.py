"""Continuous PPO learns Pendulum-v1 through serial_pipeline_onpolicy (examples/pendulum_ppo.py)."""

import copy
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from pendulum_ppo import create_config, main_config  # noqa: E402


def test_pendulum_ppo_improves_within_8k_env_steps(tmp_path, monkeypatch):
    """Seed 0: about -1350 at the start, -707 after 8,000 env steps (-250 at 15,200), ~5 s."""
    os.chdir(tmp_path)
    cfg = copy.deepcopy(main_config)
    cfg["exp_name"] = "pendulum_ppo_learn"
    result, returns = _run(cfg, 8000, monkeypatch)
    assert result["pipeline"] == "serial_onpolicy" and result["env_steps"] == 8000  # 10 collects of 800
    assert returns[0] < -1000, returns  # a random-ish Gaussian policy
    assert result["best_eval_return"] > -900, returns
    # the checkpoint carries the observation statistics with the weights
    ckpt = torch.load("pendulum_ppo_learn/ckpt/ckpt_best.pth.tar", weights_only=True)
    assert {"obs_norm.mean", "obs_norm.var", "obs_norm.count"} <= set(ckpt["model"])
    assert float(ckpt["model"]["obs_norm.count"]) > 0


def _run(cfg, max_env_step, monkeypatch):
    """``result.json`` and every evaluation's mean return."""
    from ding_ray.entry import serial_pipeline_onpolicy
    from ding_ray.worker.evaluator import InteractionSerialEvaluator

    returns = []
    original = InteractionSerialEvaluator.eval

    def recording_eval(self, *args, **kwargs):
        stop, info = original(self, *args, **kwargs)
        returns.append(info["eval_episode_return_mean"])
        return stop, info

    monkeypatch.setattr(InteractionSerialEvaluator, "eval", recording_eval)
    serial_pipeline_onpolicy((cfg, create_config), seed=0, max_env_step=max_env_step)
    return json.load(open(os.path.join(cfg["exp_name"], "result.json"))), returns
