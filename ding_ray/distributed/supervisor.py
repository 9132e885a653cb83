"""``ActorSupervisor``: the one mechanism that keeps a run's actors going.

Every actor of a run (learner, buffer, evaluator, collectors) is watched by one supervisor, which
the driver's clients tell about their calls. It

- notices a death: a call that failed because its actor died (``get``, ``died``), or a periodic
  ``instance()`` probe that finds a new incarnation (the actor died between two calls and Ray
  brought it back before the next one);
- notices a stall: a call on the clock (``calls``) past ``call_timeout_s`` gets its actor killed, so
  that Ray restarts it (a frozen process neither answers nor dies); one far slower than the recent
  median is logged;
- pings the actor (an ``instance()`` call that Ray retries until the actor is back) and, when the new
  incarnation answers, records the restart (``events``: result.json's ``recoveries``) and runs the
  callbacks registered with ``on_back``, which drop what the dead incarnation owed;
- ends the run with an ``ActorDiedError`` naming the actor when it does not come back in time, dies
  for good, or keeps dying; a group (the collectors) ends it only when none of its members is left.

It talks to Ray through a small port (``actor_port.ActorPort``; ``ray_port.RayPort`` is Ray's), so
that its bookkeeping is tested with a fake port and a fake clock; what it knows of each actor is a
``member.Member``. ``on_check`` functions run with its checks: ``CollectorPool.tend`` makes room
there for the actors that wait for a node.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from ding_ray.distributed.actor_port import ActorPort, Died, Recovered
from ding_ray.distributed.cluster import ClusterError
from ding_ray.distributed.errors import ActorDiedError
from ding_ray.distributed.member import GONE, RESTARTING, UP, Member
from ding_ray.utils.call_watch import CallWatch

logger = logging.getLogger(__name__)


class ActorSupervisor:
    """Watches the actors added with ``add``; the driver's clients report to it."""

    def __init__(
        self,
        port: ActorPort,
        clock: Callable[[], float] = time.monotonic,
        probe_every_s: float = 2.0,
        check_every_s: float = 0.2,
    ) -> None:
        self.port, self.clock = port, clock
        self.probe_every_s, self.check_every_s = probe_every_s, check_every_s
        self.events: list[dict[str, Any]] = []  # one per recorded restart, for result.json
        self.members: dict[str, Member] = {}
        self._watches: dict[str, CallWatch] = {}  # one per group: its calls are alike
        self._probe: dict[str, Any] | None = None  # instance() calls in flight
        self._probed_at = clock()
        self._checked_at = clock()
        self._failed: Exception | None = None  # the error that ended the run, raised again
        self._checks: list[Callable[[], None]] = []  # ``on_check``
        self.wait_step_s = 1.0  # how often ``on_check`` runs while a wait for a restart blocks

    # ----- membership ----------------------------------------------------------------------------
    def add(
        self,
        name: str,
        handle: Any,
        *,
        restart_timeout_s: float,
        group: str | None = None,
        call_timeout_s: float | None = None,
        max_failures: int | None = None,
        record: bool = True,
        advice: str = "",
    ) -> None:
        """Watch actor ``name``. ``group``: actors that stand in for each other (the collectors): the
        run ends only when none of them is left. ``call_timeout_s``: a call on the clock this long
        means a frozen actor; None: no stall detection. ``max_failures``: deaths in a row without
        a finished call before the actor is given up on (None: as many as the actor system restarts
        it). ``record``: its restarts are events (result.json's recoveries)."""
        group = group or name
        watch = None
        if call_timeout_s is not None:
            watch = self._watches.setdefault(group, CallWatch(call_timeout_s))
        known = self.port.instance(handle, retry=False)  # who it is: a later answer tells a restart
        self.members[name] = Member(
            name, handle, group, float(restart_timeout_s), max_failures, record, advice, watch, known=known
        )

    def on_back(self, name: str, fn: Callable[[dict, dict], None]) -> None:
        """``fn(instance, event)`` runs when actor ``name`` is back after a restart: ``instance`` is
        what its ``instance()`` says (``restored_from``, its counters); ``fn`` drops what the dead
        incarnation owed and adds what was lost to ``event`` (``lost_...`` keys)."""
        self.members[name].on_back.append(fn)

    def remove(self, name: str) -> None:
        """Stop watching actor ``name`` (it is stopped on purpose: its death is no failure)."""
        member = self.members.pop(name)
        self._drop_probe()
        self.port.forget(
            [ref for ref in (member.ping, member.known) if ref is not None and not isinstance(ref, dict)]
        )

    def on_check(self, fn: Callable[[], None]) -> None:
        """``fn()`` runs at every ``poll`` and every ``wait_step_s`` while a wait for a restart
        blocks: what keeps room for the actors that wait (``CollectorPool.tend``)."""
        self._checks.append(fn)

    def state(self, name: str) -> str:
        return self.members[name].state

    def node_of(self, name: str) -> str | None:
        """The node the actor's last answer came from (None before it answered)."""
        return self.members[name].node

    def up(self, name: str) -> bool:
        return self.members[name].state == UP

    def restarts(self, name: str) -> int:
        return self.members[name].restarts

    def refs(self) -> list:
        """The pings in flight (the driver may wait on them with its calls)."""
        return [m.ping for m in self.members.values() if m.ping is not None]

    # ----- calls ---------------------------------------------------------------------------------
    def calls(self, name: str, busy: bool, finished: int = 0) -> None:
        """Report actor ``name``'s calls: ``finished`` of them finished since the last report, and
        whether one is ready to run or running now (``busy``), which puts it on the clock."""
        self.members[name].report(self.clock(), busy, finished)

    def get(self, ref: Any, suspects: Iterable[str]) -> Any:
        """The result of a call that depends on actors ``suspects`` (its own, and those whose
        results it takes as arguments; those not watched are left out). When one of them died,
        every suspect is waited for until it is back (or the run ends), its ``on_back`` callbacks
        run, and ``Recovered`` is raised for the caller to drop the call."""
        try:
            return self.port.result(ref)
        except Died as err:
            self.recover(suspects, err)
            raise Recovered(str(err)) from err

    def recover(self, names: Iterable[str], err: BaseException | None = None) -> None:
        """Bring back whichever of actors ``names`` died, waiting for each (``ActorDiedError`` if
        one does not come back)."""
        if self._failed is not None:
            raise self._failed
        for name in names:
            if name not in self.members:  # not part of this run (an on-policy run has no buffer)
                continue
            member = self.members[name]
            self.died(name)  # or not: a call also fails when an actor it depends on died
            if not self._wait_back(member):
                self._give_up(member, f"not back within {member.restart_timeout_s:g} s")
            self._take_ping(member)
            if member.state != UP:
                raise self._failed or ActorDiedError(f"The {name} actor is gone.")

    def died(self, name: str, err: BaseException | None = None) -> None:
        """A call of actor ``name`` failed as its actor died (or might have): ping it until it is
        back. Does not wait: ``poll`` takes the answer."""
        member = self.members[name]
        if member.state != UP:
            return
        if err is not None and member.max_failures is not None:
            member.failures += 1
            if member.failures >= member.max_failures:
                why = f"it keeps dying ({member.failures} deaths without a finished call): {err}"
                self._gone(member, why)
                return
        if isinstance(err, Died) and err.init_failed:
            self._gone(member, f"{name}, whose constructor raised {err}", init_failed=True)
            return
        if err is not None:
            logger.warning("the %s actor died (%s); waiting for it to be restarted", name, err)
        self._drop_probe()  # the dead process may have answered it
        member.state, member.down_since = RESTARTING, self.clock()
        member.ping = self.port.instance(member.handle, retry=True)
        member.busy_since = None

    # ----- the driver's loop ---------------------------------------------------------------------
    def poll(self) -> None:
        """Take the pings that answered, probe for restarts no call revealed (every
        ``probe_every_s``), kill frozen actors, and end the run with an actor that did not come
        back in time. Never blocks."""
        if self._failed is not None:
            raise self._failed
        for fn in self._checks:
            fn()
        pings = self.refs()
        if pings:
            for ref in self.port.ready(pings, 0):
                # equal, not identical: Ray's client mode hands back other objects for the same refs
                self._take_ping(
                    next(m for m in self.members.values() if m.ping is not None and m.ping == ref)
                )
        unknown = [m.known for m in self.members.values() if m.state == UP and not isinstance(m.known, dict)]
        if unknown:  # who each one is, as soon as it answers: a later answer then tells a restart
            for ref in self.port.ready(unknown, 0):
                self._identity(
                    next(m for m in self.members.values() if not isinstance(m.known, dict) and m.known == ref)
                )
        now = self.clock()
        self._check_away(now)
        self._take_probe(now)
        if now - self._checked_at >= self.check_every_s:
            self._checked_at = now
            for member in self.members.values():
                if member.frozen(now, lambda m=member: self.port.kill(m.handle)):
                    self.died(member.name)

    def check(self, timeout_s: float) -> None:
        """Probe every actor now, waiting up to ``timeout_s`` for the answers: the end of a run,
        whose last checkpoint and result.json must count what the actors hold, not what they held
        before a restart not seen yet. Only the actors whose restarts are recorded (learner, buffer,
        evaluator) are waited for until they are back; a collector holds nothing the checkpoint
        counts, and one whose node went may find no room anywhere: its probe fails at once."""
        if self._failed is not None:
            return
        self._drop_probe()  # sent earlier: a dead incarnation may have answered it
        up = [m for m in self.members.values() if m.state == UP]
        self._probe = {m.name: self.port.instance(m.handle, retry=m.record) for m in up}
        refs = list(self._probe.values())
        self.port.ready(refs, timeout_s)
        self._take_probe(self.clock(), force=True)

    def record(self, *events: dict[str, Any]) -> None:
        """Log and keep (for result.json) restarts: this supervisor's, or those a client reports."""
        for event in events:
            self.events.append(event)
            if event.get("unseen"):
                logger.warning("the %s actor died again before it answered (restarted again)", event["actor"])
                continue
            lost = {k: v for k, v in event.items() if k.startswith("lost_")}
            logger.warning(
                "the %s actor died and is back, restored from %s; lost: %s",
                event["actor"],
                event.get("restored_from") or "nothing (no checkpoint)",
                lost,
            )

    # ----- internals -----------------------------------------------------------------------------
    def _wait_back(self, member: Member) -> bool:
        """Wait up to its restart timeout for ``member``'s ping, running the ``on_check`` functions
        every ``wait_step_s`` meanwhile (they may make room for it); whether it answered."""
        end = self.clock() + member.restart_timeout_s
        while not self.port.ready([member.ping], max(0.0, min(self.wait_step_s, end - self.clock()))):
            if self.clock() >= end or member.ping is None:
                return False
            for fn in self._checks:
                fn()
        return True

    def _take_ping(self, member: Member) -> None:
        ref, member.ping = member.ping, None
        try:
            instance = self.port.result(ref)
        except Died as err:  # the actor system gave up on it: dead for good
            why = f"{member.name}, whose constructor raised {err}" if err.init_failed else str(err)
            self._gone(member, why, init_failed=err.init_failed)
            return
        member.state = UP
        if self._identity(member) == instance.get("id"):
            return  # it had not died: the call failed for a dependency of it
        self._restarted(member, instance)

    def _take_probe(self, now: float, force: bool = False) -> None:
        if self._probe is None:
            if now - self._probed_at >= self.probe_every_s:
                members = [m for m in self.members.values() if m.state == UP]
                self._probe = {m.name: self.port.instance(m.handle, retry=False) for m in members}
            return
        refs = list(self._probe.values())
        ready = self.port.ready(refs, 0)
        if not force and len(ready) < len(refs):
            return
        probe, self._probe, self._probed_at = self._probe, None, now
        self.port.forget([ref for ref in refs if ref not in ready])  # the end of a run: not waited for
        for name, ref in probe.items():
            if ref not in ready:
                continue
            member = self.members[name]
            try:
                instance = self.port.result(ref)
            except Died:  # dead now: its next call (or ``died``) brings it back
                continue
            if member.state == UP and self._identity(member) not in (None, instance.get("id")):
                self._restarted(member, instance)

    def _identity(self, member: Member) -> Any:
        """The id of the incarnation the supervisor knows; None if it never answered. A first
        answer from a later incarnation than the first (the actor died while it started) is a
        restart."""
        if member.known is not None and not isinstance(member.known, dict):
            ref, member.known = member.known, None
            try:
                if self.port.ready([ref], member.restart_timeout_s):
                    first = self.port.result(ref)
                    member.known = {"id": None, "incarnation": 1}
                    if (first.get("incarnation") or 1) > 1 or first.get("restarted") or member.died_unseen:
                        self._restarted(member, first)
                    member.known = first
            except Died:  # it died before it answered: ask the process that comes back
                member.known, member.died_unseen = self.port.instance(member.handle, retry=True), True
                return None
        return None if member.known is None else member.known.get("id")

    def _drop_probe(self) -> None:
        if self._probe is not None:
            self.port.forget(list(self._probe.values()))
            self._probe, self._probed_at = None, self.clock()

    def _restarted(self, member: Member, instance: dict) -> None:
        self._drop_probe()  # answers sent before this restart may come from the dead process
        known = member.known
        before = known.get("incarnation") if isinstance(known, dict) else None
        if known is not None and not isinstance(known, dict):  # a first call not answered yet
            self.port.forget([known])
        member.known, member.died_unseen, member.restarts = instance, False, member.restarts + 1
        member.answered, member.warned, member.busy_since = True, False, None
        now = instance.get("incarnation")
        if member.record and before is not None and now is not None:
            unseen = range(now - before - 1)  # deaths between the two answers that nobody saw
            self.record(*({"actor": member.name, "restored_from": None, "unseen": True} for _ in unseen))
        event: dict[str, Any] = {"actor": member.name, "restored_from": instance.get("restored_from")}
        if member.killed_after_s is not None:
            event["timed_out"] = True  # killed as frozen, not a death of its own
            member.killed_after_s = None
        for fn in member.on_back:
            fn(instance, event)
        if member.record:
            self.record(event)
        else:
            logger.warning("%s is back (restart %d)", member.name, member.restarts)

    def _check_away(self, now: float) -> None:
        """End the run when a group has no member up and one has been restarting too long."""
        groups: dict[str, list[Member]] = {}
        for member in self.members.values():
            groups.setdefault(member.group, []).append(member)
        for group, members in groups.items():
            alive = [m for m in members if m.state != GONE]
            if not alive or any(m.state == UP for m in alive):
                continue
            latest = max(alive, key=lambda m: m.down_since)
            waited = now - latest.down_since
            if waited > latest.restart_timeout_s:
                names = [m.name for m in alive]
                if len(members) == 1:
                    self._give_up(latest, f"not back within {waited:.0f} s (ray.actor_start_timeout_s)")
                why = self.port.why_not_started(names)
                # they wait for room (their node left, no other has any), not for more restarts
                self._failed = ClusterError(
                    f"Every {group} actor died and none was restarted within {latest.restart_timeout_s:g} s "
                    f"(ray.actor_start_timeout_s). {why} Did their node leave the cluster? resume=<the run's "
                    "folder> goes on from the run's latest checkpoint."
                )
                raise self._failed

    def _gone(self, member: Member, why: str, init_failed: bool = False) -> None:
        """Actor ``member`` is given up on; the run ends unless its group has another member."""
        member.state, member.ping = GONE, None
        logger.error("the %s actor is gone for good (%s)", member.name, why)
        if any(m.state != GONE for m in self.members.values() if m.group == member.group):
            return
        self._give_up(member, why, init_failed)

    def _give_up(self, member: Member, why: str, init_failed: bool = False) -> None:
        member.state = GONE
        if init_failed:  # Ray does not restart it, and a restart would raise the same
            advice = "A restart raises it again: fix that error (its traceback is in the log)."
        else:
            advice = f"{self.port.why_not_started([member.name])} {member.advice}".rstrip()
        who = self.port.describe(member.name)
        self._failed = ActorDiedError(f"The {who} died and did not come back: {why}. {advice}")
        raise self._failed
