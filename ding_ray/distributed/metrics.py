"""Ray dashboard metrics (Prometheus, via ``ray.util.metrics``) under the TensorBoard keys.

A key ``section/name`` becomes the gauge ``ding_ray_section_name`` (Prometheus names allow no
``/``; Ray's exporter adds its ``ray_`` prefix), described by the key itself, tagged with the
actor that reports it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from numbers import Real

from ray.util.metrics import Gauge

PREFIX = "ding_ray_"


def metric_name(key: str) -> str:
    """``collector/env_steps`` -> ``ding_ray_collector_env_steps``."""
    return PREFIX + key.replace("/", "_").replace("-", "_").replace(".", "_")


class RayMetrics:
    """Sets one gauge per ``section/name`` key; gauges are created on first use."""

    _gauges: dict[str, Gauge] = {}  # per process: a metric name may be registered only once

    def __init__(self, actor: str, interval_s: float = 0.0) -> None:
        self._tags = {"actor": actor}
        self._interval_s = interval_s
        self._last = 0.0

    def record(self, scalars: Mapping[str, object], force: bool = False) -> None:
        """Set the gauge of every numeric ``section/name`` entry (at most once per ``interval_s``)."""
        if not force:
            now = time.monotonic()
            if now - self._last < self._interval_s:
                return
            self._last = now
        for key, value in scalars.items():
            if "/" in key and isinstance(value, Real) and value == value:
                self._gauge(key).set(float(value), tags=self._tags)

    @classmethod
    def _gauge(cls, key: str) -> Gauge:
        if key not in cls._gauges:
            cls._gauges[key] = Gauge(metric_name(key), description=key, tag_keys=("actor",))
        return cls._gauges[key]
