"""DI-engine's Atari wrappers that gymnasium lacks (its ``AtariPreprocessing`` ends the game at a lost
life; these end the episode and let the game go on, as DI-engine's and OpenAI baselines' do)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym


class EpisodicLife(gym.Wrapper):
    """A lost life ends the episode for the learner, but the game goes on: the next ``reset`` after
    a lost life only steps a NOOP (a real reset comes once the game is over)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.lives = 0
        self.game_over = True

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.game_over = terminated or truncated
        lives = self.env.unwrapped.ale.lives()
        # lives > 0: some games sit at 0 lives for a few frames before the game ends
        if 0 < lives < self.lives:
            terminated = True
        self.lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if self.game_over or seed is not None:
            obs, info = self.env.reset(seed=seed, options=options)
        else:
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:  # the NOOP ended the game after all
                obs, info = self.env.reset(options=options)
        self.game_over = False
        self.lives = self.env.unwrapped.ale.lives()
        return obs, info


class FireReset(gym.Wrapper):
    """Press FIRE after every reset (games such as Breakout wait for it)."""

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.env.reset(seed=seed, options=options)
        obs, _, terminated, truncated, info = self.env.step(1)
        if terminated or truncated:
            obs, info = self.env.reset(options=options)
        return obs, info
