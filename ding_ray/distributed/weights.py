"""Weights through the object store: put once per version, fetched only by those behind.

The learner ``ray.put``s each published version once; N collectors on a node then read the same
shared-memory copy. A ``WeightsRef`` travels inside call arguments (Ray leaves references nested
in an object unresolved), so a receiver that already holds the version never fetches it.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

import ray

from ding_ray.policy.weights import Weights

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WeightsRef:
    """A published version: ``version`` is the learner iteration the weights were taken at;
    ``incarnation`` tells the learner processes apart: a learner restarted from a checkpoint
    publishes lower versions than its dead predecessor did, and they still replace its weights."""

    version: int
    ref: ray.ObjectRef
    incarnation: int = 0

    def newer_than(self, other: WeightsRef | None) -> bool:
        return other is None or (self.incarnation, self.version) > (other.incarnation, other.version)


class WeightsPublisher:
    """Held by the learner: ``ray.put`` once per version, keep only the latest reference."""

    def __init__(self) -> None:
        self.latest: WeightsRef | None = None
        self.published = 0
        self.incarnation = time.time_ns()  # a restarted learner's publications win over the dead one's

    @property
    def version(self) -> int:
        return -1 if self.latest is None else self.latest.version

    def publish(self, version: int, weights: Weights) -> WeightsRef:
        if self.latest is None or version > self.latest.version:
            self.latest = WeightsRef(int(version), ray.put(weights), self.incarnation)
            self.published += 1
        return self.latest


def pull(worker, weights: WeightsRef | None) -> bool:
    """Give ``worker`` (anything with ``version`` and ``load_weights``) the weights if newer.

    Weights of a learner process that died before the worker fetched them are gone with it: the
    worker goes on with the weights it holds until the restarted learner publishes. A restarted
    learner's weights replace whatever the worker holds, though their version is lower.
    """
    incarnation = getattr(worker, "weights_incarnation", 0)
    if weights is None or (weights.incarnation, weights.version) <= (incarnation, worker.version):
        return False
    try:
        value = ray.get(weights.ref)
    except ray.exceptions.ObjectLostError as err:  # its owner, the learner, died
        logger.warning(
            "weights version %d were lost with the learner (%s); keeping mine",
            weights.version,
            type(err).__name__,
        )
        return False
    except OSError as err:
        # The connection to this node's raylet broke (the node crashed): the process dies with its
        # node, so end it now, and the driver sees an actor death (a lost batch, a restart) instead
        # of this call failing as if the collector had a bug.
        logger.error("the connection to this node's Ray broke (%s): exiting with the node", err)
        os._exit(1)
    held = worker.version
    if weights.incarnation != incarnation:
        worker.version = -1  # a new line of versions starts with the restarted learner's
    try:
        loaded = worker.load_weights(weights.version, value)
    except BaseException:
        worker.version = held
        raise
    worker.weights_incarnation = weights.incarnation
    return loaded
