"""The pipeline shapes, as stage lists: every entry builds its ``Task`` from one of these.

``serial_pipeline`` and ``serial_pipeline_onpolicy`` hand them a run of local components (one
process), ``ray_pipeline`` a run of actors; the stages call the components only through the
protocols of ``ding_ray.framework.interfaces``, so the list is the same::

    off_policy: random_collector > interaction_evaluator > eps_greedy_handler > collector
                > data_pusher > OffPolicyLearner > weights_publisher > monitor > checkpoint > wait
                > termination_checker
    on_policy:  weights_publisher > interaction_evaluator > collector > gae_estimator > trainer
                > monitor > checkpoint > termination_checker

The budget is checked last, after training, as DI-engine's serial entries check it at the end of
their loop: the iteration that spends the budget ends the run, and the weights it trained are not
evaluated (the last evaluation is the last one due before it).

A new pipeline shape is a new function here; a new place to run one is a new ``Run``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from easydict import EasyDict

from ding_ray.framework.interfaces import Buffer, Collector, Evaluator, Learner
from ding_ray.framework.middleware.collect import collector, random_collector
from ding_ray.framework.middleware.control import eps_greedy_handler, termination_checker
from ding_ray.framework.middleware.data import data_pusher
from ding_ray.framework.middleware.evaluate import interaction_evaluator
from ding_ray.framework.middleware.train import OffPolicyLearner, gae_estimator, trainer, weights_publisher
from ding_ray.framework.task_runner import Task


class Run(Protocol):
    """One run's components and the stages around them that depend on where it runs."""

    collector: Collector
    buffer: Buffer | None  # None on-policy
    learner: Learner
    evaluator: Evaluator
    weights_sinks: list[Any]  # workers acting with copies of the policy (actors); [] in one process
    train_rounds: int  # fetch + train rounds per iteration

    def monitor(self) -> Callable:
        """Progress: logs, TensorBoard, metrics, reports (a Tune trial's)."""

    def checkpoint(self) -> Callable:
        """Run checkpoints when due (``checkpoint.freq`` iterations, ``checkpoint.every_s``)."""

    def wait(self) -> Callable:
        """Block until some component has news (actors); nothing in one process."""


def off_policy(
    task: Task, cfg: EasyDict, run: Run, max_env_step: int | None = None, max_train_iter: int | None = None
) -> Task:
    """Collect, push to the replay buffer, sample and train, evaluate when due (DQN, SAC; Ape-X on
    Ray: every call runs on an actor while the driver goes on, each iteration takes what finished)."""
    task.use(random_collector(cfg, run.collector, run.buffer))  # once, before the first evaluation
    task.use(interaction_evaluator(cfg, run.evaluator))
    if cfg.policy.get("other", {}).get("eps"):
        task.use(eps_greedy_handler(cfg))
    task.use(collector(cfg, run.collector))
    task.use(data_pusher(cfg, run.buffer))
    task.use(OffPolicyLearner(cfg, run.learner, run.buffer, log_freq=1000, rounds=run.train_rounds))
    if run.weights_sinks:
        task.use(weights_publisher(run.learner, *run.weights_sinks))
    task.use(run.monitor())
    task.use(run.checkpoint())
    task.use(run.wait())
    task.use(termination_checker(max_env_step, max_train_iter, at_budget=True))
    return task


def on_policy(
    task: Task, cfg: EasyDict, run: Run, max_env_step: int | None = None, max_train_iter: int | None = None
) -> Task:
    """Rounds: the latest weights act, ``n_sample`` transitions are collected with them (advantages
    computed where the data is), the learner trains on exactly that data (PPO)."""
    # the weights of the last round go out first: the collectors act with them and the evaluator
    # evaluates them, as the serial pipeline evaluates before it collects
    if run.weights_sinks:
        task.use(weights_publisher(run.learner, *run.weights_sinks))
    task.use(interaction_evaluator(cfg, run.evaluator))
    task.use(collector(cfg, run.collector))
    task.use(gae_estimator(cfg, None))  # the collectors computed the advantages
    task.use(trainer(cfg, run.learner, log_freq=1000))
    task.use(run.monitor())
    task.use(run.checkpoint())
    task.use(termination_checker(max_env_step, max_train_iter, at_budget=True))
    return task
