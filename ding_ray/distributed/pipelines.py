"""The two Ray pipelines as ``Task`` pipelines: the same middleware stages as the serial ones, given
the actors (``RayComponents``) in place of local objects.

``ray_pipeline`` builds one of these; ``examples/apex_dqn.py`` writes the async one out line by
line (a test checks that the two stay the same).
"""

from __future__ import annotations

from easydict import EasyDict

from ding_ray.distributed.components import RayComponents
from ding_ray.framework import Task
from ding_ray.framework.middleware import (
    collector,
    data_pusher,
    eps_greedy_handler,
    gae_estimator,
    interaction_evaluator,
    offpolicy_data_fetcher,
    termination_checker,
    trainer,
    weights_publisher,
)


def async_pipeline(
    task: Task,
    cfg: EasyDict,
    rc: RayComponents,
    max_env_step: int | None = None,
    max_train_iter: int | None = None,
) -> Task:
    """Ape-X: collectors roll out and their batches go to the buffer actor, the learner trains on
    prefetched samples and publishes its weights, the evaluator evaluates the latest ones; every
    call runs on an actor while the driver goes on, and each iteration handles what finished.
    A rate limiter keeps the samples per inserted transition at ``ray.samples_per_insert``."""
    task.use(interaction_evaluator(cfg, rc.evaluator))
    if cfg.policy.get("other", {}).get("eps"):
        task.use(eps_greedy_handler(cfg))
    task.use(collector(cfg, rc.collectors))
    task.use(data_pusher(cfg, rc.buffer))
    task.use(offpolicy_data_fetcher(cfg, rc.buffer))
    task.use(trainer(cfg, rc.learner, log_freq=1000))
    task.use(weights_publisher(rc.learner, rc.collectors, rc.evaluator))
    task.use(rc.monitor())
    task.use(rc.checkpoint())
    task.use(termination_checker(max_env_step, max_train_iter))
    task.use(rc.wait_any())
    return task


def sync_pipeline(
    task: Task,
    cfg: EasyDict,
    rc: RayComponents,
    max_env_step: int | None = None,
    max_train_iter: int | None = None,
) -> Task:
    """On-policy rounds: the weights go out, all collectors gather ``n_sample`` transitions between
    them with those weights (advantages computed where the data is), the learner trains on
    exactly that data; the evaluator runs beside."""
    # first the weights of the last round go out: the collectors act with them (on-policy) and the
    # evaluator, when due, evaluates them, as the serial pipeline evaluates before it collects
    task.use(weights_publisher(rc.learner, rc.collectors, rc.evaluator))
    task.use(interaction_evaluator(cfg, rc.evaluator))
    task.use(collector(cfg, rc.collectors))
    task.use(gae_estimator(cfg, None))  # the collector actors computed the advantages
    task.use(trainer(cfg, rc.learner, log_freq=1000))
    task.use(rc.monitor())
    task.use(rc.checkpoint())
    task.use(termination_checker(max_env_step, max_train_iter))
    return task
