"""``ActorSupervisor``'s bookkeeping against a fake actor system and a fake clock: deaths seen by a
call or by a probe, stalls, unseen restarts, groups, and the errors that end a run."""

from __future__ import annotations

import pytest

from ding_ray.distributed.cluster import ClusterError
from ding_ray.distributed.member import RESTARTING, UP
from ding_ray.distributed.supervisor import ActorSupervisor, Died, Recovered
from ding_ray.errors import ActorDiedError
from tests.distributed.fake_actors import Clock, Failed, FakePort


@pytest.fixture
def port():
    return FakePort(Clock())


def supervisor(port: FakePort, **kwargs) -> ActorSupervisor:
    return ActorSupervisor(port, clock=port.clock, **kwargs)


def test_a_death_a_call_reveals_is_waited_for_and_recorded_with_what_was_lost(port):
    learner = port.actor("learner")
    sup = supervisor(port)
    sup.add("learner", learner, restart_timeout_s=10, advice="resume=<folder> goes on.")
    owed = []
    sup.on_back("learner", lambda instance, event: event.update(lost_train_iters=7) or owed.append(instance))
    learner.die(back_after=3.0)
    with pytest.raises(Recovered):
        sup.get(Failed(learner, retry=False), suspects=["learner"])
    assert sup.up("learner") and sup.restarts("learner") == 1
    assert port.clock.now == pytest.approx(3.0)  # waited until the new incarnation answered
    assert sup.events == [{"actor": "learner", "restored_from": "ckpt", "lost_train_iters": 7}]
    assert owed == [learner.answer()]


def test_a_suspect_that_did_not_die_is_not_a_restart(port):
    learner, buffer = port.actor("learner"), port.actor("buffer")
    sup = supervisor(port)
    for actor in (learner, buffer):
        sup.add(actor.name, actor, restart_timeout_s=10)
    buffer.die(back_after=1.0)
    with pytest.raises(Recovered):  # the learner's call failed as its sample died with the buffer
        sup.get(Failed(learner, retry=False), suspects=["learner", "buffer"])
    assert [e["actor"] for e in sup.events] == ["buffer"]
    assert sup.restarts("learner") == 0 and sup.restarts("buffer") == 1


def test_a_restart_between_two_calls_is_found_by_the_probe(port):
    evaluator = port.actor("evaluator")
    sup = supervisor(port, probe_every_s=2.0)
    sup.add("evaluator", evaluator, restart_timeout_s=10)
    sup.on_back("evaluator", lambda instance, event: event.update(lost_evaluations=0))
    sup.poll()
    evaluator.die(back_after=0.1)
    port.advance(1.0)  # back before anybody called it
    sup.poll()
    assert sup.events == []  # not probed yet
    port.advance(1.5)
    sup.poll()  # sends the probe
    sup.poll()  # takes its answer
    assert sup.events == [{"actor": "evaluator", "restored_from": "ckpt", "lost_evaluations": 0}]


def test_two_deaths_between_two_answers_are_two_recoveries(port):
    buffer = port.actor("buffer")
    sup = supervisor(port)
    sup.add("buffer", buffer, restart_timeout_s=10)
    sup.check(timeout_s=1)  # the supervisor knows incarnation 1
    buffer.restart_now()  # died, came back, and died again before it answered anyone
    buffer.die(back_after=0.5)
    with pytest.raises(Recovered):
        sup.get(Failed(buffer, retry=False), suspects=["buffer"])
    unseen, event = sup.events
    assert unseen == {"actor": "buffer", "restored_from": None, "unseen": True}
    assert event == {"actor": "buffer", "restored_from": "ckpt"}


def test_a_frozen_actor_is_killed_past_the_timeout_and_its_restart_says_so(port):
    learner = port.actor("learner")
    sup = supervisor(port, check_every_s=0.2)
    sup.add("learner", learner, restart_timeout_s=10, call_timeout_s=30)
    sup.calls("learner", busy=True)
    port.advance(1.0)
    sup.calls("learner", busy=True, finished=1)  # it has answered: its next call is timed
    learner.frozen = True
    port.advance(29.0)
    sup.poll()
    assert port.killed == []
    port.advance(1.5)
    sup.poll()
    assert port.killed == ["learner"] and sup.state("learner") == RESTARTING
    port.advance(1.0)
    sup.poll()
    assert sup.up("learner")
    assert sup.events == [{"actor": "learner", "restored_from": "ckpt", "timed_out": True}]


def test_the_first_call_of_an_incarnation_is_not_timed(port):
    learner = port.actor("learner")
    sup = supervisor(port)
    sup.add("learner", learner, restart_timeout_s=100, call_timeout_s=30)
    sup.calls("learner", busy=True)  # waits for the actor to start: its start timeout bounds it
    port.advance(60)
    sup.poll()
    assert port.killed == []


def test_a_collector_that_dies_rejoins_and_its_group_goes_on_meanwhile(port):
    c0, c1 = port.actor("collector-0"), port.actor("collector-1")
    sup = supervisor(port)
    for c in (c0, c1):
        sup.add(c.name, c, group="collector", restart_timeout_s=10, max_failures=3, record=False)
    c0.die(back_after=2.0)
    sup.died("collector-0", Died("its call failed"))
    assert sup.state("collector-0") == RESTARTING and sup.up("collector-1")
    sup.poll()
    assert sup.state("collector-0") == RESTARTING
    port.advance(2.5)
    sup.poll()
    assert sup.up("collector-0") and sup.restarts("collector-0") == 1
    assert sup.events == []  # collectors' restarts are counted, not recorded as recoveries


def test_an_actor_that_keeps_dying_is_given_up_on_and_the_last_of_its_group_ends_the_run(port):
    c0, c1 = port.actor("collector-0"), port.actor("collector-1")
    sup = supervisor(port)
    for c in (c0, c1):
        sup.add(c.name, c, group="collector", restart_timeout_s=10, max_failures=2, record=False)
    for _ in range(2):  # dies at every call: no call finishes in between
        c0.die(back_after=0.1)
        sup.died("collector-0", Died("its call failed"))
        port.advance(0.5)
        sup.poll()
    assert sup.state("collector-0") == "gone" and sup.up("collector-1")
    c1.die()
    c1.gone = True
    sup.died("collector-1", Died("its call failed"))
    with pytest.raises(ActorDiedError, match="collector-1 actor .a fake. died and did not come back"):
        sup.poll()


def test_a_finished_call_resets_the_count_of_deaths(port):
    c0 = port.actor("collector-0")
    sup = supervisor(port)
    sup.add("collector-0", c0, group="collector", restart_timeout_s=10, max_failures=2, record=False)
    for _ in range(3):
        c0.die(back_after=0.1)
        sup.died("collector-0", Died("its call failed"))
        port.advance(0.5)
        sup.poll()
        sup.calls("collector-0", busy=False, finished=1)
    assert sup.up("collector-0") and sup.restarts("collector-0") == 3


def test_an_actor_whose_constructor_raises_is_not_waited_for(port):
    evaluator = port.actor("evaluator")
    sup = supervisor(port)
    sup.add("evaluator", evaluator, restart_timeout_s=10)
    evaluator.die()
    with pytest.raises(
        ActorDiedError,
        match="evaluator, whose constructor raised ValueError: bad env id. A restart raises it again",
    ):
        sup.died("evaluator", Died("ValueError: bad env id", init_failed=True))
    with pytest.raises(ActorDiedError):  # the run's error stays the answer
        sup.poll()


def test_every_member_of_a_group_away_too_long_ends_the_run_naming_why(port):
    c0, c1 = port.actor("collector-0"), port.actor("collector-1")
    sup = supervisor(port)
    for c in (c0, c1):
        sup.add(
            c.name, c, group="collector", restart_timeout_s=5, record=False, advice="Did their node leave?"
        )
        c.die(back_after=1e9)  # their node left: no other has room for them
        sup.died(c.name, Died("node died"))
    port.advance(4.0)
    sup.poll()
    port.advance(2.0)
    with pytest.raises(
        ClusterError, match=r"Every collector actor .* \(collector-0, collector-1: no node.*resume="
    ):
        sup.poll()
    with pytest.raises(ClusterError):  # the run's error stays the answer
        sup.poll()


def test_a_core_actor_not_back_in_time_ends_the_run_with_what_to_do(port):
    learner = port.actor("learner")
    sup = supervisor(port)
    sup.add("learner", learner, restart_timeout_s=5, advice="resume=<the run's folder> goes on.")
    learner.die(back_after=60)
    with pytest.raises(
        ActorDiedError, match=r"The learner actor .a fake. died and did not come back.*resume="
    ) as err:
        sup.get(Failed(learner, retry=False), suspects=["learner"])
    with pytest.raises(ActorDiedError) as again:
        sup.recover(["learner"])
    assert again.value is err.value


def test_the_end_of_run_check_sees_a_restart_the_probes_missed(port):
    learner = port.actor("learner")
    sup = supervisor(port, probe_every_s=1e9)
    sup.add("learner", learner, restart_timeout_s=10)
    sup.on_back("learner", lambda instance, event: event.update(lost_train_iters=3))
    sup.check(timeout_s=1)
    learner.restart_now()
    sup.check(timeout_s=1)
    assert sup.events == [{"actor": "learner", "restored_from": "ckpt", "lost_train_iters": 3}]
    assert sup.state("learner") == UP


def test_a_probe_the_dead_process_answered_is_not_a_second_restart(port):
    learner = port.actor("learner")
    sup = supervisor(port, probe_every_s=1.0)
    sup.add("learner", learner, restart_timeout_s=10)
    port.advance(1.0)
    sup.poll()  # a probe goes out and the old process answers it at once
    learner.die(back_after=0.5)
    with pytest.raises(Recovered):
        sup.get(Failed(learner, retry=False), suspects=["learner"])
    for _ in range(4):
        sup.poll()
        port.advance(0.6)
    assert len(sup.events) == 1 and sup.restarts("learner") == 1


def test_an_actor_that_died_while_it_started_is_a_restart_at_its_first_answer(port):
    evaluator = port.actor("evaluator")
    evaluator.die(back_after=2.0)  # still starting: the first call waits for it
    evaluator.started = False
    sup = supervisor(port)
    sup.add("evaluator", evaluator, restart_timeout_s=10)
    sup.on_back("evaluator", lambda instance, event: event.update(lost_evaluations=1))
    port.advance(2.5)  # the second process answers the first call
    sup.check(timeout_s=1)
    assert sup.events == [{"actor": "evaluator", "restored_from": "ckpt", "lost_evaluations": 1}]


def test_an_actor_that_died_before_its_first_answer_is_a_restart_once_back(port):
    evaluator = port.actor("evaluator")
    sup = supervisor(port)
    sup.add("evaluator", evaluator, restart_timeout_s=10)
    evaluator.die(back_after=2.0)  # the first call fails with it
    evaluator.counted = False  # the failed call is all there is to see
    sup.poll()
    port.advance(2.5)
    sup.check(timeout_s=1)
    assert [e["actor"] for e in sup.events] == ["evaluator"] and sup.restarts("evaluator") == 1


def test_the_end_of_run_check_does_not_wait_for_an_actor_that_never_answers(port):
    learner, evaluator = port.actor("learner"), port.actor("evaluator")
    sup = supervisor(port)
    for actor in (learner, evaluator):
        sup.add(actor.name, actor, restart_timeout_s=10)
    sup.check(timeout_s=1)
    evaluator.frozen = True  # answers nothing, dies not
    learner.restart_now()
    sup.check(timeout_s=1)
    assert port.clock.now < 10 and [e["actor"] for e in sup.events] == ["learner"]


def test_a_death_before_the_first_answer_that_a_call_reveals_is_one_restart(port):
    evaluator = port.actor("evaluator")
    evaluator.die(back_after=2.0)  # the supervisor's first call fails with it, and its first evaluation
    evaluator.counted = False
    sup = supervisor(port)
    sup.add("evaluator", evaluator, restart_timeout_s=10)
    sup.died("evaluator", Died("its call failed"))
    port.advance(2.5)
    for _ in range(3):
        sup.poll()
        port.advance(0.5)
    sup.check(timeout_s=1)
    assert [e["actor"] for e in sup.events] == ["evaluator"] and sup.restarts("evaluator") == 1


def test_the_end_of_run_check_does_not_wait_for_a_collector_whose_node_is_gone(port):
    """A collector holds nothing the last checkpoint counts: one whose node went after its last call
    is not waited for at the end (no node may have room for it), while the learner's restart is."""
    port.add_node("head", {"CPU": 1})
    port.add_node("worker", {"collector_slot": 1})
    learner = port.place(port.actor("learner"), "head", {"CPU": 1})
    collector = port.place(port.actor("collector-0"), "worker", {"collector_slot": 1})
    sup = supervisor(port)
    sup.add("learner", learner, restart_timeout_s=300)
    sup.add("collector-0", collector, restart_timeout_s=300, group="collector", record=False)
    sup.check(timeout_s=1)
    port.lose_node("worker")
    learner.restart_now()
    sup.check(timeout_s=300)
    assert port.clock.now < 1 and [e["actor"] for e in sup.events] == ["learner"]
