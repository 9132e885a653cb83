"""``Driver``: what the async and the sync pipeline share.

Counters (env steps, learner iterations), the latest published weights, evaluation every
``eval_freq`` learner iterations, reporting, and turning actor deaths into decisions: a lost
collector call is counted and the run goes on, a dead learner or buffer ends it with an error
that names the actor.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import ray
from easydict import EasyDict
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from ding_ray.distributed.actors import Actors
from ding_ray.distributed.cluster import ClusterError
from ding_ray.distributed.collector_pool import CollectorPool, Outcome
from ding_ray.distributed.config import Plan
from ding_ray.distributed.monitor import RunMonitor
from ding_ray.distributed.weights import WeightsRef
from ding_ray.errors import ActorDiedError
from ding_ray.rl_utils import get_epsilon_greedy_fn
from ding_ray.utils.runtime import set_torch_threads
from ding_ray.worker import metrics

logger = logging.getLogger(__name__)

MAX_EVAL_FAILURES = 3


_IMPORTED = time.time()


def process_age_s() -> float:
    """Seconds since this Python process was launched (start-up included). Read from /proc on
    Linux; elsewhere, or where /proc counts time the machine spent paused (a suspended VM), the
    time since this module was imported."""
    since_import = time.time() - _IMPORTED
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return since_import
    age = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    # Imports before this module take seconds, not minutes: more means a pause was counted.
    return age if age - since_import < 60 else since_import


class Driver:
    def __init__(
        self,
        cfg: EasyDict,
        actors: Actors,
        plan: Plan,
        max_env_step: int | None = None,
        max_train_iter: int | None = None,
    ) -> None:
        set_torch_threads(cfg.ray.torch_threads)  # the driver too: it shares the cores
        self.cfg, self.actors, self.plan = cfg, actors, plan
        self.max_env_step, self.max_train_iter = max_env_step, max_train_iter
        self.pool = CollectorPool(actors.collectors)
        self.monitor = RunMonitor(cfg.exp_name, cfg.ray.progress_bar, cfg.ray.report_interval_s, max_env_step)
        self.env_steps = 0
        self.train_iter = 0
        self.stop = False
        self.best_eval: float | None = None
        self.last_eval: float | None = None
        self.stop_weights: WeightsRef | None = None  # the version that reached the stop value
        self.first_batch_s: float | None = None
        self._actor_batches = 0  # collect calls of collector actors finished so far
        self._eval_freq = int(cfg.policy.eval.evaluator.eval_freq)
        self._eval_ref: Any = None
        self._eval_weights: WeightsRef | None = None
        self._last_eval_iter = 0
        self._eval_failures = 0
        self._eval_restarting = False
        self._lags: list[int] = []
        eps = cfg.policy.other.get("eps")
        self._epsilon = get_epsilon_greedy_fn(eps.start, eps.end, eps.decay, eps.type) if eps else None
        # Collectors may start before the learner is up: they use their own initial weights
        # (version -1) until its first publication arrives.
        self.weights: WeightsRef | None = None
        self._first_publish: Any = actors.learner.publish.remote()
        self._created = time.monotonic()
        self._stats_ref: Any = None
        self._stats_at = 0.0

    def policy_kwargs(self) -> dict:
        """Keyword arguments of the collect-mode forward: epsilon by total env steps (DQN)."""
        return {"eps": self._epsilon(self.env_steps)} if self._epsilon else {}

    # ----- the learner's first weights -----------------------------------------------------------
    def learner_refs(self) -> list:
        return [] if self.weights is not None else [self._first_publish]

    def on_first_publish(self) -> None:
        weights = self.get(self._first_publish)
        if self.weights is None:
            logger.info("learner ready %.1f s after launch", process_age_s())
            self.actors.start_evaluator()
            self.start_collectors()
        if self.weights is None or weights.version > self.weights.version:
            self.weights = weights

    def await_learner(self) -> None:
        """Block until the learner has published, failing after ``ray.actor_start_timeout_s``."""
        if self.weights is None:
            ready, _ = ray.wait([self._first_publish], timeout=self.cfg.ray.actor_start_timeout_s)
            self.check_startup(expired=not ready)
            self.on_first_publish()

    def check_startup(self, expired: bool | None = None) -> None:
        if expired is None:
            expired = time.monotonic() - self._created > self.cfg.ray.actor_start_timeout_s
        if self.weights is None and expired:
            raise ClusterError(
                f"The learner actor did not start within {self.cfg.ray.actor_start_timeout_s:g} s "
                f"(ray.learner_num_cpus={self.cfg.ray.learner_num_cpus:g}, "
                f"ray.learner_num_gpus={self.cfg.ray.learner_num_gpus:g}). Resources free now: "
                f"{ray.available_resources()}."
            )
        if not self._actor_batches and expired:
            raise ClusterError(
                f"No collector actor started within {self.cfg.ray.actor_start_timeout_s:g} s "
                f"(ray.collector_num_cpus={self.cfg.ray.collector_num_cpus:g}, collector_resources="
                f"{dict(self.cfg.ray.collector_resources)}). Resources free now: {ray.available_resources()}."
            )

    def start_collectors(self) -> None:
        """Create the collectors ``create_actors`` left for later and take them into the pool."""
        for handle in self.actors.start_collectors():
            self.pool.add(handle)

    # ----- budget --------------------------------------------------------------------------------
    @property
    def budget_spent(self) -> bool:
        return (self.max_env_step is not None and self.env_steps >= self.max_env_step) or (
            self.max_train_iter is not None and self.train_iter >= self.max_train_iter
        )

    @property
    def done(self) -> bool:
        return self.stop or self.budget_spent

    # ----- evaluation ----------------------------------------------------------------------------
    def launch_eval(self) -> None:
        """Evaluate the latest weights once ``eval_freq`` learner iterations have passed."""
        due = self.train_iter - self._last_eval_iter >= self._eval_freq
        if self._eval_ref is None and due and self.weights is not None and self.weights.version > 0:
            self._eval_weights = self.weights
            evaluate = self.actors.start_evaluator().evaluate
            self._eval_ref = evaluate.remote(self.weights, self.train_iter, self.env_steps)
            self._last_eval_iter = self.train_iter

    def eval_refs(self) -> list:
        return [] if self._eval_ref is None else [self._eval_ref]

    def on_evaluated(self) -> None:
        ref, self._eval_ref = self._eval_ref, None
        try:
            info = ray.get(ref)
        except RayActorError as err:
            self._eval_failures += 1
            if self._eval_failures >= MAX_EVAL_FAILURES:
                raise ActorDiedError(f"The evaluator actor 'evaluator' keeps dying: {err}") from err
            logger.warning("the evaluator died (%s); evaluating again once Ray has restarted it", err)
            # A call to a restarting actor fails at once; a ping that Ray retries returns once it
            # is back (or fails if it never comes back). No evaluation is launched meanwhile.
            self._eval_ref = self.actors.evaluator.ping.options(max_task_retries=-1).remote()
            self._eval_restarting = True
            self._last_eval_iter = self.train_iter - self._eval_freq  # the next one is due at once
            return
        if self._eval_restarting:  # the ping answered: the evaluator is back
            self._eval_restarting = False
            logger.warning("the evaluator is back")
            return
        self._eval_failures = 0
        self.last_eval = info[metrics.EVAL_RETURN_MEAN]
        self.best_eval = info["best_return"]
        if info["stop"]:
            self.stop, self.stop_weights = True, self._eval_weights
        self.monitor.update(info)

    # ----- collection ----------------------------------------------------------------------------
    def on_collected(self, outcome: Outcome) -> None:
        """Count a finished collect call's env steps and staleness."""
        info = outcome.info
        self._actor_batches += 1
        self.count_batch(info)
        self._lags.append(self.train_iter - max(info["policy_version"], 0))
        self.monitor.update(info)

    def count_batch(self, info: dict) -> None:
        """Env steps of a batch now in the buffer (from a collector actor or the driver's warm-up)."""
        if self.first_batch_s is None:
            self.first_batch_s = process_age_s()
            logger.info("first batch collected %.1f s after launch", self.first_batch_s)
        self.env_steps += info["new_env_steps"]

    def report(self, force: bool = False) -> None:
        if self._lags:
            self.monitor.scalars[metrics.COLLECTOR_POLICY_VERSION_LAG] = sum(self._lags) / len(self._lags)
            self._lags = []
        self.monitor.scalars[metrics.COLLECTOR_LOST_BATCHES] = self.pool.lost_batches
        self.monitor.scalars[metrics.COLLECTOR_RESTARTS] = self.pool.restarts
        self._poll_buffer_stats()
        self.monitor.report(self.env_steps, self.train_iter, self.last_eval, force)

    def _poll_buffer_stats(self) -> None:
        """Buffer size, pushes and samples for TensorBoard: one stats call in flight, never waited on."""
        if self._stats_ref is not None and ray.wait([self._stats_ref], timeout=0)[0]:
            try:
                self.monitor.update(ray.get(self._stats_ref))
            except (RayActorError, RayTaskError):
                pass  # a dead buffer is reported by the calls that need it
            self._stats_ref = None
        if self._stats_ref is None and time.monotonic() - self._stats_at >= self.cfg.ray.report_interval_s:
            self._stats_ref, self._stats_at = self.actors.buffer.stats.remote(), time.monotonic()

    # ----- failures ------------------------------------------------------------------------------
    def get(self, ref: Any) -> Any:
        """``ray.get`` a learner or buffer call; their death ends the run with a clear error."""
        try:
            return ray.get(ref)
        except (RayActorError, RayTaskError) as err:
            raise self.diagnose(err) from err

    def diagnose(self, err: Exception) -> Exception:
        """The error to raise for ``err``: ``ActorDiedError`` naming a dead learner or buffer."""
        for name, handle in (("learner", self.actors.learner), ("buffer", self.actors.buffer)):
            try:
                ray.get(handle.ping.remote(), timeout=30)
            except (RayActorError, GetTimeoutError) as dead:
                return ActorDiedError(
                    f"The {name} actor '{name}' (namespace '{self.actors.namespace}') died: {dead}. "
                    "The learner and the buffer are not restarted (recovering them from checkpoints is not "
                    "supported yet), so the run stops here; see the actor's log in the Ray dashboard."
                )
        return err

    def summary(self) -> dict[str, Any]:
        return {
            "num_collectors": len(self.pool.slots),
            "lost_batches": self.pool.lost_batches,
            "collector_restarts": self.pool.restarts,
            "first_batch_s": None if self.first_batch_s is None else round(self.first_batch_s, 2),
            "since_launch_s": round(process_age_s(), 2),  # the process's age when the run ended
            "policy_version": -1 if self.weights is None else self.weights.version,
        }

    def close(self) -> None:
        self.report(force=True)
        self.monitor.close()
