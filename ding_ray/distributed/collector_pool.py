"""``CollectorPool``: the collector actors as slots, each with its call in flight.

One call in flight per collector, so calls are bounded and each collector is relaunched the
moment its call returns (nobody waits for the slowest). A collector whose call fails because it
died loses that call (counted, never retried, so no batch is duplicated); the run's
``ActorSupervisor`` brings it back (and kills one whose call runs past ``ray.call_timeout_s``), and
the slot's next call hands the new process the latest weights. The collectors are one group to the
supervisor: the run ends only when none of them is left.

The learner, buffer and evaluator come first (``tend``, which the supervisor runs at each check):
when the slot of one of them lost its node and no node has room for it, the collectors it needs
the room of are stopped (and those waiting for a node of their own, who would take that room
first), and the run goes on with the collectors that fit, as RLlib's env-runner group shrinks.
Once the core actors are all up and a node has room, the stopped collectors start again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ding_ray.distributed.cluster import ClusterError
from ding_ray.distributed.member import GONE, RESTARTING
from ding_ray.distributed.placement import count_fitting, plan_room
from ding_ray.distributed.supervisor import ActorSupervisor, Died

logger = logging.getLogger(__name__)

# what the run's error says to do when every collector died for good (not a constructor's error)
ADVICE = "Raise ray.max_restarts (-1 = unlimited) or look at the collectors' logs."


@dataclass
class Slot:
    name: str
    handle: Any
    ref: Any = None  # the info ref of the call in flight
    extra: Any = None  # what else the call returned (the batch ref of a sync collect), until taken
    reserved: int = 0  # items the call was launched for
    lost: int = 0  # calls lost with a death of the collector
    delivered: int = 0  # calls that finished
    weights: Any = None  # the weights last sent to the actor (None: none, or lost with a restart)
    stopped: bool = False  # stopped to make room for the learner, buffer or evaluator, until room is back
    earlier_restarts: int = 0  # restarts of the actors this slot had before it was last stopped


@dataclass
class Outcome:
    """What a finished call means: ``info`` of a completed call, or ``lost`` with its reservation."""

    slot: Slot
    info: dict | None = None
    extra: Any = None
    lost: bool = False
    reserved: int = 0


class CollectorPool:
    """Which collectors have a call in flight; which are idle (up, no call)."""

    def __init__(
        self,
        supervisor: ActorSupervisor,
        restart_timeout_s: float,
        call_timeout_s: float | None = None,
        max_failures: int = 3,
        start: Callable[[int], Any] | None = None,
        demand: Mapping[str, float] | None = None,
        settle_s: float = 2.0,
    ) -> None:
        """``call_timeout_s``: seconds after which a call's collector is treated as frozen; None:
        never. ``max_failures``: deaths in a row without a finished call before a collector is
        given up on. ``start(i)``: the handle of collector ``i`` created again (after it was
        stopped), with ``demand`` its resources on one node; without them no collector is stopped.
        ``settle_s``: seconds the cluster's view of free resources is given to catch up after
        collectors were stopped or started, before ``tend`` decides again."""
        self.supervisor = supervisor
        self.slots: list[Slot] = []
        self.stops = 0  # collectors stopped to make room for the core actors
        self.restart_timeout_s = restart_timeout_s
        self._by_ref: dict[Any, Slot] = {}
        self._orphans: set = set()  # calls in flight on collectors stopped since
        self._start, self._demand, self._settle_s = start, dict(demand or {}), settle_s
        self._acted_at = -float("inf")  # when ``tend`` last stopped or started collectors
        self._looked_at = -float("inf")
        self._none_since: float | None = None  # no collector up or restarting since
        if start is not None:
            supervisor.on_check(self.tend)
        self._options = dict(
            group="collector",
            restart_timeout_s=restart_timeout_s,
            call_timeout_s=call_timeout_s,
            max_failures=max_failures,
            record=False,  # counted here and in the supervisor, not in result.json's recoveries
            advice=ADVICE,
        )

    def add(self, handle: Any) -> None:
        """Take a collector (it is named by its position)."""
        slot = Slot(f"collector-{len(self.slots)}", handle)
        self.slots.append(slot)
        self._watch(slot)

    def _watch(self, slot: Slot) -> None:
        self.supervisor.add(slot.name, slot.handle, **self._options)
        self.supervisor.on_back(slot.name, lambda instance, event: setattr(slot, "weights", None))

    @property
    def lost_batches(self) -> int:
        return sum(s.lost for s in self.slots)

    @property
    def restarts(self) -> int:
        return sum(
            s.earlier_restarts + (0 if s.stopped else self.supervisor.restarts(s.name)) for s in self.slots
        )

    def idle(self) -> list[Slot]:
        """Collectors that are up and have no call in flight."""
        return [s for s in self.slots if s.ref is None and not s.stopped and self.supervisor.up(s.name)]

    def alive(self) -> list[Slot]:
        """Collectors not given up on, nor stopped."""
        return [s for s in self.slots if not s.stopped and self.supervisor.state(s.name) != GONE]

    def running(self) -> list[Slot]:
        """Collectors not stopped to make room (up, restarting, or given up on)."""
        return [s for s in self.slots if not s.stopped]

    def refs(self) -> list:
        """Calls in flight."""
        return list(self._by_ref)

    def slot_of(self, ref: Any) -> Slot:
        return self._by_ref[ref]

    def launch(self, slot: Slot, ref: Any, reserved: int, extra: Any = None) -> None:
        slot.ref, slot.reserved, slot.extra = ref, reserved, extra
        self._by_ref[ref] = slot
        self.supervisor.calls(slot.name, busy=True)

    def finish(self, ref: Any) -> Outcome:
        """Resolve a ready ref of this pool. Task errors (bugs) propagate; actor deaths do not."""
        slot = self._by_ref.pop(ref)
        slot.ref, extra, slot.extra, reserved = None, slot.extra, None, slot.reserved
        orphan = ref in self._orphans  # its collector was stopped since: not the supervisor's
        self._orphans.discard(ref)
        try:
            info = self.supervisor.port.result(ref)
        except Died as err:
            slot.lost += 1
            slot.weights = None
            if not orphan:
                self.supervisor.died(slot.name, err)
            return Outcome(slot, lost=True, reserved=reserved)
        slot.delivered += 1
        if not orphan:
            self.supervisor.calls(slot.name, busy=False, finished=1)
        return Outcome(slot, info=info, extra=extra, reserved=reserved)

    # ----- room for the core actors ----------------------------------------------------------------
    def tend(self) -> None:
        """Stop collectors when the learner, buffer or evaluator needs their room; start stopped ones
        when every core actor is up and a node has room; end the run (``ClusterError``) when no
        collector has been running for the restart timeout. At most once a second."""
        sup, port = self.supervisor, self.supervisor.port
        now = sup.clock()
        if now - self._looked_at < 1.0:
            return
        self._looked_at = now
        self._check_some_left(now)
        if now - self._acted_at < self._settle_s:
            return  # the free resources Ray reports do not show the last stops or starts yet
        mine = {s.name for s in self.slots}
        core = [name for name in sup.members if name not in mine]
        # a slot on no live node; or, without a slot, a restart (it may wait for a node with room)
        placed = {name: port.placed(name) for name in core}
        waiting = [n for n in core if not placed[n] and (placed[n] is False or sup.state(n) == RESTARTING)]
        if waiting:
            self._make_room(waiting)
        elif any(s.stopped for s in self.slots) and all(sup.up(n) for n in core):
            self._start_stopped()

    def _make_room(self, waiting: list[str]) -> None:
        sup, port = self.supervisor, self.supervisor.port
        free = port.free_by_node(self._nodes())
        if free is None:  # Ray's state could not be read: leave the placing to Ray
            return
        # collectors restarting, or whose node is lost (Ray restarts them once a node has room), would
        # take the room the core actors need first
        stop, movable = [], {}
        for slot in self.running():
            node = sup.node_of(slot.name)
            if sup.state(slot.name) == RESTARTING or node not in free:
                stop.append(slot)
            elif sup.up(slot.name):
                movable.setdefault(node, []).append((slot.name, self._demand))
        planned = None
        if not stop:  # those first: the room they held shows once they are stopped (``settle_s``)
            planned = plan_room([port.needs(name) for name in waiting], free, movable)
            stop = [s for s in self.running() if s.name in (planned or [])]
        if stop:
            logger.warning(
                "stopping %s to make room for %s, which lost their node%s; they start again once a node "
                "has room",
                ", ".join(s.name for s in stop),
                ", ".join(waiting),
                "" if planned != [] else " (no node has room even without the collectors)",
            )
        for slot in stop:
            self._stop(slot)

    def _stop(self, slot: Slot) -> None:
        slot.earlier_restarts += self.supervisor.restarts(slot.name)
        self.supervisor.remove(slot.name)
        self.supervisor.port.stop(slot.handle)
        if slot.ref is not None:
            self._orphans.add(slot.ref)
        slot.stopped, slot.weights = True, None
        self.stops += 1
        self._acted_at = self.supervisor.clock()

    def _start_stopped(self) -> None:
        free = self.supervisor.port.free_by_node(self._nodes())
        stopped = [s for s in self.slots if s.stopped and s.ref is None]
        if free is None or not stopped:
            return
        room = count_fitting(self._demand, free, len(stopped))
        for slot in stopped[:room]:
            try:
                slot.handle = self._start(self.slots.index(slot))
            except Exception as err:  # noqa: BLE001 - Ray still holds the name of the stopped actor
                logger.info("%s does not start yet (%s); trying again", slot.name, err)
                break
            slot.stopped = False
            self._watch(slot)
            self._acted_at = self.supervisor.clock()
            logger.warning("%s starts again: a node has room for it", slot.name)

    def _nodes(self) -> dict[str, str]:
        """Where each actor the supervisor watches last said it runs (those that answered)."""
        nodes = {name: self.supervisor.node_of(name) for name in self.supervisor.members}
        return {name: node for name, node in nodes.items() if node is not None}

    def _check_some_left(self, now: float) -> None:
        if any(not s.stopped and self.supervisor.state(s.name) != GONE for s in self.slots):
            self._none_since = None
            return
        self._none_since = now if self._none_since is None else self._none_since
        if now - self._none_since > self.restart_timeout_s:
            raise ClusterError(
                f"No collector has had room for {now - self._none_since:.0f} s (ray.actor_start_timeout_s="
                f"{self.restart_timeout_s:g}): they were stopped to make room for the learner, buffer and "
                f"evaluator after a node was lost, and no node has {self._demand} free for one. Add a node, "
                "or lower the ray.*_num_cpus settings; resume=<the run's folder> goes on from the run's "
                "latest checkpoint."
            )
