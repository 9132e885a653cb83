"""``Member``: what the ``ActorSupervisor`` knows of one actor it watches: its state, who answered
last and where, and its calls on the clock (whether one is frozen)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ding_ray.utils.call_watch import SLOW, TIMED_OUT, CallWatch

UP, RESTARTING, GONE = "up", "restarting", "gone"


@dataclass
class Member:
    """One watched actor."""

    name: str
    handle: Any
    group: str
    restart_timeout_s: float
    max_failures: int | None  # deaths in a row without a finished call before it is given up on
    record: bool  # restarts go into ``events`` (result.json's recoveries)
    advice: str  # what the error that ends the run says to do
    watch: CallWatch | None  # call durations of its group; None: no stall detection
    state: str = UP
    known: Any = None  # what instance() answered last (a dict), or the reference of the first probe
    ping: Any = None  # the retried instance() call while restarting
    down_since: float = 0.0
    busy_since: float | None = None  # the call at the head of its queue went on the clock
    answered: bool = False  # this incarnation finished a call (the first one waits for its start)
    warned: bool = False  # the call on the clock was logged as slow
    killed_after_s: float | None = None  # killed as frozen after so long, until it is back
    died_unseen: bool = False  # its first call failed: it died before it ever answered
    failures: int = 0
    restarts: int = 0
    on_back: list[Callable[[dict, dict], None]] = field(default_factory=list)

    @property
    def node(self) -> str | None:
        """The node its last answer came from (None before it answered)."""
        return self.known.get("node") if isinstance(self.known, dict) else None

    def report(self, now: float, busy: bool, finished: int) -> None:
        """``finished`` calls finished since the last report; ``busy``: one is ready to run or
        running now, which puts it on the clock."""
        if finished:
            if self.busy_since is not None and self.answered and self.watch is not None:
                self.watch.done(now - self.busy_since)
            self.busy_since, self.answered, self.warned, self.failures = None, True, False, 0
        if not busy:
            self.busy_since = None
        elif self.busy_since is None:
            self.busy_since = now

    def frozen(self, now: float, kill: Callable[[], None]) -> bool:
        """Whether the call on the clock ran past the call timeout, in which case ``kill`` ended
        the actor; one far slower than the recent median is logged."""
        if self.watch is None or self.state != UP or self.busy_since is None:
            return False
        if not self.answered or self.killed_after_s is not None:
            return False  # its first call waits for it to start, which restart_timeout_s bounds
        elapsed = now - self.busy_since
        verdict = self.watch.check(f"the {self.name} actor", elapsed, self.warned, kill, "Ray restarts it")
        self.warned = self.warned or verdict == SLOW
        if verdict == TIMED_OUT:
            self.killed_after_s = elapsed
        return verdict == TIMED_OUT
