"""PPO learns CartPole through serial_pipeline_onpolicy; serial_pipeline refuses on-policy configs."""

import copy
import json
import os
import sys

import pytest

from ding_ray.config import ConfigError
from ding_ray.entry import serial_pipeline, serial_pipeline_onpolicy

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from cartpole_ppo import create_config, main_config  # noqa: E402


def test_cartpole_ppo_learns_well_above_random(tmp_path):
    os.chdir(tmp_path)
    cfg = copy.deepcopy(main_config)
    cfg["exp_name"] = "cartpole_ppo_learn"
    cfg["env"]["stop_value"] = 200  # a random policy scores about 22
    serial_pipeline_onpolicy((cfg, create_config), seed=0, max_env_step=20_000)
    result = json.load(open("cartpole_ppo_learn/result.json"))
    assert result["best_eval_return"] >= 200 and result["stop"], result
    assert result["pipeline"] == "serial_onpolicy"
    # 20 iterations (epochs of one 256-row minibatch) per collect call of n_sample = 256 transitions;
    # as DI-engine's collector does, each call ends by dropping every env's unfinished piece (under
    # 32 steps, 8 envs), so a call steps the envs at most 256 + 8 * 32 times
    collects = result["train_iter"] / 20
    assert collects == int(collects) and collects * 256 <= result["env_steps"] <= collects * (256 + 8 * 32)


def test_serial_pipeline_refuses_on_policy_configs(tmp_path):
    os.chdir(tmp_path)
    with pytest.raises(ConfigError, match="serial_pipeline_onpolicy"):
        serial_pipeline((main_config, create_config), seed=0, max_env_step=100)
    dqn_named_on_policy = copy.deepcopy(main_config)
    dqn_named_on_policy["policy"] = dict(on_policy=True)
    with pytest.raises(ConfigError, match="serial_pipeline_onpolicy"):
        serial_pipeline((dqn_named_on_policy, dict(policy=dict(type="dqn"))), seed=0, max_env_step=100)
    assert not os.listdir(tmp_path)  # refused before any folder was written
