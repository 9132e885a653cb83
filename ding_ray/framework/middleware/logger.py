"""TensorBoard loggers: ``online_logger`` and ``offline_logger``, DI-engine's stages of the same names.

They write what the other stages left in the context (the evaluation's returns, the learner's
outputs, the extra scalars of ``ctx.info_for_logging``) as TensorBoard scalars under ding_ray's
metric keys (``evaluator/...``, ``learner/...``, from ``ding_ray.worker.metrics``), so the task's
curves sit next to the ones the collector, learner and evaluator write themselves.

DI-engine takes its writer from a global (``DistributedWriter``, set up by ``ding_init``); here a
stage takes a ``tb_logger`` (a ``tensorboardX.SummaryWriter``) or an ``exp_name`` to open one in
``<exp_name>/log/task``; with neither, the process's experiment folder
(``ding_ray.framework.experiment``: the one ``ding_init(cfg)`` named, or ``./default_experiment``).
The helpers at the bottom turn train outputs and evaluation outputs into plain floats; the wandb
loggers (``wandb_logger.py``) share them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ding_ray.errors import ConfigError, DingRayError, ShapeError
from ding_ray.framework.context import OfflineRLContext, OnlineRLContext
from ding_ray.framework.experiment import default_exp_name
from ding_ray.framework.task_runner import current_task
from ding_ray.worker import metrics

# Per-sample priorities the learner hands to a prioritized buffer: arrays, not curves
# ("priority_info": what ding_ray's trainer stage passes on from a BaseLearner).
SKIPPED_TRAIN_KEYS = ("priority", "td_error_priority", "priority_info")
HISTOGRAM_TAG = "[histogram]"
SCALARS_TAG = "[scalars]"
TRAIN_ITER_SUFFIX = "-train_iter"  # DI-engine's suffix of a curve drawn against train iterations


class UnsupportedLogKeyError(DingRayError, NotImplementedError):
    """A train output key asks for a kind of record the loggers do not write (DI-engine's "[scalars]")."""


def online_logger(
    record_train_iter: bool = False,
    train_show_freq: int = 100,
    *,
    exp_name: str | None = None,
    tb_logger: Any = None,
) -> Callable[[OnlineRLContext], None]:
    """TensorBoard curves of an online run, against env steps.

    ``record_train_iter`` also draws each curve against train iterations (key + ``-train_iter``).
    The learner's outputs are written when at least ``train_show_freq`` iterations have passed
    since the last time (a list of outputs, one per learner step, is averaged key by key). Values
    under a ``[histogram]name`` key go to a histogram; per-sample priorities are left out. A writer
    the stage opened is closed when the task closes; a given ``tb_logger`` is only flushed then.

    Reads ctx: ``eval_value``, ``eval_output``, ``train_output``, ``info_for_logging``, ``env_step``,
    ``train_iter``.
    Writes ctx: nothing (TensorBoard events under ``<exp_name>/log/task`` or to ``tb_logger``).
    """

    def steps(ctx: OnlineRLContext) -> dict[str, int]:
        return (
            {"": ctx.env_step, TRAIN_ITER_SUFFIX: ctx.train_iter} if record_train_iter else {"": ctx.env_step}
        )

    return _tensorboard_stage("online_logger", steps, train_show_freq, exp_name, tb_logger)


def offline_logger(
    train_show_freq: int = 100,
    *,
    exp_name: str | None = None,
    tb_logger: Any = None,
) -> Callable[[OfflineRLContext], None]:
    """TensorBoard curves of an offline run, against train iterations (there are no env steps).

    Same records as ``online_logger``: the evaluation's returns, the learner's outputs every
    ``train_show_freq`` iterations, and ``ctx.info_for_logging``.

    Reads ctx: ``eval_value``, ``eval_output``, ``train_output``, ``info_for_logging``, ``train_iter``.
    Writes ctx: nothing (TensorBoard events under ``<exp_name>/log/task`` or to ``tb_logger``).
    """
    return _tensorboard_stage(
        "offline_logger", lambda ctx: {"": ctx.train_iter}, train_show_freq, exp_name, tb_logger
    )


def _tensorboard_stage(
    factory: str,
    steps_of: Callable[[Any], dict[str, int]],
    train_show_freq: int,
    exp_name: Any,
    tb_logger: Any,
) -> Callable[[Any], None]:
    """The stage both loggers are: they differ only in the x axes (``steps_of(ctx)``, suffix -> step)."""
    _check_show_freq(train_show_freq)
    writer = _LazyWriter(exp_name, tb_logger)
    last_train_show_iter = -1

    def _logger(ctx: Any) -> None:
        nonlocal last_train_show_iter
        tb = writer.get()
        steps = steps_of(ctx)
        if not np.isinf(ctx.eval_value):
            _write_scalars(tb, eval_scalars(ctx.eval_value, ctx.eval_output), steps)
        if _has_output(ctx.train_output) and ctx.train_iter - last_train_show_iter >= train_show_freq:
            last_train_show_iter = ctx.train_iter
            _write_train_output(tb, ctx.train_output, steps)
        if ctx.info_for_logging:
            _write_scalars(tb, scalars_of(ctx.info_for_logging, "info_for_logging"), steps)

    _logger.__qualname__ = f"{factory}.<locals>._logger"  # a failure names the user's factory
    return _logger


class _LazyWriter:
    """Opens the writer the first time a stage runs, and has the running task close it."""

    def __init__(self, exp_name: str | None, tb_logger: Any) -> None:
        if exp_name is not None and tb_logger is not None:
            raise ConfigError("Give the logger either exp_name (it opens a writer) or tb_logger, not both.")
        self._exp_name = exp_name
        self._given = tb_logger
        self._writer = None

    def get(self) -> Any:
        if self._writer is None:
            if self._given is not None:
                # the caller's writer may be shared with the learner or the evaluator: flush, don't close
                self._writer = self._given
                current_task().on_close(self._given.flush)
            else:
                from tensorboardX import SummaryWriter

                exp_name = self._exp_name or default_exp_name()
                self._writer = SummaryWriter(os.path.join(exp_name, "log", "task"))
                current_task().on_close(self._writer.close)
        return self._writer


def _check_show_freq(train_show_freq: int) -> None:
    if not isinstance(train_show_freq, (int, np.integer)) or train_show_freq < 0:
        raise ConfigError(
            f"train_show_freq is the number of train iterations between two records of the learner's "
            f"output: a whole number >= 0, got {train_show_freq!r}."
        )


def _has_output(train_output: Any) -> bool:
    return train_output is not None and not (isinstance(train_output, list) and len(train_output) == 0)


def _write_scalars(tb: Any, scalars: Mapping[str, float], steps: Mapping[str, int]) -> None:
    for suffix, step in steps.items():
        for key, value in scalars.items():
            tb.add_scalar(key + suffix, value, step)


def _write_train_output(tb: Any, train_output: Any, steps: Mapping[str, int]) -> None:
    output = merge_train_output(train_output)
    scalars = {}
    for key, value in output.items():
        if key in SKIPPED_TRAIN_KEYS:
            continue
        if key.startswith(SCALARS_TAG):
            raise UnsupportedLogKeyError(
                f"train_output key {key!r}: '{SCALARS_TAG}' records are not supported (DI-engine refuses "
                f"them too). Return each value under its own key, e.g. '{key[len(SCALARS_TAG) :]}_<name>'."
            )
        if key.startswith(HISTOGRAM_TAG):
            name = metrics.learner_key(key[len(HISTOGRAM_TAG) :])
            for suffix, step in steps.items():
                tb.add_histogram(name + suffix, to_numpy(value), step)
            continue
        scalars[metrics.learner_key(key)] = scalar_of(value, f"train_output[{key!r}]", key)
    _write_scalars(tb, scalars, steps)


# ----- shared with the wandb loggers ------------------------------------------------------------
def to_numpy(value: Any) -> np.ndarray:
    """A numpy array of a number, a list, a numpy array or a torch tensor (any device)."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def scalar_of(value: Any, what: str, key: str = "<name>") -> float:
    """``value`` as a float, or a clear error naming ``what`` when it holds more than one number."""
    try:
        array = to_numpy(value).astype(np.float64)
    except (TypeError, ValueError) as e:
        raise ShapeError(
            f"{what} must be a number to be logged, got {type(value).__name__}: {value!r}"
        ) from e
    if array.size != 1:
        raise ShapeError(
            f"{what} has shape {array.shape}; a logger writes one number per key. Return its mean, or "
            f"name the key '{HISTOGRAM_TAG}{key}' to log it as a histogram."
        )
    return float(array.reshape(()))


def scalars_of(values: Mapping[str, Any], what: str) -> dict[str, float]:
    return {key: scalar_of(value, f"{what}[{key!r}]") for key, value in values.items()}


def merge_train_output(train_output: Any) -> dict[str, Any]:
    """One dict of the learner's output: a dict as it is, a list of dicts (one per learner step)
    averaged key by key (the scalars; an array key keeps its latest value)."""
    if isinstance(train_output, Mapping):
        return dict(train_output)
    if not isinstance(train_output, (list, tuple)) or not all(isinstance(o, Mapping) for o in train_output):
        raise ShapeError(
            f"ctx.train_output must be a dict or a list of dicts (one per learner step), got "
            f"{type(train_output).__name__}."
        )
    merged: dict[str, Any] = {}
    for key in dict.fromkeys(k for output in train_output for k in output):
        values = [output[key] for output in train_output if key in output]
        numbers = None
        if key not in SKIPPED_TRAIN_KEYS and not key.startswith(HISTOGRAM_TAG):
            numbers = _numbers(values)
        # what is not one number per step keeps its latest value (the writer says what it accepts)
        merged[key] = values[-1] if numbers is None else float(np.mean(numbers))
    return merged


def _numbers(values: list[Any]) -> list[float] | None:
    """``values`` as floats when each is a single number, else None."""
    numbers = []
    for value in values:
        try:
            array = to_numpy(value).astype(np.float64)
        except (TypeError, ValueError):
            return None
        if array.size != 1:
            return None
        numbers.append(float(array.reshape(())))
    return numbers


def _eval_infos(eval_output: Any) -> list[Mapping]:
    """Where an evaluation's numbers are: ``eval_output`` itself (DI-engine's keys, or the evaluator's
    info) and the evaluator's info that ding_ray's evaluate stage keeps under ``episode_info``."""
    if not isinstance(eval_output, Mapping):
        return []
    nested = eval_output.get("episode_info")
    return [eval_output] + ([nested] if isinstance(nested, Mapping) else [])


def episode_returns(eval_output: Any) -> np.ndarray | None:
    """The returns of the evaluated episodes (the evaluator's ``eval_episode_return``, or DI-engine's
    ``episode_return``, which may be their mean only); None if there are none."""
    infos = _eval_infos(eval_output)
    for key in ("eval_episode_return", "episode_return"):
        for info in infos:
            if info.get(key) is not None:
                return to_numpy(info[key]).astype(np.float64).reshape(-1)
    return None


def eval_scalars(eval_value: float, eval_output: Any) -> dict[str, float]:
    """``evaluator/episode_return_mean`` (the stage's ``eval_value``), and its std, max and min from
    the evaluator's info or from the episodes' returns when those are there."""
    scalars = {metrics.EVAL_RETURN_MEAN: scalar_of(eval_value, "ctx.eval_value")}
    stats = {
        metrics.EVAL_RETURN_STD: ("eval_episode_return_std", np.std),
        metrics.EVAL_RETURN_MAX: ("eval_episode_return_max", np.max),
        metrics.EVAL_RETURN_MIN: ("eval_episode_return_min", np.min),
    }
    infos = _eval_infos(eval_output)
    returns = episode_returns(eval_output)
    for metric_key, (info_key, reduce) in stats.items():
        given = [info[info_key] for info in infos if info.get(info_key) is not None]
        if given:
            scalars[metric_key] = scalar_of(given[0], f"ctx.eval_output[{info_key!r}]")
        elif returns is not None and returns.size > 1:
            scalars[metric_key] = float(reduce(returns))
    return scalars
