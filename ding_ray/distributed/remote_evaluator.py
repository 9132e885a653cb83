"""``RemoteEvaluator``: the evaluator actor behind the ``Evaluator`` protocol the stages call.

``submit`` launches an evaluation of the latest weights on the actor and returns at once;
``poll`` hands over ``(stop, info)`` in a later iteration. A dead evaluator is waited for while
Ray restarts it, and evaluates the latest weights once back; its restarts are recorded with the
run's others (``Recovery.record``).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

import ray
from ray.exceptions import RayActorError

from ding_ray.distributed.actors import Actors
from ding_ray.distributed.errors import ActorDiedError, get
from ding_ray.distributed.recovery import Recovery, ray_restarts, restart_events
from ding_ray.distributed.startup import why_not_started
from ding_ray.distributed.weights import WeightsRef
from ding_ray.worker import metrics

logger = logging.getLogger(__name__)

MAX_EVAL_FAILURES = 3


class RemoteEvaluator:
    """The evaluator actor: ``submit`` launches an evaluation of the latest weights it was given and
    returns; ``poll()`` gives ``(stop, info)`` once it is in.

    ``max_backlog``: evaluations that fall due while one runs wait in a queue of that length (the
    newest replaces the last when it is full) instead of being skipped, so each due version is
    evaluated, later; on-policy runs peak and fall back within a few rounds and would otherwise
    be missed. 0: skip them, evaluating the latest weights as soon as the evaluator is free.
    """

    def __init__(
        self,
        actors: Actors,
        max_backlog: int = 0,
        restart_timeout_s: float = 120.0,
        recovery: Recovery | None = None,
    ) -> None:
        """``restart_timeout_s``: how long a dead evaluator may take to come back (a node with room
        for it) before the run ends with an error, rather than training on without evaluations.
        ``recovery``: where its restarts are recorded (result.json's ``recoveries``)."""
        self.actors, self.recovery = actors, recovery
        self._ray_restarts: int | None = 0
        self._restart_timeout_s = float(restart_timeout_s)
        self._restart_since = 0.0
        self.weights: WeightsRef | None = None
        self.stop_weights: WeightsRef | None = None  # the version that reached the stop value
        self.stop_env_step: int | None = None  # the env steps collected when those weights were taken
        self.best_return: float | None = None
        self._ref: Any = None
        self._evaluating: tuple = ()  # (weights, train_iter, envstep) of the evaluation in flight
        self._backlog: deque[tuple] = deque()
        self._max_backlog = int(max_backlog)
        self._due: tuple | None = None  # (train_iter, envstep) of one due before the first weights
        self._restarting = False
        self._failures = 0

    def refs(self) -> list:
        return [] if self._ref is None else [self._ref]

    def load_weights(self, version: int, weights: WeightsRef) -> bool:
        if not weights.newer_than(self.weights):
            return False
        self.weights = weights
        self.actors.start_evaluator()
        if self._due is not None:
            due, self._due = self._due, None
            self.submit(*due)
        return True

    def submit(self, train_iter: int, envstep: int, **_: Any) -> None:
        """Evaluate the latest weights: now, or after the evaluation in flight (queued, with
        ``max_backlog``). The untrained ones too, as DI-engine evaluates at iteration 0: an
        evaluation due before the learner's first publication waits for it."""
        if self.weights is None:
            self._due = (train_iter, envstep)
            return
        job = (self.weights, train_iter, envstep)
        if self._ref is None:
            self._launch(job)
        elif self._max_backlog > 0 and not self._restarting:
            if len(self._backlog) >= self._max_backlog:
                self._backlog.pop()
            self._backlog.append(job)

    def _launch(self, job: tuple) -> None:
        self._evaluating = job
        self._ref = self.actors.start_evaluator().evaluate.remote(*job, self.best_return)

    @property
    def pending(self) -> bool:
        return self._ref is not None

    def poll(self) -> tuple[bool, dict] | None:
        """``(stop, info)`` of the evaluation in flight once it is done, else None."""
        if self._ref is None:
            return None
        if not ray.wait([self._ref], timeout=0)[0]:
            waited = time.monotonic() - self._restart_since
            if self._restarting and waited > self._restart_timeout_s:
                raise ActorDiedError(
                    f"The evaluator actor died and has not come back within {waited:.0f} s "
                    f"(ray.actor_start_timeout_s). {why_not_started(self.actors, ['evaluator'])} "
                    "resume=<the run's folder> goes on from the latest checkpoint."
                )
            return None
        ref, self._ref = self._ref, None
        try:
            out = get(ref)
        except RayActorError as err:
            self._failures += 1
            if self._failures >= MAX_EVAL_FAILURES:
                raise ActorDiedError(f"The evaluator actor 'evaluator' keeps dying: {err}") from err
            logger.warning("the evaluator died (%s); evaluating again once Ray has restarted it", err)
            # A call to a restarting actor fails at once; a ping that Ray retries returns once it
            # is back (or fails if it never comes back).
            self._ref = self.actors.evaluator.ping.options(max_task_retries=-1).remote()
            self._restarting, self._restart_since = True, time.monotonic()
            return None
        if self._restarting:  # the ping answered: evaluate the latest weights now
            self._restarting = False
            self._note_restarts(died=True, lost=1 + len(self._backlog))
            self._backlog.clear()
            self._launch((self.weights, *self._evaluating[1:]))
            return None
        self._failures = 0
        self._note_restarts()  # it died while idle and Ray brought it back before this call
        self.best_return = out["best_return"]
        if out["stop"] and self.stop_weights is None:
            self.stop_weights, self.stop_env_step = self._evaluating[0], int(out["envstep"])
        elif self._backlog:
            self._launch(self._backlog.popleft())
        info = dict(out)  # with the keys of InteractionSerialEvaluator's info, which the stage reads
        info["eval_episode_return_mean"] = out[metrics.EVAL_RETURN_MEAN]
        info["eval_episode_return_std"] = out[metrics.EVAL_RETURN_STD]
        info["eval_episode_return_max"] = out[metrics.EVAL_RETURN_MAX]
        info["eval_episode_return_min"] = out[metrics.EVAL_RETURN_MIN]
        return bool(out["stop"]), info

    def finish(self, timeout_s: float) -> list[tuple[bool, dict]]:
        """The end of a run: the evaluation in flight and those queued behind it, waited for up to
        ``timeout_s`` in all, as DI-engine's loop, whose evaluations are synchronous, leaves none
        undone (a short run's iteration-0 evaluation included); their ``(stop, info)`` in order.
        Nothing once the stop value was reached: DI-engine's loop ends at that evaluation."""
        deadline = time.monotonic() + timeout_s
        results = []
        while self._ref is not None and not self._restarting and self.stop_weights is None:
            ray.wait([self._ref], timeout=max(0.0, deadline - time.monotonic()))
            result = self.poll()  # launches the next one queued, unless this one reached the stop value
            if result is None:  # not back in time, or the evaluator died
                break
            results.append(result)
        return results

    def _note_restarts(self, died: bool = False, lost: int = 0) -> None:
        """Record the evaluator's restarts since the last call: the one whose call failed (``died``,
        ``lost`` evaluations not done), and any Ray did between two evaluations, unseen otherwise."""
        before, self._ray_restarts = self._ray_restarts, ray_restarts(self.actors.evaluator)
        now = self._ray_restarts
        if not died and (before is None or now is None or now <= before):
            return
        events = [*restart_events("evaluator", before, now)]
        events.append({"actor": "evaluator", "restored_from": None, "lost_evaluations": lost})
        if self.recovery is not None:
            self.recovery.record(*events)
        else:
            logger.warning("the evaluator is back")
