"""DI-engine's own dizoo configs and call forms, run unchanged but for the env type and id.

Covered: dizoo's cartpole_dqn_config.py (file path and (main, create) forms, CartPole-v0 to 195),
acrobot_dqn_config.py (subprocess env manager, deque buffer, cuda=True on a CPU machine),
``compile_config``'s positional class form, ``env_setting``, and DI-engine's default keys.
"""

import glob
import json
import os

import gymnasium as gym
import numpy as np
import pytest
from easydict import EasyDict

from ding_ray.config import ConfigError, compile_config, read_config
from ding_ray.config.compile import check_priority_buffer
from ding_ray.entry import eval as eval_entry
from ding_ray.entry import serial_pipeline

CONFIGS = os.path.join(os.path.dirname(__file__), "configs")
CARTPOLE = os.path.join(CONFIGS, "cartpole_dqn_config.py")
ACROBOT = os.path.join(CONFIGS, "acrobot_dqn_config.py")


def _result(prefix: str) -> list[dict]:
    """result.json of every run whose folder starts with ``prefix``, oldest first."""
    paths = sorted(glob.glob(f"{prefix}*/result.json"), key=os.path.getmtime)
    return [json.load(open(p)) for p in paths]


def test_cartpole_config_file_learns_twice_in_one_folder_without_moviepy(tmp_path):
    """The flagship config: replay_path and load_path are there, moviepy is not installed, and
    the second run neither warm-starts from the first's checkpoint nor overwrites its folder."""
    os.chdir(tmp_path)
    serial_pipeline(CARTPOLE, seed=0, max_env_step=4000)
    assert os.path.isfile("cartpole_dqn_seed0/ckpt/ckpt_best.pth.tar")  # the config's load_path now exists
    serial_pipeline(CARTPOLE, seed=0, max_env_step=4000)
    first, second = _result("cartpole_dqn_seed0")
    assert first["stop"] and second["stop"]
    assert first["env_steps"] <= 2000  # DI-engine: 1,016 median over seeds 0-4
    assert second["env_steps"] == first["env_steps"] and second["train_iter"] == first["train_iter"]
    assert not os.path.exists("cartpole_dqn_seed0/video")  # training records no video
    # The eval entry is what reads load_path and replay_path; recording needs the video extra.
    from ding_ray.errors import EnvError

    with pytest.raises(EnvError, match=r"ding_ray\[video\]"):
        eval_entry(CARTPOLE, seed=0)
    main, create = read_config(CARTPOLE)
    main.env.pop("replay_path")
    assert eval_entry((main, create), seed=0) >= 195  # the best checkpoint reached the stop value


def test_acrobot_config_with_subprocess_manager_and_deque_buffer(tmp_path):
    os.chdir(tmp_path)
    main, create = read_config(ACROBOT)
    assert create.env_manager.type == "subprocess" and create.replay_buffer.type == "deque"
    serial_pipeline((main, create), seed=0, max_env_step=1500)
    (result,) = _result("acrobot_dqn_seed0")
    assert result["env_steps"] >= 1500 and result["train_iter"] >= 100
    cfg = json.load(open("acrobot_dqn_seed0/total_config.json"))
    assert (
        cfg["env"]["manager"]["type"] == "subprocess"
        and cfg["policy"]["other"]["replay_buffer"]["type"] == "deque"
    )


def test_compile_config_positional_class_form(tmp_path):
    """dizoo's *_main.py: compile_config(cfg, BaseEnvManager, DQNPolicy, BaseLearner, ...)."""
    os.chdir(tmp_path)
    from ding_ray.envs import BaseEnvManager
    from ding_ray.policy import DQNPolicy
    from ding_ray.worker import (
        AdvancedReplayBuffer,
        BaseLearner,
        InteractionSerialEvaluator,
        SampleSerialCollector,
    )

    main, _ = read_config(CARTPOLE)
    cfg = compile_config(
        main,
        BaseEnvManager,
        DQNPolicy,
        BaseLearner,
        SampleSerialCollector,
        InteractionSerialEvaluator,
        AdvancedReplayBuffer,
        save_cfg=True,
    )
    assert cfg.policy.type == "dqn" and cfg.env.manager.type == "base"
    assert cfg.policy.other.replay_buffer.type == "advanced" and "alpha" in cfg.policy.other.replay_buffer
    assert cfg.policy.other.replay_buffer.replay_buffer_size == 20000
    assert os.path.isfile("cartpole_dqn_seed0/total_config.json")
    again = compile_config(main, "base", "dqn", save_cfg=True, renew_dir=False)
    assert again.exp_name == "cartpole_dqn_seed0"
    renewed = compile_config(main, policy=DQNPolicy, save_cfg=True)  # DI-engine's renew_dir=True
    assert renewed.exp_name.startswith("cartpole_dqn_seed0_") and os.path.isdir(renewed.exp_name)


def test_create_config_default_buffer_is_advanced_and_priority_needs_it(tmp_path):
    os.chdir(tmp_path)
    main, create = read_config(CARTPOLE)
    create.pop("replay_buffer")
    cfg = compile_config(main, seed=0, auto=True, create_cfg=create, save_cfg=False)
    assert cfg.policy.other.replay_buffer.type == "advanced"
    main.policy.priority = True
    # compile_config accepts it (a framework script builds its own buffer); the entries that build
    # the config's buffer refuse it
    naive = compile_config(
        main, auto=True, create_cfg=dict(create, replay_buffer=dict(type="naive")), save_cfg=False
    )
    with pytest.raises(ConfigError, match="prioritized replay buffer"):
        check_priority_buffer(naive)
    deque = compile_config(
        main, auto=True, create_cfg=dict(create, replay_buffer=dict(type="deque")), save_cfg=False
    )
    with pytest.raises(ConfigError, match="'deque' with priority=False"):
        check_priority_buffer(deque)
    with pytest.raises(ConfigError, match="prioritized replay buffer"):
        serial_pipeline((main, dict(create, replay_buffer=dict(type="deque"))), seed=0)
    main.policy.other.replay_buffer.priority = True
    cfg = compile_config(
        main, auto=True, create_cfg=dict(create, replay_buffer=dict(type="deque")), save_cfg=False
    )
    assert cfg.policy.other.replay_buffer.priority is True
    check_priority_buffer(cfg)


class SquareEnv:
    """A user's own env class, unregistered, without default_config: reward 1 per step, 3 steps."""

    def __init__(self, cfg):
        self._cfg = cfg
        self.observation_space = gym.spaces.Box(-1, 1, (3,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def seed(self, seed, dynamic_seed=True):
        self._rng = np.random.default_rng(seed)

    def reset(self):
        self._t = 0
        return np.zeros(3, np.float32)

    def step(self, action):
        from ding_ray.envs import BaseEnvTimestep

        self._t += 1
        done = self._t >= self._cfg.length
        info = {"eval_episode_return": float(self._t)} if done else {}
        return BaseEnvTimestep(np.full(3, self._t / 3, np.float32), 1.0, done, info)

    def random_action(self):
        return int(self._rng.integers(2))

    def close(self):
        pass


def test_env_setting_uses_the_users_env_class(tmp_path):
    os.chdir(tmp_path)
    main, create = read_config(CARTPOLE)
    main.env.pop("env_id")
    main.env.stop_value = 3
    main.policy.model.obs_shape = 3
    cfgs = [EasyDict(length=3) for _ in range(2)]
    serial_pipeline((main, create), seed=0, env_setting=[SquareEnv, cfgs, cfgs], max_train_iter=5)
    (result,) = _result("cartpole_dqn_seed0")
    assert result["best_eval_return"] == 3.0 and result["train_iter"] >= 5  # the user's env ran


def test_di_engine_default_keys_are_accepted_and_act(tmp_path):
    """Keys of DI-engine's own defaults for the components ding_ray has."""
    os.chdir(tmp_path)
    main, create = read_config(CARTPOLE)
    main.policy.update(on_policy=False, bp_update_sync=True, traj_len_inf=False, priority_IS_weight=False)
    main.policy.learn.update(resume_training=False, ignore_done=False, target_theta=0.005)
    main.policy.model.update(dropout=0.1, norm_type="LN")
    main.policy.learn.learner = dict(
        train_iterations=int(1e9), dataloader=dict(num_workers=0), log_policy=True
    )
    main.policy.collect.update(unroll_len=1)
    main.policy.collect.collector = dict(deepcopy_obs=False, transform_obs=False, collect_print_freq=100)
    main.policy.eval.evaluator.update(render=dict(render_freq=-1, mode="train_iter"), figure_path=None)
    main.policy.other.commander = dict()
    main.env.manager = dict(
        episode_num=float("inf"),
        max_retry=1,
        retry_type="reset",
        auto_reset=True,
        step_timeout=None,
        reset_timeout=None,
        retry_waiting_time=0.1,
    )
    cfg = compile_config(main, auto=True, create_cfg=create, save_cfg=False)
    assert cfg.policy.model.norm_type == "LN"
    from ding_ray.policy import create_policy

    policy = create_policy(cfg.policy, enable_field=["learn"])
    assert any(
        "LayerNorm" in type(m).__name__ for m in policy.learn_mode.get_attribute("model").modules()
    )  # model keys act
    main.policy.multi_gpu = True
    with pytest.raises(ConfigError, match="multi_gpu=True trains data-parallel with a learner group"):
        serial_pipeline((main, create), seed=0, max_train_iter=1)


def test_discrete_observations_are_one_hot(tmp_path):
    """FrozenLake's observation is a state index: the policy sees a one-hot vector, never the index."""
    os.chdir(tmp_path)
    from ding_ray.envs import DingEnvWrapper, GymnasiumEnv

    env = GymnasiumEnv(dict(env_id="FrozenLake-v1"))
    assert env.observation_space.shape == (16,)
    obs = env.reset()
    assert obs.dtype == np.float32 and obs.sum() == 1.0 and obs[0] == 1.0
    wrapped = DingEnvWrapper(gym.make("Taxi-v4"), EasyDict(env_wrapper="default"))
    assert wrapped.observation_space.shape == (500,)
    main, create = read_config(CARTPOLE)
    main.env.env_id = "FrozenLake-v1"
    main.policy.model.update(obs_shape=16, action_shape=4)
    serial_pipeline((main, create), seed=0, max_env_step=300)
    main.policy.model.obs_shape = 1  # a config written for raw indices: a clear error, not an IndexError
    from ding_ray.errors import EnvError

    with pytest.raises(EnvError, match="obs_shape=16"):
        serial_pipeline((main, create), seed=0, max_env_step=100)


def test_episode_collector_from_create_config(tmp_path):
    """create_config collector=dict(type='episode') with policy.collect.n_episode."""
    os.chdir(tmp_path)
    main, create = read_config(CARTPOLE)
    create.collector = dict(type="episode")
    main.policy.collect = dict(n_episode=1)
    serial_pipeline((main, create), seed=0, max_env_step=8000)
    (result,) = _result("cartpole_dqn_seed0")
    assert result["stop"], result
    cfg = json.load(open("cartpole_dqn_seed0/total_config.json"))
    assert cfg["policy"]["collect"]["collector"]["type"] == "episode"
    assert cfg["policy"]["collect"]["collector"]["n_episode"] == 1
