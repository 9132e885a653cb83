"""``LogBuffer``: the values a policy reports each training iteration, kept until the next log line."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any


class LogBuffer:
    """Running sums per key, plus the values of the latest iteration on their own.

    ``LogShowHook`` turns the sums into means; ``LogReduceHook`` replaces the latest iteration's
    values by their average over all ranks (which also corrects the sums).
    """

    def __init__(self) -> None:
        self._sums: dict[str, float] = {}
        self._counts: dict[str, int] = {}
        self._latest: dict[str, float] = {}

    def update(self, values: Mapping[str, Any]) -> None:
        """Add one iteration's reported values; non-numeric ones (lists, tensors) are not averaged."""
        self._latest = {
            key: float(value)
            for key, value in values.items()
            if isinstance(value, numbers.Real) and not isinstance(value, bool)
        }
        for key, value in self._latest.items():
            self._sums[key] = self._sums.get(key, 0.0) + value
            self._counts[key] = self._counts.get(key, 0) + 1

    @property
    def latest(self) -> dict[str, float]:
        """The numeric values of the latest ``update``."""
        return dict(self._latest)

    def replace_latest(self, values: Mapping[str, float]) -> None:
        """Put ``values`` in place of the latest iteration's values of the same keys."""
        for key, value in values.items():
            if key not in self._latest:
                raise KeyError(f"'{key}' was not reported in the latest iteration; cannot replace it.")
            self._sums[key] += float(value) - self._latest[key]
            self._latest[key] = float(value)

    def means_and_clear(self) -> dict[str, float]:
        means = {k: self._sums[k] / self._counts[k] for k in self._sums}
        self.clear()
        return means

    def clear(self) -> None:
        self._sums, self._counts, self._latest = {}, {}, {}
