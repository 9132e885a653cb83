"""DI-engine's dizoo cartpole_ppo_config.py through serial_pipeline_onpolicy, values unchanged."""

import json
import os

import pytest

from ding_ray.config import ConfigError, read_config
from ding_ray.entry import serial_pipeline, serial_pipeline_onpolicy

CARTPOLE_PPO = os.path.join(os.path.dirname(__file__), "configs", "cartpole_ppo_config.py")


def test_cartpole_ppo_config_file_reaches_its_stop_value(tmp_path):
    """Each collect of 256 trains 2 epochs x 4 minibatches of 64: 8 iterations, as DI-engine counts
    them, so eval_freq=100 evaluates every 13 collects (3,328 env steps) rather than every 100."""
    os.chdir(tmp_path)
    serial_pipeline_onpolicy(CARTPOLE_PPO, seed=0, max_env_step=30_000)
    result = json.load(open("cartpole_ppo_seed0/result.json"))
    assert result["stop"] and result["best_eval_return"] >= 195, result
    assert result["train_iter"] % 8 == 0 and result["pipeline"] == "serial_onpolicy"
    # DI-engine 0.5.3 (bench_dizoo_parity, seeds 0-2): 21,736 / 13,904 / 13,432; ding_ray seed 0: 12,816
    assert result["env_steps"] < 15_000
    cfg = json.load(open("cartpole_ppo_seed0/total_config.json"))
    learn = cfg["policy"]["learn"]
    assert cfg["policy"]["type"] == "ppo" and cfg["policy"]["on_policy"] is True
    assert learn["value_norm"] is True and learn["ppo_param_init"] is True and learn["epoch_per_collect"] == 2
    assert os.path.isfile("cartpole_ppo_seed0/ckpt/ckpt_best.pth.tar")


def test_command_policy_type_and_the_wrong_entry(tmp_path):
    os.chdir(tmp_path)
    main, create = read_config(CARTPOLE_PPO)
    create.policy.type = "ppo_command"  # what DI-engine's serial_pipeline_onpolicy asks for
    serial_pipeline_onpolicy((main, create), seed=0, max_env_step=1000)
    result = json.load(open("cartpole_ppo_seed0/result.json"))
    # collects of 256 samples, 8 gradient steps each; each collect also steps past its samples where
    # it drops the envs' unfinished pieces (under 32 steps each of 8 envs), as DI-engine's does
    collects = result["train_iter"] // 8
    assert result["env_steps"] >= 1000 and result["train_iter"] == collects * 8
    assert collects * 256 <= result["env_steps"] <= collects * (256 + 8 * 32)
    with pytest.raises(ConfigError, match="serial_pipeline_onpolicy"):
        serial_pipeline(CARTPOLE_PPO, seed=0)


PENDULUM_PPO = os.path.join(os.path.dirname(__file__), "configs", "pendulum_ppo_config.py")


def test_pendulum_ppo_config_file_runs_continuous_ppo(tmp_path):
    """One collect call of n_sample=5000 (10 envs: whole 200-step episodes, 6,000 env steps) and
    one learn call of 10 epochs of 157 minibatches of 32: 1,570 iterations, DI-engine's count; the
    tanh-bounded Gaussian acts through env.act_scale."""
    os.chdir(tmp_path)
    serial_pipeline_onpolicy(PENDULUM_PPO, seed=0, max_env_step=5000)
    result = json.load(open("pendulum_ppo_seed0/result.json"))
    assert result["train_iter"] == 1570 and result["env_steps"] == 6000, result
    assert -2000 < result["best_eval_return"] < 0
    cfg = json.load(open("pendulum_ppo_seed0/total_config.json"))
    policy = cfg["policy"]
    assert policy["action_space"] == "continuous" and policy["model"]["bound_type"] == "tanh"
    assert policy["obs_norm"] is False and cfg["env"]["act_scale"] is True
