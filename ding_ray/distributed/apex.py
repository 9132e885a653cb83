"""``ApexDriver``: the asynchronous off-policy pipeline (Ape-X).

Collectors loop roll out -> push straight to the buffer actor; the learner loops sample -> train
-> priority update -> publish, with ``sample_prefetch`` sample+train calls queued on it so it
never waits on a round trip; the evaluator runs every ``eval_freq`` learner iterations. A
``RateLimiter`` keeps samples per insert at its target whatever the relative speeds, and
``ray.wait`` takes whichever call finishes first, so nobody waits for the slowest collector.

The loop, as ``run`` writes it::

    while not driver.done:
        driver.launch_collects()    # idle collectors roll out with the latest weights
        driver.launch_training()    # keep sample -> train calls queued on the learner
        driver.launch_eval()        # every eval_freq learner iterations
        driver.process(driver.wait())
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import ray
from easydict import EasyDict

from ding_ray.data.rate_limiter import RateLimiter
from ding_ray.distributed.actors import Actors
from ding_ray.distributed.config import Plan
from ding_ray.distributed.driver import Driver
from ding_ray.worker import metrics
from ding_ray.worker.rollout_worker import RolloutWorker


@dataclass
class TrainCall:
    info: Any  # ref of the learner's info dict
    priority: Any  # ref of the priority update (None unless the policy reports priorities)
    size: int  # items sampled for it


class ApexDriver(Driver):
    def __init__(
        self,
        cfg: EasyDict,
        actors: Actors,
        plan: Plan,
        max_env_step: int | None = None,
        max_train_iter: int | None = None,
    ) -> None:
        super().__init__(cfg, actors, plan, max_env_step, max_train_iter)
        self.limiter = RateLimiter(plan.samples_per_insert, plan.min_replay_size, plan.tolerance)
        self.limiter.check_chunks(plan.n_sample, plan.sample_size)
        self._calls: deque[TrainCall] = deque()
        self._train_s = 0.0  # seconds the learner spent in train calls
        self._first_train: float | None = None
        self.learner_waits = 0  # times the learner's queue ran dry because the collectors were behind
        self._random_left = plan.random_collect_size
        self._priority = bool(cfg.policy.get("priority", False))

    def run(self) -> None:
        self.warm_up()
        while not self.done:
            self.launch_collects()
            self.launch_training()
            self.launch_eval()
            self.process(self.wait())

    def warm_up(self) -> None:
        """Collect random transitions here and push them to the buffer while the actors start.

        Collector actors take seconds to start (each imports torch) while this process already
        has the envs' code loaded: it collects the policy's ``random_collect_size`` transitions
        itself, one ``n_sample`` batch at a time, until they are all in or a collector actor's
        first batch arrives (the actors then collect the rest). No-op when the size is 0.
        """
        self.launch_collects()  # queued on the collectors: they start on them once up
        if self._random_left <= 0:
            return
        worker = RolloutWorker(self.cfg, index=self.cfg.ray.num_collectors)  # seeds no collector uses
        try:
            n = self.plan.n_sample
            while self._random_left > 0 and self.limiter.can_insert(n):
                if ray.wait(self.pool.refs(), timeout=0)[0]:
                    break  # a collector actor is up
                batch, info = worker.rollout(n, self.train_iter, None, random_collect=True)
                self.limiter.reserve_insert(info["n"])
                self.get(self.actors.buffer.push.remote(batch, self.env_steps + info["new_env_steps"]))
                self.limiter.commit_insert(info["n"])
                self._random_left -= info["n"]
                self.count_batch(info)
        finally:
            worker.close()

    # ----- launching -----------------------------------------------------------------------------
    def launch_collects(self) -> None:
        """Relaunch every idle collector the rate limiter lets through."""
        n = self.plan.n_sample
        for slot in self.pool.idle():
            if self.budget_spent or not self.limiter.can_insert(n):
                return
            random_collect = self._random_left > 0
            self._random_left -= n if random_collect else 0
            kwargs = self.policy_kwargs()
            ref = slot.handle.collect.remote(self.weights, self.train_iter, kwargs, random_collect, n)
            self.pool.launch(slot, ref, n)
            self.limiter.reserve_insert(n)

    def launch_training(self) -> None:
        """Queue sample -> train calls on the learner, up to ``sample_prefetch`` of them."""
        size = self.plan.sample_size
        if not self._calls and self.weights is not None and not self.limiter.can_sample(size):
            self.learner_waits += self.limiter.inserted >= self.limiter.min_size_to_sample
        while len(self._calls) < self.cfg.ray.sample_prefetch and self.limiter.can_sample(size):
            if self.max_train_iter is not None and self.train_iter >= self.max_train_iter:
                return
            batch = self.actors.buffer.sample.remote(size, self.train_iter)
            train = self.actors.learner.train_async.options(num_returns=2)
            info, priority = train.remote(batch, self.env_steps)
            self._calls.append(TrainCall(info, priority if self._priority else None, size))
            self.limiter.sample(size)

    # ----- waiting and processing ----------------------------------------------------------------
    def wait(self, timeout_s: float = 1.0) -> list:
        refs = self.pool.refs() + self.eval_refs() + self.learner_refs()
        refs += [self._calls[0].info] if self._calls else []
        if not refs:
            raise RuntimeError("ApexDriver has nothing in flight; this is a bug in the rate limiter setup.")
        ready, _ = ray.wait(refs, num_returns=1, timeout=timeout_s)
        if not ready:
            self.check_startup()
        return ready

    def process(self, ready: list) -> None:
        for ref in ready:
            if self.pool.owns(ref):
                outcome = self.pool.finish(ref)
                if outcome.info is not None:
                    self.limiter.commit_insert(outcome.info["n"], outcome.reserved)
                    self.on_collected(outcome)
                elif outcome.lost:
                    self.limiter.cancel_insert(outcome.reserved)
            elif ref in self.eval_refs():
                self.on_evaluated()
            elif ref in self.learner_refs():
                self.on_first_publish()
            elif self._calls and ref == self._calls[0].info:
                self.on_trained(self._calls.popleft())
        self.report()

    def on_trained(self, call: TrainCall) -> None:
        info = self.get(call.info)
        self._train_s += info["seconds"]
        if self._first_train is None:
            self._first_train = time.monotonic() - info["seconds"]
        if info["iters"] == 0:  # the buffer could not serve the sample yet
            self.limiter.cancel_sample(call.size)
        elif call.priority is not None:
            self.actors.buffer.update.remote(call.priority)
        self.train_iter = info[metrics.LEARNER_TRAIN_ITER]
        if "weights" in info:
            self.weights = info.pop("weights")
        self.monitor.update(info)

    def report(self, force: bool = False) -> None:
        self.monitor.scalars[metrics.BUFFER_SAMPLES_PER_INSERT] = self.limiter.samples_per_insert_now()
        super().report(force)

    def _learner_busy(self) -> float | None:
        """Share of the time since its first train call that the learner spent training."""
        if self._first_train is None:
            return None
        return round(self._train_s / max(time.monotonic() - self._first_train, 1e-9), 3)

    def summary(self) -> dict[str, Any]:
        out = super().summary()
        out.update(
            pipeline="ray-async",
            samples_per_insert_target=self.limiter.samples_per_insert,
            samples_per_insert=round(self.limiter.samples_per_insert_now(), 3),
            samples_per_insert_tolerance=self.limiter.tolerance,
            inserted=self.limiter.inserted,
            sampled=self.limiter.sampled,
            learner_busy=self._learner_busy(),
            learner_waits=self.learner_waits,
        )
        return out
