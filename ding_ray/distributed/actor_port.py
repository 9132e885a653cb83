"""What ``ActorSupervisor`` and ``CollectorPool`` ask of the actor system (``ActorPort``,
``RoomPort``; ``ray_port.RayPort`` is Ray's), and the two exceptions a supervised call ends in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class Died(Exception):
    """The actor behind a call is dead (``init_failed``: its constructor raised, so a restart would
    raise again)."""

    def __init__(self, message: str, init_failed: bool = False) -> None:
        super().__init__(message)
        self.init_failed = init_failed


class Recovered(Exception):
    """The actor behind a call died and is back (or the call depended on one that did): whatever
    was in flight on it is gone, and the caller drops the call."""


class ActorPort(Protocol):
    """What the supervisor asks of the actor system."""

    def instance(self, handle: Any, retry: bool) -> Any:
        """A reference to ``handle.instance()`` (a dict: ``id`` of the process, ``incarnation``, its
        count of starts or None, ``restarted``, whether it is not the first); ``retry``: answered
        once the actor is back, if it is restarting."""

    def ready(self, refs: list, timeout_s: float) -> list:
        """The references of ``refs`` that are in after waiting up to ``timeout_s`` for all of them."""

    def result(self, ref: Any) -> Any:
        """The value behind ``ref``; raises ``Died`` when its actor died, the call's own error otherwise."""

    def kill(self, handle: Any) -> None:
        """End the actor's process; the actor system restarts it."""

    def forget(self, refs: list) -> None:
        """Calls whose results nobody wants any more (their failures are the death being handled)."""

    def why_not_started(self, names: list[str]) -> str:
        """Sentences on why these actors are not up, with what to do."""

    def describe(self, name: str) -> str:
        """The actor ``name`` as a message names it, with where to find it."""


class RoomPort(ActorPort, Protocol):
    """What ``CollectorPool`` also asks, to make room for the learner, buffer and evaluator."""

    def stop(self, handle: Any) -> None:
        """End the actor for good (no restart)."""

    def needs(self, name: str) -> dict[str, float]:
        """The resources actor ``name`` asks for on one node."""

    def placed(self, name: str) -> bool | None:
        """Whether actor ``name``'s slot sits on a live node; None: it has no slot."""

    def free_by_node(self, nodes: Mapping[str, str]) -> dict[str, dict[str, float]] | None:
        """The resources free on each live node, ``nodes`` being where each of the run's actors
        last said it runs (``{name: node}``): one outside a placement group holds its ``needs``
        there. None where the actor system does not say."""
