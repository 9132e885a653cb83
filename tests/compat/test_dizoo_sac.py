"""DI-engine's dizoo pendulum_sac_config.py through serial_pipeline, values unchanged."""

import json
import os

import pytest

from ding_ray.config import read_config
from ding_ray.entry import serial_pipeline

PENDULUM_SAC = os.path.join(os.path.dirname(__file__), "configs", "pendulum_sac_config.py")


def test_pendulum_sac_config_runs_with_di_engine_s_counters(tmp_path):
    """10 envs, n_sample=10, update_per_collect=1: one train iteration per 10 env steps after the
    1,000 random ones, and eval_freq=100 iterations puts an evaluation every 1,000 env steps."""
    os.chdir(tmp_path)
    serial_pipeline(PENDULUM_SAC, seed=0, max_env_step=3000)
    result = json.load(open("pendulum_sac_seed0/result.json"))
    assert result["env_steps"] == 3000 and result["train_iter"] == 200 and not result["stop"]
    cfg = json.load(open("pendulum_sac_seed0/total_config.json"))
    policy = cfg["policy"]
    assert policy["type"] == "sac" and cfg["env"]["act_scale"] is True
    assert policy["model"]["twin_critic"] is True and policy["learn"]["ignore_done"] is True
    assert policy["learn"]["learning_rate_alpha"] == 0.0003 and policy["random_collect_size"] == 1000
    assert os.path.isfile("pendulum_sac_seed0/ckpt/ckpt_best.pth.tar")


@pytest.mark.slow
def test_pendulum_sac_config_reaches_its_stop_value_as_di_engine_does(tmp_path):
    """DI-engine's own run of this config: -250 after 33-34k env steps; here 32k (seed 0)."""
    os.chdir(tmp_path)
    main, create = read_config(PENDULUM_SAC)
    serial_pipeline((main, create), seed=0, max_env_step=40_000)
    result = json.load(open("pendulum_sac_seed0/result.json"))
    assert result["stop"] and result["best_eval_return"] >= -250, result
