"""SAC learns Pendulum through serial_pipeline; env.act_scale maps tanh actions onto the torque range."""

import copy
import json
import os
import sys

import gymnasium as gym
import numpy as np
import pytest

from ding_ray.entry import serial_pipeline
from ding_ray.envs import DingEnvWrapper, GymnasiumEnv
from ding_ray.errors import EnvError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from pendulum_sac import create_config, main_config  # noqa: E402


def test_act_scale_maps_unit_actions_onto_the_box_and_random_actions_span_the_box_as_in_di_engine():
    env = GymnasiumEnv(dict(env_id="Pendulum-v1", act_scale=True))
    env.seed(0)
    env.reset()
    for unit, torque in ((1.0, 2.0), (-0.5, -1.0), (7.0, 2.0)):  # out-of-range actions are clipped
        env.step(np.array([unit], np.float32))
        assert env.unwrapped.last_u == pytest.approx(torque)
    # DI-engine's warm-up samples the env's Box ([-2, 2]); the step clips them to [-1, 1] first
    randoms = np.stack([env.random_action() for _ in range(500)])
    assert randoms.shape == (500, 1) and randoms.dtype == np.float32
    assert randoms.min() >= -2 and randoms.max() <= 2 and randoms.max() > 1.9 and randoms.min() < -1.9
    plain = GymnasiumEnv(dict(env_id="Pendulum-v1"))
    plain.reset()
    plain.step(np.array([1.0], np.float32))
    assert plain.unwrapped.last_u == pytest.approx(1.0)  # passed through unchanged by default
    with pytest.raises(EnvError, match="act_scale=True needs a bounded Box"):
        GymnasiumEnv(dict(env_id="CartPole-v1", act_scale=True))
    wrapped = DingEnvWrapper(gym.make("Pendulum-v1"), dict(act_scale=True))  # dizoo's option, accepted
    wrapped.reset()
    wrapped.step(np.array([0.5], np.float32))
    assert wrapped.unwrapped.last_u == pytest.approx(1.0)


def test_pendulum_sac_learns_well_above_random(tmp_path):
    os.chdir(tmp_path)
    cfg = copy.deepcopy(main_config)
    cfg["exp_name"] = "pendulum_sac_learn"
    cfg["env"]["stop_value"] = -600  # a random policy scores about -1,200
    cfg["policy"]["eval"]["evaluator"]["eval_freq"] = 500
    serial_pipeline((cfg, create_config), seed=0, max_env_step=4000)
    result = json.load(open("pendulum_sac_learn/result.json"))
    assert result["stop"] and result["best_eval_return"] >= -600, result
    # one gradient step per env step after the random_collect_size=1000 random steps
    assert result["train_iter"] == result["env_steps"] - 1000


def test_sac_on_a_discrete_action_space_is_refused_by_name(tmp_path):
    os.chdir(tmp_path)
    cfg = copy.deepcopy(main_config)
    cfg["env"] = dict(env_id="CartPole-v1", collector_env_num=1, evaluator_env_num=1)
    cfg["policy"]["model"] = dict()
    with pytest.raises(EnvError, match="SACPolicy needs a continuous action space.*discrete"):
        serial_pipeline((cfg, create_config), seed=0, max_env_step=100)


def test_sac_on_a_wider_box_without_act_scale_is_a_clear_error(tmp_path):
    """Without env.act_scale SAC's [-1, 1] actions would reach only half of Pendulum's torque."""
    from ding_ray.config import ConfigError

    os.chdir(tmp_path)
    cfg = copy.deepcopy(main_config)
    cfg["env"]["act_scale"] = False
    with pytest.raises(ConfigError, match="env.act_scale=True"):
        serial_pipeline((cfg, create_config), seed=0, max_env_step=10)
