"""``CollectorPool``: the collector actors as slots, each with its call in flight.

One call in flight per collector, so calls are bounded and each collector is relaunched the
moment its call returns (nobody waits for the slowest). A collector whose call fails because it
died loses that call (counted, never retried, so no batch is duplicated); the run's
``ActorSupervisor`` brings it back (and kills one whose call runs past ``ray.call_timeout_s``), and
the slot's next call hands the new process the latest weights. The collectors are one group to the
supervisor: the run ends only when none of them is left.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ding_ray.distributed.supervisor import GONE, ActorSupervisor, Died

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
    ) -> None:
        """``call_timeout_s``: seconds after which a call's collector is treated as frozen; None:
        never. ``max_failures``: deaths in a row without a finished call before a collector is
        given up on."""
        self.supervisor = supervisor
        self.slots: list[Slot] = []
        self._by_ref: dict[Any, Slot] = {}
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
        self.supervisor.add(slot.name, handle, **self._options)
        self.supervisor.on_back(slot.name, lambda instance, event: setattr(slot, "weights", None))

    @property
    def lost_batches(self) -> int:
        return sum(s.lost for s in self.slots)

    @property
    def restarts(self) -> int:
        return sum(self.supervisor.restarts(s.name) for s in self.slots)

    def idle(self) -> list[Slot]:
        """Collectors that are up and have no call in flight."""
        return [s for s in self.slots if s.ref is None and self.supervisor.up(s.name)]

    def alive(self) -> list[Slot]:
        """Collectors not given up on."""
        return [s for s in self.slots if self.supervisor.state(s.name) != GONE]

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
        try:
            info = self.supervisor.port.result(ref)
        except Died as err:
            slot.lost += 1
            slot.weights = None
            self.supervisor.died(slot.name, err)
            return Outcome(slot, lost=True, reserved=reserved)
        slot.delivered += 1
        self.supervisor.calls(slot.name, busy=False, finished=1)
        return Outcome(slot, info=info, extra=extra, reserved=reserved)
