"""DI-engine's env-side API in its own forms: ``DingEnvWrapper``'s reward array and ``reward_space``,
``get_vec_env_setting``'s ``collect``/``eval_``, the base manager's ``copy_on_get`` key, and
``ding_ray.framework.Parallel`` refused with what to use instead."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from easydict import EasyDict

import tests.fakes  # noqa: F401 - registers the countdown env
from ding_ray.envs import DingEnvWrapper, create_env_manager, get_vec_env_setting
from ding_ray.worker.env_stepper import EnvStepper


def countdown_wrapper() -> DingEnvWrapper:  # reward 1 per step, 5 steps an episode
    return DingEnvWrapper(gym.make("Countdown-v0", disable_env_checker=True), EasyDict(env_wrapper="default"))


def test_reward_is_a_float32_array_of_one_element_and_reward_space_a_box_of_that_shape():
    env = countdown_wrapper()
    assert env.reward_space == gym.spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float32)
    env.reset()
    timestep = env.step(0)
    assert isinstance(timestep.reward, np.ndarray)
    assert (timestep.reward.shape, timestep.reward.dtype) == ((1,), np.float32)
    assert timestep.reward.item() == 1.0
    assert timestep.reward in env.reward_space
    env.close()


def test_the_env_stepper_hands_one_element_rewards_on_as_floats():
    # (the collectors add them up per episode; tests/compat/test_main_loops runs dizoo's loop on them)
    manager = create_env_manager(dict(type="base_v2", copy_on_get=False), [countdown_wrapper] * 2)
    manager.seed(0)
    manager.launch()
    stepper = EnvStepper(manager)
    batch = stepper.act(lambda obs: {i: {"action": 0} for i in obs}, stepper.ready_obs())
    assert [t.reward for t in batch.timesteps] == [1.0, 1.0]
    assert all(type(t.reward) is float for t in batch.timesteps)

    manager.close()


def test_get_vec_env_setting_leaves_out_what_is_not_asked_for():
    cfg = dict(env_id="Countdown-v0", collector_env_num=3, evaluator_env_num=2)
    env_fn, collector, evaluator = get_vec_env_setting(cfg)
    assert (len(collector), len(evaluator)) == (3, 2)
    assert get_vec_env_setting(cfg, collect=False)[1:] == (None, evaluator)
    assert get_vec_env_setting(cfg, eval_=False)[1:] == (collector, None)
    # without collector_env_num: only evaluator configs are asked for
    assert get_vec_env_setting(dict(env_id="Countdown-v0", evaluator_env_num=1), collect=False)[1] is None


def test_parallel_is_refused_with_what_to_use_instead():
    with pytest.raises(ImportError, match="ray_pipeline"):
        from ding_ray.framework import Parallel  # noqa: F401
