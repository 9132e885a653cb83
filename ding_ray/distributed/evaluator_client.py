"""``EvaluatorClient``: the driver's client of the evaluator actor, behind the ``Evaluator`` protocol.

``submit`` launches an evaluation of the latest weights on the actor and returns at once;
``poll`` hands over ``(stop, info)`` in a later iteration. A dead evaluator is brought back by the
run's ``ActorSupervisor`` (which records its restarts with the run's others), and evaluates the
latest weights once back.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import ray

from ding_ray.distributed.actors import Actors
from ding_ray.distributed.supervisor import ActorSupervisor, Died
from ding_ray.distributed.weights import WeightsRef
from ding_ray.worker import metrics

MAX_EVAL_FAILURES = 3  # deaths in a row without a finished evaluation before the run ends


class EvaluatorClient:
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
        supervisor: ActorSupervisor,
        max_backlog: int = 0,
        restart_timeout_s: float = 120.0,
    ) -> None:
        """``restart_timeout_s``: how long a dead evaluator may take to come back (a node with room
        for it) before the run ends with an error, rather than training on without evaluations."""
        self.actors, self.supervisor = actors, supervisor
        self._restart_timeout_s = float(restart_timeout_s)
        self.weights: WeightsRef | None = None
        self.stop_weights: WeightsRef | None = None  # the version that reached the stop value
        self.stop_env_step: int | None = None  # the env steps collected when those weights were taken
        self.best_return: float | None = None
        self._ref: Any = None
        self._evaluating: tuple = ()  # (weights, train_iter, envstep) of the evaluation in flight
        self._backlog: deque[tuple] = deque()
        self._max_backlog = int(max_backlog)
        self._due: tuple | None = None  # (train_iter, envstep) of one due before the first weights
        self._lost = False  # an evaluation was lost with a death: the latest weights are evaluated once back

    def refs(self) -> list:
        return [] if self._ref is None else [self._ref]

    def load_weights(self, version: int, weights: WeightsRef) -> bool:
        """Evaluate ``weights`` from the next evaluation on (False: they are the ones held already);
        the evaluator actor loads them if they are newer than its own (``weights.pull``)."""
        if weights is self.weights:
            return False
        self.weights = weights
        self._start()
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
        elif self._max_backlog > 0:
            if len(self._backlog) >= self._max_backlog:
                self._backlog.pop()
            self._backlog.append(job)

    def _start(self) -> Any:
        """The evaluator actor, created (unless ``wait_ready`` did) and watched on first use."""
        if "evaluator" not in self.supervisor.members:
            handle = self.actors.start_evaluator()
            self.supervisor.add(
                "evaluator",
                handle,
                restart_timeout_s=self._restart_timeout_s,
                max_failures=MAX_EVAL_FAILURES,
                advice="resume=<the run's folder> goes on from the latest checkpoint.",
            )
            self.supervisor.on_back("evaluator", self._restarted)
        return self.actors.evaluator

    def _launch(self, job: tuple) -> None:
        self._evaluating = job
        handle = self._start()
        if not self.supervisor.up("evaluator"):  # it evaluates the latest weights once back
            self._lost = True
            return
        self._ref = handle.evaluate.remote(*job, self.best_return)

    def _restarted(self, instance: dict, event: dict) -> None:
        """The evaluator is back: the evaluation it was running and those queued are lost; it
        evaluates the latest weights now."""
        lost = self._lost or self._ref is not None
        event["lost_evaluations"] = 1 + len(self._backlog) if lost else 0
        self._backlog.clear()
        if self._ref is not None:  # a call to the dead process (the probe saw the restart first)
            self.supervisor.port.forget([self._ref])
            self._ref = None
        self._lost = False
        if lost:
            self._launch((self.weights, *self._evaluating[1:]))

    @property
    def pending(self) -> bool:
        return self._ref is not None or self._lost

    def poll(self) -> tuple[bool, dict] | None:
        """``(stop, info)`` of the evaluation in flight once it is done, else None."""
        if self._ref is None or not ray.wait([self._ref], timeout=0)[0]:
            return None
        ref, self._ref = self._ref, None
        try:
            out = self.supervisor.port.result(ref)
        except Died as err:  # the supervisor brings it back; ``_restarted`` relaunches
            self._lost = True
            self.supervisor.died("evaluator", err)
            return None
        self.supervisor.calls("evaluator", busy=False, finished=1)
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
        while self._ref is not None and self.stop_weights is None:
            ray.wait([self._ref], timeout=max(0.0, deadline - time.monotonic()))
            result = self.poll()  # launches the next one queued, unless this one reached the stop value
            if result is None:  # not back in time, or the evaluator died
                break
            results.append(result)
        return results
