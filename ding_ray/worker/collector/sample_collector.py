"""``SampleSerialCollector``: collect a given number of training samples."""

from __future__ import annotations

import math
from typing import Any

from ding_ray.errors import ConfigError
from ding_ray.utils.registry import SERIAL_COLLECTOR_REGISTRY
from ding_ray.worker.collector.vector_collector import VectorCollector


@SERIAL_COLLECTOR_REGISTRY.register("sample")
class SampleSerialCollector(VectorCollector):
    """Returns ``n_sample`` train samples (transitions for DQN) per ``collect`` call.

    Each env keeps its own trajectory. It is handed to ``policy.get_train_sample`` when its
    episode ends, or when it holds ``traj_len`` steps (at least the policy's ``unroll_len``, as
    DI-engine cuts them: IMPALA's unrolls) plus the policy's n-step lookahead; in the
    second case the last ``nstep - 1`` steps stay behind as context for the next samples, so every
    n-step target is computed from real future steps, never from padding. With the policy's
    ``traj_len_inf`` only whole episodes are handed over (as DI-engine does).
    """

    config = dict(
        type="sample",
        n_sample=None,  # default samples per collect call (copied from policy.collect.n_sample)
    )

    def reset_env(self, _env: Any = None) -> None:
        super().reset_env(_env)
        if self._env is not None:
            n_sample = self._cfg.n_sample or self._env_num
            self._traj_len = max(1, math.ceil(n_sample / self._env_num))

    def collect(
        self,
        n_sample: int | None = None,
        train_iter: int = 0,
        drop_extra: bool = True,
        random_collect: bool = False,
        record_random_collect: bool = True,
        policy_kwargs: dict | None = None,
        level_seeds: Any = None,
    ) -> list[dict[str, Any]]:
        """Collect at least ``n_sample`` samples (exactly, with ``drop_extra``)."""
        n_sample = n_sample if n_sample is not None else self._cfg.n_sample
        if n_sample is None or n_sample <= 0:
            raise ConfigError("SampleSerialCollector.collect needs n_sample > 0 (policy.collect.n_sample).")
        policy_kwargs = policy_kwargs or {}
        get_train_sample = self._policy.get_train_sample
        return_data: list[dict[str, Any]] = []
        with self._timer():
            while len(return_data) < n_sample:
                for env_id, transition, episode_over in self._step(policy_kwargs, random_collect, train_iter):
                    traj = self._traj[env_id]
                    if transition is not None:
                        traj.append(transition)
                    samples, self._traj[env_id] = self._ready_samples(traj, episode_over, get_train_sample)
                    return_data.extend(samples)
        if not random_collect or record_random_collect:
            self._maybe_report(train_iter)
        return return_data[:n_sample] if drop_extra else return_data

    def _ready_samples(
        self, traj: list[dict[str, Any]], episode_over: bool, get_train_sample: Any
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """``(train samples ready now, the trajectory kept for later)`` of one env's trajectory."""
        if episode_over:
            return (get_train_sample(traj) if traj else []), []
        if self._traj_len_inf or len(traj) < max(self._traj_len, self._unroll_len) + self._lookahead:
            return [], traj
        ready = len(traj) - self._lookahead
        return get_train_sample(traj)[:ready], traj[ready:]
