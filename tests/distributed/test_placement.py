"""The placement decisions, per node (no Ray): the start-up check, what each node has free, and the
room made after a node is lost; and what is free read from a real Ray's public state."""

from __future__ import annotations

import time

import pytest
import ray

from ding_ray.distributed.cluster import ClusterError
from ding_ray.distributed.config import RayConfig
from ding_ray.distributed.placement import (
    actor_demands,
    check_resources,
    count_fitting,
    free_by_node,
    free_resources,
    plan_room,
    release_slots,
)

DRIVER_ONLY_HEAD = {"CPU": 0.0}


def demands(**ray):
    cfg = RayConfig.default_config()
    cfg.update(ray)
    return actor_demands(cfg)


def test_two_workers_of_one_cpu_and_a_driver_only_head_hold_the_default_pipeline():
    check_resources(demands(), [DRIVER_ONLY_HEAD, {"CPU": 1.0}, {"CPU": 1.0}])


def test_free_cpus_summed_over_nodes_do_not_make_a_learner_fit():
    """Four nodes of 0.25 CPU add up to the learner's 0.5 and more, but no node holds it."""
    with pytest.raises(
        ClusterError,
        match=r"the learner needs 0.5 CPU on one node, but no single node .* 0.25 CPU.*lower ray.learner",
    ):
        check_resources(demands(num_collectors=1, collector_num_cpus=0.25), [{"CPU": 0.25}] * 8)


def test_a_buffer_too_large_for_any_node_is_named():
    with pytest.raises(ClusterError, match=r"the buffer needs 4 CPU on one node.*ray.buffer_num_cpus"):
        check_resources(demands(buffer_num_cpus=4.0), [{"CPU": 2.0}, {"CPU": 2.0}, {"CPU": 2.0}])


def test_a_resource_no_node_has_is_named_with_how_to_add_it():
    with pytest.raises(
        ClusterError,
        match=r"the learner asks for learner_node, which no node of the cluster has \(the nodes have CPU\): "
        r"start a node with it \(`ray start --resources='\{\"learner_node\": 1\}'`\)",
    ):
        check_resources(demands(learner_resources={"learner_node": 1}), [{"CPU": 4.0}])
    with pytest.raises(ClusterError, match=r"the learner asks for GPU, which no node"):
        check_resources(demands(learner_num_gpus=1), [{"CPU": 4.0}])


def test_the_core_actors_come_first_and_the_message_says_how_many_collectors_fit():
    with pytest.raises(
        ClusterError,
        match=r"hold the learner, buffer and evaluator and 2 of the 4 collectors .*ray.num_collectors to 2",
    ):
        check_resources(demands(num_collectors=4), [{"CPU": 1.0}, {"CPU": 1.0}])


def test_core_actors_that_fit_one_by_one_but_not_together():
    with pytest.raises(ClusterError, match="no node has room left for buffer once the other core actors"):
        check_resources(demands(learner_num_cpus=1.0, buffer_num_cpus=1.0, num_collectors=1), [{"CPU": 1.5}])


def test_plan_room_stops_the_fewest_collectors_on_the_node_where_that_is_fewest():
    collector = {"CPU": 0.2}
    movable = {"b": [("c2", collector), ("c3", collector)], "c": [("c4", collector)]}
    free = {"b": {"CPU": 0.0}, "c": {"CPU": 0.3}}
    assert plan_room([{"CPU": 0.4}], free, movable) == ["c4"]  # c: 0.3 free + 0.2 of one collector
    assert plan_room([{"CPU": 0.3}], free, movable) == []  # it fits as things are
    assert sorted(plan_room([{"CPU": 0.4}, {"CPU": 0.4}], free, movable)) == ["c2", "c3", "c4"]
    assert plan_room([{"CPU": 0.9}], free, movable) is None  # no node is that large


def test_plan_room_leaves_collectors_that_hold_nothing_the_need_lacks():
    movable = {"b": [("c2", {"CPU": 0.5}), ("c3", {"CPU": 0.1, "GPU": 1.0})]}
    assert plan_room([{"GPU": 1.0}], {"b": {"CPU": 0.0, "GPU": 0.0}}, movable) == ["c3"]


def test_count_fitting_counts_per_node():
    free = {"a": {"CPU": 0.5}, "b": {"CPU": 0.3}, "c": {}}
    assert count_fitting({"CPU": 0.2}, free, 10) == 3  # two on a, one on b: not 0.8 / 0.2
    assert count_fitting({"CPU": 0.2}, free, 1) == 1


def test_free_is_each_live_nodes_total_less_the_bundles_and_the_actors_outside_groups_held_there():
    totals = {"a": {"CPU": 2.0, "GPU": 1.0, "memory": 1e9, "node:10.0.0.1": 1.0}, "b": {"CPU": 1.0}}
    bundles = [("a", {"CPU": 0.5, "GPU": 1.0, "memory": 1e8}), ("lost", {"CPU": 4.0})]
    held = [("a", {"CPU": 0.25}), ("b", {"CPU": 0.2}), ("b", {"CPU": 0.2}), ("lost", {"CPU": 0.2})]
    free = free_resources(totals, bundles, held)
    assert free == {"a": {"CPU": 1.25, "GPU": 0.0}, "b": {"CPU": pytest.approx(0.6)}}
    assert free_resources(totals, [], []) == {"a": {"CPU": 2.0, "GPU": 1.0}, "b": {"CPU": 1.0}}


@pytest.mark.ray
def test_free_read_from_rays_public_state_falls_as_rays_own_count_does(ray_session):
    """A placement group's bundle is seen by itself; an actor outside groups once it is named with
    its node (as a collector answers its node to the supervisor). Ray's own count of what is free,
    summed over the cluster, falls by as much."""

    @ray.remote(num_cpus=0.25)
    class Holder:
        def node(self) -> str:
            return ray.get_runtime_context().get_node_id()

    def available_cpus() -> float:
        return ray.available_resources().get("CPU", 0.0)

    def settled(expected: float) -> float:  # Ray's count catches up within moments
        deadline = time.monotonic() + 10
        while abs(available_cpus() - expected) > 1e-6 and time.monotonic() < deadline:
            time.sleep(0.1)
        return available_cpus()

    def steady() -> float:  # what earlier tests' actors held is given back first
        last = available_cpus()
        for _ in range(20):
            time.sleep(0.5)
            if (now := available_cpus()) == last:
                break
            last = now
        return last

    def cpus(free: dict) -> float:
        return sum(res.get("CPU", 0.0) for res in free.values())

    before, counted_before = steady(), cpus(free_by_node())
    slot = {"slot": ray.util.placement_group([{"CPU": 0.5}])}
    holder = Holder.remote()
    try:
        ray.get(slot["slot"].ready(), timeout=60)
        node = ray.get(holder.node.remote(), timeout=60)
        assert settled(before - 0.75) == pytest.approx(before - 0.75)
        assert cpus(free_by_node()) == pytest.approx(counted_before - 0.5)  # the bundle, by itself
        free = free_by_node([(node, {"CPU": 0.25})])
        assert cpus(free) == pytest.approx(counted_before - 0.75)
        assert node in free and free[node]["CPU"] >= 0
    finally:
        ray.kill(holder)
        release_slots(slot)
