"""``MetricSerialEvaluator``: judge a policy by a metric over a dataset instead of by env episodes.

For supervised or offline work (a classifier, a behaviour-cloning policy) where "how good is it" is an
objective number computed on labelled data. The evaluator's "env" is a pair ``(data loader, metric)``.
"""

from __future__ import annotations

import logging
import numbers
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch

from ding_ray.config.merge import checked_config
from ding_ray.errors import ConfigError, ShapeError
from ding_ray.policy.common import to_tensor_batch
from ding_ray.utils.registry import SERIAL_EVALUATOR_REGISTRY
from ding_ray.worker import metrics
from ding_ray.worker.env_runner import EnvRunner
from ding_ray.worker.evaluator.interaction_evaluator import InteractionSerialEvaluator, ISerialEvaluator

logger = logging.getLogger(__name__)

EVAL_METRIC = "evaluator/metric"  # key of a metric that reduces to one number
EVAL_TIME = "evaluator/evaluate_time_s"


def metric_key(name: str) -> str:
    """Key of one entry of a metric that reduces to a dict (``accuracy`` -> ``evaluator/accuracy``)."""
    return f"evaluator/{name}"


class IMetric(ABC):
    """How a :class:`MetricSerialEvaluator` scores policy outputs against labels.

    The evaluator calls ``eval(policy_output, label)`` once per batch, then ``reduce_mean`` on the
    list of per-batch results to get the metric of the whole dataset, and ``gt`` to compare metrics.
    A per-batch result may be anything ``reduce_mean`` understands (counts keep the reduction exact
    when batches differ in size); the reduced metric is usually a number or a dict of numbers.
    """

    @abstractmethod
    def eval(self, inputs: Any, label: Any) -> Any:
        """Score one batch: ``inputs`` is the policy's output for it, ``label`` its labels."""

    @abstractmethod
    def reduce_mean(self, inputs: list[Any]) -> Any:
        """The metric of the whole dataset from the per-batch results of ``eval``."""

    @abstractmethod
    def gt(self, metric1: Any, metric2: Any) -> bool:
        """True if ``metric1`` is at least as good as ``metric2`` (>=); True when ``metric2`` is None."""


@SERIAL_EVALUATOR_REGISTRY.register("metric")
class MetricSerialEvaluator(EnvRunner, ISerialEvaluator):
    """Runs the eval-mode policy over every batch of a dataset and reduces an :class:`IMetric` over them.

    The "env" is ``(dataloader, metric)``: ``dataloader`` is any re-iterable of ``(inputs, label)``
    batches (a ``torch.utils.data.DataLoader``, or a plain list of pairs of arrays or tensors); numpy
    inputs become tensors before they reach ``policy.forward(inputs)``.

    ``eval`` returns ``(stop_flag, metric)``. It saves ``ckpt_best.pth.tar`` through ``save_ckpt_fn``
    whenever ``metric.gt(metric, best so far)``; ``stop_flag`` is True once
    ``metric.gt(metric, stop_value)`` after training began (``train_iter > 0``). Unlike DI-engine, where
    ``gt(x, None)`` is True and so a missing stop value stops the first evaluation after iteration 0,
    ``stop_value=None`` here means "never stop", as in :class:`InteractionSerialEvaluator`.
    """

    config = dict(
        type="metric",
        eval_freq=50,  # learner iterations between evaluations
        stop_value=None,  # metric that ends training, compared by metric.gt (a number or a dict); None: never
    )

    def __init__(
        self,
        cfg: dict,
        env: tuple[Iterable, IMetric] | None = None,
        policy: Any = None,
        tb_logger: Any = None,
        exp_name: str = "default_experiment",
        instance_name: str = "evaluator",
    ) -> None:
        cfg = checked_config(type(self), cfg, "policy.eval.evaluator")
        self._cfg = cfg
        self._stop_value = cfg.stop_value
        self._exp_name, self._instance_name = exp_name, instance_name
        self._tb_logger = tb_logger
        self._dataloader: Iterable | None = None
        self._metric: IMetric | None = None
        self._policy = None
        self._end_flag = False
        self.reset(policy, env)

    # the schedule is the interaction evaluator's: iteration 0, then every eval_freq iterations
    should_eval = InteractionSerialEvaluator.should_eval

    def reset_env(self, _env: tuple[Iterable, IMetric] | None = None) -> None:
        """Take a new ``(dataloader, metric)`` pair when given one (there is nothing to launch)."""
        if _env is not None:
            self._dataloader, self._metric = _check_env(_env)

    def reset(self, _policy: Any = None, _env: tuple[Iterable, IMetric] | None = None) -> None:
        self.reset_env(_env)
        self.reset_policy(_policy)
        self._max_metric: Any = None
        self._last_eval_iter = -1

    @property
    def env(self) -> tuple[Iterable, IMetric] | None:
        return None if self._dataloader is None else (self._dataloader, self._metric)

    @property
    def policy(self) -> Any:
        return self._policy

    @property
    def best_metric(self) -> Any:
        """The best metric so far (by ``metric.gt``), None before the first evaluation."""
        return self._max_metric

    def eval(
        self,
        save_ckpt_fn: Callable[[str], Any] | None = None,
        train_iter: int = -1,
        envstep: int = -1,
    ) -> tuple[bool, Any]:
        """Score the policy on the whole dataset; return ``(stop_flag, metric)``."""
        if self._dataloader is None or self._policy is None:
            missing = "(dataloader, metric) pair" if self._dataloader is None else "policy"
            raise ConfigError(
                f"MetricSerialEvaluator has no {missing}: pass env=(dataloader, metric) and "
                "policy=policy.eval_mode to the constructor, or to reset(_policy, _env)."
            )
        start = time.perf_counter()
        self._policy.reset()
        results = []
        with torch.no_grad():
            for index, batch in enumerate(self._dataloader):
                inputs, label = _split_batch(batch, index)
                results.append(self._metric.eval(self._policy.forward(inputs), label))
        if not results:
            raise ConfigError(
                f"The evaluator's data loader ({type(self._dataloader).__name__}) yielded no batches. "
                "Give it a non-empty dataset; a one-shot iterator (a generator) is empty after its first "
                "pass, so pass a list or a DataLoader, which can be iterated again at every evaluation."
            )
        value = self._metric.reduce_mean(results)
        duration = time.perf_counter() - start
        scalars = _scalars(value)
        scalars[EVAL_TIME] = duration
        # like the interaction evaluator, the x axis is env steps; a supervised run has none, so iterations
        step = envstep if envstep >= 0 else max(train_iter, 0)
        metrics.log_scalars(self._tb_logger, scalars, step)
        if self._max_metric is None or self._metric.gt(value, self._max_metric):
            if save_ckpt_fn is not None:
                save_ckpt_fn("ckpt_best.pth.tar")
            self._max_metric = value
        stop_flag = bool(
            self._stop_value is not None and train_iter > 0 and self._metric.gt(value, self._stop_value)
        )
        logger.info(
            "[%s] iter %d envstep %d metric %s over %d batches in %.3f s%s",
            self._instance_name,
            train_iter,
            envstep,
            value,
            len(results),
            duration,
            f" -> stop value {self._stop_value} reached" if stop_flag else "",
        )
        return stop_flag, value


def _check_env(env: Any) -> tuple[Iterable, IMetric]:
    if not isinstance(env, (tuple, list)) or len(env) != 2:
        raise ConfigError(
            "MetricSerialEvaluator's env must be a pair (dataloader, metric), e.g. "
            f"(torch.utils.data.DataLoader(dataset), MyMetric()); got {type(env).__name__}."
        )
    dataloader, metric = env
    if not isinstance(dataloader, Iterable):
        raise ConfigError(
            f"The first item of MetricSerialEvaluator's env must be an iterable of (inputs, label) batches "
            f"(a DataLoader or a list), got {type(dataloader).__name__}."
        )
    missing = [name for name in ("eval", "reduce_mean", "gt") if not callable(getattr(metric, name, None))]
    if missing:
        raise ConfigError(
            f"The second item of MetricSerialEvaluator's env must be a metric with eval, reduce_mean and gt; "
            f"{type(metric).__name__} lacks {', '.join(missing)}. Subclass ding_ray.worker.IMetric."
        )
    return dataloader, metric


def _split_batch(batch: Any, index: int) -> tuple[Any, Any]:
    """``(inputs, label)`` of one batch, numpy arrays turned into tensors (torch ones kept as they are)."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        length = f" of length {len(batch)}" if isinstance(batch, (tuple, list)) else ""
        got = f"a {type(batch).__name__}{length}"
        raise ShapeError(
            f"Batch {index} of the evaluator's data loader is {got}; each batch must be a pair "
            "(inputs, label), as a DataLoader over TensorDataset(x, y) yields."
        )
    converted = to_tensor_batch({"inputs": batch[0], "label": batch[1]})
    return converted["inputs"], converted["label"]


def _scalars(value: Any) -> dict[str, float]:
    """The numbers of a reduced metric, keyed for TensorBoard; entries that are not numbers are left out."""
    items = value.items() if isinstance(value, Mapping) else [(None, value)]
    scalars = {}
    for name, entry in items:
        if isinstance(entry, torch.Tensor) and entry.numel() == 1:
            entry = entry.item()
        if isinstance(entry, numbers.Real) and not isinstance(entry, bool):
            scalars[EVAL_METRIC if name is None else metric_key(str(name))] = float(entry)
    return scalars
