"""``BufferClient``: the driver's client of the replay-buffer actor, behind the ``Buffer`` protocol
of ``ding_ray.framework.interfaces`` (``push``/``sample``/``update``).

The data stays in the object store: ``push`` and ``sample`` pass references from actor to actor,
and nothing waits: a call's outcome is taken in a later iteration. The rate limiter says when it
may sample. A dead buffer is the run's ``ActorSupervisor``'s to bring back from the latest
checkpoint; the pushes and priority updates in flight on it are dropped. Its calls are reported
to the supervisor, which kills a buffer whose call runs past ``ray.call_timeout_s`` (a frozen
process).
"""

from __future__ import annotations

import logging
from typing import Any

import ray

from ding_ray.data.rate_limiter import RateLimiter
from ding_ray.distributed.actors import CORE_ACTORS, Actors
from ding_ray.distributed.supervisor import ActorSupervisor, Recovered

logger = logging.getLogger(__name__)


class BufferClient:
    """The replay-buffer actor. ``sample`` asks for ``batches_per_call`` batches at once (one
    learner call trains on all of them) and returns None while the rate limiter holds the learner
    back (the ratio, or the samples already waiting on the learner). ``max_pushes``: pushes in
    flight beyond which a batch is dropped (``ray.backpressure='drop'``); None: never (the rate
    limiter bounds them)."""

    def __init__(
        self,
        actors: Actors,
        supervisor: ActorSupervisor,
        limiter: RateLimiter,
        batches_per_call: int = 1,
        max_pushes: int | None = None,
    ) -> None:
        self.actors, self.handle, self.supervisor, self.limiter = actors, actors.buffer, supervisor, limiter
        self.batches_per_call = int(batches_per_call)
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
                self.supervisor.get(ref, CORE_ACTORS)
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
        self.watch()
        n = self._last_n = size * self.batches_per_call
        if not self.limiter.start_sample(n):
            return None
        ref = self.handle.sample.remote(n, train_iter)
        self._samples.append(ref)
        return ref

    def wants_sample(self) -> bool:
        """Whether a ``sample`` now would launch a call (the learner has room, the limiter agrees)."""
        return self._last_n is not None and self.limiter.wants_sample(self._last_n)

    def update(self, info: Any) -> None:
        """New priorities: a reference (or list of them) to the learner's priority info."""
        for ref in info if isinstance(info, list) else [info]:
            self._updates.append(self.handle.update.remote(ref))
        self._updates = self._take_finished(self._updates)

    def stats(self) -> Any:
        return self.handle.stats.remote()
