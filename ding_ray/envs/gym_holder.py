"""What an env over a gymnasium env does the same whatever the game: the seed of each reset,
videos, close."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from ding_ray.errors import EnvError


class GymEnvHolder:
    """Base of ``GymnasiumEnv`` and ``AtariEnv``: DI-engine's ``seed`` and replay calls over the
    gymnasium env held in ``self._env`` (the subclass sets it and ``action_space``)."""

    _env: gym.Env
    action_space: gym.Space
    _seed: int | None = None
    _dynamic_seed = True
    _replay_path: str | None = None

    @property
    def unwrapped(self) -> gym.Env:
        """The gymnasium env under every wrapper, as gymnasium's ``Env.unwrapped``: for reading the
        game's own state (Pendulum's last torque ``last_u``, MuJoCo's ``data``)."""
        return self._env.unwrapped

    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        """Seeded as dizoo's envs are: ``dynamic_seed`` starts each episode from ``seed + 100 * k``,
        ``k`` in [1, 1000) drawn from numpy's global generator, so each reset gives a new episode;
        without it every ``reset`` starts from ``seed``. Like dizoo's envs, this also seeds numpy's
        global generator with ``seed``: a seeded run draws the episodes DI-engine's does."""
        self._seed, self._dynamic_seed = int(seed), dynamic_seed
        np.random.seed(self._seed)
        self.action_space.seed(self._seed)

    def _reset_seed(self) -> int | None:
        """The seed the next ``self._env.reset`` takes (None: unseeded, the env's generator goes on).

        The action space keeps the one stream ``seed`` started: reseeded with each episode's seed
        (there are 999 of them), an episode whose seed came up again would repeat its random actions
        too, step for step (a fifth of a Hopper warm-up's 10k transitions were such copies).
        DI-engine's random policy draws from one action space that no reset reseeds."""
        if self._seed is None:
            return None
        return self._seed + 100 * int(np.random.randint(1, 1000)) if self._dynamic_seed else self._seed

    def _record(self, env: gym.Env, replay_path: str) -> None:
        """Hold ``env`` wrapped to record every episode as a video under ``replay_path``."""
        from gymnasium.wrappers import RecordVideo

        # Several envs record into one folder: each file name carries this env's own prefix.
        prefix = f"rl-video-{self._seed if self._seed is not None else id(self)}"
        try:
            self._env = RecordVideo(env, replay_path, episode_trigger=lambda _: True, name_prefix=prefix)
        except gym.error.DependencyNotInstalled as e:
            raise EnvError(f'env.replay_path needs video support: {e} (pip install "ding_ray[video]")') from e
        self._replay_path = replay_path

    def disable_save_replay(self) -> None:
        """Stop recording (the video of an unfinished episode is closed as it is)."""
        from gymnasium.wrappers import RecordVideo

        if isinstance(self._env, RecordVideo):
            recorder, self._env = self._env, self._env.env
            recorder.stop_recording()
        self._replay_path = None

    def close(self) -> None:
        self._env.close()
