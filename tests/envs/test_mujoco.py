"""MuJoCo Hopper-v5 through ding_ray's env creation and SAC's serial pipeline (the ``mujoco`` extra)."""

import copy
import json
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from ding_ray.configs import load_config
from ding_ray.entry import serial_pipeline
from ding_ray.envs.gymnasium_env import BaseEnvTimestep, get_vec_env_setting

pytest.importorskip("mujoco", reason='needs the mujoco extra: pip install "ding_ray[mujoco]"')


def test_hopper_builds_from_the_bundled_config_with_its_spaces_and_steps():
    bundled = load_config("hopper_sac")
    env_section = dict(bundled.main_config.env, type=bundled.create_config.env.type)
    env_cls, collector_cfgs, evaluator_cfgs = get_vec_env_setting(env_section)
    assert len(collector_cfgs) == 1 and len(evaluator_cfgs) == 5
    env = env_cls(collector_cfgs[0])
    env.seed(0)
    obs = env.reset()
    assert obs.shape == (11,) == env.observation_space.shape
    assert isinstance(env.action_space, gym.spaces.Box) and env.action_space.shape == (3,)
    # the shapes the bundled model is built with
    assert bundled.main_config.policy.model.obs_shape == 11
    assert bundled.main_config.policy.model.action_shape == 3
    action = np.array([0.5, -1.0, 0.25], np.float32)
    timestep = env.step(action)
    assert isinstance(timestep, BaseEnvTimestep) and timestep.obs.shape == (11,)
    assert np.isfinite(timestep.obs).all() and isinstance(timestep.reward, float)
    # Hopper's Box is [-1, 1]: act_scale's affine map leaves SAC's tanh actions as they are
    np.testing.assert_allclose(env.unwrapped.data.ctrl, action, rtol=1e-6)
    for _ in range(1000):  # a random policy falls over long before the 1,000-step time limit
        timestep = env.step(env.random_action())
        if timestep.done:
            break
    assert timestep.done and not timestep.info["truncated"]
    assert timestep.info["eval_episode_return"] > 0
    env.close()


def test_a_tiny_hopper_sac_run_trains_and_writes_its_result(tmp_path):
    os.chdir(tmp_path)
    bundled = load_config("hopper_sac")
    cfg = copy.deepcopy(bundled.main_config)
    cfg.exp_name = "hopper_tiny"
    cfg.env.update(evaluator_env_num=1, n_evaluator_episode=1, max_episode_steps=200)
    cfg.policy.random_collect_size = 200
    cfg.policy.learn.batch_size = 32
    cfg.policy.eval.evaluator.eval_freq = 100
    serial_pipeline((cfg, bundled.create_config), seed=0, max_env_step=400)
    result = json.loads((tmp_path / "hopper_tiny" / "result.json").read_text())
    assert result["env_steps"] == 400 and result["pipeline"] == "serial"
    # one gradient step per env step after the random ones
    assert result["train_iter"] == result["env_steps"] - 200
    assert np.isfinite(result["best_eval_return"])


def test_a_missing_mujoco_names_the_extra():
    # ``sys.modules[name] = None`` makes Python's import of that name fail, as if it were not
    # installed; in a fresh interpreter, since this one has gymnasium's MuJoCo modules loaded.
    code = (
        "import sys; sys.modules['mujoco'] = None\n"
        "from ding_ray.envs.gymnasium_env import make_gymnasium\n"
        "make_gymnasium('Hopper-v5')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "EnvError: Env 'Hopper-v5' needs the mujoco extra: pip install \"ding_ray[mujoco]\"" in proc.stderr
