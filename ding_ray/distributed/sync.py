"""``SyncDriver``: the synchronous on-policy pipeline (PPO style).

Each round: the collectors, all with the weights just published, gather ``n_sample``
transitions between them in parallel; the learner trains on exactly that data and publishes
again. A collector that dies mid-round loses its share (counted); the round goes on with the
others, and the restarted collector rejoins in a later round with the latest weights.
"""

from __future__ import annotations

import math
from typing import Any

import ray

from ding_ray.distributed.collector_pool import BUSY, IDLE
from ding_ray.distributed.driver import Driver
from ding_ray.worker import metrics


class SyncDriver(Driver):
    def run(self) -> None:
        self.start_collectors()  # every round waits for all of them anyway
        self.await_learner()  # on-policy: even the first round uses the learner's weights
        while not self.done:
            batches = self.collect_round()
            if batches:
                self.train_round(batches)
            self.launch_eval()
            self.poll_eval()
            self.report()

    def collect_round(self) -> list:
        """Refs of the batches of one round (one per collector that finished it)."""
        pings = self.pool.refs()  # between rounds only restarting collectors have calls in flight
        if pings:
            self._finish(ray.wait(pings, num_returns=len(pings), timeout=0)[0])
        idle = [s for s in self.pool.slots if s.state == IDLE]
        while not idle:  # every collector is restarting: wait for one to come back
            self._finish(ray.wait(self.pool.refs(), num_returns=1)[0])
            idle = [s for s in self.pool.slots if s.state == IDLE]
        share = math.ceil(self.plan.n_sample / len(idle))
        for slot in idle:
            batch, info = slot.handle.collect_batch.options(num_returns=2).remote(
                self.weights, self.train_iter, share, self.policy_kwargs()
            )
            self.pool.launch(slot, info, share, extra=batch)
        batches = []
        while busy := [s.ref for s in idle if s.state == BUSY]:
            batches += self._finish(ray.wait(busy, num_returns=1)[0])
        return batches

    def _finish(self, ready: list) -> list:
        batches = []
        for ref in ready:
            outcome = self.pool.finish(ref)
            if outcome.info is not None:
                self.on_collected(outcome)
                batches.append(outcome.extra)
        return batches

    def train_round(self, batches: list) -> None:
        info = self.get(self.actors.learner.train_sync.remote(self.env_steps, *batches))
        self.train_iter = info[metrics.LEARNER_TRAIN_ITER]
        self.weights = info.pop("weights")
        self.monitor.update(info)

    def poll_eval(self) -> None:
        """Take the evaluation result if it is ready (and wait for it once the budget is spent)."""
        refs = self.eval_refs()
        if refs and ray.wait(refs, timeout=None if self.budget_spent else 0)[0]:
            self.on_evaluated()

    def summary(self) -> dict[str, Any]:
        out = super().summary()
        out["pipeline"] = "ray-sync"
        return out
