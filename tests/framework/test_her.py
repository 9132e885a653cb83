"""HerRewardModel and her_data_enhancer on a goal-conditioned bit-flipping env written here."""

import logging

import gymnasium as gym
import numpy as np
import pytest
from easydict import EasyDict

from ding_ray.config import compile_config
from ding_ray.data import EpisodeReplayBuffer
from ding_ray.errors import ConfigError, ShapeError
from ding_ray.framework import OnlineRLContext, Task
from ding_ray.framework.middleware import HERLearner, data_pusher, her_data_enhancer
from ding_ray.policy import create_policy
from ding_ray.reward_model import HerRewardModel


class BitFlipEnv(gym.Env):
    """Flip one of ``n`` bits per step until they equal the goal; reward 1 on success, else 0.

    Observations are gymnasium-robotics' goal dicts (``observation``, ``achieved_goal``,
    ``desired_goal``) or, with ``flat``, DI-engine's ``concat(state, goal)``.
    """

    def __init__(self, n=4, flat=False):
        self.n, self.flat = n, flat
        bits = gym.spaces.MultiBinary(n)
        if flat:
            self.observation_space = gym.spaces.MultiBinary(2 * n)
        else:
            self.observation_space = gym.spaces.Dict(observation=bits, achieved_goal=bits, desired_goal=bits)
        self.action_space = gym.spaces.Discrete(n)

    def _obs(self):
        if self.flat:
            return np.concatenate([self.state, self.goal]).astype(np.float32)
        return {
            "observation": self.state.copy(),
            "achieved_goal": self.state.copy(),
            "desired_goal": self.goal.copy(),
        }

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.state = self.np_random.integers(0, 2, self.n).astype(np.int8)
        self.goal = self.np_random.integers(0, 2, self.n).astype(np.int8)
        while np.array_equal(self.state, self.goal):
            self.goal = self.np_random.integers(0, 2, self.n).astype(np.int8)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.state[action] ^= 1
        self.t += 1
        success = bool(np.array_equal(self.state, self.goal))
        return self._obs(), float(success), success, self.t >= self.n, {}


def episodes(n_episodes=4, seed=0, **env_kwargs):
    """Episodes of random bit flips, as transition dicts (the failures HER learns from)."""
    env = BitFlipEnv(**env_kwargs)
    env.action_space.seed(seed)
    out = []
    for i in range(n_episodes):
        obs, _ = env.reset(seed=seed + i)
        episode, over = [], False
        while not over:
            action = env.action_space.sample()
            next_obs, reward, terminated, truncated, _ = env.step(action)
            episode.append(
                dict(obs=obs, next_obs=next_obs, action=np.int64(action), reward=reward, done=terminated)
            )
            obs, over = next_obs, terminated or truncated
        out.append(episode)
    return out


def her(**cfg):
    model = HerRewardModel(EasyDict(cfg))
    model.seed(0)
    return model


# ------------------------------------------------------------------------------ reward model
@pytest.mark.parametrize("strategy", ["future", "final", "episode"])
def test_relabelled_goals_are_goals_the_episode_reached(strategy):
    episode = episodes(1, n=6)[0]
    before = [{**t, "obs": dict(t["obs"])} for t in episode]
    new = her(her_strategy=strategy, her_replay_k=3).estimate(episode)
    reached = [t["next_obs"]["achieved_goal"] for t in episode]
    assert len(new) == 3 and all(len(copy) == len(episode) for copy in new)
    for copy in new:
        for idx, (t, original) in enumerate(zip(copy, episode, strict=True)):
            goal = t["obs"]["desired_goal"]
            assert np.array_equal(goal, t["next_obs"]["desired_goal"]) and goal.dtype == np.int8
            candidates = {"final": reached[-1:], "future": reached[idx:], "episode": reached}[strategy]
            assert any(np.array_equal(goal, g) for g in candidates)
            assert t["reward"] == float(np.array_equal(reached[idx], goal))
            assert np.array_equal(t["obs"]["observation"], original["obs"]["observation"])
            assert t["action"] == original["action"] and t["done"] == original["done"]
    if strategy == "final":  # the last step reaches its own final goal by definition
        assert all(copy[-1]["reward"] == 1.0 for copy in new)
    for t, b in zip(episode, before, strict=True):  # the original episode is untouched
        assert (
            np.array_equal(t["obs"]["desired_goal"], b["obs"]["desired_goal"]) and t["reward"] == b["reward"]
        )


def test_flat_observations_split_in_half_as_di_engine_does():
    episode = episodes(1, n=5, flat=True)[0]
    copy = her(her_strategy="final").estimate(episode)[0]
    final_state = episode[-1]["next_obs"][:5]
    for t, original in zip(copy, episode, strict=True):
        assert t["obs"].shape == (10,) and np.array_equal(t["obs"][5:], final_state)
        assert np.array_equal(t["obs"][:5], original["obs"][:5])
        assert t["reward"] == float(np.array_equal(t["next_obs"][:5], final_state))


def test_sample_per_episode_and_custom_functions():
    episode = episodes(1, n=6)[0]
    model = her(her_strategy="future", her_replay_k=2, sample_per_episode=3)
    new = model.estimate(
        episode, goal_reward_func=lambda achieved, goal: -float(np.abs(achieved - goal).sum())
    )
    assert [len(c) for c in new] == [3, 3] and all(t["reward"] <= 0 for c in new for t in c)
    assert model.sample_per_episode == 3 and model.episode_size is None


def test_bad_config_and_observations_are_clear_errors():
    with pytest.raises(ConfigError, match="her_strategy"):
        HerRewardModel(EasyDict(her_strategy="past"))
    with pytest.raises(ConfigError, match="her_replay_k"):
        HerRewardModel(EasyDict(her_strategy="future", her_replay_k=0))
    with pytest.raises(ConfigError):
        HerRewardModel(EasyDict(her_strategy="future", her_k=2))  # unknown key
    with pytest.raises(ShapeError, match="achieved_goal"):
        her().estimate([dict(obs={"observation": 1}, next_obs={"observation": 2}, reward=0.0)])


# ------------------------------------------------------------------------------ enhancer stage
def test_her_data_enhancer_trains_on_relabelled_episodes(caplog):
    buffer = EpisodeReplayBuffer(dict(replay_buffer_size=10))
    model = her(her_strategy="future", her_replay_k=2, episode_size=3)
    cfg = EasyDict(policy=dict(learn=dict(batch_size=64)))
    with caplog.at_level(logging.WARNING), Task(OnlineRLContext()) as task:
        task.use(her_data_enhancer(cfg, buffer, model))
        task.run(max_step=1)
        assert task.ctx.train_data is None and "cannot serve 3 episodes" in caplog.text

    collected = episodes(4, n=4)
    with Task(OnlineRLContext(episodes=collected)) as task:
        task.use(data_pusher(cfg, buffer)).use(her_data_enhancer(cfg, buffer, model))
        task.run(max_step=1)
        data = task.ctx.train_data
    lengths = {len(e) for e in collected}
    assert buffer.count() == 4 and len(data) >= 2 * 3 * min(lengths) and len(data) <= 2 * 3 * max(lengths)
    assert all(set(t) == {"obs", "next_obs", "action", "reward", "done"} for t in data)
    assert any(t["reward"] == 1.0 for t in data)  # hindsight goals give successes
    assert all(
        t["reward"] == float(np.array_equal(t["next_obs"]["achieved_goal"], t["obs"]["desired_goal"]))
        for t in data
    )


def test_enhancer_falls_back_to_the_batch_size_for_the_episode_count():
    buffer = EpisodeReplayBuffer(dict(replay_buffer_size=10))
    buffer.push(episodes(5, n=4, flat=True), 0)
    model = her(her_strategy="final", sample_per_episode=2)
    with Task(OnlineRLContext()) as task:
        task.use(her_data_enhancer(EasyDict(policy=dict(learn=dict(batch_size=4))), buffer, model))
        task.run(max_step=1)
        assert len(task.ctx.train_data) == 4 * 2  # 4 episodes (batch_size), 2 transitions each


def test_her_learner_trains_update_per_collect_rounds_on_relabelled_episodes():
    main = dict(
        env=dict(env_id="CartPole-v1", collector_env_num=1, evaluator_env_num=1),
        policy=dict(model=dict(obs_shape=8, action_shape=4), learn=dict(update_per_collect=3, batch_size=2)),
    )
    cfg = compile_config(main, seed=0, create_cfg=dict(policy=dict(type="dqn")), save_cfg=False)
    policy = create_policy(cfg.policy, enable_field=["learn"])
    buffer = EpisodeReplayBuffer(dict(replay_buffer_size=10))
    learner = HERLearner(cfg, policy.learn_mode, buffer, her(her_strategy="final", sample_per_episode=4))
    with Task(OnlineRLContext()) as task:  # no episodes yet: no round trains
        task.use(learner)
        task.run(max_step=1)
        assert task.ctx.train_output == [] and task.ctx.train_iter == 0
    buffer.push(episodes(3, n=4, flat=True), 0)
    with Task(OnlineRLContext()) as task:
        task.use(learner)
        task.run(max_step=1)
        assert task.ctx.train_iter == 3 and len(task.ctx.train_output) == 3
        assert len(task.ctx.train_data) == 2 * 4  # the last round's 2 episodes, 4 relabelled steps each
        assert all(np.isfinite(out["total_loss"]) for out in task.ctx.train_output)
