"""Recovery of the learner and buffer actors.

Both are created with ``ray.core_max_restarts``: when one dies, Ray starts it again with the same
arguments, and its ``__init__`` reloads the run's latest complete checkpoint (learner state, or the
buffer snapshot). The driver notices the death on the next call that fails, waits for the actor to
be back, lets the components drop what was in flight on it, records what was lost (result.json's
``recoveries``), and the run goes on. An actor that does not come back ends the run with an
``ActorDiedError`` naming it, raised once.

A learner or buffer that neither answers nor dies (a frozen process: SIGSTOP, a machine swapping)
is caught by its ``StallWatch``: a call far slower than its recent median is logged, and past
``ray.call_timeout_s`` the actor is killed, so that Ray restarts it and the failed call goes the
way of any death (``timed_out: True`` in its event).

Every restart is recorded, also one the driver never saw: an actor that died again while
restarting (or twice between two polls) answers with its latest incarnation only, so Ray's restart
count says how many deaths that answer covers; each one unseen is an event with ``unseen: True``
(what it lost is counted in the event of the incarnation that answered).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, ObjectLostError, RayActorError, RayTaskError

from ding_ray.distributed.actors import Actors
from ding_ray.distributed.errors import ActorDiedError, get
from ding_ray.distributed.startup import actor_row, why_not_started
from ding_ray.utils.call_watch import SLOW, TIMED_OUT, CallWatch

logger = logging.getLogger(__name__)


def ray_restarts(handle: Any) -> int | None:
    """How many times Ray restarted the actor behind ``handle``; None if Ray does not say (a missing
    count only merges unseen deaths into one event)."""
    row = actor_row(handle)  # Ray's actor table: the only place that counts restarts
    return None if row is None else int(row["NumRestarts"])


def restart_events(name: str, before: int | None, now: int | None) -> list[dict[str, Any]]:
    """The events of the deaths between restart counts ``before`` and ``now`` that the driver did
    not see (all but the last, which the caller records with what it lost)."""
    if before is None or now is None:
        return []
    return [{"actor": name, "restored_from": None, "unseen": True} for _ in range(now - before - 1)]


class StallWatch:
    """Times the calls of one actor that runs them one after another (the learner, the buffer).

    The call at the head of the actor's queue is on the clock from when the driver sees it ready
    to run (its inputs are in, the call before it finished) until the driver sees a call finish;
    the first call of each incarnation (which waits for the actor to start) is not timed. Whoever
    owns the calls reports each poll with ``step``.
    """

    def __init__(self, name: str, handle: Any, timeout_s: float) -> None:
        self.name, self.handle, self.watch = name, handle, CallWatch(timeout_s)
        self.since: float | None = None  # time.monotonic() when the call at the head went on the clock
        self.answered = False  # this incarnation finished a call
        self.warned = False  # the call on the clock was logged as slow
        self.killed_after_s: float | None = None  # this incarnation was killed as frozen after so long

    def restarted(self) -> None:
        self.since, self.answered, self.warned, self.killed_after_s = None, False, False, None

    def step(self, busy: bool, finished: int = 0) -> None:
        """``busy``: a call of the actor is ready to run or running; ``finished``: calls that
        finished since the last step. Logs a slow call; kills the actor past the timeout."""
        now = time.monotonic()
        if finished:
            if self.since is not None and self.answered:
                self.watch.done(now - self.since)
            self.since, self.answered, self.warned = None, True, False
        if not busy:
            self.since = None
            return
        if self.since is None:
            self.since = now
        if not self.answered or self.killed_after_s is not None:
            return
        elapsed = now - self.since
        verdict = self.watch.check(
            f"the {self.name} actor",
            elapsed,
            self.warned,
            lambda: ray.kill(self.handle, no_restart=False),
            "Ray restarts it from the latest checkpoint",
        )
        self.warned = self.warned or verdict == SLOW
        if verdict == TIMED_OUT:
            self.killed_after_s = elapsed


class Recovered(Exception):
    """The actor behind a call died and is back (or the call depended on one that did): whatever
    was in flight on it is gone, and the caller drops the call."""


def is_actor_failure(err: BaseException) -> bool:
    """Whether ``err`` comes from an actor (or an object) that was lost, not from the call's code."""
    if isinstance(err, (RayActorError, ObjectLostError)):
        return True
    return isinstance(err, RayTaskError) and isinstance(err.cause, (RayActorError, ObjectLostError))


class Recovery:
    """Watches the learner and the buffer actor of a run (``Actors``).

    ``get(ref)`` is ``ray.get`` of a call on either (a ding_ray error the call raised comes as
    itself: ``errors.get``): when the call failed because an actor died, the actor is waited for
    (``timeout_s``), the callbacks registered with ``on_restart`` run, and ``Recovered`` is raised
    for the caller to drop the call.
    """

    def __init__(self, actors: Actors, timeout_s: float, max_restarts: int) -> None:
        self.actors, self.timeout_s, self.max_restarts = actors, float(timeout_s), int(max_restarts)
        self.events: list[dict[str, Any]] = []  # one per restart, for result.json
        self._names = [n for n in ("learner", "buffer") if getattr(actors, n) is not None]
        self._ids: dict[str, Any] = {n: getattr(actors, n).instance.remote() for n in self._names}
        self._listeners: dict[str, list[Callable[[dict, dict], None]]] = {n: [] for n in self._names}
        self._failed: ActorDiedError | None = None
        self._discarded: list = []
        self._probe: dict[str, Any] | None = None  # instance() calls in flight (poll)
        self._probed_at = time.monotonic()
        self._restarts: dict[str, int | None] = {n: 0 for n in self._names}  # Ray's count, last seen
        timeout_s = getattr(actors, "call_timeout_s", None)
        self.stalls: dict[str, StallWatch] = (
            {}
            if timeout_s is None
            else {n: StallWatch(n, getattr(actors, n), timeout_s) for n in self._names}
        )

    def on_restart(self, name: str, fn: Callable[[dict, dict], None]) -> None:
        """``fn(instance, event)`` runs when actor ``name`` is back: ``instance`` is what its
        ``instance()`` says (``restored_from``, its counters); ``fn`` adds what was lost to ``event``."""
        if name in self._listeners:
            self._listeners[name].append(fn)

    def stalled(self, name: str, busy: bool, finished: int = 0) -> None:
        """``StallWatch.step`` of actor ``name`` (nothing without ``ray.call_timeout_s``)."""
        if name in self.stalls:
            self.stalls[name].step(busy, finished)

    def get(self, ref: Any, timeout: float | None = None) -> Any:
        try:
            return get(ref, timeout=timeout)
        except (RayActorError, RayTaskError, ObjectLostError) as err:
            if not is_actor_failure(err):
                raise  # the call's own error (a NaN loss, a bad batch): not a death
            self.recover(err)
            raise Recovered(str(err)) from err

    def recover(self, err: BaseException) -> None:
        """Bring back the actors that died; ``ActorDiedError`` if one does not come back."""
        if self._failed is not None:
            raise self._failed
        if self._probe is not None:  # a probe sent before may have been answered by the dead one
            self.discard(list(self._probe.values()))
            self._probe, self._probed_at = None, time.monotonic()
        for name in self._names:
            handle = getattr(self.actors, name)
            old = self._known_id(name)
            try:
                now = ray.get(handle.instance.options(max_task_retries=-1).remote(), timeout=self.timeout_s)
            except (RayActorError, GetTimeoutError) as dead:
                self._failed = ActorDiedError(
                    f"The {name} actor (namespace '{self.actors.namespace}') died and did not come back: "
                    f"{type(dead).__name__}: {dead}. {why_not_started(self.actors, [name])} It is restarted "
                    f"at most ray.core_max_restarts={self.max_restarts} times, within {self.timeout_s:g} s "
                    "each (ray.actor_start_timeout_s). The run's latest checkpoint is in its checkpoints/ "
                    "folder: resume=<the run's folder> goes on from there."
                )
                raise self._failed from err
            self._ids[name] = now
            if old is None or now["id"] != old["id"]:
                self._restarted(name, now)

    def poll(self, interval_s: float = 2.0) -> None:
        """Notice a restart that no failed call revealed (the actor died between two calls, and
        Ray brought it back before the next): every ``interval_s`` ask each actor who it is."""
        if self._failed is not None:
            return
        if self._probe is None:
            if time.monotonic() - self._probed_at >= interval_s:
                self._probe = {n: getattr(self.actors, n).instance.remote() for n in self._names}
            return
        refs = list(self._probe.values())
        if len(ray.wait(refs, num_returns=len(refs), timeout=0)[0]) < len(refs):
            return
        probe, self._probe, self._probed_at = self._probe, None, time.monotonic()
        for name, ref in probe.items():
            try:
                now = ray.get(ref)
            except (RayActorError, ObjectLostError):  # dead now: the next call's failure recovers it
                continue
            old = self._known_id(name)
            if old is not None and now["id"] != old["id"]:
                self._ids[name] = now
                self._restarted(name, now)

    def check(self, timeout_s: float) -> None:
        """``poll`` now, waiting up to ``timeout_s`` for the answers: the end of a run, whose last
        checkpoint and result.json must count what the actors hold, not what they held before a
        restart the 2-s polls have not seen yet."""
        if self._failed is not None:
            return
        if self._probe is not None:  # sent earlier: the dead incarnation may have answered it
            self.discard(list(self._probe.values()))
        # retried: an actor restarting now answers once it is back
        self._probe = {
            n: getattr(self.actors, n).instance.options(max_task_retries=-1).remote() for n in self._names
        }
        refs = list(self._probe.values())
        ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        self.poll()  # takes the answers

    def _known_id(self, name: str) -> dict | None:
        """What the actor's instance answered last; None if it died before it ever answered (an
        actor still starting is waited for: it has not restarted)."""
        known = self._ids[name]
        if isinstance(known, dict):
            return known
        try:
            return ray.get(known, timeout=self.timeout_s)
        except (RayActorError, GetTimeoutError, ObjectLostError):
            return None

    def _restarted(self, name: str, instance: dict) -> None:
        before, self._restarts[name] = self._restarts[name], ray_restarts(getattr(self.actors, name))
        self.record(*restart_events(name, before, self._restarts[name]))
        event = {"actor": name, "restored_from": instance["restored_from"]}
        stall = self.stalls.get(name)
        if stall is not None:
            if stall.killed_after_s is not None:
                event["timed_out"] = True  # killed as frozen, not a death of its own
            stall.restarted()
        for fn in self._listeners[name]:
            fn(instance, event)
        self.record(event)

    def record(self, *events: dict[str, Any]) -> None:
        """Log and keep (for result.json) the restarts of an actor, this driver's or another's."""
        for event in events:
            self.events.append(event)
            if event.get("unseen"):
                logger.warning("the %s actor died again before it answered (restarted again)", event["actor"])
                continue
            logger.warning(
                "the %s actor died and is back, restored from %s; lost: %s",
                event["actor"],
                event["restored_from"] or "nothing (no checkpoint yet)",
                {k: v for k, v in event.items() if k.startswith("lost_")},
            )

    def discard(self, refs: list) -> None:
        """Calls whose results are no longer wanted (an actor died under them): their outcomes are
        taken later (``sweep``), so Ray does not log each failure again when a reference is dropped."""
        self._discarded += list(refs)
        self.sweep(wait_s=0)

    def sweep(self, wait_s: float = 0) -> None:
        if not self._discarded:
            return
        done, self._discarded = ray.wait(self._discarded, num_returns=len(self._discarded), timeout=wait_s)
        for ref in done:
            try:
                ray.get(ref)
            except Exception:  # noqa: BLE001 - their errors are the death already handled
                pass
