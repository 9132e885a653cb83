"""``EnvRunner``: what serial collectors and evaluators share - an env manager and a policy mode
that are swapped, reset and closed together."""

from __future__ import annotations

from typing import Any

from ding_ray.worker.step_checks import ObsSpec, episode_moment, obs_error, obs_fits, obs_spec


class EnvRunner:
    """Holds ``self._env`` (an env manager), ``self._policy`` (a policy mode) and ``self._tb_logger``.

    ``reset_env`` / ``reset_policy`` take a new env or policy when given one and reset what is
    held; subclasses extend them with their own bookkeeping. ``close`` is idempotent.
    ``_check_obs`` is the one observation check of both: shape and dtype of the env's space.
    """

    _env: Any = None
    _policy: Any = None
    _tb_logger: Any = None
    _end_flag = False
    _obs_spec: ObsSpec | None = None

    def reset_env(self, _env: Any = None) -> None:
        if _env is not None:
            self._env = _env
        if self._env is not None:
            self._env.launch()
            self._obs_spec = obs_spec(getattr(self._env, "observation_space", None))

    def _check_obs(self, env_id: int, obs: Any, step: int) -> None:
        """Raise ``ShapeError`` if ``obs``, env ``env_id``'s observation after ``step`` steps of its
        episode, does not fit the env's observation space (the model's input), before the model
        fails on it with a matrix error."""
        if not obs_fits(self._obs_spec, obs):
            raise obs_error(self._obs_spec, obs, self._env_name(env_id), episode_moment(step))

    def _env_name(self, env_id: int) -> str:
        try:
            return f"env {env_id} ({self._env.envs[env_id]!r})"
        except Exception:  # noqa: BLE001 - subprocess managers hold no env objects
            return f"env {env_id} of {type(self._env).__name__}"

    def reset_policy(self, _policy: Any = None) -> None:
        if _policy is not None:
            self._policy = _policy
        if self._policy is not None:
            self._policy.reset()

    def close(self) -> None:
        if self._end_flag:
            return
        self._end_flag = True
        if self._env is not None:
            self._env.close()
        if self._tb_logger is not None:
            self._tb_logger.flush()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
