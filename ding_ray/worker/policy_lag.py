"""``PolicyLag``: how old the data a learner trains on is, as a histogram.

The lag of a row is the learner's iteration when it starts training on the row minus the policy
version (the learner iteration of the weights) that collected it. Synchronous on-policy data has
lag 0; an asynchronous pipeline's lag grows with queueing, and V-trace (IMPALA) corrects for it.
Counts are kept per exact lag up to ``max_lag``; larger lags share the last bin, so quantiles above
it read as ``max_lag``.
"""

from __future__ import annotations

import numpy as np


class PolicyLag:
    def __init__(self, max_lag: int = 4096) -> None:
        self.max_lag = int(max_lag)
        self.counts = np.zeros(self.max_lag + 1, dtype=np.int64)

    def record(self, train_iter: int, versions: np.ndarray) -> float:
        """Count the rows of a batch: ``versions`` is its ``policy_version`` column. Rows from the
        policy's initial weights (version -1) count from iteration 0. Returns the batch's median lag."""
        versions = np.maximum(np.asarray(versions, dtype=np.int64).ravel(), 0)
        lag = np.clip(train_iter - versions, 0, self.max_lag)
        self.counts += np.bincount(lag, minlength=self.max_lag + 1)
        return float(np.median(lag)) if len(lag) else 0.0

    @property
    def rows(self) -> int:
        return int(self.counts.sum())

    def quantile(self, q: float) -> int | None:
        """The smallest lag with at least ``q`` of the rows at or below it; None before any row."""
        total = self.rows
        if not total:
            return None
        return int(np.searchsorted(np.cumsum(self.counts), q * total, side="left"))

    def summary(self) -> dict[str, int | None]:
        """Median, 95th percentile and maximum lag (in learner iterations) over the rows so far."""
        seen = np.flatnonzero(self.counts)
        return {
            "median": self.quantile(0.5),
            "p95": self.quantile(0.95),
            "max": int(seen[-1]) if len(seen) else None,
            "rows": self.rows,
        }
