"""``start_state`` and ``why_not_started`` on the suite's Ray (no dashboard): an actor in its
constructor is placed, with its pid; one that no node can hold, or that the only node has no room
for, waits; a constructed one whose call hangs is alive; a killed one is dead."""

from __future__ import annotations

import os
import time
import uuid
from types import SimpleNamespace

import pytest
import ray
from easydict import EasyDict

from ding_ray.distributed.config import RayConfig
from ding_ray.distributed.startup import (
    ALIVE,
    DEAD,
    PLACED,
    WAITING,
    note_start,
    start_state,
    why_not_started,
)

pytestmark = [pytest.mark.ray]


class SlowStart:
    """Notes its start as ding_ray's actors do, then stays ``seconds`` in its constructor."""

    def __init__(self, seconds: float) -> None:
        note_start()
        time.sleep(seconds)

    def ping(self) -> int:
        return os.getpid()

    def hang(self, seconds: float) -> None:
        time.sleep(seconds)


class Blocker:
    def ping(self) -> int:
        return os.getpid()


def run_actors(**ray_settings) -> SimpleNamespace:
    """What ``start_state`` reads of a run's ``Actors``: its namespace and config."""
    ray_cfg = RayConfig.default_config()
    ray_cfg.update(ray_settings)
    env = EasyDict(env_id="CartPole-v1", collector_env_num=2, evaluator_env_num=1)
    return SimpleNamespace(namespace=f"startup-{uuid.uuid4().hex[:8]}", cfg=EasyDict(ray=ray_cfg, env=env))


def create(actors: SimpleNamespace, name: str, cls: type = SlowStart, *args, **options):
    return ray.remote(cls).options(name=name, namespace=actors.namespace, **options).remote(*args)


def wait_for_state(actors: SimpleNamespace, name: str, state: str, timeout_s: float = 60.0) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        found, pid = start_state(actors, name)
        if found == state or time.monotonic() > deadline:
            assert found == state, (name, found)
            return pid
        time.sleep(0.2)


def test_an_actor_in_its_constructor_is_placed_with_its_pid(ray_session):
    actors = run_actors()
    handle = create(actors, "collector-0", SlowStart, 120, num_cpus=0.25)
    try:
        pid = wait_for_state(actors, "collector-0", PLACED)
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            assert b"collector-0" in f.read()  # the process that runs its constructor
        message = why_not_started(actors, ["collector-0"])
        assert message.startswith(f"Placed on a node and still in its constructor: collector-0 (pid {pid}).")
        assert "It creates its 2 envs (env 'CartPole-v1') and resets each once" in message
    finally:
        ray.kill(handle)


def test_an_actor_no_node_can_hold_is_waiting_for_a_node(ray_session):
    actors = run_actors(buffer_resources={"no_such_node": 1})
    handle = create(actors, "buffer", Blocker, num_cpus=0.25, resources={"no_such_node": 1})
    try:
        assert start_state(actors, "buffer") == (WAITING, 0)
        message = why_not_started(actors, ["buffer"])
        needs = "ray.buffer_num_cpus=0.25, ray.buffer_resources={'no_such_node': 1}"
        assert message.startswith(
            f"Waiting for a node with room: buffer, which needs {needs} (free now: CPU "
        )
        assert "constructor" not in message
    finally:
        ray.kill(handle)


def test_an_actor_the_only_node_has_no_room_for_now_is_waiting(ray_session):
    """The node could hold it (4 CPUs), but not beside what runs there; no process runs its constructor."""
    actors = run_actors(collector_num_cpus=3.5)
    learner = create(actors, "learner", SlowStart, 0, num_cpus=0.25)  # a started actor of the run
    blocker = ray.remote(num_cpus=1)(Blocker).remote()
    ray.get([learner.ping.remote(), blocker.ping.remote()], timeout=60)
    collector = create(actors, "collector-0", SlowStart, 0, num_cpus=3.5)
    try:
        time.sleep(1.0)
        assert start_state(actors, "collector-0") == (WAITING, 0)
    finally:
        for handle in (learner, blocker, collector):
            ray.kill(handle)


def test_a_constructed_actor_whose_call_hangs_is_alive(ray_session):
    actors = run_actors()
    handle = create(actors, "evaluator", SlowStart, 0, num_cpus=0.25)
    try:
        pinged = ray.get(handle.ping.remote(), timeout=60)
        handle.hang.remote(120)
        assert wait_for_state(actors, "evaluator", ALIVE) == pinged
        assert why_not_started(actors, ["evaluator"]).startswith(
            f"Constructed, but its first call has not returned: evaluator (pid {pinged})"
        )
    finally:
        ray.kill(handle)


def test_a_killed_actor_is_dead(ray_session):
    actors = run_actors()
    handle = create(actors, "learner", SlowStart, 0, num_cpus=0.25)
    ray.get(handle.ping.remote(), timeout=60)
    ray.kill(handle, no_restart=True)
    wait_for_state(actors, "learner", DEAD)
    assert why_not_started(actors, ["learner"]).startswith("Dead, and Ray restarts it no more: learner;")


def test_note_start_outside_an_actor_does_nothing(ray_session):
    note_start()  # the driver: no actor name, no note, no error
