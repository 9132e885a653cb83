"""Collector interface, registry helpers and the per-episode statistics collectors share."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
from easydict import EasyDict

from ding_ray.config.merge import default_config_of
from ding_ray.utils.registry import SERIAL_COLLECTOR_REGISTRY
from ding_ray.worker import metrics


class ISerialCollector(ABC):
    """Runs a policy's collect mode in an env manager and returns training data."""

    config: dict = {}

    @classmethod
    def default_config(cls) -> EasyDict:
        return default_config_of(cls)

    @abstractmethod
    def reset_env(self, _env: Any = None) -> None: ...

    @abstractmethod
    def reset_policy(self, _policy: Any = None) -> None: ...

    @abstractmethod
    def reset(self, _policy: Any = None, _env: Any = None) -> None: ...

    @abstractmethod
    def collect(self, *args: Any, **kwargs: Any) -> Any: ...

    @property
    def envstep(self) -> int:
        return self._total_envstep_count

    @envstep.setter
    def envstep(self, value: int) -> None:
        self._total_envstep_count = value


class EpisodeStats:
    """Returns and lengths of finished episodes, and env-step throughput, between two reports."""

    def __init__(self) -> None:
        self.returns: list[float] = []
        self.lengths: list[int] = []
        self.env_steps = 0
        self.seconds = 0.0
        self.total_episodes = 0

    def add_episode(self, episode_return: float, length: int) -> None:
        self.returns.append(float(episode_return))
        self.lengths.append(int(length))
        self.total_episodes += 1

    def report(self, total_envstep: int, env_errors: int) -> dict[str, float]:
        """Scalars for TensorBoard; clears what was accumulated."""
        out = {
            metrics.COLLECTOR_ENV_STEPS: total_envstep,
            metrics.COLLECTOR_EPISODES: self.total_episodes,
            metrics.COLLECTOR_ENV_ERRORS: env_errors,
            metrics.COLLECTOR_ENV_STEPS_PER_S: self.env_steps / max(self.seconds, 1e-9),
        }
        if self.returns:
            out[metrics.COLLECTOR_RETURN_MEAN] = float(np.mean(self.returns))
            out[metrics.COLLECTOR_RETURN_MAX] = float(np.max(self.returns))
            out[metrics.COLLECTOR_RETURN_MIN] = float(np.min(self.returns))
            out[metrics.COLLECTOR_EPISODE_LENGTH] = float(np.mean(self.lengths))
        self.returns, self.lengths, self.env_steps, self.seconds = [], [], 0, 0.0
        return out


class Timer:
    """Accumulates wall seconds of ``with`` blocks."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __enter__(self) -> Timer:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds += time.perf_counter() - self._start


def create_serial_collector(cfg: dict, **kwargs: Any) -> ISerialCollector:
    """The collector registered under ``cfg.type`` ('sample' or 'episode')."""
    return SERIAL_COLLECTOR_REGISTRY.build(cfg.get("type", "sample"), cfg=cfg, **kwargs)


def get_serial_collector_cls(cfg: dict) -> type:
    return SERIAL_COLLECTOR_REGISTRY.get(cfg.get("type", "sample"))
