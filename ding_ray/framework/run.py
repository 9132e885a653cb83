"""``RunBase``: what every run does around its ``Task``, in one process or on Ray, written once.

A run owns its experiment folder (locked), its budget, the counters a resumed run starts from, the
driver's part of each run checkpoint (``counters``), ``result.json`` and the end of the run: on
leaving the ``with`` block, SIGTERM stops being an interrupt, the last checkpoint is saved (after
a clean end, Ctrl-C or SIGTERM), ``result.json`` is written whatever happened (with the error of a
failed run), and everything is closed. ``SerialRun`` (``ding_ray.entry.serial_entry``) and
``RayRun`` (``ding_ray.distributed``) add their components and the stages that depend on
where they run (``monitor``, ``checkpoint``, ``wait``: the ``Run`` of
``ding_ray.framework.pipelines``)::

    with SerialRun(...) as run, run.task() as task:
        pipelines.off_policy(task, run.cfg, run, max_env_step)
        task.run()
"""

from __future__ import annotations

import logging
import time
from typing import Any

from easydict import EasyDict

from ding_ray.errors import DingRayError
from ding_ray.framework.context import OnlineRLContext
from ding_ray.framework.middleware.control import budget_spent
from ding_ray.framework.task_runner import Task
from ding_ray.utils.checkpoint import Checkpoint
from ding_ray.utils.result import end_of_run, finite_or_none, write_result
from ding_ray.utils.runtime import RunInterrupts, error_text, set_run_end

logger = logging.getLogger(__name__)


class RunBase:
    pipeline = ""  # result.json's and the checkpoints' name of the pipeline

    def __init__(
        self, cfg: EasyDict, store: Any, resumed: Checkpoint | None, budget: dict, started_at: float | None
    ) -> None:
        self.cfg, self.store, self.resumed = cfg, store, resumed
        self.budget = dict(budget)  # max_env_step, max_train_iter: a resume keeps them
        self._start = time.perf_counter() if started_at is None else started_at  # result.json's wall_s
        self.ctx = OnlineRLContext()  # the latest context a stage saw (the task's, once it ends)
        self.result: dict[str, Any] | None = None
        self._task: Task | None = None
        self._interrupts = RunInterrupts()
        self.lock: Any = None  # the folder's RunClaim (claim_run_dir), once the subclass takes it

    # ----- what a subclass provides ---------------------------------------------------------------
    def best_return(self) -> float | None:
        raise NotImplementedError

    def stopped(self) -> bool:
        """Whether the run reached the stop value."""
        raise NotImplementedError

    def save_last(self, error: BaseException | None) -> Checkpoint | None:
        """The last run checkpoint (after a clean end, or Ctrl-C/SIGTERM); None if none was saved."""
        raise NotImplementedError

    def summary(self) -> dict[str, Any]:
        """What this kind of run adds to ``result.json``."""
        return {}

    def close(self) -> None:
        """Free the run's envs, actors and folder."""
        raise NotImplementedError

    def warn_short_budget(self, warm_up: int, setting: str, lower: str) -> None:
        """One warning line when a new run's ``max_env_step`` ends within its warm-up: the first
        ``warm_up`` env steps (``setting`` says what sets them) only fill the replay buffer, so the
        run would train little or not at all. ``lower``: the keys to lower instead."""
        max_env_step = self.budget.get("max_env_step")
        if warm_up <= 0 or self.resumed is not None or max_env_step is None or max_env_step > warm_up:
            return
        logger.warning(
            "max_env_step=%d ends before training starts: the first %d env steps fill the replay buffer "
            "(%s), so this run trains little or not at all. Set max_env_step above %d, or lower %s.",
            max_env_step,
            warm_up,
            setting,
            warm_up,
            lower,
        )

    # ----- the task and its counters --------------------------------------------------------------
    def task(self) -> Task:
        """The run's ``Task``, on a context that goes on from a resumed run's counters. A resumed
        run whose budget is spent has nothing left to do: its task is finished before it starts
        (the stage lists check the budget after training, as DI-engine's loops do, so it would
        otherwise collect and train once more)."""
        self._task = Task(self.context())
        self.ctx = self._task.ctx
        budget = (self.budget.get("max_env_step"), self.budget.get("max_train_iter"))
        if self.resumed is not None and budget_spent(self.ctx, *budget) is not None:
            self._task.finish = True
        return self._task

    def context(self) -> OnlineRLContext:
        ctx = OnlineRLContext()
        if self.resumed is not None:
            meta = self.resumed.meta
            ctx.env_step, ctx.env_episode = int(meta["env_steps"]), int(meta.get("episodes", 0))
            ctx.train_iter = int(meta["train_iter"])
            ctx.last_eval_iter = int(meta.get("evaluator", {}).get("last_eval_iter", -1))
            if meta.get("last_eval_return") is not None:
                ctx.last_eval_value = float(meta["last_eval_return"])
        return ctx

    def last_eval_return(self) -> float | None:
        """The latest evaluation's return; None until one finished. (``last_eval_iter`` is set when
        an evaluation starts; an evaluator actor answers later, and ``last_eval_value`` is
        DI-engine's -inf until then.)"""
        return finite_or_none(self.ctx.last_eval_value)

    def counters(self) -> dict[str, Any]:
        """The driver's part of a run checkpoint's ``meta.json``, from the latest context."""
        ctx = self.ctx
        return dict(
            train_iter=ctx.train_iter,
            env_steps=ctx.env_step,
            episodes=ctx.env_episode,
            evaluator=dict(best_return=finite_or_none(self.best_return()), last_eval_iter=ctx.last_eval_iter),
            last_eval_return=self.last_eval_return(),
            pipeline=self.pipeline,
            budget=self.budget,
            config=self.cfg,
        )

    # ----- the end ------------------------------------------------------------------------------
    def write_result(self, error: BaseException | None = None) -> dict[str, Any]:
        """``<exp_name>/result.json`` from the latest context; a failed run records its error."""
        ctx = self.ctx
        extra = dict(seed=self.cfg.seed, pipeline=self.pipeline, **self.summary())
        if error is not None:
            extra["error"] = error_text(error)
        if self.resumed is not None:
            extra["resumed_from"] = self.resumed.folder
        before = {} if self.resumed is None else self.resumed.meta  # rates count this process's work
        self.result = write_result(
            self.cfg.exp_name,
            env_steps=ctx.env_step,
            train_iter=ctx.train_iter,
            best_eval_return=self.best_return(),
            last_eval_return=self.last_eval_return(),
            stop=self.stopped(),
            wall_s=time.perf_counter() - self._start,
            env_steps_before=int(before.get("env_steps", 0)),
            train_iter_before=int(before.get("train_iter", 0)),
            **extra,
        )
        return self.result

    def __enter__(self) -> RunBase:
        # SIGTERM (`kill`, `ray job stop`, a scheduler) stops the run as Ctrl-C does: with a checkpoint;
        # a second signal waits until that checkpoint and result.json are written
        self._interrupts.__enter__()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self._interrupts.hold()
        if self._task is not None:
            self.ctx = self._task.ctx
        interrupted = isinstance(exc, (KeyboardInterrupt, SystemExit))  # SystemExit: Ray's SIGTERM handler
        saved = None
        try:
            save = None if exc is not None and not interrupted else lambda: self.save_last(exc)
            saved = end_of_run(save, self.write_result, exc)  # result.json also when the checkpoint fails
        finally:
            try:
                self.close()
            finally:
                if interrupted or self._interrupts.held:
                    set_run_end(self._saved_words(saved))
                self._interrupts.__exit__(exc_type, exc, tb)  # raises a signal it held

    def abandon(self) -> None:
        """End a run that failed in ``__enter__``, before it started (no ``__exit__`` comes): its
        parts are closed and its folder freed, a resumed run's folder put back as it was."""
        try:
            self.close()
        finally:
            if self.lock is not None:
                self.lock.undo()
            self._interrupts.__exit__(None, None, None)

    def _saved_words(self, saved: Checkpoint | None) -> str:
        """What an interrupted run saved on its way out, as its last line says it."""
        run = self.cfg.exp_name
        if saved is not None:
            return f"saved {saved.folder} and {run}/result.json: --resume {run} goes on from there"
        try:
            earlier = self.store.latest() if self.store is not None else None
        except DingRayError:  # a damaged checkpoint: resume names it
            earlier = None
        goes_on = f"--resume {run} goes on from {earlier.folder}" if earlier else "nothing to resume from"
        lost = "no checkpoint was saved on the way out (the log says why)"
        return f"{lost}; {run}/result.json is written; {goes_on}"
