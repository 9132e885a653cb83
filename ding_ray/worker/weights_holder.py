"""``WeightsHolder``: the one place that decides whether a worker loads weights it is offered.

A worker that acts with a copy of the learner's policy (``RolloutWorker``, ``EvalWorker``,
``BattleRolloutWorker``, and the actors wrapping them) holds weights of some ``version``: the
learner iteration they were taken at, DI-engine's policy version (-1: the policy's own initial
weights). Offered weights are loaded only when they are newer. Weights from another learner
process (``incarnation``, on Ray: a learner restarted from a checkpoint counts its iterations
again from there) are newer when their process is, whatever their version.
"""

from __future__ import annotations

from typing import Any

from ding_ray.policy.weights import Weights, load_weights


class WeightsHolder:
    """Mixed into a worker whose ``_acting_mode()`` is the policy mode the weights go into."""

    version: int = -1  # the learner iteration of the weights held; -1: the policy's initial ones
    weights_incarnation: int = 0  # the learner process they came from (0: one process, no restarts)

    def _acting_mode(self) -> Any:
        raise NotImplementedError

    def wants_weights(self, version: int, incarnation: int = 0) -> bool:
        """Whether weights of ``version`` from learner process ``incarnation`` are newer than those
        held (asked before fetching them, so that a worker holding them fetches nothing)."""
        return (incarnation, version) > (self.weights_incarnation, self.version)

    def load_weights(self, version: int, weights: Weights, incarnation: int = 0) -> bool:
        """Load ``weights`` if they are newer than those held; True if loaded.

        Weights that do not fit the model (a missing, unexpected or reshaped parameter) raise
        ``ShapeError`` naming each one with both shapes; the weights and version held stay as they were.
        """
        if not self.wants_weights(version, incarnation):
            return False
        load_weights(self._acting_mode(), weights)
        self.version, self.weights_incarnation = int(version), int(incarnation)
        return True
