"""Test fakes shared by the unit tests: tiny deterministic envs registered with gymnasium."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class CountdownEnv(gym.Env):
    """Observation is the steps left; reward 1 per step; terminates after ``length`` steps.

    The return of an episode is exactly ``length`` whatever the actions, so collectors and
    evaluators can be checked against known numbers.
    """

    def __init__(self, length: int = 5, crash_at: int | None = None):
        self.length = length
        self.crash_at = crash_at
        self.observation_space = gym.spaces.Box(0, length, shape=(2,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self._t = 0
        self.resets = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        self.resets += 1
        start = float(self.np_random.integers(0, 1000))
        self._start = start
        return np.array([self.length, start], dtype=np.float32), {}

    def step(self, action):
        self._t += 1
        if self.crash_at is not None and self._t == self.crash_at and self.resets == 1:
            raise RuntimeError("simulated env crash")
        obs = np.array([self.length - self._t, self._start], dtype=np.float32)
        return obs, 1.0, self._t >= self.length, False, {}


class ContinuousEnv(CountdownEnv):
    def __init__(self, length: int = 5):
        super().__init__(length)
        self.action_space = gym.spaces.Box(-1, 1, shape=(1,), dtype=np.float32)


for _id, _kwargs in (("Countdown-v0", {}), ("CountdownCrash-v0", {"crash_at": 3})):
    if _id not in gym.envs.registry:
        gym.register(_id, entry_point=CountdownEnv, kwargs=_kwargs, max_episode_steps=100)
if "CountdownTrunc-v0" not in gym.envs.registry:
    gym.register("CountdownTrunc-v0", entry_point=CountdownEnv, kwargs={"length": 50}, max_episode_steps=4)
if "ContinuousCountdown-v0" not in gym.envs.registry:
    gym.register("ContinuousCountdown-v0", entry_point=ContinuousEnv)
