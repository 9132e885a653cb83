"""dizoo's env-class keys in ding_ray's gymnasium env: each acts as in DI-engine's env class, or is
refused as not supported yet (never as an unknown key)."""

import gymnasium as gym
import numpy as np
import pytest

from ding_ray.config import ConfigError, compile_config
from ding_ray.envs import GymnasiumEnv
from ding_ray.errors import EnvError


class FallEnv(gym.Env):
    """Reward -100 on the first step (a BipedalWalker fall), then 1 per step; 3 steps an episode."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Box(-1, 1, (2,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self._t += 1
        return np.zeros(2, np.float32), -100.0 if self._t == 1 else 1.0, self._t == 3, False, {}


def test_pendulum_continuous_false_is_eleven_actions_over_the_torque_range():
    """dizoo's PendulumEnv: index i -> 2i/10 - 1 in [-1, 1], then act_scale maps it onto [-2, 2]."""
    env = GymnasiumEnv(dict(env_id="Pendulum-v1", continuous=False, act_scale=True))
    assert env.action_space == gym.spaces.Discrete(11)
    env.seed(0)
    env.reset()
    for index, torque in ((0, -2.0), (5, 0.0), (8, 1.2), (10, 2.0)):
        env.step(np.array([index]))
        assert env.unwrapped.last_u == pytest.approx(torque)
    assert 0 <= int(env.random_action()) < 11
    unscaled = GymnasiumEnv(dict(env_id="Pendulum-v1", continuous=False))
    unscaled.reset()
    unscaled.step(0)
    assert unscaled.unwrapped.last_u == pytest.approx(-1.0)  # as dizoo's env without act_scale


def test_continuous_true_and_action_clip_on_pendulum():
    env = GymnasiumEnv(dict(env_id="Pendulum-v1", continuous=True, action_clip=True))
    assert isinstance(env.action_space, gym.spaces.Box)
    env.reset()
    env.step(np.array([1.7], np.float32))
    assert env.unwrapped.last_u == pytest.approx(1.0)  # clipped to [-1, 1] first


def test_continuous_where_the_env_has_no_such_variant_is_not_supported_yet():
    with pytest.raises(EnvError, match="continuous=True .* not supported yet"):
        GymnasiumEnv(dict(env_id="CartPole-v1", continuous=True))
    with pytest.raises(EnvError, match="continuous=False .* not supported yet"):
        GymnasiumEnv(dict(continuous=False), env=FallEnv())


def test_rew_clip_trains_on_minus_10_and_reports_the_real_return():
    env = GymnasiumEnv(dict(rew_clip=True), env=FallEnv())
    env.reset()
    rewards = [env.step(np.zeros(2, np.float32)) for _ in range(3)]
    assert [t.reward for t in rewards] == [-10.0, 1.0, 1.0]
    assert rewards[-1].info["eval_episode_return"] == -98.0


def test_frozen_lake_desc_map_name_and_is_slippery_go_to_gymnasium():
    big = GymnasiumEnv(dict(env_id="FrozenLake-v1", map_name="8x8"))
    assert big.observation_space.shape == (64,)
    tiny = GymnasiumEnv(dict(env_id="FrozenLake-v1", desc=["SF", "HG"], is_slippery=False))
    assert tiny.observation_space.shape == (4,)
    tiny.reset()
    timestep = tiny.step(2)  # right: from S onto F, never sliding elsewhere
    assert timestep.obs.argmax() == 1 and not timestep.done
    with pytest.raises(EnvError, match="map_name='8x8' is not supported for 'CartPole-v1'"):
        GymnasiumEnv(dict(env_id="CartPole-v1", map_name="8x8"))


def test_box2d_continuous_goes_to_gymnasium():
    pytest.importorskip("Box2D", reason='needs the box2d extra: pip install "ding_ray[box2d]"')
    lander = GymnasiumEnv(dict(env_id="LunarLander-v3", continuous=True))
    assert lander.action_space.shape == (2,)
    car = GymnasiumEnv(dict(env_id="CarRacing-v3", continuous=False))
    assert car.action_space == gym.spaces.Discrete(5)


def _compile(**env):
    main = dict(env=dict(env_id="CartPole-v1", **env), policy=dict(model=dict(obs_shape=4, action_shape=2)))
    return compile_config(main, auto=True, create_cfg=dict(policy=dict(type="dqn")), save_cfg=False)


def test_keys_that_leave_the_env_as_it_is_compile():
    cfg = _compile(
        norm_obs=dict(use_norm=False),
        norm_reward=dict(use_norm=False),
        env_wrapper="mujoco_default",
        delay_reward_step=1,
        save_replay_gif=False,
    )
    assert cfg.env.norm_obs.use_norm is False and cfg.env.env_wrapper == "mujoco_default"


@pytest.mark.parametrize(
    "key, value",
    [
        ("norm_obs", dict(use_norm=True)),
        ("norm_reward", dict(use_norm=True, reward_discount=0.99)),
        ("env_wrapper", "atari_default"),
        ("obs_plus_prev_action_reward", True),
        ("action_bins_per_branch", 4),
        ("delay_reward_step", 20),
        ("save_replay_gif", True),
    ],
)
def test_keys_the_env_cannot_act_on_are_not_supported_yet(key, value):
    with pytest.raises(ConfigError, match=rf"env\.{key}.* not supported yet") as caught:
        _compile(**{key: value})
    assert "Unknown" not in str(caught.value)
    with pytest.raises(ConfigError, match="not supported yet"):  # and when the env is built directly
        GymnasiumEnv(dict(env_id="CartPole-v1", **{key: value}))
