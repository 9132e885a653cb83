"""``RunningMeanStd``: the running mean and variance of a stream of batches, per feature.

PPO keeps one over its returns (``value_norm``: a scalar) and one over its observations
(``ObsNormalizer``: a vector); both merge each batch with Chan et al.'s parallel formula.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch


class RunningMeanStd:
    """Mean 0 and variance 1 before the first batch. ``epsilon`` is the count they start with
    (DI-engine's 1e-4 for the returns: the first batch then sets them almost alone)."""

    def __init__(self, epsilon: float = 1e-4, shape: int | Sequence[int] = ()) -> None:
        self.shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
        self.mean = np.zeros(self.shape, np.float64)
        self.var = np.ones(self.shape, np.float64)
        self.count = float(epsilon)

    def update(self, x: np.ndarray | torch.Tensor) -> None:
        """Merge a batch: rows of ``shape`` (any leading dimensions)."""
        if isinstance(x, torch.Tensor):
            x = x.detach().cpu().numpy()
        x = np.asarray(x)
        x = (x if np.issubdtype(x.dtype, np.floating) else x.astype(np.float64)).reshape(-1, *self.shape)
        n = len(x)
        if n == 0:
            return
        # the batch's moments in its own precision, the merge in float64: DI-engine's arithmetic
        batch_mean, batch_var = x.mean(axis=0).astype(np.float64), x.var(axis=0).astype(np.float64)
        total = self.count + n
        delta = batch_mean - self.mean
        self.mean = self.mean + delta * n / total
        self.var = (self.var * self.count + batch_var * n + delta**2 * self.count * n / total) / total
        self.count = total

    @property
    def std(self) -> np.ndarray:
        """``sqrt(var + 1e-8)`` (DI-engine's), never 0."""
        return np.sqrt(self.var + 1e-8)

    def state_dict(self) -> dict[str, Any]:
        """Plain floats (lists for a vector), as a checkpoint's ``value_norm`` entry holds them."""
        return {"mean": self.mean.tolist(), "var": self.var.tolist(), "count": self.count}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.mean = np.array(state["mean"], dtype=np.float64).reshape(self.shape)
        self.var = np.array(state["var"], dtype=np.float64).reshape(self.shape)
        self.count = float(np.asarray(state["count"]))
