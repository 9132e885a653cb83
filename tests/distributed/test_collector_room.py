"""``CollectorPool``'s room decisions against a fake cluster (``fake_actors.FakePort``) and a fake
clock: after a node is lost the learner, buffer and evaluator come back first, the run goes on with
the collectors that fit, and stopped collectors start again once a node has room."""

from __future__ import annotations

import pytest

from ding_ray.distributed.cluster import ClusterError
from ding_ray.distributed.collector_pool import CollectorPool
from ding_ray.distributed.supervisor import ActorSupervisor, Recovered
from ding_ray.errors import ActorDiedError
from tests.distributed.fake_actors import Clock, Failed, FakePort

COLLECTOR = {"CPU": 0.2}


class Run:
    """Two nodes of 1 CPU: learner (0.4) and two collectors on ``a``; buffer (0.1), evaluator
    (0.1) and two collectors on ``b``; each core actor in a slot of its own."""

    def __init__(self, learner_cpus: float = 0.4, free: bool = True) -> None:
        self.port = port = FakePort(Clock())
        port.add_node("a", {"CPU": 1.0})
        port.add_node("b", {"CPU": 1.0})
        self.sup = ActorSupervisor(port, clock=port.clock)
        self.learner = port.place(port.actor("learner"), "a", {"CPU": learner_cpus}, group=True)
        for name in ("buffer", "evaluator"):
            port.place(port.actor(name), "b", {"CPU": 0.1}, group=True)
        for name in ("learner", "buffer", "evaluator"):
            handle = next(a for a in port.actors if a.name == name)
            self.sup.add(name, handle, restart_timeout_s=30)
        self.started: list[int] = []
        self.pool = CollectorPool(self.sup, restart_timeout_s=30, start=self.start, demand=COLLECTOR)
        for i, node in enumerate("aabb"):
            self.pool.add(port.place(port.actor(f"collector-{i}"), node, COLLECTOR))
        self.sup.poll()  # every actor's first answer: where it runs
        port.says_free = free

    def start(self, index: int):
        self.started.append(index)
        return self.port.spawn(f"collector-{index}", COLLECTOR)

    def running(self) -> list[str]:
        return [slot.name for slot in self.pool.running()]

    def wait(self, seconds: float) -> None:
        for _ in range(int(seconds)):
            self.port.advance(1.0)
            self.sup.poll()


def test_the_learner_whose_node_is_lost_comes_back_first_and_the_run_goes_on_with_fewer_collectors():
    run = Run()
    run.port.lose_node("a")  # the learner and collectors 0, 1 wait for room; b has 0.8 CPU free
    with pytest.raises(Recovered):  # the learner's call failed: the driver waits for it to be back
        run.sup.get(Failed(run.learner, retry=False), ["learner"])
    # the collectors that waited for a node took b's room first; two collectors were stopped for the learner
    assert run.sup.up("learner") and run.learner.node == "b" and run.sup.restarts("learner") == 1
    assert len(run.running()) == 2 and run.pool.stops == 2 and len(run.port.stopped) == 2
    assert all(run.sup.up(name) for name in run.running())
    assert sum(run.port.free["b"].values()) == pytest.approx(0.0)


def test_stopped_collectors_start_again_once_a_node_has_room():
    run = Run()
    run.port.lose_node("a")
    with pytest.raises(Recovered):
        run.sup.get(Failed(run.learner, retry=False), ["learner"])
    stopped = [slot.name for slot in run.pool.slots if slot.stopped]
    run.wait(10)
    assert run.started == []  # no node has room: they stay stopped, the run goes on
    run.port.add_node("c", {"CPU": 1.0})
    run.wait(10)
    assert run.started == [int(name.split("-")[1]) for name in stopped]
    assert len(run.running()) == 4 and all(run.sup.up(slot.name) for slot in run.pool.slots)
    assert run.port.free["c"] == {"CPU": pytest.approx(0.6)}
    assert len(run.pool.idle()) == 4  # they take calls again


def test_no_more_collectors_start_than_fit_beside_those_running():
    """b holds the learner, buffer, evaluator and two collectors: full, though its total less the
    slots has 0.4 CPU. Only what the running collectors leave counts."""
    run = Run()
    run.port.lose_node("a")
    with pytest.raises(Recovered):
        run.sup.get(Failed(run.learner, retry=False), ["learner"])
    run.port.add_node("c", {"CPU": 0.3})  # room for one collector
    run.wait(10)
    assert len(run.started) == 1 and len(run.running()) == 3
    assert all(run.sup.up(name) for name in run.running())
    run.port.add_node("d", {"CPU": 0.3})
    run.wait(10)
    assert len(run.started) == 2 and len(run.running()) == 4


def test_a_core_actor_whose_slot_kept_its_node_stops_no_collector():
    run = Run()
    run.learner.die(back_after=3.0)  # its process died; its slot stays where it was
    with pytest.raises(Recovered):
        run.sup.get(Failed(run.learner, retry=False), ["learner"])
    assert run.sup.up("learner") and run.pool.stops == 0 and len(run.running()) == 4


def test_collectors_are_stopped_before_the_driver_sees_the_core_actor_die():
    """A lost slot is enough: the room is made while the learner's calls have not failed yet."""
    run = Run()
    run.port.lose_node("a")
    run.wait(2)
    assert run.pool.stops == 2 and run.sup.up("learner") and run.learner.node == "b"


def test_without_room_even_with_no_collector_the_learner_ends_the_run_and_only_waiting_collectors_stop():
    run = Run(learner_cpus=0.9)  # b cannot hold it even with no collector on it
    run.port.place(run.port.actor("other"), "b", {"CPU": 0.4}, group=True)  # another run's slot
    run.port.lose_node("a")
    with pytest.raises(ActorDiedError, match="learner actor .a fake. died and did not come back"):
        run.sup.get(Failed(run.learner, retry=False), ["learner"])
    assert sorted(run.port.stopped) == ["collector-0", "collector-1"]  # those that waited for a node


def test_nothing_is_stopped_where_the_port_does_not_say_what_is_free():
    run = Run(free=False)
    run.port.lose_node("a")
    run.wait(5)
    assert run.pool.stops == 0 and len(run.running()) == 4


def test_a_run_whose_collectors_all_stay_stopped_ends_saying_so():
    run = Run()
    run.port.place(run.port.actor("other"), "b", {"CPU": 0.4}, group=True)  # another run's slot
    run.port.lose_node("a")  # the learner needs the room of both collectors on b
    run.wait(3)
    assert run.sup.up("learner") and run.running() == []
    with pytest.raises(ClusterError, match=r"No collector has had room for 3\d s .*Add a node"):
        run.wait(40)


def test_another_jobs_actor_outside_placement_groups_is_not_seen_and_the_learner_ends_the_run():
    """What ``free_by_node`` cannot see: b looks as if it had room for the learner, so no collector
    on it is stopped; the learner is not back within its timeout and the run ends naming it."""
    run = Run()
    run.port.place(run.port.actor("other"), "b", {"CPU": 0.4})  # another job's actor, in no group
    run.port.lose_node("a")
    with pytest.raises(ActorDiedError, match="learner actor .a fake. died and did not come back"):
        run.sup.get(Failed(run.learner, retry=False), ["learner"])
    assert sorted(run.port.stopped) == ["collector-0", "collector-1"]  # those that waited for a node


def test_the_call_in_flight_on_a_stopped_collector_is_lost_without_the_supervisor():
    run = Run()
    slot = run.pool.slots[0]  # on the node that is lost
    call = Failed(slot.handle, retry=False)
    run.pool.launch(slot, call, reserved=10)
    run.port.lose_node("a")
    with pytest.raises(Recovered):
        run.sup.get(Failed(run.learner, retry=False), ["learner"])
    assert slot.stopped and slot.ref is call  # its call is still to be taken
    outcome = run.pool.finish(call)
    assert outcome.lost and outcome.reserved == 10 and slot.lost == 1
    assert slot.name not in run.sup.members  # no death reported for a collector stopped on purpose
