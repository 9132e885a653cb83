"""Ray dashboard metrics (Prometheus, via ``ray.util.metrics``) under the TensorBoard keys.

A key ``section/name`` becomes the metric ``ding_ray_section_name`` (Prometheus names allow no
``/``; Ray's exporter adds its ``ray_`` prefix), described by the key itself and tagged with the
actor that owns the figure and the experiment (``exp_name``'s last part), so that runs side by
side on one cluster stay apart. Each figure is exported once, by the process that owns it:
totals that only grow are ``Counter`` s, levels are ``Gauge`` s, and the duration of each collect,
train and evaluate call goes to a ``Histogram`` (``<section>/call_seconds``), as does the policy
lag of every batch the learner trains on (``learner/policy_lag``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from numbers import Real

from ray.util.metrics import Counter, Gauge, Histogram

PREFIX = "ding_ray_"
TAG_KEYS = ("actor", "experiment")

# Totals reported as running sums: exported as counters (increased by the difference). The keys
# of ding_ray.worker.metrics and ding_ray.data.monitors, spelled out: the buffer actor imports
# this module and no torch, which the worker package would load.
COUNTERS = frozenset(
    {
        "collector/env_steps",
        "learner/train_iter",
        "collector/lost_batches",
        "collector/restarts",
        "collector/nonfinite_steps",
        "evaluator/nonfinite_episodes",
        "buffer/pushed",
        "buffer/sampled",
        "buffer/removed",
        "buffer/push_rejected",
    }
)
CALL_SECONDS_BOUNDARIES = [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0]
# learner iterations between the weights that collected a batch and the learner training on it
POLICY_LAG_BOUNDARIES = [0.5, 1.5, 2.5, 4.5, 8.5, 16.5, 32.5, 64.5, 128.5, 256.5, 1024.5]
BOUNDARIES = {"learner/policy_lag": POLICY_LAG_BOUNDARIES}


def metric_name(key: str) -> str:
    """``collector/env_steps`` -> ``ding_ray_collector_env_steps``."""
    return PREFIX + key.replace("/", "_").replace("-", "_").replace(".", "_")


def experiment_of(exp_name: str) -> str:
    """The experiment tag: the last part of ``exp_name`` (which actors hold as an absolute path)."""
    return os.path.basename(os.path.normpath(exp_name)) or exp_name


class RayMetrics:
    """Exports one process's ``section/name`` figures; metrics are created on first use."""

    _metrics: dict[str, object] = {}  # per process: a metric name may be registered only once

    def __init__(self, actor: str, experiment: str = "", interval_s: float = 0.0) -> None:
        self._tags = {"actor": actor, "experiment": experiment_of(experiment) if experiment else ""}
        self._interval_s = interval_s
        self._last = 0.0
        self._totals: dict[str, float] = {}  # last running sum seen per counter

    def record(self, scalars: Mapping[str, object], force: bool = False) -> None:
        """Export every numeric ``section/name`` entry (at most once per ``interval_s``)."""
        if not force:
            now = time.monotonic()
            if now - self._last < self._interval_s:
                return
            self._last = now
        for key, value in scalars.items():
            if "/" not in key or not isinstance(value, Real) or value != value:
                continue
            if key in COUNTERS:
                before = self._totals.get(key, 0.0)
                # a total below the last one: the owner restarted and counts from zero again
                delta = float(value) - before if value >= before else float(value)
                self._totals[key] = float(value)
                if delta > 0:
                    self._metric(key, Counter).inc(delta, tags=self._tags)
            else:
                self._metric(key, Gauge).set(float(value), tags=self._tags)

    def call_seconds(self, section: str, seconds: float) -> None:
        """One call's duration into the ``<section>/call_seconds`` histogram."""
        self.observe(f"{section}/call_seconds", seconds)

    def observe(self, key: str, value: float) -> None:
        """One value into the histogram ``key``."""
        self._metric(key, Histogram).observe(float(value), tags=self._tags)

    @classmethod
    def _metric(cls, key: str, kind: type) -> object:
        if key not in cls._metrics:
            extra = {"boundaries": BOUNDARIES.get(key, CALL_SECONDS_BOUNDARIES)} if kind is Histogram else {}
            cls._metrics[key] = kind(metric_name(key), description=key, tag_keys=TAG_KEYS, **extra)
        return cls._metrics[key]
