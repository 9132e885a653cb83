"""Control stages: exploration schedule, when to stop, checkpoints, the final record, and iteration
timing."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections import deque
from typing import Any

import numpy as np

from ding_ray.errors import ConfigError
from ding_ray.framework.context import Context, OnlineRLContext
from ding_ray.framework.task_runner import current_task
from ding_ray.utils.result import finite_or_none

logger = logging.getLogger(__name__)


def eps_greedy_handler(cfg: Any):
    """Epsilon of epsilon-greedy collection from the env steps so far (``cfg.policy.other.eps``:
    ``start``, ``end``, ``decay``, ``type`` 'exp' or 'linear'), removed again after the iteration.

    Reads ctx: env_step.
    Writes ctx: collect_kwargs['eps'].
    """
    from ding_ray.rl_utils import get_epsilon_greedy_fn  # here: rl_utils loads torch, the caller may not yet

    eps_cfg = cfg.policy.get("other", {}).get("eps")
    if not eps_cfg:
        raise ConfigError(
            "eps_greedy_handler needs cfg.policy.other.eps, e.g. "
            "eps=dict(type='exp', start=0.95, end=0.1, decay=10000)."
        )
    epsilon = get_epsilon_greedy_fn(eps_cfg.start, eps_cfg.end, eps_cfg.decay, eps_cfg.get("type", "exp"))

    def _eps_greedy(ctx: OnlineRLContext):
        ctx.collect_kwargs["eps"] = epsilon(ctx.env_step)
        yield
        ctx.collect_kwargs.pop("eps", None)

    return _eps_greedy


def eps_greedy_masker():
    """Turn epsilon-greedy off: ``eps = -1``, so the collect policy acts greedily.

    Writes ctx: collect_kwargs['eps'].
    """

    def _masker(ctx: OnlineRLContext) -> None:
        ctx.collect_kwargs["eps"] = -1

    return _masker


def termination_checker(
    max_env_step: int | None = None, max_train_iter: int | None = None, at_budget: bool = False
):
    """End the run once more than ``max_env_step`` env steps or ``max_train_iter`` iterations are done
    (None: no limit), as DI-engine's stage; ``at_budget``: once they are reached, as DI-engine's
    serial entries stop.

    Reads ctx: env_step (if the context has it), train_iter.
    Writes: the task's ``finish``.
    """

    def _check(ctx: Context) -> None:
        spent = budget_spent(ctx, max_env_step, max_train_iter, at_budget)
        if spent is not None:
            current_task().finish = True
            counter, limit = spent
            logger.info("%s %d reached max_%s %s: finishing", counter, getattr(ctx, counter), counter, limit)

    return _check


def budget_spent(
    ctx: Context, max_env_step: int | None, max_train_iter: int | None, at_budget: bool = True
) -> tuple[str, int] | None:
    """``(counter, limit)`` of the budget ``ctx`` has spent (None: no limit), else None. Spent:
    reached with ``at_budget`` (DI-engine's serial entries), else passed ('>' as DI-engine's
    ``termination_checker``: the iteration that reaches the budget still gets logged)."""
    past = np.greater_equal if at_budget else np.greater
    if max_env_step is not None and past(getattr(ctx, "env_step", -np.inf), max_env_step):
        return "env_step", max_env_step
    if max_train_iter is not None and past(ctx.train_iter, max_train_iter):
        return "train_iter", max_train_iter
    return None


def _learn_state_dict(policy: Any) -> dict[str, Any]:
    """The learn state of a ``Policy``, a learn mode or a ``BaseLearner``."""
    if hasattr(policy, "learn_mode"):
        return policy.learn_mode.state_dict()
    if callable(getattr(policy, "state_dict", None)):
        return policy.state_dict()
    return policy.policy.state_dict()  # a BaseLearner holds the learn mode


class CkptSaver:
    """Save the policy's learn state under ``<save_dir>/ckpt`` (DI-engine's ``CkptSaver``):

    - ``iteration_<train_iter>.pth.tar`` at iteration 0 and then every ``train_freq`` iterations;
    - ``eval.pth.tar`` whenever ``ctx.eval_value`` is the best so far;
    - ``final.pth.tar`` when the run ends (``save_finish``), not when it ends with an error.

    ``policy``: a ``Policy``, its learn mode or a ``BaseLearner``. Put the stage right after the
    evaluator, so that ``eval.pth.tar`` holds the weights that were evaluated rather than those
    trained later in the iteration. Files are written with ``torch.save`` and load with
    ``torch.load(path, weights_only=True)``. The iteration that ends the run usually stops before
    this stage is reached (an evaluator that hit the stop value), so that iteration is checked
    when the task closes.

    Reads ctx: train_iter, eval_value.
    Writes: checkpoint files.
    """

    def __init__(
        self, policy: Any, save_dir: str, train_freq: int | None = None, save_finish: bool = True
    ) -> None:
        if policy is None or not (
            hasattr(policy, "learn_mode") or hasattr(policy, "state_dict") or hasattr(policy, "policy")
        ):
            raise ConfigError(
                f"CkptSaver takes a Policy, its learn mode or a BaseLearner, got {type(policy).__name__}."
            )
        self.policy = policy
        self.train_freq = train_freq
        self.save_finish = save_finish
        save_dir = os.path.normpath(save_dir)
        self.prefix = save_dir if os.path.basename(save_dir) == "ckpt" else os.path.join(save_dir, "ckpt")
        os.makedirs(self.prefix, exist_ok=True)
        self.last_save_iter = 0
        self.max_eval_value = -np.inf
        self._task: Any = None
        self._last_ctx: Context | None = None
        self._final_saved = False

    def __call__(self, ctx: Context):
        if self._task is None:
            self._task = current_task()
            self._task.on_close(self._at_close)
        self._check(ctx)
        yield
        if current_task().finish:
            self._finish()

    def _save(self, name: str) -> None:
        import torch  # here, not at the top: a driver that needs no checkpoints starts without torch

        path = os.path.join(self.prefix, name)
        torch.save(_learn_state_dict(self.policy), path + ".tmp")
        os.replace(path + ".tmp", path)  # a reader never sees half a file

    def _check(self, ctx: Context) -> None:
        if self.train_freq and (
            ctx.train_iter == 0 or ctx.train_iter - self.last_save_iter >= self.train_freq
        ):
            self._save(f"iteration_{ctx.train_iter}.pth.tar")
            self.last_save_iter = ctx.train_iter
        if ctx.eval_value is not None and ctx.eval_value > self.max_eval_value:
            self._save("eval.pth.tar")
            self.max_eval_value = ctx.eval_value
        self._last_ctx = ctx

    def _finish(self) -> None:
        if self.save_finish and not self._final_saved:
            self._save("final.pth.tar")
            self._final_saved = True

    def _at_close(self) -> None:
        if sys.exc_info()[0] is not None:  # the run failed: its weights are not a result
            return
        if self._task.ctx is not self._last_ctx:
            self._check(self._task.ctx)
        self._finish()


def ckpt_saver(cfg: Any, policy: Any, train_freq: int | None = None, save_finish: bool = True) -> CkptSaver:
    """``CkptSaver`` into ``<cfg.exp_name>/ckpt``."""
    return CkptSaver(policy, cfg.exp_name, train_freq, save_finish)


def final_ctx_saver(name: str):
    """Write the run's final counters to ``<name>/final_ctx.json`` when the task closes (not after
    an error): ``total_step``, ``train_iter``, ``last_eval_iter``, ``eval_value`` (the last
    evaluation's return), and ``env_step`` / ``env_episode`` or ``trained_env_step`` where the
    context has them. DI-engine pickles the same record to ``result.pkl``; JSON loads without
    running code. Like ``CkptSaver`` it registers with the task, because the iteration that
    finishes the run usually ends before reaching it.

    Reads ctx: the fields above.
    Writes: ``<name>/final_ctx.json``.
    """
    registered = []

    def write() -> None:
        if sys.exc_info()[0] is not None:
            return
        ctx = registered[0].ctx
        record = {
            "total_step": ctx.total_step,
            "train_iter": ctx.train_iter,
            "last_eval_iter": ctx.last_eval_iter,
            "eval_value": finite_or_none(ctx.last_eval_value),
        }
        for key in ("env_step", "env_episode", "trained_env_step"):
            if ctx.has_attr(key):
                record[key] = getattr(ctx, key)
        os.makedirs(name, exist_ok=True)
        path = os.path.join(name, "final_ctx.json")
        with open(path + ".tmp", "w") as f:
            json.dump(record, f, indent=2)
        os.replace(path + ".tmp", path)

    def _save(ctx: Context) -> None:
        if not registered:
            registered.append(current_task())
            registered[0].on_close(write)

    return _save


def epoch_timer(print_per: int = 1, smooth_window: int = 10):
    """Log how long each iteration of the later stages took, and the mean of the recent ones.

    Reads ctx: total_step.
    """
    records: deque[float] = deque(maxlen=print_per * smooth_window)

    def _epoch_timer(ctx: Context):
        start = time.perf_counter()
        yield
        cost = time.perf_counter() - start
        records.append(cost)
        if ctx.total_step % print_per == 0:
            logger.info("epoch timer: %.2f ms, mean %.2f ms", cost * 1000, float(np.mean(records)) * 1000)

    return _epoch_timer
