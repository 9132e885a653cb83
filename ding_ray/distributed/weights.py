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
from ding_ray.worker.weights_holder import WeightsHolder

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WeightsRef:
    """A published version: ``version`` is the learner iteration the weights were taken at;
    ``incarnation`` tells the learner processes apart: a learner restarted from a checkpoint
    publishes lower versions than its dead predecessor did, and they still replace its weights.
    Whoever passes it on (the learner client, the ``weights_publisher`` stage, the collectors and
    evaluator clients) compares nothing: the publisher decides what is published, the worker
    that loads it what is loaded (``pull``)."""

    version: int
    ref: ray.ObjectRef
    incarnation: int = 0
    node: str | None = None  # the Ray node of the process that put them (their owner), if known


class WeightsPublisher:
    """Held by the learner, the one place that decides whether weights are published: the first
    ones, then every ``every`` iterations, each version ``ray.put`` once; keeps only the latest
    reference."""

    def __init__(self, every: int = 1) -> None:
        self.every = max(1, int(every))
        self.latest: WeightsRef | None = None
        self.published = 0
        self.incarnation = time.time_ns()  # a restarted learner's publications win over the dead one's

    def due(self, version: int) -> bool:
        """Whether weights taken at ``version`` are to be published (``every`` iterations passed)."""
        return self._ahead(version, self.every)

    def publish(self, version: int, weights: Weights) -> WeightsRef:
        """The latest publication: ``weights`` of ``version``, put into the object store unless
        that version is out already."""
        if self._ahead(version, 1):
            node = ray.get_runtime_context().get_node_id()
            self.latest = WeightsRef(int(version), ray.put(weights), self.incarnation, node)
            self.published += 1
        return self.latest

    def _ahead(self, version: int, by: int) -> bool:
        return self.latest is None or version - self.latest.version >= by


# seconds between checks, while weights are being fetched, that the node of their owner still lives
OWNER_CHECK_S = 2.0


class OwnerLost(Exception):
    """The node of the process that put the weights was declared dead while they were fetched."""


def fetch(weights: WeightsRef) -> Weights:
    """``ray.get`` of the weights, given up (``OwnerLost``) once Ray declares their owner's node dead.

    A host that is lost without a word (its link silent: no connection is refused) leaves a plain
    ``ray.get`` waiting minutes for the owner to answer, long after Ray knows the node is gone; the
    collectors and the evaluator would wait that long, and the run with them.
    """
    while True:
        try:
            return ray.get(weights.ref, timeout=OWNER_CHECK_S)
        except ray.exceptions.GetTimeoutError:
            if weights.node is not None and not node_alive(weights.node):
                raise OwnerLost(f"node {weights.node} is dead") from None


def node_alive(node_id: str) -> bool:
    return any(node["NodeID"] == node_id and node["Alive"] for node in ray.nodes())


def pull(worker: WeightsHolder, weights: WeightsRef | None) -> bool:
    """Give ``worker`` the weights if it wants them (``WeightsHolder.wants_weights``: the one
    check of what a worker loads), fetched only then; True if loaded.

    Weights of a learner process that died before the worker fetched them are gone with it: the
    worker goes on with the weights it holds until the restarted learner publishes.
    """
    if weights is None or not worker.wants_weights(weights.version, weights.incarnation):
        return False
    try:
        value = fetch(weights)
    except (ray.exceptions.ObjectLostError, OwnerLost) as err:  # its owner, the learner, died
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
    return worker.load_weights(weights.version, value, weights.incarnation)
