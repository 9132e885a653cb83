"""``RolloutWorker``: a self-contained collector (envs + collect-mode policy) for any process.

It is what a collector actor runs: built from the compiled config alone, it loads the weights a
learner publishes (skipping versions it already has) and returns columnar batches in which every
row carries the policy version that produced it, so staleness can be measured downstream.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import numpy as np
from easydict import EasyDict

from ding_ray.data.columnar import Batch, stack_items
from ding_ray.envs import create_env_manager, get_vec_env_setting, space_info
from ding_ray.errors import ConfigError
from ding_ray.policy import Policy, create_policy
from ding_ray.utils.runtime import set_pkg_seed
from ding_ray.worker import metrics
from ding_ray.worker.collector import create_serial_collector
from ding_ray.worker.weights_holder import WeightsHolder

SEED_STRIDE = 1000  # collector i seeds its envs from cfg.seed + i * SEED_STRIDE


class ScalarSink:
    """A ``tb_logger`` stand-in that keeps the latest value of each scalar (and forwards them)."""

    def __init__(self, tb_logger: Any = None) -> None:
        self._tb_logger = tb_logger
        self._latest: dict[str, float] = {}

    def add_scalar(self, key: str, value: float, step: int) -> None:
        self._latest[key] = float(value)
        if self._tb_logger is not None:
            self._tb_logger.add_scalar(key, value, step)

    def flush(self) -> None:
        if self._tb_logger is not None:
            self._tb_logger.flush()

    def pop(self) -> dict[str, float]:
        """Scalars reported since the last ``pop``."""
        latest, self._latest = self._latest, {}
        return latest


class RolloutWorker(WeightsHolder):
    """The calling loop::

    worker = RolloutWorker(cfg, index=0)
    while True:
        worker.load_weights(version, weights)         # no-op unless version is newer
        batch, info = worker.rollout(policy_kwargs={'eps': eps})
        buffer.push(batch)
    """

    def __init__(
        self,
        cfg: EasyDict,
        index: int = 0,
        tb_logger: Any = None,
        n_sample: int | None = None,
        name: str | None = None,
    ) -> None:
        """``n_sample``: samples per ``rollout`` call when it is given none (default: the collector's
        ``n_sample``). Each env's trajectory is cut every ``n_sample / env_num`` steps, so that a call
        ends when every env has delivered its part: no env's steps beyond the call's are thrown away.
        ``index`` picks the seeds; ``name``, the one log lines carry, is ``collector-{index}`` unless
        given (a worker that is no collector actor names itself)."""
        collector_cfg = cfg.policy.collect.collector
        if n_sample is not None:
            collector_cfg = EasyDict(dict(collector_cfg, n_sample=int(n_sample)))
        if collector_cfg.get("type", "sample") != "sample":
            raise ConfigError(
                f"Distributed collectors use the 'sample' collector, got policy.collect.collector.type="
                f"'{collector_cfg.type}'. Set policy.collect.n_sample instead of n_episode."
            )
        self.index = index
        self.name = name or f"collector-{index}"
        seed = int(cfg.seed) + index * SEED_STRIDE
        set_pkg_seed(seed)
        env_fn, env_cfgs, _ = get_vec_env_setting(cfg.env)
        env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in env_cfgs])
        env.seed(seed, dynamic_seed=True)
        self._policy = create_policy(cfg.policy, enable_field=["collect"])
        check_env_fits_policy(self._policy, env)
        self._sink = ScalarSink(tb_logger)
        self._collector = create_serial_collector(
            collector_cfg,
            env=env,
            policy=self._policy.collect_mode,
            tb_logger=self._sink,
            exp_name=cfg.exp_name,
            instance_name=self.name,
        )
        self._n_sample = collector_cfg.n_sample or cfg.policy.collect.get("n_sample")

    def _acting_mode(self) -> Any:
        return self._policy.collect_mode

    def rollout(
        self, n_sample: int | None = None, train_iter: int = 0, policy_kwargs: dict | None = None
    ) -> tuple[Batch, dict[str, Any]]:
        """``n_sample`` train samples as a ``Batch`` (plus ``policy_version`` and ``collect_iter``
        columns), and a small info dict: counts, timing and the collector's metric scalars."""
        return self._batch(self._collector.collect, n_sample, train_iter, policy_kwargs)

    def warm_up_rollout(
        self, n_sample: int | None = None, train_iter: int = 0, policy_kwargs: dict | None = None
    ) -> tuple[Batch, dict[str, Any]]:
        """As ``rollout``, with the collector's ``warm_up``: uniform random actions (the policy's
        own with ``transition_with_policy_data``), for ``policy.random_collect_size``."""
        return self._batch(self._collector.warm_up, n_sample, train_iter, policy_kwargs)

    def _batch(
        self, collect: Any, n_sample: int | None, train_iter: int, policy_kwargs: dict | None
    ) -> tuple[Batch, dict[str, Any]]:
        """What ``collect`` (the collector's ``collect`` or ``warm_up``) returns, as a batch and an info."""
        n_sample = n_sample or self._n_sample
        before, episodes_before = self._collector.envstep, self._collector.envepisode
        nonfinite_before = self._collector.nonfinite_count
        start = time.perf_counter()
        samples = collect(n_sample=n_sample, train_iter=train_iter, policy_kwargs=policy_kwargs)
        seconds = time.perf_counter() - start
        batch = stack_items(samples)
        n = len(samples)
        version = np.full(n, self.version, dtype=np.int64)
        batch["policy_version"] = version
        batch["collect_iter"] = np.maximum(version, 0)  # the prioritized buffer's staleness clock
        new_steps = self._collector.envstep - before
        info = {
            "collector": self.name,
            "n": n,
            "policy_version": self.version,
            "new_env_steps": new_steps,
            "new_episodes": self._collector.envepisode - episodes_before,
            "seconds": seconds,
            metrics.COLLECTOR_ENV_STEPS: self._collector.envstep,
            metrics.COLLECTOR_ENV_STEPS_PER_S: new_steps / max(seconds, 1e-9),
            metrics.COLLECTOR_POLICY_VERSION: self.version,
            # steps dropped in this call because the env returned NaN/inf (never in the batch)
            "nonfinite_steps": self._collector.nonfinite_count - nonfinite_before,
            metrics.COLLECTOR_NONFINITE_STEPS: self._collector.nonfinite_count,
        }
        for key, value in self._sink.pop().items():
            info.setdefault(key, value)
        return batch, info

    @property
    def envstep(self) -> int:
        return self._collector.envstep

    @property
    def policy(self) -> Policy:
        """The policy it collects with (collect mode only): ``load_weights`` loads into it."""
        return self._policy

    def close(self) -> None:
        self._collector.close()


def check_env_fits_policy(policy: Any, env: Any) -> None:
    """Raise ``EnvError`` (saying which config value to set) if the env's spaces differ from the
    policy's ``model.obs_shape`` / ``action_shape``, before a forward pass fails on a matrix size.
    Observation spaces without one array shape (dicts with action masks) are not compared."""
    obs_space = env.observation_space
    if getattr(obs_space, "shape", None) is None:
        return
    policy.check_spaces(tuple(obs_space.shape), *space_info(env.action_space))
