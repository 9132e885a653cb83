"""The buffer and learner actors behind the protocols the stages call (the evaluator's is
``remote_evaluator``, the collectors' ``remote_collectors``).

Each class implements a protocol of ``ding_ray.framework.interfaces`` (``Buffer``: ``push``/
``sample``/``update``; ``Learner``: ``submit``/``poll``/``train_iter``/``priority_info``) as
remote calls that do not block the driver:

- data stays in the object store: ``push`` and ``sample`` pass references from actor to actor;
- results come back in a later iteration: ``submit`` launches a call, ``poll`` hands over the
  calls that finished (None while they run);
- the learner's weights are published through the object store (``weights()`` gives the latest
  ``WeightsRef``) for the ``weights_publisher`` stage to hand to collectors and evaluator.

A dead learner or buffer is waited for while Ray restarts it from the run's latest checkpoint
(``ActorSupervisor``): what was in flight on it is dropped and counted, and the run goes on; one
that does not come back ends the run with an ``ActorDiedError`` naming it. Both report their calls
to the supervisor, which kills a learner or buffer whose call runs past ``ray.call_timeout_s`` (a
frozen process): it then goes the same way.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import ray

from ding_ray.data.rate_limiter import RateLimiter
from ding_ray.distributed.actors import Actors
from ding_ray.distributed.cluster import ClusterError, learner_name
from ding_ray.distributed.startup import why_not_started
from ding_ray.distributed.supervisor import ActorSupervisor, Recovered
from ding_ray.distributed.weights import WeightsRef
from ding_ray.utils.runtime import process_age_s
from ding_ray.worker import metrics

logger = logging.getLogger(__name__)


class RemoteBuffer:
    """The replay-buffer actor. ``sample`` asks for ``batches_per_call`` batches at once (one
    learner call trains on all of them) and returns None while the rate limiter holds the learner
    back or ``max_in_flight`` samples already wait on the learner. ``max_pushes``: pushes in flight
    beyond which a batch is dropped (``ray.backpressure='drop'``); None: never (a rate limiter
    bounds them)."""

    def __init__(
        self,
        actors: Actors,
        supervisor: ActorSupervisor,
        limiter: RateLimiter | None = None,
        batches_per_call: int = 1,
        max_in_flight: int = 2,
        max_pushes: int | None = None,
    ) -> None:
        self.actors, self.handle, self.supervisor, self.limiter = actors, actors.buffer, supervisor, limiter
        self.batches_per_call, self.max_in_flight = int(batches_per_call), int(max_in_flight)
        self.in_flight = 0  # sampled batches the learner has not finished training on
        self.learner_waits = 0  # times the learner ran dry because the collectors were behind
        self.max_pushes = max_pushes
        self.dropped_batches = 0  # batches not pushed: max_pushes were in flight
        self._pushes: list = []
        self._updates: list = []
        self._samples: list = []  # sample calls not finished yet (timed by the supervisor)
        self._last_n: int | None = None  # items of the last sample call
        supervisor.on_back("buffer", self._restarted)

    def push(self, data: Any, cur_collector_envstep: int = -1) -> None:
        """Store the batch (or list of batches) behind the reference(s) ``data``."""
        self._pushes = self._take_finished(self._pushes)
        for ref in data if isinstance(data, list) else [data]:
            if self.max_pushes is not None and len(self._pushes) >= self.max_pushes:
                self.dropped_batches += 1
                continue
            self._pushes.append(self.handle.push.remote(ref, cur_collector_envstep))

    def _take_finished(self, refs: list) -> list:
        """Take the outcome of the calls of ``refs`` that finished; the others."""
        if not refs:
            return refs
        done, refs = ray.wait(refs, num_returns=len(refs), timeout=0)
        for ref in done:
            try:
                self.supervisor.get(ref, core_actors(self.supervisor))
            except Recovered as err:  # the buffer died with it, or its collector did before it was read
                logger.info("a pushed batch or a priority update was lost: %s", err)
        return refs

    def _restarted(self, instance: dict, event: dict) -> None:
        """The buffer is back: what was being pushed or updated went with the dead one."""
        self.supervisor.port.forget(self._pushes + self._updates)
        self._pushes, self._updates, self._samples = [], [], []

    def watch(self) -> None:
        """Report the calls in flight to the supervisor (a frozen buffer is killed)."""
        before = len(self._pushes) + len(self._updates) + len(self._samples)
        self._pushes = self._take_finished(self._pushes)
        self._updates = self._take_finished(self._updates)
        if self._samples:
            self._samples = ray.wait(self._samples, num_returns=len(self._samples), timeout=0)[1]
        left = len(self._pushes) + len(self._updates) + len(self._samples)
        self.supervisor.calls("buffer", busy=left > 0, finished=before - left)

    def sample(self, size: int, train_iter: int = 0, **_: Any) -> Any:
        """A reference to ``size * batches_per_call`` sampled items, or None (not yet)."""
        n = self._last_n = size * self.batches_per_call
        if self.in_flight >= self.max_in_flight:
            return None
        if self.limiter is not None:
            if not self.limiter.can_sample(n):
                self.learner_waits += (
                    not self.in_flight and self.limiter.inserted >= self.limiter.min_size_to_sample
                )
                return None
            self.limiter.sample(n)
        self.in_flight += 1
        ref = self.handle.sample.remote(n, train_iter)
        self._samples.append(ref)
        return ref

    def wants_sample(self) -> bool:
        """Whether a ``sample`` now would launch a call (the learner has room, the limiter agrees)."""
        n = self._last_n
        if n is None or self.in_flight >= self.max_in_flight:
            return False
        return self.limiter is None or self.limiter.can_sample(n)

    def sample_done(self, n: int, trained: bool) -> None:
        """The learner finished a call on a sample of ``n`` items (``trained``: not an empty one)."""
        self.in_flight -= 1
        if not trained and self.limiter is not None:
            self.limiter.cancel_sample(n)

    def update(self, info: Any) -> None:
        """New priorities: a reference (or list of them) to the learner's priority info."""
        for ref in info if isinstance(info, list) else [info]:
            self._updates.append(self.handle.update.remote(ref))
        self._updates = self._take_finished(self._updates)

    def stats(self) -> Any:
        return self.handle.stats.remote()


@dataclass
class _TrainCall:
    info: Any  # ref of the learner's info dict
    priority: list | None  # refs of its priority updates (one per learner group member)
    size: int  # items sampled for it
    others: list  # refs of the other group members' infos
    data: Any = None  # what it trains on (references): until they are in, the call cannot start


class RemoteLearner:
    """The learner actor. Off-policy, ``submit`` queues a call on a sampled batch and ``poll``
    returns the merged info of the calls that finished meanwhile (None if none did); on-policy,
    ``submit`` starts training on a round's batches and ``poll`` returns when they are done."""

    def __init__(
        self,
        actors: Actors,
        supervisor: ActorSupervisor,
        buffer: RemoteBuffer | None = None,
        on_policy: bool = False,
        start_timeout_s: float = 120.0,
        priority: bool = False,
        train_iter: int = 0,
    ) -> None:
        self.actors, self.handle, self.buffer, self.on_policy = actors, actors.learner, buffer, on_policy
        self.supervisor = supervisor
        self.members = actors.learners or [actors.learner]  # a learner group: every call goes to all
        self.train_iter = train_iter  # a resumed run's learner starts from its checkpoint
        self.priority_info: list | None = None  # refs of the priorities of the calls just finished
        self.latest: WeightsRef | None = None
        self.train_s = 0.0  # seconds the learner spent in train calls (training, publishing)
        self.policy_lag: dict[str, int] = {}  # median and p95 lag of the data trained on so far
        self._first_train: float | None = None
        self._priority = priority
        self._calls: deque[_TrainCall] = deque()
        self._round: list | None = None  # on-policy: the train calls of the round in flight
        self._first_publish: Any = self.handle.publish.remote()
        self._start_timeout_s = start_timeout_s
        self._created = time.monotonic()
        supervisor.on_back("learner", self._restarted)

    def _restarted(self, instance: dict, event: dict) -> None:
        """The learner is back from its latest checkpoint: the iterations since are lost, the calls
        in flight too (their samples go back to the rate limiter), and it publishes again."""
        event["lost_train_iters"] = max(0, self.train_iter - instance["train_iter"])
        self.train_iter = instance["train_iter"]
        for call in self._calls:
            if self.buffer is not None:
                self.buffer.sample_done(call.size, trained=False)
            self.supervisor.port.forget([call.info, *(call.priority or []), *call.others])
        self._calls.clear()
        if self._first_publish is not None:
            self.supervisor.port.forget([self._first_publish])
        self.latest = None
        self._first_publish = self.handle.publish.remote()

    @property
    def pending(self) -> bool:
        return bool(self._calls) or self._round is not None

    def refs(self) -> list:
        """Calls in flight: the first publication until it is in, then the oldest train call."""
        refs = [self._first_publish] if self._first_publish is not None else []
        return refs + ([self._calls[0].info] if self._calls else [])

    def weights(self) -> tuple[int, WeightsRef] | None:
        """``(version, WeightsRef)`` of the latest publication, or None before the first one.
        On-policy the collectors need the learner's weights from the first round: this waits."""
        if self._first_publish is not None:
            wait = self._start_timeout_s if self.on_policy else 0
            if ray.wait([self._first_publish], timeout=wait)[0]:
                try:
                    self._take_weights(self._get(self._first_publish))
                    self._first_publish = None
                    logger.info("learner ready %.1f s after launch", process_age_s())
                except Recovered:  # the learner died first; it publishes again once back
                    pass
            elif self.on_policy:
                self.check_started()
        return None if self.latest is None else (self.latest.version, self.latest)

    def _get(self, ref: Any) -> Any:
        """The result of a learner call (it may depend on the buffer's sample)."""
        return self.supervisor.get(ref, core_actors(self.supervisor))

    def _take_weights(self, weights: WeightsRef) -> None:
        if weights.newer_than(self.latest):
            self.latest = weights

    def submit(self, data: Any, envstep: int = -1) -> None:
        """Off-policy: queue a call on a sampled batch (references). On-policy: start training on a
        round's batches, which ``poll`` waits for."""
        if self.on_policy:
            if data:
                self._round = [m.train_sync.remote(envstep, *data) for m in self.members]
            return
        calls = [m.train_async.options(num_returns=2).remote(data, envstep) for m in self.members]
        size = self.buffer.batches_per_call if self.buffer is not None else 0
        # each member reports the priorities of its share of the rows
        priority = [c[1] for c in calls] if self._priority else None
        self._calls.append(_TrainCall(calls[0][0], priority, size, [c[0] for c in calls[1:]], data))

    def poll(self) -> dict | None:
        """The merged info of the calls finished since the last poll (on-policy: of the round,
        waited for), or None; ``priority_info`` then holds references to their priorities."""
        self.priority_info = None
        if not self.on_policy:
            if self.buffer is not None:
                self.buffer.watch()
            return self._harvest()
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
        self.train_s += info["call_seconds"]
        return self._took(info)

    def finish(self, timeout_s: float) -> None:
        """The end of a run: wait up to ``timeout_s`` for the train calls in flight and take them.
        The learner runs them before the run's last checkpoint either way, so the run's counters
        (``train_iter``, the checkpoint's folder, result.json) count them too, as DI-engine's
        learner, whose calls all finish, does."""
        refs = [call.info for call in self._calls]
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        self.poll()

    def _harvest(self) -> dict | None:
        """The merged info of the oldest calls that finished (actor calls finish in order)."""
        out, priorities, finished = None, [], 0
        while self._calls and ray.wait([self._calls[0].info], timeout=0)[0]:
            call = self._calls.popleft()
            try:
                info = self._get(call.info)
                self._get(call.others)  # the other members' infos: their errors surface here
            except Recovered:  # the learner died under it, or the buffer under its sample
                if self.buffer is not None:
                    self.buffer.sample_done(call.size, trained=False)
                self.supervisor.port.forget([*(call.priority or []), *call.others])
                continue
            finished += 1  # calls that came back (a failed one's restart restarted the clock)
            self.train_s += info["call_seconds"]
            if self._first_train is None:
                self._first_train = time.monotonic() - info["call_seconds"]
            if self.buffer is not None:
                self.buffer.sample_done(call.size, trained=info["iters"] > 0)
            if info["iters"] > 0 and call.priority is not None:
                priorities += call.priority
            out = self._took(info)
        self.priority_info = priorities or None
        busy = bool(self._calls) and _ready(self._calls[0].data)
        self.supervisor.calls("learner", busy=busy, finished=finished)
        return out

    def _took(self, info: dict) -> dict:
        self.train_iter = info[metrics.LEARNER_TRAIN_ITER]
        if metrics.LEARNER_POLICY_LAG_MEDIAN in info:
            self.policy_lag = {
                "median": info[metrics.LEARNER_POLICY_LAG_MEDIAN],
                "p95": info[metrics.LEARNER_POLICY_LAG_P95],
            }
        if "weights" in info:
            self._take_weights(info.pop("weights"))
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


def core_actors(supervisor: ActorSupervisor) -> list[str]:
    """The actors a learner or buffer call may have failed with: the learner and the buffer."""
    return [name for name in ("learner", "buffer") if name in supervisor.members]


def _ready(data: Any) -> bool:
    """Whether the references in ``data`` (one, a list or dict of them, or none) are all in."""
    items = data.values() if isinstance(data, dict) else data if isinstance(data, (list, tuple)) else [data]
    refs = [r for r in items if isinstance(r, ray.ObjectRef)]
    return not refs or len(ray.wait(refs, num_returns=len(refs), timeout=0)[0]) == len(refs)
