"""The sync on-policy pipeline: every batch comes from the weights just published, and a dead
collector costs one share of one round, not the run."""

from __future__ import annotations

import time

import numpy as np
import pytest
import ray

from ding_ray.distributed import CollectorActor, RayRun, make_plan
from ding_ray.framework import OnlineRLContext, current_task, pipelines
from tests.distributed.configs import compiled

pytestmark = pytest.mark.ray


class KillingWatcher:
    """A stage after each round: kills collector-0 after round 2 and ends the run two rounds after
    it rejoined; records who delivered in each round and any batch of another version."""

    def __init__(self, rc: RayRun) -> None:
        self.rc = rc
        self.rounds, self.rejoined_at = 0, None
        self.trained = 0  # rounds the learner trained on: one whose batch died with its collector is lost
        self.stale: list = []  # (collector, batch version, round version) that differ
        self.per_round: list[set] = []
        self._round: list[dict] = []
        self._deadline = time.monotonic() + 120
        pop = rc.collector.pop_infos

        def pop_and_record() -> list[dict]:
            infos = pop()
            self._round += infos
            return infos

        rc.collector.pop_infos = pop_and_record

    def __call__(self, ctx: OnlineRLContext) -> None:
        version = self.rc.collector.weights.version  # the weights this round was collected with
        self.per_round.append({i["collector"] for i in self._round})
        self.stale += [
            (i["collector"], i["policy_version"], version)
            for i in self._round
            if i["policy_version"] != version
        ]
        self._round = []
        self.rounds += 1
        self.trained += ctx.train_output is not None
        assert time.monotonic() < self._deadline, "collector-0 did not rejoin"
        pool = self.rc.collector.pool
        if self.rounds == 2:
            ray.kill(pool.slots[0].handle, no_restart=False)
        # ray.kill is asynchronous: a round may still reach the old process, so rejoining means
        # a batch from collector-0 after the pool has seen it restart.
        if (
            self.rejoined_at is None
            and self.rc.supervisor.restarts("collector-0") > 0
            and "collector-0" in self.per_round[-1]
        ):
            self.rejoined_at = self.rounds
        if self.rejoined_at is not None and self.rounds >= self.rejoined_at + 2:
            current_task().finish = True


def test_rounds_are_on_policy_and_survive_a_dead_collector(ray_session, tmp_path):
    cfg = compiled(tmp_path, "sync_kill", pipeline="sync", n_sample=64, num_collectors=2)
    with RayRun(cfg, make_plan(cfg)) as rc, rc.task() as task:
        watcher = KillingWatcher(rc)
        pipelines.on_policy(task, cfg, rc)
        task.use(watcher)
        task.run()
    assert not watcher.stale  # on-policy: each batch came from the version of its round
    pool = rc.collector.pool
    assert rc.supervisor.restarts("collector-0") == 1 and pool.lost_batches <= 1
    assert all("collector-1" in names for names in watcher.per_round)  # the other one never stopped
    # one learner call per round, as serial_pipeline_onpolicy makes per collect: DQN's is one step.
    # ray.kill lands late under load, during a later round: that round trains on collector-1's share
    assert task.ctx.train_iter == watcher.trained >= watcher.rounds - 1
    assert rc.result["pipeline"] == "ray-sync" and rc.result["lost_batches"] == pool.lost_batches


def test_a_rounds_batch_outlives_the_collector_that_made_it(ray_session, tmp_path):
    """A sync collect call hands its batch back as a second return value, owned by the caller: the
    collector dying once its call is in does not take the batch with it, as it would take a
    reference it had put into the object store itself."""
    cfg = compiled(tmp_path, "sync_owner", pipeline="sync")
    actor = ray.remote(CollectorActor).options(num_cpus=0.5, max_restarts=0).remote(cfg, 0)
    info_ref, batch_ref = actor.collect_batch.remote(None, 0, {"eps": 0.5}, 24)
    info = ray.get(info_ref, timeout=120)
    ray.kill(actor, no_restart=True)
    deadline = time.monotonic() + 60
    while True:  # ray.kill lands a little later: a ping may still be answered first
        try:
            ray.get(actor.ping.remote(), timeout=60)
        except ray.exceptions.RayActorError:
            break  # the collector is gone ...
        assert time.monotonic() < deadline, "the collector was not killed"
        time.sleep(0.1)
    batch = ray.get(batch_ref, timeout=60)  # ... its batch is not
    assert info["n"] == 24 and len(batch["obs"]) == 24
    assert batch["obs"].shape == (24, 4) and batch["obs"].dtype == np.float32
