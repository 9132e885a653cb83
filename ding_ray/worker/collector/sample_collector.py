"""``SampleSerialCollector``: collect a given number of training samples."""

from __future__ import annotations

import math
from typing import Any

from ding_ray.errors import ConfigError
from ding_ray.utils.registry import SERIAL_COLLECTOR_REGISTRY
from ding_ray.worker.collector.vector_collector import VectorCollector
from ding_ray.worker.env_stepper import Forward


@SERIAL_COLLECTOR_REGISTRY.register("sample")
class SampleSerialCollector(VectorCollector):
    """Returns ``n_sample`` train samples (transitions for DQN) per ``collect`` call.

    Each env keeps its own trajectory, cut as DI-engine's collector cuts it: it is handed to
    ``policy.get_train_sample`` and started afresh when its episode ends, or when it holds
    ``traj_len`` steps (``n_sample / env_num`` rounded up, at least the policy's ``unroll_len``:
    IMPALA's unrolls). An n-step policy's windows therefore end at the end of each piece (see
    ``DQNPolicy._get_train_sample``). With the policy's ``traj_len_inf`` only whole episodes are
    handed over. An on-policy policy's unfinished pieces are dropped at the end of each call, so
    that the next call's samples all come from the weights it was called with (as DI-engine does);
    the envs go on with their episodes.
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
        """Collect at least ``n_sample`` samples (exactly, with ``drop_extra``) with the policy.

        ``random_collect`` with ``record_random_collect=False`` leaves the collect log out (DI-engine's
        warm-up call, whose caller swapped a random policy in); the actions are the policy's either
        way. ``warm_up`` collects with uniform random actions."""
        n_sample = self._n_sample(n_sample)
        data = self._collect(self._forward, n_sample, train_iter, policy_kwargs)
        if not random_collect or record_random_collect:
            self._maybe_report(train_iter)
        return data[:n_sample] if drop_extra else data

    def warm_up(
        self, n_sample: int | None = None, train_iter: int = 0, policy_kwargs: dict | None = None
    ) -> list[dict[str, Any]]:
        """``n_sample`` samples of uniform random actions (the policy's own where it sets
        ``transition_with_policy_data``): the ``policy.random_collect_size`` samples that fill the
        replay buffer before training."""
        n_sample = self._n_sample(n_sample)
        data = self._collect(self._warm_up_forward(), n_sample, train_iter, policy_kwargs)
        self._maybe_report(train_iter)
        return data[:n_sample]

    def _n_sample(self, n_sample: int | None) -> int:
        n_sample = n_sample if n_sample is not None else self._cfg.n_sample
        if n_sample is None or n_sample <= 0:
            raise ConfigError("SampleSerialCollector.collect needs n_sample > 0 (policy.collect.n_sample).")
        return n_sample

    def _collect(
        self, forward: Forward, n_sample: int, train_iter: int, policy_kwargs: dict | None
    ) -> list[dict[str, Any]]:
        """At least ``n_sample`` samples of ``forward``'s actions."""
        policy_kwargs = policy_kwargs or {}
        get_train_sample = self._policy.get_train_sample
        return_data: list[dict[str, Any]] = []
        with self._timer():
            while len(return_data) < n_sample:
                for env_id, transition, episode_over in self._step(forward, policy_kwargs, train_iter):
                    traj = self._traj[env_id]
                    if transition is not None:
                        traj.append(transition)
                    samples, self._traj[env_id] = self._ready_samples(traj, episode_over, get_train_sample)
                    return_data.extend(samples)
        if self._on_policy:
            self._traj = {env_id: [] for env_id in self._traj}
        return return_data

    def _ready_samples(
        self, traj: list[dict[str, Any]], episode_over: bool, get_train_sample: Any
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """``(train samples ready now, the trajectory kept for later)`` of one env's trajectory."""
        if episode_over:
            return (get_train_sample(traj) if traj else []), []
        if self._traj_len_inf or len(traj) < max(self._traj_len, self._unroll_len):
            return [], traj
        return get_train_sample(traj), []
