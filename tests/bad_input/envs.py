"""Misbehaving gymnasium envs for the bad-input suite, registered under ``BadInput*`` ids.

Each is a real ``gymnasium.Env`` with a 4-float observation and 2 actions, so the same small DQN
config fits all of them; what goes wrong, and when, is set by keyword arguments.
"""

from __future__ import annotations

import os
import time

import gymnasium as gym
import numpy as np


class StepEnv(gym.Env):
    """Observation ``[t, t, t, t] / 10``; reward 1 per step; an episode lasts ``length`` steps."""

    def __init__(self, length: int = 10):
        self.length = length
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self._t = 0
        self.total_steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return self._obs(), {}

    def _obs(self) -> np.ndarray:
        return np.full(4, self._t / 10, dtype=np.float32)

    def step(self, action):
        self._t += 1
        self.total_steps += 1
        return self._obs(), 1.0, self._t >= self.length, False, {}


class NonFiniteEnv(StepEnv):
    """Every ``bad_every``-th step (counted over the env's life) is broken, in turn: a NaN in the
    observation, an infinite reward, a -inf observation, a NaN reward. ``bad_every=0``: never.
    ``nan_first_reset``: the first observation of the env's first episode holds a NaN."""

    BREAKAGES = ("nan_obs", "inf_reward", "neg_inf_obs", "nan_reward")

    def __init__(self, bad_every: int = 7, length: int = 10, nan_first_reset: bool = False):
        super().__init__(length)
        self.bad_every = bad_every
        self.broken = 0
        self.nan_first_reset = nan_first_reset
        self.resets = 0

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        self.resets += 1
        if self.nan_first_reset and self.resets == 1:
            obs[0] = np.nan
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if self.bad_every and self.total_steps % self.bad_every == 0:
            kind = self.BREAKAGES[self.broken % len(self.BREAKAGES)]
            self.broken += 1
            if kind == "nan_obs":
                obs[1] = np.nan
            elif kind == "neg_inf_obs":
                obs[2] = -np.inf
            elif kind == "inf_reward":
                reward = np.inf
            else:
                reward = float("nan")
        return obs, reward, terminated, truncated, info


class HangingEnv(StepEnv):
    """Sleeps ``hang_s`` seconds in its ``hang_at``-th step (``hang_at=0``: in its first reset),
    once per marker file: the first env to get there creates ``marker`` and hangs; every env after
    it (its replacement included) runs normally. A file, not a class attribute, so that it works
    across worker processes too. ``marker=None``: every env hangs there."""

    def __init__(self, marker: str | None, hang_at: int = 3, hang_s: float = 60.0, length: int = 10):
        super().__init__(length)
        self.marker, self.hang_at, self.hang_s = marker, hang_at, hang_s
        self.resets = 0

    def reset(self, *, seed=None, options=None):
        self.resets += 1
        if self.hang_at == 0 and self.resets == 1:
            self._hang()
        return super().reset(seed=seed, options=options)

    def step(self, action):
        if self.total_steps + 1 == self.hang_at:
            self._hang()
        return super().step(action)

    def _hang(self) -> None:
        if self.marker is not None:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.close(fd)
        time.sleep(self.hang_s)


class ShapeShiftEnv(StepEnv):
    """Its observations grow from 4 to 5 floats at step ``shift_at`` of the first episode."""

    def __init__(self, shift_at: int = 3, length: int = 10):
        super().__init__(length)
        self.shift_at = shift_at

    def _obs(self) -> np.ndarray:
        size = 5 if self.total_steps >= self.shift_at else 4
        return np.full(size, self._t / 10, dtype=np.float32)


class BrokenStepEnv(StepEnv):
    """Its ``step`` is broken from the first call on, in the way ``mistake`` names: ``'raise'`` (a
    TypeError every time), ``'old_gym'`` (the 4 values of the old gym API), ``'str_reward'``,
    ``'array_reward'`` (a reward of 2 numbers), ``'info_list'`` (an info that is not a dict) or
    ``'flaky'`` (a TypeError in every second step only) or ``'third_step'`` (a TypeError in the third
    step of every episode)."""

    def __init__(self, mistake: str = "raise", length: int = 10):
        super().__init__(length)
        self.mistake = mistake

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if (
            self.mistake == "raise"
            or (self.mistake == "flaky" and self.total_steps % 2 == 0)
            or (self.mistake == "third_step" and self._t == 3)
        ):
            raise TypeError("unsupported operand type(s) for +: 'int' and 'NoneType'")
        if self.mistake == "old_gym":
            return obs, reward, terminated or truncated, info
        if self.mistake == "str_reward":
            return obs, "1.0", terminated, truncated, info
        if self.mistake == "array_reward":
            return obs, np.array([1.0, 0.5]), terminated, truncated, info
        if self.mistake == "info_list":
            return obs, reward, terminated, truncated, [info]
        if self.mistake in ("flaky", "third_step"):
            return obs, reward, terminated, truncated, info
        raise ValueError(f"unknown mistake {self.mistake!r}")


class BadObsEnv(StepEnv):
    """Observations of its float32 ``(4,)`` space as ``'int64'`` arrays or as ``None``."""

    def __init__(self, kind: str = "int64", length: int = 10):
        super().__init__(length)
        self.kind = kind

    def _obs(self):
        return None if self.kind == "none" else np.full(4, self._t, dtype=np.int64)


class EndlessEnv(StepEnv):
    """Its episodes never end (registered without a time limit). After ``give_up_at`` steps of one
    episode its step raises, so that a caller that never cuts an episode fails instead of hanging."""

    def __init__(self, give_up_at: int = 2000):
        super().__init__(length=0)
        self.give_up_at = give_up_at

    def step(self, action):
        if self._t >= self.give_up_at:
            raise RuntimeError(f"EndlessEnv: {self._t} steps in one episode and nobody cut it")
        obs, reward, _, truncated, info = super().step(action)
        return obs, reward, False, truncated, info


for _id, _cls in (
    ("BadInputStep-v0", StepEnv),
    ("BadInputNonFinite-v0", NonFiniteEnv),
    ("BadInputHanging-v0", HangingEnv),
    ("BadInputShapeShift-v0", ShapeShiftEnv),
    ("BadInputBrokenStep-v0", BrokenStepEnv),
    ("BadInputBadObs-v0", BadObsEnv),
    ("BadInputEndless-v0", EndlessEnv),
):
    if _id not in gym.envs.registry:
        gym.register(_id, entry_point=_cls)
