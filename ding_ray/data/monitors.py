"""What a buffer reports about itself: throughput per period, quality of sampled data, rate limits.

Metric keys are defined here once and shared by TensorBoard and the Ray dashboard.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

SIZE = "buffer/size"
STORAGE_BYTES = "buffer/storage_bytes"  # bytes of the arrays holding the items (frames included)
PUSHED = "buffer/pushed"
SAMPLED = "buffer/sampled"
REMOVED = "buffer/removed"
PUSH_REJECTED = "buffer/push_rejected"
BETA = "buffer/beta"
USE_COUNT_MEAN = "buffer/use_count_mean"
USE_COUNT_MAX = "buffer/use_count_max"
STALENESS_MEAN = "buffer/staleness_mean"
STALENESS_MAX = "buffer/staleness_max"
PRIORITY_MEAN = "buffer/priority_mean"
PRIORITY_MAX = "buffer/priority_max"
PRIORITY_MIN = "buffer/priority_min"

logger = logging.getLogger("ding_ray.data")


class PeriodicThruputMonitor:
    """Counts items pushed, sampled and removed per period of ``seconds`` and reports each period.

    There is no thread: the buffer calls ``maybe_report`` on every push and sample, and a period
    that has elapsed is reported then. An idle buffer has nothing new to report, and a buffer that
    runs inside a Ray actor has no thread to leak.
    """

    def __init__(
        self, seconds: float, tb_logger: Any = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._seconds = float(seconds)
        self._tb_logger = tb_logger
        self._clock = clock
        self._next = clock() + self._seconds
        self._period = 0
        self.push_data_count = 0
        self.sample_data_count = 0
        self.remove_data_count = 0
        self.last_report: dict[str, float] = {}

    def maybe_report(self, valid_count: int) -> None:
        if self._clock() >= self._next:
            self.report(valid_count)

    def report(self, valid_count: int) -> None:
        self.last_report = {
            PUSHED: self.push_data_count,
            SAMPLED: self.sample_data_count,
            REMOVED: self.remove_data_count,
            SIZE: valid_count,
        }
        logger.info("buffer period %d (%.0f s): %s", self._period, self._seconds, self.last_report)
        if self._tb_logger is not None:
            for key, value in self.last_report.items():
                self._tb_logger.add_scalar(key, value, self._period)
        self._period += 1
        self._next = self._clock() + self._seconds
        self.push_data_count = self.sample_data_count = self.remove_data_count = 0


class SampledDataAttrMonitor:
    """Use count, staleness and priority of sampled data, averaged over the last ``average_range``
    sample calls and reported every ``print_freq`` calls.

    Only the calls that fall inside a reported average are measured (``wants_record``), so the
    learner's hot path pays for the statistics ``average_range`` times in ``print_freq``.
    """

    def __init__(self, average_range: int, print_freq: int, tb_logger: Any = None) -> None:
        self._print_freq = max(1, int(print_freq))
        self._average_range = max(1, min(int(average_range), self._print_freq))
        self._tb_logger = tb_logger
        self._calls = 0
        self._records: list[dict[str, float]] = []
        self.last_report: dict[str, float] = {}

    def wants_record(self) -> bool:
        return self._calls % self._print_freq >= self._print_freq - self._average_range

    def record(self, step: int, use: np.ndarray, staleness: np.ndarray, priority: np.ndarray | None) -> None:
        stats = {
            USE_COUNT_MEAN: float(use.mean()),
            USE_COUNT_MAX: float(use.max()),
            STALENESS_MEAN: float(staleness.mean()),
            STALENESS_MAX: float(staleness.max()),
        }
        if priority is not None:
            stats.update(
                {
                    PRIORITY_MEAN: float(priority.mean()),
                    PRIORITY_MAX: float(priority.max()),
                    PRIORITY_MIN: float(priority.min()),
                }
            )
        self._records.append(stats)

    def end_call(self, step: int) -> None:
        """Count one sample call; report when ``print_freq`` calls have passed."""
        self._calls += 1
        if self._calls % self._print_freq == 0 and self._records:
            keys = self._records[0].keys()
            self.last_report = {k: float(np.mean([r[k] for r in self._records])) for k in keys}
            self._records.clear()
            logger.info("sampled data (step %d): %s", step, self.last_report)
            if self._tb_logger is not None:
                for key, value in self.last_report.items():
                    self._tb_logger.add_scalar(key, value, step)


class ThruputController:
    """Keeps the push/sample ratio within ``[min, max]`` over a sliding window of seconds.

    Pushes are refused while the ratio is above ``max`` and samples while it is below ``min``.
    The ratio is only enforced once sampling has started, so a buffer can always fill up first.
    ``sample_min_limit_ratio`` makes ``sample(size)`` wait until the buffer holds that many
    times ``size`` valid items.
    """

    def __init__(self, cfg: Any, clock: Callable[[], float] = time.monotonic) -> None:
        self._max = float(cfg.push_sample_rate_limit.max)
        self._min = float(cfg.push_sample_rate_limit.min)
        self._window = float(cfg.window_seconds)
        self._min_ratio = float(cfg.sample_min_limit_ratio)
        self._clock = clock
        self._limited = self._max != float("inf") or self._min > 0
        self._pushes: deque = deque()
        self._samples: deque = deque()
        self._pushed = 0
        self._sampled = 0

    def _expire(self) -> None:
        horizon = self._clock() - self._window
        while self._pushes and self._pushes[0][0] < horizon:
            self._pushed -= self._pushes.popleft()[1]
        while self._samples and self._samples[0][0] < horizon:
            self._sampled -= self._samples.popleft()[1]

    def can_push(self, n: int) -> bool:
        if not self._limited or self._max == float("inf"):
            return True
        self._expire()
        return self._sampled == 0 or (self._pushed + n) / self._sampled <= self._max

    def sample_refusal(self, size: int, valid_count: int) -> str | None:
        """Why ``sample(size)`` cannot be served now, or None if it can."""
        if valid_count < size * self._min_ratio or valid_count == 0:
            return f"holds {valid_count} valid items, needs {size} x sample_min_limit_ratio {self._min_ratio}"
        if self._limited and self._min > 0:
            self._expire()
            if self._sampled > 0 and self._pushed / self._sampled < self._min:
                return (
                    f"push/sample ratio {self._pushed / self._sampled:.3g} is below the minimum {self._min}"
                )
        return None

    def record_push(self, n: int) -> None:
        if self._limited:
            self._pushes.append((self._clock(), n))
            self._pushed += n

    def record_sample(self, n: int) -> None:
        if self._limited:
            self._samples.append((self._clock(), n))
            self._sampled += n
