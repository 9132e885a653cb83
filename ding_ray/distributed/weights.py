"""Weights through the object store: put once per version, fetched only by those behind.

The learner ``ray.put``s each published version once; N collectors on a node then read the same
shared-memory copy. A ``WeightsRef`` travels inside call arguments (Ray leaves references nested
in an object unresolved), so a receiver that already holds the version never fetches it.
"""

from __future__ import annotations

from dataclasses import dataclass

import ray

from ding_ray.policy.weights import Weights


@dataclass(frozen=True)
class WeightsRef:
    """A published version: ``version`` is the learner iteration the weights were taken at."""

    version: int
    ref: ray.ObjectRef


class WeightsPublisher:
    """Held by the learner: ``ray.put`` once per version, keep only the latest reference."""

    def __init__(self) -> None:
        self.latest: WeightsRef | None = None
        self.published = 0

    @property
    def version(self) -> int:
        return -1 if self.latest is None else self.latest.version

    def publish(self, version: int, weights: Weights) -> WeightsRef:
        if self.latest is None or version > self.latest.version:
            self.latest = WeightsRef(int(version), ray.put(weights))
            self.published += 1
        return self.latest


def pull(worker, weights: WeightsRef | None) -> bool:
    """Give ``worker`` (anything with ``version`` and ``load_weights``) the weights if newer."""
    if weights is None or weights.version <= worker.version:
        return False
    return worker.load_weights(weights.version, ray.get(weights.ref))
