"""Fakes of the actor system the ``ActorSupervisor`` talks to (its ``ActorPort``): actors that die,
restart and freeze on a fake clock, the calls to them, and what the port answers about nodes and
their free resources (for ``CollectorPool``'s room decisions)."""

from __future__ import annotations

from ding_ray.distributed.placement import fits, free_resources, minus, plus
from ding_ray.distributed.supervisor import Died


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeActor:
    """An actor process: up, restarting (back at ``back_at``), or dead for good."""

    def __init__(self, name: str, clock: Clock) -> None:
        self.name, self.clock = name, clock
        self.incarnation, self.up, self.gone, self.init_failed = 1, True, False, False
        self.started = True  # it answered once: a call to it fails when it dies
        self.counted = True  # its starts are counted (the run's checkpoints are within its reach)
        self.back_at: float | None = None
        self.frozen = False
        self.node = "n0"  # where it runs
        self.demand: dict = {}  # what it holds on its node (``FakePort.place``)
        self.pending = False  # its node was lost: it waits for a node with room

    def answer(self) -> dict:
        return {
            "id": f"{self.name}#{self.incarnation}",
            "incarnation": self.incarnation if self.counted else None,
            "restored_from": "ckpt",
            "node": self.node,
        }

    def die(self, back_after: float = 1.0) -> None:
        self.up, self.frozen, self.back_at = False, False, self.clock.now + back_after

    def restart_now(self) -> None:
        """Ray restarted it (after a death the driver may not have seen)."""
        self.incarnation += 1
        self.up, self.back_at = True, None

    def tick(self) -> None:
        if not self.up and not self.gone and self.back_at is not None and self.clock.now >= self.back_at:
            self.restart_now()


class Call:
    """``handle.instance()`` in flight: bound to the incarnation it reached, or retried until back."""

    def __init__(self, actor: FakeActor, retry: bool) -> None:
        # a call to an actor that has not started yet waits for whichever process starts
        self.actor, self.retry = actor, retry or not actor.started
        self.incarnation = actor.incarnation if actor.up else None
        # an actor that is up answers at once: its answer stays what it was if it dies later
        self.answer = actor.answer() if actor.up and not actor.frozen else None


class FakePort:
    """The actor system, and a cluster of nodes (``totals``; ``free``: what each has left, as Ray
    counts it) that places actors as Ray does after a node is lost: a collector waiting for a node
    takes room first, then a placement group (``groups``: the learner's, buffer's, evaluator's
    slots, another run's group; placed or not) is placed where room is left, and its actor restarts
    in it. ``free_by_node`` counts as ``RayPort`` does, from the totals, the groups placed and the
    nodes the run's actors said they run on: another run's actor outside a group is not seen."""

    def __init__(self, clock: Clock) -> None:
        self.clock, self.actors, self.killed, self.forgotten = clock, [], [], []
        self.totals: dict[str, dict] = {}
        self.free: dict[str, dict] = {}
        self.says_free = True  # False: free_by_node does not say
        self.groups: dict[str, bool] = {}
        self.stopped: list[str] = []

    def place(self, actor: FakeActor, node: str, demand: dict, group: bool = False) -> FakeActor:
        """``actor`` running on ``node``, holding ``demand`` there (``group``: as its placement
        group's bundle)."""
        actor.node, actor.demand = node, dict(demand)
        self.free[node] = minus(self.free[node], demand)
        if group:
            self.groups[actor.name] = True
        return actor

    def spawn(self, name: str, demand: dict) -> FakeActor:
        """A new actor, waiting for a node with room (``ray.remote`` of an actor)."""
        actor = self.actor(name)
        actor.up, actor.started, actor.pending, actor.demand = False, False, True, dict(demand)
        self._schedule()
        return actor

    def lose_node(self, node: str) -> None:
        del self.free[node], self.totals[node]
        for actor in self.actors:
            if actor.node == node and not actor.gone:
                actor.up, actor.back_at, actor.pending = False, None, True
                if actor.name in self.groups:
                    self.groups[actor.name] = False

    def add_node(self, node: str, resources: dict) -> None:
        self.totals[node], self.free[node] = dict(resources), dict(resources)
        self._schedule()

    def _schedule(self) -> None:
        waiting = [a for a in self.actors if a.pending and not a.gone]
        for actor in sorted(waiting, key=lambda a: a.name in self.groups):  # collectors first
            node = next((n for n, free in self.free.items() if fits(actor.demand, free)), None)
            if node is None:
                continue
            actor.pending, actor.node = False, node
            self.free[node] = minus(self.free[node], actor.demand)
            if actor.name in self.groups:
                self.groups[actor.name] = True
            if actor.started:
                actor.restart_now()
            else:
                actor.up, actor.started = True, True

    def stop(self, handle: FakeActor) -> None:
        self.stopped.append(handle.name)
        if not handle.pending and handle.node in self.free:
            self.free[handle.node] = plus(self.free[handle.node], handle.demand)
        handle.up, handle.gone, handle.pending = False, True, False

    def needs(self, name: str) -> dict:
        return next(a.demand for a in self.actors if a.name == name and not a.gone)

    def placed(self, name: str) -> bool | None:
        return self.groups.get(name)

    def free_by_node(self, nodes: dict[str, str]) -> dict | None:
        if not self.says_free:
            return None
        bundles = [(a.node, a.demand) for a in self.actors if self.groups.get(a.name)]
        held = [(node, self.needs(name)) for name, node in nodes.items() if name not in self.groups]
        return free_resources(self.totals, bundles, held)

    def actor(self, name: str) -> FakeActor:
        actor = FakeActor(name, self.clock)
        self.actors.append(actor)
        return actor

    def advance(self, seconds: float) -> None:
        self.clock.now += seconds
        for actor in self.actors:
            actor.tick()
        self._schedule()

    def instance(self, handle: FakeActor, retry: bool) -> Call:
        return Call(handle, retry)

    def _ready(self, call: Call) -> bool:
        actor = call.actor
        if isinstance(call, Failed):
            return True
        if call.retry:
            return (actor.up and not actor.frozen) or actor.gone
        return not (actor.up and actor.frozen and actor.incarnation == call.incarnation)

    def ready(self, refs: list, timeout_s: float) -> list:
        end = self.clock.now + timeout_s
        while not all(self._ready(r) for r in refs) and self.clock.now < end:
            self.advance(min(0.5, end - self.clock.now))
        return [r for r in refs if self._ready(r)]

    def result(self, call: Call) -> dict:
        if not self._ready(call):
            raise AssertionError("the supervisor waits for a call that never answers")
        actor = call.actor
        if isinstance(call, Failed):
            raise Died("a call failed as its actor died")
        if call.retry:
            if actor.gone:
                raise Died("dead for good", init_failed=actor.init_failed)
            return actor.answer()
        if call.answer is not None:
            return call.answer
        if actor.up and actor.incarnation == call.incarnation:
            return actor.answer()
        raise Died("the actor died")

    def kill(self, handle: FakeActor) -> None:
        self.killed.append(handle.name)
        handle.die()

    def forget(self, refs: list) -> None:
        self.forgotten += refs

    def describe(self, name: str) -> str:
        return f"{name} actor (a fake)"

    def why_not_started(self, names: list[str]) -> str:
        return f"({', '.join(names)}: no node has room)"


class Failed(Call):
    """A call (other than a ping) that failed because its actor died."""
