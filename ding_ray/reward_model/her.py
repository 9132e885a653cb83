"""Hindsight Experience Replay (Andrychowicz et al., 2017): relabel episodes with goals they reached.

In a goal-conditioned task a failed episode still shows how to reach the goals it did reach.
``HerRewardModel.estimate`` copies each transition with its desired goal replaced by a goal the
episode achieved (at the end, later on, or anywhere in it) and recomputes the reward for that
goal, so sparse-reward tasks get successful examples from the start.

Two observation layouts are understood without help:

- a dict with ``observation``, ``achieved_goal`` and ``desired_goal`` (gymnasium-robotics'
  goal-conditioned envs): the new goal is written to ``desired_goal``;
- a flat array ``concat(state, goal)`` (DI-engine's default, e.g. its bit-flip env), where the
  achieved goal is the state itself.

Other layouts pass ``split_func`` / ``merge_func``; other rewards pass ``goal_reward_func``
(e.g. a gymnasium-robotics env's ``compute_reward``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from easydict import EasyDict

from ding_ray.config.merge import default_config_of, merge_config
from ding_ray.data.columnar import to_numpy
from ding_ray.errors import ConfigError, ShapeError

STRATEGIES = ("final", "future", "episode")
GOAL_KEYS = ("observation", "achieved_goal", "desired_goal")


class HerRewardModel:
    """Makes ``her_replay_k`` relabelled copies of an episode (or of ``sample_per_episode`` of its
    transitions); ``episode_size`` is how many episodes ``her_data_enhancer`` samples at a time.

    With ``episode_size * sample_per_episode`` set, a training batch has a known size whatever the
    episode lengths, which DI-engine recommends. Goals are drawn with the model's own generator,
    seeded from numpy's global one (``seed`` fixes it).
    """

    config = dict(
        type="her",
        her_strategy="future",  # where the new goal comes from: 'final', 'future' or 'episode' step
        her_replay_k=1,  # relabelled copies made of each transition
        episode_size=None,  # episodes sampled per training iteration (None: policy.learn.batch_size)
        sample_per_episode=None,  # transitions relabelled per episode, drawn at random (None: all)
    )

    def __init__(self, cfg: Mapping | None = None, cuda: bool = False) -> None:
        self._cfg = merge_config(default_config_of(type(self)), cfg, "reward_model")
        if self._cfg.her_strategy not in STRATEGIES:
            raise ConfigError(
                f"reward_model.her_strategy must be one of {list(STRATEGIES)}, "
                f"got {self._cfg.her_strategy!r}."
            )
        for key in ("her_replay_k", "episode_size", "sample_per_episode"):
            value = self._cfg[key]
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ConfigError(f"reward_model.{key} must be a positive integer, got {value!r}.")
        self._cuda = cuda  # kept for DI-engine's signature: relabelled data is numpy, on no device
        self._rng = np.random.default_rng(np.random.randint(2**31))

    @classmethod
    def default_config(cls) -> EasyDict:
        return default_config_of(cls)

    def seed(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    @property
    def episode_size(self) -> int | None:
        return self._cfg.episode_size

    @property
    def sample_per_episode(self) -> int | None:
        return self._cfg.sample_per_episode

    def estimate(
        self,
        episode: list[dict[str, Any]],
        merge_func: Callable | None = None,
        split_func: Callable | None = None,
        goal_reward_func: Callable | None = None,
    ) -> list[list[dict[str, Any]]]:
        """``her_replay_k`` lists of relabelled transitions of ``episode``; the episode is not changed.

        ``split_func(obs) -> (obs, desired_goal, achieved_goal)``, ``merge_func(obs, goal) -> obs``
        and ``goal_reward_func(achieved_goal, desired_goal) -> reward`` replace the defaults.
        The reward of a relabelled transition is that of the goal achieved at its ``next_obs``.
        """
        split = split_func or default_split
        merge = merge_func or default_merge
        reward_of = goal_reward_func or default_goal_reward
        n = len(episode)
        if n == 0:
            return [[] for _ in range(self._cfg.her_replay_k)]
        achieved = [split(t["next_obs"])[2] for t in episode]  # goal reached after each step
        if self.sample_per_episode is None:
            indices = np.arange(n)
        else:
            indices = self._rng.integers(0, n, self.sample_per_episode)
        new_episodes: list[list[dict[str, Any]]] = [[] for _ in range(self._cfg.her_replay_k)]
        for idx in indices:
            transition = episode[idx]
            obs = split(transition["obs"])[0]
            next_obs = split(transition["next_obs"])[0]
            for copy_list in new_episodes:
                goal = achieved[self._goal_index(int(idx), n)]
                relabelled = {
                    k: copy.deepcopy(v)
                    for k, v in transition.items()
                    if k not in ("obs", "next_obs", "reward")
                }
                relabelled["obs"] = merge(obs, goal)
                relabelled["next_obs"] = merge(next_obs, goal)
                relabelled["reward"] = reward_of(achieved[idx], goal)
                copy_list.append(relabelled)
        return new_episodes

    def _goal_index(self, idx: int, n: int) -> int:
        strategy = self._cfg.her_strategy
        if strategy == "final":
            return n - 1
        if strategy == "future":
            return int(self._rng.integers(idx, n))
        return int(self._rng.integers(0, n))


def default_split(obs: Any) -> tuple[Any, Any, Any]:
    """``(obs, desired_goal, achieved_goal)`` of a goal dict or of a flat ``concat(state, goal)``."""
    if isinstance(obs, Mapping):
        missing = [k for k in GOAL_KEYS if k not in obs]
        if missing:
            raise ShapeError(
                f"A goal-conditioned observation dict needs the keys {list(GOAL_KEYS)}; {missing} are "
                "missing. Pass split_func/merge_func for another layout."
            )
        return obs, np.asarray(to_numpy(obs["desired_goal"])), np.asarray(to_numpy(obs["achieved_goal"]))
    flat = np.asarray(to_numpy(obs))
    if flat.ndim != 1 or len(flat) % 2:
        raise ShapeError(
            f"The default HER split halves a flat observation into (state, goal); got shape {flat.shape}. "
            "Use dict observations with 'achieved_goal'/'desired_goal', or pass split_func/merge_func."
        )
    state, goal = np.split(flat, 2)
    return state, goal, state


def default_merge(obs: Any, goal: Any) -> Any:
    """``obs`` with ``goal`` as its desired goal: a new dict, or ``concat(state, goal)``."""
    if isinstance(obs, Mapping):
        desired = np.asarray(to_numpy(obs["desired_goal"]))
        return {**copy.deepcopy(dict(obs)), "desired_goal": np.asarray(goal, dtype=desired.dtype).copy()}
    return np.concatenate([obs, np.asarray(goal, dtype=np.asarray(obs).dtype)])


def default_goal_reward(achieved_goal: Any, desired_goal: Any) -> np.float32:
    """1 when the achieved goal equals the desired one, else 0 (DI-engine's default)."""
    return np.float32(np.array_equal(np.asarray(achieved_goal), np.asarray(desired_goal)))
