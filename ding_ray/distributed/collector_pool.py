"""``CollectorPool``: the collector actors as slots, with their calls in flight and their restarts.

One call in flight per collector, so calls are bounded and each collector is relaunched the
moment its call returns (nobody waits for the slowest). When a collector dies its call is
counted as lost (never retried, so no batch is duplicated), the slot pings the actor until Ray
has restarted it, and the next call hands it the latest weights. ``away_s`` says for how long no
collector has worked because all of them wait to be restarted (their node died and Ray has found
no other with room for them), so that a driver can end the run instead of waiting forever.

A collector that neither answers nor dies (a frozen process) is caught by ``check_stalls``: a call
far slower than the recent ones is logged, and one past ``call_timeout_s`` gets its actor killed,
which Ray restarts: from there it is a death like any other.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import ray
from ray.exceptions import RayActorError

from ding_ray.distributed.errors import get, raised_line
from ding_ray.errors import ActorDiedError
from ding_ray.utils.call_watch import SLOW, TIMED_OUT, CallWatch

logger = logging.getLogger(__name__)

IDLE, BUSY, RESTARTING, DEAD = "idle", "busy", "restarting", "dead"


@dataclass
class Slot:
    name: str
    handle: Any
    state: str = IDLE
    ref: Any = None  # the info ref of the call (or the ping) in flight
    extra: Any = None  # what else the call returned (the batch ref of a sync collect), until taken
    reserved: int = 0  # items the call was launched for
    failures: int = 0  # consecutive failed pings
    restarts: int = 0
    lost: int = 0
    restarting_since: float | None = None  # time.monotonic() when it died, until it is back
    started: float = 0.0  # time.monotonic() when the call in flight was launched
    warned: bool = False  # the call in flight was logged as slow
    killed: bool = False  # the call in flight timed out and its actor was killed
    answered: bool = False  # the actor has answered a call: it started (its first call is not timed)
    weights: Any = None  # the weights last sent to the actor (None: none, or lost with a restart)


@dataclass
class Outcome:
    """What a finished call means: ``info`` of a completed call, or ``lost`` with its reservation."""

    slot: Slot
    info: dict | None = None
    extra: Any = None
    lost: bool = False
    reserved: int = 0


class CollectorPool:
    """Tracks which collectors are idle, busy, restarting or dead."""

    CHECK_EVERY_S = 0.2  # stalls are seconds long: looking at every slot once per driver iteration costs O(N)

    def __init__(self, handles: list, max_failures: int = 3, call_timeout_s: float | None = None) -> None:
        """``call_timeout_s``: seconds after which a call's collector is treated as dead; None: never."""
        self.slots = [Slot(f"collector-{i}", h) for i, h in enumerate(handles)]
        self._by_ref: dict[Any, Slot] = {}
        self._max_failures = max_failures
        self.watch = None if call_timeout_s is None else CallWatch(call_timeout_s)
        self._checked = 0.0  # time.monotonic() of the last check_stalls that looked at the slots

    def add(self, handle: Any) -> None:
        """Take a collector created after the pool (it is named by its position)."""
        self.slots.append(Slot(f"collector-{len(self.slots)}", handle))

    @property
    def lost_batches(self) -> int:
        return sum(s.lost for s in self.slots)

    @property
    def restarts(self) -> int:
        return sum(s.restarts for s in self.slots)

    def away_s(self) -> float:
        """Seconds since the last working collector died, while every live one waits to be
        restarted; 0 while one works."""
        alive = self.alive()
        if not alive or any(s.state != RESTARTING for s in alive):
            return 0.0
        return time.monotonic() - max(s.restarting_since for s in alive)

    def idle(self) -> list[Slot]:
        return [s for s in self.slots if s.state == IDLE]

    def alive(self) -> list[Slot]:
        return [s for s in self.slots if s.state != DEAD]

    def refs(self) -> list:
        """Calls and pings in flight."""
        return list(self._by_ref)

    def owns(self, ref: Any) -> bool:
        return ref in self._by_ref

    def slot_of(self, ref: Any) -> Slot:
        return self._by_ref[ref]

    def launch(self, slot: Slot, ref: Any, reserved: int, extra: Any = None) -> None:
        slot.state, slot.ref, slot.reserved, slot.extra = BUSY, ref, reserved, extra
        slot.started, slot.warned, slot.killed = time.monotonic(), False, False
        self._by_ref[ref] = slot

    def check_stalls(self) -> None:
        """Log a call far slower than the recent ones; kill the collector of a call past the timeout
        (a frozen process neither answers nor dies): Ray restarts it, and its call fails as a death."""
        now = time.monotonic()
        if self.watch is None or now - self._checked < self.CHECK_EVERY_S:
            return
        self._checked = now
        for slot in self.slots:
            # the first call waits for the actor to start, which ray.actor_start_timeout_s bounds
            if slot.state != BUSY or slot.killed or not slot.answered:
                continue
            verdict = self.watch.check(
                slot.name,
                now - slot.started,
                slot.warned,
                lambda: ray.kill(slot.handle, no_restart=False),  # noqa: B023 - called at once
                "Ray restarts it",
            )
            slot.warned = slot.warned or verdict == SLOW
            slot.killed = verdict == TIMED_OUT

    def finish(self, ref: Any) -> Outcome:
        """Resolve a ready ref of this pool. Task errors (bugs) propagate; actor deaths do not."""
        slot = self._by_ref.pop(ref)
        if slot.state == RESTARTING:
            return self._pinged(slot, ref)
        try:
            info = get(ref)
        except RayActorError as err:
            slot.lost += 1
            logger.warning("%s died (%s); its batch is lost, waiting for Ray to restart it", slot.name, err)
            outcome = Outcome(slot, lost=True, reserved=slot.reserved)
            self._ping(slot)
            return outcome
        extra, slot.extra = slot.extra, None
        slot.state, slot.ref, slot.answered = IDLE, None, True
        if self.watch is not None:
            self.watch.done(time.monotonic() - slot.started)
        return Outcome(slot, info=info, extra=extra, reserved=slot.reserved)

    def _ping(self, slot: Slot) -> None:
        # A call to a restarting actor fails at once; a ping Ray retries returns once it is back,
        # or raises ActorDiedError if it never comes back.
        if slot.state != RESTARTING:  # a failed ping pings again: the slot is away since the death
            slot.restarting_since = time.monotonic()
        slot.state, slot.extra, slot.reserved, slot.weights = RESTARTING, None, 0, None
        slot.ref = slot.handle.ping.options(max_task_retries=-1).remote()
        self._by_ref[slot.ref] = slot

    def _pinged(self, slot: Slot, ref: Any) -> Outcome:
        try:
            ray.get(ref)
        except RayActorError as err:
            slot.failures += 1
            # an actor whose constructor raised is not restarted: it would raise again
            if slot.failures >= self._max_failures or err.actor_init_failed:
                slot.state, slot.ref = DEAD, None
                logger.error("%s is gone for good (%s); going on without it", slot.name, err)
                if not self.alive():
                    raise ActorDiedError(_every_collector_died(slot.name, err)) from err
                return Outcome(slot)
            self._ping(slot)
            return Outcome(slot)
        slot.state, slot.ref, slot.failures, slot.restarting_since = IDLE, None, 0, None
        slot.answered = True
        slot.restarts += 1
        logger.warning("%s is back (restart %d)", slot.name, slot.restarts)
        return Outcome(slot)


def _every_collector_died(name: str, err: RayActorError) -> str:
    """The run's error when the last collector is gone, with what can bring collectors back."""
    if err.actor_init_failed:
        return (
            f"Every collector actor died and none could be restarted (last: {name}, whose constructor "
            f"raised {raised_line(err)}). A restart raises it again: fix that error (its traceback is "
            "logged above)."
        )
    return (
        f"Every collector actor died and none could be restarted (last: {name}: {err}). "
        "Raise ray.max_restarts (-1 = unlimited) or look at the collectors' logs."
    )
