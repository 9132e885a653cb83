"""The driver's clients of the collector actors, one per pipeline shape, behind the ``Collector``
protocol the ``collector`` stage calls (``collect(train_iter=..., policy_kwargs=...)``, ``envstep``,
``envepisode``, as on a ``SampleSerialCollector``).

- ``AsyncCollectorsClient`` (Ape-X): one call in flight per collector, relaunched the moment it
  returns (nobody waits for the slowest), launches held back by the rate limiter; ``collect``
  never blocks. The collectors push their batches into the buffer actor themselves
  (``actors.Pusher``), so ``collect`` returns nothing but the driver's own warm-up batches:
  ``warm_up(n)`` asks for ``n`` random transitions, which the next calls roll out, the first of
  them rolled out by the driver itself while the actors start (seconds: each imports torch), so
  that the learner finds a filled buffer.
- ``SyncCollectorsClient`` (on-policy): every call is a round; the collectors, all with the latest
  weights, gather ``n_sample`` transitions between them in parallel, and ``collect`` returns the
  object references of their batches when all are in (each the second return value of its call,
  so the driver owns it rather than borrows it), for a trainer to hand to the learner actor.

Either way the driver never deserializes a transition, and a collect call is one small request and
one small answer: the weights travel with a call only when the collector does not hold them yet. A
collector that dies loses its call (counted, never retried: no batch is duplicated), and the run's
``ActorSupervisor`` brings it back; it rejoins with the latest weights (``CollectorPool``).
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import ray
from easydict import EasyDict

from ding_ray.data.rate_limiter import RateLimiter
from ding_ray.distributed.actors import Actors
from ding_ray.distributed.cluster import ClusterError
from ding_ray.distributed.collector_pool import CollectorPool, Slot
from ding_ray.distributed.config import Plan
from ding_ray.distributed.placement import actor_demands
from ding_ray.distributed.startup import why_not_started
from ding_ray.distributed.supervisor import ActorSupervisor
from ding_ray.distributed.weights import WeightsRef
from ding_ray.errors import ConfigError
from ding_ray.utils.runtime import process_age_s
from ding_ray.worker.rollout_worker import RolloutWorker

logger = logging.getLogger(__name__)


def refuse_options(options: dict[str, Any]) -> None:
    """A collectors client's ``collect`` takes ``train_iter`` and ``policy_kwargs`` only: the
    collectors' own ``n_sample`` sets a call's size, and the random warm-up is ``warm_up``."""
    if options:
        raise TypeError(
            f"CollectorsClient.collect takes train_iter and policy_kwargs only, got {sorted(options)}. "
            "Each call collects the collectors' own n_sample (ray.* and policy.collect.n_sample set it); "
            "the random warm-up is warm_up(n_sample), which the random_collector stage calls."
        )


class CollectorsClient:
    """What both pipeline shapes share: the pool of collectors, the weights they get, the counts."""

    def __init__(self, cfg: EasyDict, actors: Actors, plan: Plan, supervisor: ActorSupervisor) -> None:
        self.cfg, self.actors, self.plan, self.supervisor = cfg, actors, plan, supervisor
        self.pool = CollectorPool(
            supervisor,
            cfg.ray.actor_start_timeout_s,
            cfg.ray.call_timeout_s,
            start=actors.start_collector,
            demand=dict(actor_demands(cfg.ray))["collector-0"],
        )
        for handle in actors.collectors:
            self.pool.add(handle)
        self.weights: WeightsRef | None = None  # sent with every call; None: the actors' own initial weights
        self.envstep = 0
        self.envepisode = 0
        self.infos: list[dict] = []  # infos of the finished calls, until the monitor takes them
        self.first_batch_s: float | None = None
        self.dropped_batches = 0  # batches a collector did not push: its earlier pushes were unfinished
        self.lost_pushes = 0  # batches pushed into a buffer actor that died before taking them
        self._actor_batches = 0
        self._created = time.monotonic()

    # ----- weights -------------------------------------------------------------------------------
    def load_weights(self, version: int, weights: WeightsRef) -> bool:
        """Send ``weights`` with the next calls (False: they are the ones sent already); each
        collector loads them if they are newer than its own (``weights.pull``). The first weights
        also start the collectors that were left for later, so that they did not compete with the
        starting learner for the CPU."""
        if weights is self.weights:
            return False
        if self.weights is None:
            self.actors.start_collectors()
            for handle in self.actors.collectors[len(self.pool.slots) :]:  # also those started elsewhere
                self.pool.add(handle)
        self.weights = weights
        return True

    def _weights_for(self, slot: Slot) -> WeightsRef | None:
        """The weights to send with the slot's next call: None when it already has them (a
        reference nested in the arguments costs the driver more than the rest of the call)."""
        if slot.weights is self.weights:
            return None
        slot.weights = self.weights
        return self.weights

    # ----- calls ---------------------------------------------------------------------------------
    def refs(self) -> list:
        """Calls in flight."""
        return self.pool.refs()

    def _finish(self, ready: list, keep_lost: bool = False) -> list:
        """Take the finished calls of ``ready``; the references of their batches (with
        ``keep_lost``, None in the place of a call that brought none)."""
        data = []
        for ref in ready:
            outcome = self.pool.finish(ref)
            if outcome.info is not None:
                self._committed(outcome.info["n"], outcome.reserved)
                self._actor_batches += 1
                self._count(outcome.info)
                self.dropped_batches += outcome.info.get("dropped", 0)
                self.lost_pushes += outcome.info.get("lost", 0)
                if outcome.extra is not None:  # a sync round's batch; async collectors push theirs
                    data.append(outcome.extra)
                continue
            if outcome.lost:
                self._cancelled(outcome.reserved)
            if keep_lost:
                data.append(None)
        return data

    def _committed(self, n: int, reserved: int) -> None:
        """A call brought ``n`` transitions it had reserved ``reserved`` for."""

    def _cancelled(self, reserved: int) -> None:
        """A call that had reserved ``reserved`` transitions was lost."""

    def _count(self, info: dict) -> None:
        if self.first_batch_s is None:
            self.first_batch_s = process_age_s()
            logger.info("first batch collected %.1f s after launch", self.first_batch_s)
        self.envstep += info["new_env_steps"]
        self.envepisode += info.get("new_episodes", 0)
        self.infos.append(info)

    def pop_infos(self) -> list[dict]:
        infos, self.infos = self.infos, []
        return infos

    # ----- health --------------------------------------------------------------------------------
    def check_started(self) -> None:
        """Raise ``ClusterError`` when no collector actor finished a call within the start timeout
        (the message says, per collector, whether Ray has no room for it or its constructor hangs).
        Collectors that died and do not come back are the supervisor's to report."""
        timeout = self.cfg.ray.actor_start_timeout_s
        if not self._actor_batches and time.monotonic() - self._created > timeout:
            raise ClusterError(
                f"No collector actor started within {timeout:g} s (ray.actor_start_timeout_s). "
                + why_not_started(self.actors, [slot.name for slot in self.pool.alive()])
            )

    def summary(self) -> dict[str, Any]:
        return {
            "num_collectors": len(self.pool.slots),
            "lost_batches": self.pool.lost_batches,
            # pushed into a buffer actor that died before taking them: the buffer's restart event
            # counts their transitions among those lost since its snapshot
            "lost_pushes": self.lost_pushes,
            "collector_restarts": self.pool.restarts,
            # stopped to make room for the learner, buffer or evaluator after a node was lost, and
            # those not stopped at the end
            "collectors_stopped": self.pool.stops,
            "collectors_running": len(self.pool.running()),
            "first_batch_s": None if self.first_batch_s is None else round(self.first_batch_s, 2),
        }

    def close(self) -> None:
        """Nothing of its own to close."""


class AsyncCollectorsClient(CollectorsClient):
    """Ape-X: every collector always has a call in flight, as far as the rate limiter allows."""

    def __init__(
        self, cfg: EasyDict, actors: Actors, plan: Plan, supervisor: ActorSupervisor, limiter: RateLimiter
    ) -> None:
        super().__init__(cfg, actors, plan, supervisor)
        self.limiter = limiter
        self._random_left = 0  # random transitions still to collect (``warm_up``)
        self._worker: RolloutWorker | None = None  # the driver's own, for the warm-up

    def warm_up(self, n_sample: int, train_iter: int = 0, policy_kwargs: dict | None = None) -> list:
        """The next ``n_sample`` transitions are random ones (``policy.random_collect_size``): the
        collectors' next calls roll them out (``CollectorActor.warm_up``), and the driver rolls out
        the first of them itself while the actors start. Returns nothing now: ``collect`` returns
        the driver's batches, the collectors push theirs."""
        self._random_left = int(n_sample)
        return []

    def collect(self, train_iter: int = 0, policy_kwargs: dict | None = None, **kwargs: Any) -> list:
        """References of the driver's warm-up batches (the collectors push theirs themselves)."""
        refuse_options(kwargs)
        self.supervisor.poll()  # collectors back, frozen ones killed, a run with none left ended
        refs = self.pool.refs()
        data = self._finish(ray.wait(refs, num_returns=len(refs), timeout=0)[0])
        self._launch(train_iter, policy_kwargs or {})
        if not data and self.warming_up:
            data.append(self._warm_up_here(train_iter))
        return data

    @property
    def random_left(self) -> int:
        """Random transitions of the warm-up still to collect."""
        return self._random_left

    @property
    def warming_up(self) -> bool:
        """The driver is rolling out random transitions itself: no actor batch yet, random steps left."""
        return (
            self._random_left > 0 and not self._actor_batches and self.limiter.can_insert(self.plan.n_sample)
        )

    def _launch(self, train_iter: int, policy_kwargs: dict) -> None:
        """Relaunch every idle collector the rate limiter lets through."""
        n = self.plan.n_sample
        for slot in self.pool.idle():
            if not self.limiter.can_insert(n):
                return
            # n is the actors' own n_sample: it is not sent (each argument costs the driver time)
            args = (self._weights_for(slot), train_iter, policy_kwargs)
            if self._random_left > 0:
                self._random_left -= n
                call = slot.handle.warm_up.remote(*args)
            else:
                call = slot.handle.collect.remote(*args)
            self.pool.launch(slot, call, n)
            self.limiter.reserve_insert(n)

    def _committed(self, n: int, reserved: int) -> None:
        self.limiter.commit_insert(n, reserved)

    def _cancelled(self, reserved: int) -> None:
        self.limiter.cancel_insert(reserved)

    def _warm_up_here(self, train_iter: int) -> Any:
        """One batch of random transitions rolled out here, put into the object store."""
        if self._worker is None:
            # seeds no collector actor uses, and a name that no actor has
            self._worker = RolloutWorker(self.cfg, index=self.cfg.ray.num_collectors, name="driver-warm-up")
        batch, info = self._worker.warm_up_rollout(self.plan.n_sample, train_iter)
        self._random_left -= info["n"]
        self.limiter.reserve_insert(info["n"])
        self.limiter.commit_insert(info["n"])
        self._count(info)
        if self._random_left <= 0:
            self.close()
        return ray.put(batch)

    def close(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.close()


class SyncCollectorsClient(CollectorsClient):
    """On-policy rounds: ``n_sample`` split over the collectors that are up, all with the same
    weights; ``collect`` returns once every batch is in."""

    warming_up = False

    def warm_up(self, n_sample: int, train_iter: int = 0, policy_kwargs: dict | None = None) -> list:
        """On-policy rounds have no warm-up: each round trains on the data of the latest weights
        alone, and there is no replay buffer to fill (DI-engine's ``serial_pipeline_onpolicy``
        collects no ``random_collect_size`` either). ``n_sample`` > 0 is refused."""
        if n_sample > 0:
            raise ConfigError(
                f"On-policy rounds on Ray have no random warm-up (asked for {n_sample} transitions): "
                "each round trains on the data of the latest weights only. Set policy.random_collect_size=0, "
                "or leave the random_collector stage out of an on-policy task."
            )
        return []

    def collect(self, train_iter: int = 0, policy_kwargs: dict | None = None, **kwargs: Any) -> list:
        """References of one round's batches, in collector order."""
        refuse_options(kwargs)
        self.supervisor.poll()
        idle = self.pool.idle()
        while not idle:  # every collector is restarting: wait for one to come back, not forever
            pings = self.supervisor.refs()
            if pings:
                ray.wait(pings, num_returns=1, timeout=1.0)
            else:  # all stopped to make room (``CollectorPool.tend``): nothing to wait on
                time.sleep(1.0)
            self.supervisor.poll()  # ends the run when none came back in time
            self.check_started()
            idle = self.pool.idle()
        share = math.ceil(self.plan.n_sample / len(idle))
        for slot in idle:
            weights = self._weights_for(slot)
            info, batch = slot.handle.collect_batch.remote(weights, train_iter, policy_kwargs or {}, share)
            self.pool.launch(slot, info, share, extra=batch)
        data = {}
        while busy := [s.ref for s in idle if s.ref is not None]:
            ready = ray.wait(busy, num_returns=len(busy), timeout=1.0)[0]  # all, or what is in after 1 s
            self.supervisor.poll()  # a collector that neither answers nor dies would hold the round
            slots = [self.pool.slot_of(ref) for ref in ready]
            for slot, ref in zip(slots, self._finish(ready, keep_lost=True)):
                if ref is not None:
                    data[slot.name] = ref
        # in collector order, not arrival order: the learner's minibatches do not depend on timing
        return [data[s.name] for s in idle if s.name in data]
