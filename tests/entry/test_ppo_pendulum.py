"""Continuous PPO learns Pendulum-v1 through serial_pipeline_onpolicy (examples/pendulum_ppo.py)."""

import copy
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from pendulum_ppo import create_config, main_config  # noqa: E402


def test_pendulum_ppo_improves_within_11k_env_steps(tmp_path, monkeypatch):
    """Seed 0: about -1350 at the start, -579 after 11,200 env steps (-250 at 18,400), ~6 s."""
    os.chdir(tmp_path)
    cfg = copy.deepcopy(main_config)
    cfg["exp_name"] = "pendulum_ppo_learn"
    result, returns = _run(cfg, 11_200, monkeypatch)
    assert result["pipeline"] == "serial_onpolicy" and result["env_steps"] == 11_200  # 14 collects of 800
    assert returns[0] < -1000, returns  # a random-ish Gaussian policy
    assert result["best_eval_return"] > -900, returns


def test_pendulum_ppo_with_obs_norm_checkpoints_the_statistics(tmp_path, monkeypatch):
    os.chdir(tmp_path)
    cfg = copy.deepcopy(main_config)
    cfg["exp_name"] = "pendulum_ppo_obs_norm"
    cfg["policy"]["obs_norm"] = True
    result, _ = _run(cfg, 1600, monkeypatch)
    assert result["train_iter"] == 2 * 130  # two collects of 10 epochs x 13 minibatches
    # the learner's final checkpoint and the evaluator's best one carry the statistics with the weights
    final = torch.load("pendulum_ppo_obs_norm/ckpt/ckpt_final.pth.tar", weights_only=True)
    assert float(final["model"]["obs_norm.count"]) == 1600  # two learn calls of 800 observations
    best = torch.load("pendulum_ppo_obs_norm/ckpt/ckpt_best.pth.tar", weights_only=True)
    assert {"obs_norm.mean", "obs_norm.var", "obs_norm.count"} <= set(best["model"])


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
