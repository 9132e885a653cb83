"""The sync on-policy pipeline: every batch comes from the weights just published, and a dead
collector costs one share of one round, not the run."""

from __future__ import annotations

import time

import pytest
import ray

from ding_ray.distributed import SyncDriver, create_actors, make_plan
from tests.distributed.configs import compiled

pytestmark = pytest.mark.ray


class KillingDriver(SyncDriver):
    """Kills collector-0 after round 2 and stops two rounds after it rejoined."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rounds, self.rejoined_at = 0, None
        self.stale: list = []  # (collector, batch version, round version) that differ
        self.per_round: list[set] = []
        self._deadline = time.monotonic() + 120

    def collect_round(self) -> list:
        self._round = set()
        batches = super().collect_round()
        self.per_round.append(self._round)
        return batches

    def on_collected(self, outcome) -> None:
        super().on_collected(outcome)
        self._round.add(outcome.slot.name)
        if outcome.info["policy_version"] != self.weights.version:
            self.stale.append((outcome.slot.name, outcome.info["policy_version"], self.weights.version))

    def train_round(self, batches: list) -> None:
        super().train_round(batches)
        self.rounds += 1
        assert time.monotonic() < self._deadline, "collector-0 did not rejoin"
        if self.rounds == 2:
            ray.kill(self.pool.slots[0].handle, no_restart=False)
        # ray.kill is asynchronous: a round may still reach the old process, so rejoining means
        # a batch from collector-0 after the pool has seen it restart.
        restarted = self.pool.slots[0].restarts > 0
        if self.rejoined_at is None and restarted and "collector-0" in self.per_round[-1]:
            self.rejoined_at = self.rounds
        if self.rejoined_at is not None and self.rounds >= self.rejoined_at + 2:
            self.stop = True


def test_rounds_are_on_policy_and_survive_a_dead_collector(ray_session, tmp_path):
    cfg = compiled(tmp_path, "sync_kill", pipeline="sync", n_sample=64)
    plan = make_plan(cfg)
    actors = create_actors(cfg, plan.namespace)
    try:
        driver = KillingDriver(cfg, actors, plan, max_train_iter=10**6)
        driver.run()
        driver.close()
    finally:
        actors.kill()
    assert not driver.stale  # on-policy: each batch came from the version of its round
    assert driver.pool.slots[0].restarts == 1 and driver.pool.lost_batches <= 1
    assert all("collector-1" in names for names in driver.per_round)  # the other one never stopped
    assert driver.train_iter == driver.rounds * cfg.policy.learn.update_per_collect
