"""``BaseEnvManager``: N envs in this process, stepped together, reset automatically."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from easydict import EasyDict

from ding_ray.config.merge import checked_config, default_config_of
from ding_ray.envs.gymnasium_env import BaseEnvTimestep
from ding_ray.errors import EnvError
from ding_ray.utils.registry import ENV_MANAGER_REGISTRY

logger = logging.getLogger(__name__)


@ENV_MANAGER_REGISTRY.register("base")
class BaseEnvManager:
    """Steps every ready env with one call, so the policy can do one batched forward for all.

    The calling loop::

        env.launch()
        while True:
            obs = env.ready_obs                      # {env_id: obs}
            actions = policy.forward(obs)            # {env_id: action}
            timesteps = env.step(actions)            # {env_id: BaseEnvTimestep}

    With ``auto_reset`` an env whose episode ended is reset inside ``step``; its timestep still
    holds the final observation and ``ready_obs`` holds the first one of the next episode. An env
    that raises in ``step`` is reset and counted in ``error_count``; its timestep has
    ``info['abnormal'] = True`` so the collector drops that step and carries on.
    """

    config = dict(
        type="base",
        auto_reset=True,  # reset an env as soon as its episode ends
        episode_num=float("inf"),  # episodes per env before it stops being ready
        max_retry=5,  # resets tried on a crashed env before giving up
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return default_config_of(cls)

    def __init__(self, env_fn: Sequence[Callable[[], Any]], cfg: dict | None = None) -> None:
        cfg = checked_config(type(self), cfg, "env.manager")
        self._cfg = cfg
        self._env_fn = list(env_fn)
        if not self._env_fn:
            raise EnvError("An env manager needs at least one env (env.collector_env_num >= 1).")
        self._envs = [fn() for fn in self._env_fn]
        self._ready_obs: dict[int, Any] = {}
        self._episode_count = [0] * len(self._envs)
        self._seeds: list[int] | None = None
        self._dynamic_seed = True
        self._closed = False
        self._launched = False
        self.error_count = 0

    # ----- properties ---------------------------------------------------------------------------
    @property
    def env_num(self) -> int:
        return len(self._envs)

    @property
    def ready_obs(self) -> dict[int, Any]:
        """Observations of the envs waiting for an action, by env id."""
        return self._ready_obs

    @property
    def done(self) -> bool:
        """True once every env has run ``episode_num`` episodes."""
        return all(c >= self._cfg.episode_num for c in self._episode_count)

    @property
    def observation_space(self):
        return self._envs[0].observation_space

    @property
    def action_space(self):
        return self._envs[0].action_space

    @property
    def envs(self) -> list[Any]:
        return self._envs

    # ----- lifecycle ------------------------------------------------------------------------------
    def seed(self, seed: int | Sequence[int], dynamic_seed: bool = True) -> None:
        """Env i gets ``seed + i``. ``dynamic_seed=False`` reseeds at every ``reset`` (evaluators)."""
        seeds = [seed + i for i in range(self.env_num)] if isinstance(seed, int) else list(seed)
        self._seeds, self._dynamic_seed = seeds, dynamic_seed
        for env, s in zip(self._envs, seeds):
            env.seed(s, dynamic_seed)

    def launch(self, reset_param: dict | None = None) -> None:
        if self._closed:
            self._envs = [fn() for fn in self._env_fn]
            if self._seeds is not None:
                self.seed(self._seeds, self._dynamic_seed)
            self._closed = False
        self._launched = True
        self.reset(reset_param)

    def reset(self, reset_param: dict | None = None) -> None:
        """Reset every env (or those named in ``reset_param``) and make them ready."""
        if not self._launched:
            return self.launch(reset_param)
        ids = range(self.env_num) if reset_param is None else reset_param.keys()
        if self._seeds is not None and not self._dynamic_seed:
            for i in ids:
                self._envs[i].seed(self._seeds[i], False)
        self._episode_count = [0] * self.env_num
        for i in ids:
            self._ready_obs[i] = self._reset_env(i)

    def _reset_env(self, env_id: int) -> Any:
        for attempt in range(self._cfg.max_retry):
            try:
                return self._envs[env_id].reset()
            except Exception as e:  # noqa: BLE001 - an env may fail in any way; count and retry
                self.error_count += 1
                logger.warning("env %d raised in reset (attempt %d): %r", env_id, attempt + 1, e)
                self._envs[env_id] = self._env_fn[env_id]()
                if self._seeds is not None:
                    self._envs[env_id].seed(self._seeds[env_id] + 1000 * (attempt + 1), self._dynamic_seed)
        raise EnvError(f"env {env_id} failed to reset {self._cfg.max_retry} times in a row; giving up.")

    def step(self, actions: dict[int, Any]) -> dict[int, BaseEnvTimestep]:
        timesteps = {}
        ready = self._ready_obs
        for env_id, action in actions.items():
            try:
                timestep = self._envs[env_id].step(action)
            except Exception as e:  # noqa: BLE001 - isolate the crash to this env
                self.error_count += 1
                logger.warning("env %d raised in step: %r; resetting it", env_id, e)
                timestep = BaseEnvTimestep(
                    ready[env_id], 0.0, True, {"abnormal": True, "truncated": True, "error": repr(e)}
                )
                ready[env_id] = self._reset_env(env_id)
                timesteps[env_id] = timestep
                continue
            timesteps[env_id] = timestep
            if timestep.done:
                self._episode_count[env_id] += 1
                if self._cfg.auto_reset and self._episode_count[env_id] < self._cfg.episode_num:
                    ready[env_id] = self._reset_env(env_id)
                else:
                    del ready[env_id]
            else:
                ready[env_id] = timestep.obs
        return timesteps

    def enable_save_replay(self, replay_path: str) -> None:
        for env in self._envs:
            env.enable_save_replay(replay_path)

    def close(self) -> None:
        if self._closed:
            return
        for env in self._envs:
            env.close()
        self._closed = True
        self._launched = False
        self._ready_obs = {}


def create_env_manager(manager_cfg: dict, env_fn: Sequence[Callable[[], Any]]) -> BaseEnvManager:
    """The env manager registered under ``manager_cfg.type`` over the given env factories."""
    manager_cfg = EasyDict(manager_cfg)
    return ENV_MANAGER_REGISTRY.get(manager_cfg.get("type", "base"))(env_fn, manager_cfg)


def get_env_manager_cls(cfg: dict) -> type:
    return ENV_MANAGER_REGISTRY.get(cfg.get("type", "base"))
