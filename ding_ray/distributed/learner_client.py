"""The driver's clients of the learner actor, one per pipeline shape, behind the ``Learner``
protocol of ``ding_ray.framework.interfaces`` (``submit``/``poll``/``train_iter``/``priority_info``).

- ``AsyncLearnerClient`` (Ape-X): ``submit`` queues a call on a batch the buffer actor samples
  (references only: the data goes from actor to actor), ``poll`` takes the calls that finished
  meanwhile and never blocks. The priorities a call computed go to the buffer client at once.
- ``SyncLearnerClient`` (on-policy rounds): ``submit`` starts training on a round's batches,
  ``poll`` waits for them.

Both take the weights the learner publishes through the object store (``weights()``: the latest
``WeightsRef``, for the ``weights_publisher`` stage to hand to collectors and evaluator). A dead
learner is the run's ``ActorSupervisor``'s to bring back; the client then drops what was in flight
on it and counts the iterations lost since the checkpoint it came back from.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import ray

from ding_ray.distributed.actors import CORE_ACTORS, Actors
from ding_ray.distributed.buffer_client import BufferClient
from ding_ray.distributed.config import learner_name
from ding_ray.distributed.startup import why_not_started
from ding_ray.distributed.supervisor import ActorSupervisor, Recovered
from ding_ray.distributed.weights import WeightsRef
from ding_ray.errors import ClusterError
from ding_ray.utils.runtime import process_age_s
from ding_ray.worker import metrics

logger = logging.getLogger(__name__)


class LearnerClient:
    """What both pipeline shapes share: the published weights, the counters, a restart."""

    priority_info = None  # the Learner protocol's: priorities go to the buffer client directly
    first_publish_wait_s = 0.0  # how long ``weights()`` waits for the learner's first publication

    def __init__(
        self, actors: Actors, supervisor: ActorSupervisor, start_timeout_s: float = 120.0, train_iter: int = 0
    ) -> None:
        self.actors, self.handle, self.supervisor = actors, actors.learner, supervisor
        self.members = actors.learners or [actors.learner]  # a learner group: every call goes to all
        self.train_iter = train_iter  # a resumed run's learner starts from its checkpoint
        self.latest: WeightsRef | None = None
        self.train_s = 0.0  # seconds the learner spent in train calls (training, publishing)
        self.policy_lag: dict[str, int] = {}  # median and p95 lag of the data trained on so far
        self._first_train: float | None = None
        self._first_publish: Any = self.handle.publish.remote()
        self._start_timeout_s = start_timeout_s
        self._created = time.monotonic()
        supervisor.on_back("learner", self._restarted)

    def _restarted(self, instance: dict, event: dict) -> None:
        """The learner is back from its latest checkpoint: the iterations since are lost, the calls
        in flight too, and it publishes again."""
        event["lost_train_iters"] = max(0, self.train_iter - instance["train_iter"])
        self.train_iter = instance["train_iter"]
        self._drop_calls()
        if self._first_publish is not None:
            self.supervisor.port.forget([self._first_publish])
        self.latest = None
        self._first_publish = self.handle.publish.remote()

    def _drop_calls(self) -> None:
        """Forget the calls in flight on a learner that died."""

    def refs(self) -> list:
        """The first publication until it is in."""
        return [self._first_publish] if self._first_publish is not None else []

    def weights(self) -> tuple[int, WeightsRef] | None:
        """``(version, WeightsRef)`` of the latest publication, or None before the first one."""
        if self._first_publish is not None:
            if ray.wait([self._first_publish], timeout=self.first_publish_wait_s)[0]:
                try:
                    self.latest = self._get(self._first_publish)
                    self._first_publish = None
                    logger.info("learner ready %.1f s after launch", process_age_s())
                except Recovered:  # the learner died first; it publishes again once back
                    pass
            elif self.first_publish_wait_s:
                self.check_started()
        return None if self.latest is None else (self.latest.version, self.latest)

    def _get(self, ref: Any) -> Any:
        """The result of a learner call (it may depend on the buffer's sample)."""
        return self.supervisor.get(ref, CORE_ACTORS)

    def _published(self, weights: WeightsRef) -> None:
        """A train call's publication. The learner answers calls in the order they were sent, so it
        is the latest, and the first publication, sent before any train call, is out of date if
        it was not taken yet (the learner's publisher decides what is published; nothing here
        compares versions)."""
        if self._first_publish is not None:
            self.supervisor.port.forget([self._first_publish])
            self._first_publish = None
        self.latest = weights

    def _took(self, info: dict) -> dict:
        self.train_s += info["call_seconds"]
        if self._first_train is None:
            self._first_train = time.monotonic() - info["call_seconds"]
        self.train_iter = info[metrics.LEARNER_TRAIN_ITER]
        if metrics.LEARNER_POLICY_LAG_MEDIAN in info:
            self.policy_lag = {
                "median": info[metrics.LEARNER_POLICY_LAG_MEDIAN],
                "p95": info[metrics.LEARNER_POLICY_LAG_P95],
            }
        if "weights" in info:
            self._published(info.pop("weights"))
        return info

    def busy(self) -> float | None:
        """Share of the time since its first train call that the learner spent training."""
        if self._first_train is None:
            return None
        return round(self.train_s / max(time.monotonic() - self._first_train, 1e-9), 3)

    def check_started(self) -> None:
        if self._first_publish is not None and time.monotonic() - self._created > self._start_timeout_s:
            names = [learner_name(rank) for rank in range(len(self.members))]
            raise ClusterError(
                f"The learner actor did not start within {self._start_timeout_s:g} s "
                "(ray.actor_start_timeout_s). " + why_not_started(self.actors, names)
            )


@dataclass
class _TrainCall:
    info: Any  # ref of the learner's info dict
    priority: list | None  # refs of its priority updates (one per learner group member)
    size: int  # items sampled for it
    others: list  # refs of the other group members' infos
    data: Any = None  # what it trains on (references): until they are in, the call cannot start


class AsyncLearnerClient(LearnerClient):
    """Ape-X: train calls queued on sampled batches, taken as they finish."""

    def __init__(
        self,
        actors: Actors,
        supervisor: ActorSupervisor,
        buffer: BufferClient,
        start_timeout_s: float = 120.0,
        priority: bool = False,
        train_iter: int = 0,
    ) -> None:
        """``priority``: the policy computes priorities (a prioritized buffer takes them)."""
        self.buffer, self._priority = buffer, priority
        self._calls: deque[_TrainCall] = deque()
        super().__init__(actors, supervisor, start_timeout_s, train_iter)

    def _drop_calls(self) -> None:
        for call in self._calls:  # their samples go back to the rate limiter
            self.buffer.limiter.sample_done(call.size, trained=False)
            self.supervisor.port.forget([call.info, *(call.priority or []), *call.others])
        self._calls.clear()

    @property
    def pending(self) -> bool:
        return bool(self._calls)

    def refs(self) -> list:
        """Calls in flight: the first publication until it is in, then the oldest train call."""
        return super().refs() + ([self._calls[0].info] if self._calls else [])

    def submit(self, data: Any, envstep: int = -1) -> None:
        """Queue a call on a sampled batch (references)."""
        calls = [m.train_async.options(num_returns=2).remote(data, envstep) for m in self.members]
        # each member reports the priorities of its share of the rows
        priority = [c[1] for c in calls] if self._priority else None
        size = self.buffer.batches_per_call
        self._calls.append(_TrainCall(calls[0][0], priority, size, [c[0] for c in calls[1:]], data))

    def poll(self) -> dict | None:
        """The merged info of the oldest calls that finished (actor calls finish in order), or None;
        their priorities go to the buffer."""
        out, finished = None, 0
        while self._calls and ray.wait([self._calls[0].info], timeout=0)[0]:
            call = self._calls.popleft()
            try:
                info = self._get(call.info)
                self._get(call.others)  # the other members' infos: their errors surface here
            except Recovered:  # the learner died under it, or the buffer under its sample
                self.buffer.limiter.sample_done(call.size, trained=False)
                self.supervisor.port.forget([*(call.priority or []), *call.others])
                continue
            finished += 1  # calls that came back (a failed one's restart restarted the clock)
            trained = info["iters"] > 0
            self.buffer.limiter.sample_done(call.size, trained=trained)
            if trained and call.priority is not None:
                self.buffer.update(call.priority)
            out = self._took(info)
        busy = bool(self._calls) and _ready(self._calls[0].data)
        self.supervisor.calls("learner", busy=busy, finished=finished)
        return out

    def finish(self, timeout_s: float) -> None:
        """The end of a run: wait up to ``timeout_s`` for the train calls in flight and take them.
        The learner runs them before the run's last checkpoint either way, so the run's counters
        (``train_iter``, the checkpoint's folder, result.json) count them too, as DI-engine's
        learner, whose calls all finish, does."""
        refs = [call.info for call in self._calls]
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        self.poll()


class SyncLearnerClient(LearnerClient):
    """On-policy rounds: each round trains on the batches the collectors just gathered."""

    def __init__(
        self, actors: Actors, supervisor: ActorSupervisor, start_timeout_s: float = 120.0, train_iter: int = 0
    ) -> None:
        self._round: list | None = None  # the train calls of the round in flight
        super().__init__(actors, supervisor, start_timeout_s, train_iter)
        self.first_publish_wait_s = start_timeout_s

    @property
    def pending(self) -> bool:
        return self._round is not None

    def submit(self, data: Any, envstep: int = -1) -> None:
        """Start training on a round's batches (references), which ``poll`` waits for."""
        if data:
            self._round = [m.train_sync.remote(envstep, *data) for m in self.members]

    def poll(self) -> dict | None:
        """The info of the round's training, waited for; None without a round."""
        calls, self._round = self._round, None
        if calls is None:
            return None
        # waited for in steps, so that a frozen learner is killed (and the call fails) past the timeout
        self.supervisor.calls("learner", busy=True)
        while len(ray.wait(calls, num_returns=len(calls), timeout=1.0)[0]) < len(calls):
            self.supervisor.poll()
        self.supervisor.calls("learner", busy=False, finished=1)
        try:
            info = self._get(calls)[0]  # member 0's: it publishes
        except Recovered:  # the round is lost with the learner (or with a collector's batch)
            self.supervisor.port.forget(calls)
            return None
        return self._took(info)

    def finish(self, timeout_s: float) -> None:
        """Nothing is left in flight between rounds."""


def _ready(data: Any) -> bool:
    """Whether the references in ``data`` (one, a list or dict of them, or none) are all in."""
    items = data.values() if isinstance(data, dict) else data if isinstance(data, (list, tuple)) else [data]
    refs = [r for r in items if isinstance(r, ray.ObjectRef)]
    return not refs or len(ray.wait(refs, num_returns=len(refs), timeout=0)[0]) == len(refs)
