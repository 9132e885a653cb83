"""``RayComponents``: one run's actors, ready to be handed to the stages of a ``Task``.

What every Ray run does around its pipeline lives here, once, for ``ray_pipeline`` and for a
driver script alike: the cluster check (fail in seconds when the cluster is too small), the
actors (``create_actors``) behind their stage interfaces (``collectors``, ``buffer``,
``learner``, ``evaluator``), a rate limiter between collection and sampling (async pipeline),
run checkpoints (``rc.checkpoint()``, and one at the end or on Ctrl-C/SIGTERM), the learner and
buffer brought back from them when they die (``Recovery``), a resumed run's counters
(``resume=``, ``rc.context()``), and, when the ``with`` block ends, the learner's final
checkpoint, ``result.json`` (also for a failed run, with its error) and the actors killed so their
names are free again::

    with RayComponents(cfg, plan) as rc, Task(rc.context()) as task:
        task.use(collector(cfg, rc.collectors))
        ...
        task.use(rc.monitor())                  # progress bar, TensorBoard, dashboard metrics
        task.use(rc.checkpoint())               # run checkpoints by checkpoint.freq / every_s
        task.use(rc.wait_any())                 # block until one actor call finishes
        task.run()
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import os
import time
from typing import Any

import ray
from easydict import EasyDict

from ding_ray.data.rate_limiter import RateLimiter
from ding_ray.distributed.actors import create_actors
from ding_ray.distributed.checkpointer import RayCheckpointer
from ding_ray.distributed.cluster import check_cluster
from ding_ray.distributed.config import Plan
from ding_ray.distributed.errors import ActorDiedError
from ding_ray.distributed.monitor import RunMonitor
from ding_ray.distributed.recovery import Recovered, Recovery
from ding_ray.distributed.remote import RemoteBuffer, RemoteEvaluator, RemoteLearner
from ding_ray.distributed.remote_collectors import RemoteCollectors
from ding_ray.framework import OnlineRLContext, current_task
from ding_ray.utils.checkpoint import Checkpoint
from ding_ray.utils.result import end_of_run, write_result
from ding_ray.utils.resume import checkpoint_store, claim_run_dir
from ding_ray.utils.runtime import process_age_s, set_torch_threads, sigterm_as_interrupt
from ding_ray.worker import metrics

logger = logging.getLogger(__name__)


def _learn_state(cfg: EasyDict) -> dict:
    """The learn mode's state dict of the policy ``cfg`` builds (on the CPU): what a resumed
    checkpoint's weights must fit before the learner actor loads them."""
    from ding_ray.policy import create_policy

    policy_cfg = EasyDict(copy.deepcopy(dict(cfg.policy)))
    policy_cfg.cuda = False
    return create_policy(policy_cfg, enable_field=["learn"]).learn_mode.state_dict()


def pipeline_of(cfg: EasyDict) -> str:
    """'sync' or 'async': ``ray.pipeline``, or by ``policy.on_policy`` when it is 'auto'."""
    if cfg.ray.pipeline != "auto":
        return cfg.ray.pipeline
    return "sync" if cfg.policy.on_policy else "async"


class RayComponents:
    def __init__(
        self,
        cfg: EasyDict,
        plan: Plan,
        max_env_step: int | None = None,
        started_at: float | None = None,
        resume: str | None = None,
        max_train_iter: int | None = None,
    ) -> None:
        """``resume``: the folder of a run to continue from its latest checkpoint (``cfg`` is that
        run's config: ``start_run(..., resume=...)`` compiles it so). The budget (``max_env_step``,
        ``max_train_iter``) goes into the checkpoints, for a resume to keep."""
        self._start = time.perf_counter() if started_at is None else started_at  # for result.json's wall_s
        set_torch_threads(cfg.ray.torch_threads)  # the driver too: it shares the cores
        self.cfg, self.plan = cfg, plan
        self.pipeline = pipeline_of(cfg)
        self.store, self.resumed = checkpoint_store(cfg, resume)  # before any actor reads it
        if cfg.ray.check_resources:
            check_cluster(cfg.ray)
        self.lock = claim_run_dir(cfg, self.store, self.resumed, _learn_state(cfg) if resume else None)
        self.budget = dict(max_env_step=max_env_step, max_train_iter=max_train_iter)
        try:
            self._build(cfg, plan, max_env_step)
        except BaseException:
            self.lock.release()
            raise

    def _build(self, cfg: EasyDict, plan: Plan, max_env_step: int | None) -> None:
        """The actors and the run's parts around them (the folder is locked for this run)."""
        sync = self.pipeline == "sync"
        # sync: each round splits n_sample over the collectors
        per_call = math.ceil(plan.n_sample / cfg.ray.num_collectors) if sync else plan.n_sample
        self.actors = create_actors(cfg, plan.namespace, n_sample=per_call, buffer=not sync)
        self.recovery = Recovery(self.actors, cfg.ray.actor_start_timeout_s, cfg.ray.core_max_restarts)
        meta = {} if self.resumed is None else self.resumed.meta
        self.limiter = None
        if not sync:
            self.limiter = RateLimiter(plan.samples_per_insert, plan.min_replay_size, plan.tolerance)
            self.limiter.check_chunks(plan.n_sample, plan.sample_size)
            self.limiter.inserted = int((meta.get("limiter") or {}).get("inserted", 0))
            self.limiter.sampled = int((meta.get("limiter") or {}).get("sampled", 0))
        self.collectors = RemoteCollectors(cfg, self.actors, plan, self.limiter, sync=sync)
        self.buffer = (
            None
            if sync
            else RemoteBuffer(
                self.actors,
                self.recovery,
                self.limiter,
                cfg.ray.train_iters_per_call,
                max_in_flight=cfg.ray.sample_prefetch,
            )
        )
        self.learner = RemoteLearner(
            self.actors,
            self.recovery,
            self.buffer,
            on_policy=sync,
            start_timeout_s=cfg.ray.actor_start_timeout_s,
            priority=bool(cfg.policy.get("priority", False)),
            train_iter=int(meta.get("train_iter", 0)),
        )
        # On-policy policies can peak and fall back within a few rounds: every due version is
        # evaluated (a backlog, also of those due while the evaluator starts), not only the latest.
        self.evaluator = RemoteEvaluator(
            self.actors,
            max_backlog=8 if sync else 0,
            restart_timeout_s=cfg.ray.actor_start_timeout_s,
            recovery=self.recovery,
        )
        self.checkpointer = RayCheckpointer(cfg, self.actors, self.recovery, self.store, self.resumed)
        self.recovery.on_restart("buffer", self._buffer_restarted)
        self.ctx: Any = self.context()  # the latest context the monitor saw, for result.json
        if self.resumed is not None:
            self._resume_counters(meta)
        self.result: dict[str, Any] | None = None
        self.state: dict[str, Any] | None = None  # the learner's final state, once the run ended well
        self.stop_weights: Any = None  # the weights that reached the stop value, once the run ended well
        self._max_env_step = max_env_step
        self._monitor: RunMonitor | None = None

    # ----- resume and recovery ------------------------------------------------------------------
    def context(self) -> OnlineRLContext:
        """A new context for the run's ``Task``: a resumed run's counters go on from its checkpoint."""
        ctx = OnlineRLContext()
        if self.resumed is not None:
            meta = self.resumed.meta
            ctx.env_step, ctx.env_episode = int(meta["env_steps"]), int(meta.get("episodes", 0))
            ctx.train_iter = int(meta["train_iter"])
            ctx.last_eval_iter = int(meta.get("evaluator", {}).get("last_eval_iter", -1))
            if meta.get("last_eval_return") is not None:
                ctx.last_eval_value = float(meta["last_eval_return"])
        return ctx

    def _resume_counters(self, meta: dict) -> None:
        self.collectors.envstep = int(meta["env_steps"])
        self.collectors.envepisode = int(meta.get("episodes", 0))
        self.evaluator.best_return = meta.get("evaluator", {}).get("best_return")
        if self.resumed.has_buffer:
            self.collectors.skip_warm_up()  # the buffer starts full again
        logger.info(
            "resuming %s at iteration %d, %d env steps",
            self.resumed.folder,
            meta["train_iter"],
            meta["env_steps"],
        )

    def _buffer_restarted(self, instance: dict, event: dict) -> None:
        """The buffer is back from its latest snapshot: the transitions inserted since are lost."""
        at = (self.checkpointer.meta_of(instance["restored_from"]).get("limiter") or {}).get("inserted", 0)
        inserted = self.limiter.inserted if self.limiter is not None else 0
        event["lost_transitions"] = max(0, inserted - int(at))
        event["buffer_count"] = instance["count"]

    def _counters(self) -> dict[str, Any]:
        """The driver's part of a checkpoint's ``meta.json``."""
        ctx = self.ctx
        return dict(
            env_steps=ctx.env_step,
            episodes=ctx.env_episode,
            evaluator=dict(best_return=self.evaluator.best_return, last_eval_iter=ctx.last_eval_iter),
            last_eval_return=None if ctx.last_eval_iter < 0 else ctx.last_eval_value,
            limiter=None if self.limiter is None else self.limiter.state(),
            pipeline=f"ray-{self.pipeline}",
            budget=self.budget,
            config=self.cfg,
        )

    # ----- stages --------------------------------------------------------------------------------
    def checkpoint(self):
        """Run checkpoints every ``checkpoint.freq`` learner iterations or ``checkpoint.every_s``
        seconds, whichever comes first: the learner and the buffer actor write their files while
        training goes on, the driver commits them once in.

        Reads ctx: train_iter, env_step, env_episode, last_eval_iter, last_eval_value.
        """

        def _checkpoint(ctx: OnlineRLContext) -> None:
            self.ctx = ctx
            self.checkpointer.step(ctx.train_iter, self._counters)

        return _checkpoint

    def wait_any(self, timeout_s: float = 1.0):
        """Block until a call of some actor finishes; not while the driver has work of its own: the
        buffer to warm up, or a sample to launch because the learner just finished a call (the
        fetcher ran before the trainer took that call's result, so it comes next iteration).

        Fails the run when the learner or every collector did not start within
        ``ray.actor_start_timeout_s``.
        """

        def _wait_any(ctx: OnlineRLContext) -> None:
            if self.collectors.warming_up or (self.buffer is not None and self.buffer.wants_sample()):
                return
            refs = self.collectors.refs() + self.learner.refs() + self.evaluator.refs()
            if not refs:
                raise RuntimeError("Nothing is in flight on any actor; the rate limiter setup has a bug.")
            if not ray.wait(refs, num_returns=1, timeout=timeout_s)[0]:
                self.learner.check_started()
                self.collectors.check_started()

        return _wait_any

    def monitor(self):
        """The progress bar, TensorBoard (``<exp_name>/log/ray``) and dashboard metrics of the run.

        Reads ctx: env_step, train_iter, train_output, eval_output, last_eval_value.
        """
        before = 0 if self.resumed is None else int(self.resumed.meta["env_steps"])
        self._monitor = monitor = RunMonitor(
            self.cfg.exp_name,
            self.cfg.ray.progress_bar,
            self.cfg.ray.report_interval_s,
            self._max_env_step,
            start_env_steps=before,  # a resumed run's rates count only its own steps
        )
        monitor.log_config(self.cfg)
        stats: dict[str, Any] = dict(ref=None, at=0.0, task=None)

        def _monitor(ctx: OnlineRLContext) -> None:
            if stats["task"] is None:  # the iteration that ends the run may stop before this stage
                stats["task"] = task = current_task()
                task.on_close(lambda: self._last_iteration(task.ctx))
            self.ctx = ctx
            self.recovery.poll()  # a learner or buffer restarted between two calls
            lags = []
            for info in self.collectors.pop_infos():
                lags.append(ctx.train_iter - max(info["policy_version"], 0))
                monitor.update(info)
            if lags:
                monitor.scalars[metrics.COLLECTOR_POLICY_VERSION_LAG] = sum(lags) / len(lags)
            if isinstance(ctx.train_output, dict):
                monitor.update(ctx.train_output)
            if ctx.eval_output:
                monitor.evaluated(ctx.eval_output["episode_info"])
            monitor.scalars[metrics.COLLECTOR_LOST_BATCHES] = self.collectors.pool.lost_batches
            monitor.scalars[metrics.COLLECTOR_RESTARTS] = self.collectors.pool.restarts
            if self.limiter is not None:
                monitor.scalars[metrics.BUFFER_SAMPLES_PER_INSERT] = self.limiter.samples_per_insert_now()
            # buffer size, pushes and samples: one stats call in flight, never waited on
            if stats["ref"] is not None and ray.wait([stats["ref"]], timeout=0)[0]:
                with contextlib.suppress(Recovered):  # the buffer died meanwhile: ask the new one
                    monitor.update(self.recovery.get(stats["ref"]))
                stats["ref"] = None
            due = time.monotonic() - stats["at"] >= self.cfg.ray.report_interval_s
            if stats["ref"] is None and self.actors.buffer is not None and due:
                stats["ref"], stats["at"] = self.buffer.stats(), time.monotonic()
            last_eval = None if ctx.last_eval_iter < 0 else ctx.last_eval_value
            monitor.report(ctx.env_step, ctx.train_iter, last_eval)

        return _monitor

    def _last_iteration(self, ctx: OnlineRLContext) -> None:
        """The context the run ended with: its evaluation (the one that reached the stop value,
        usually) ended the iteration before the monitor stage saw it."""
        if ctx is not self.ctx and ctx.eval_output and self._monitor is not None:
            self._monitor.evaluated(ctx.eval_output["episode_info"])
        self.ctx = ctx

    # ----- the end of the run --------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        out = dict(pipeline=f"ray-{self.pipeline}", seed=self.cfg.seed, **self.collectors.summary())
        out["since_launch_s"] = round(process_age_s(), 2)  # the process's age when the run ended
        out["policy_version"] = -1 if self.learner.latest is None else self.learner.latest.version
        # the evaluator runs beside training: the weights that reached the stop value were taken
        # at this many env steps, while env_steps counts what was collected until it said so
        out["stop_env_step"] = self.evaluator.stop_env_step
        out["recoveries"] = self.recovery.events  # each restart of learner, buffer, evaluator; its losses
        out.update(self.checkpointer.summary())
        if self.resumed is not None:
            out["resumed_from"] = self.resumed.folder
        if self.limiter is not None:
            out.update(
                samples_per_insert_target=self.limiter.samples_per_insert,
                samples_per_insert=round(self.limiter.samples_per_insert_now(), 3),
                samples_per_insert_tolerance=self.limiter.tolerance,
                inserted=self.limiter.inserted,
                sampled=self.limiter.sampled,
                learner_busy=self.learner.busy(),
                learner_waits=self.buffer.learner_waits,
            )
        return out

    def write_result(self, error: BaseException | None = None) -> dict[str, Any]:
        """``<exp_name>/result.json`` from the last context; a failed run records its error."""
        ctx = self.ctx
        extra = self.summary()
        before = {} if self.resumed is None else self.resumed.meta  # rates count this process's work
        if error is not None:
            extra["error"] = f"{type(error).__name__}: {error}"
        self.result = write_result(
            self.cfg.exp_name,
            env_steps=ctx.env_step,
            train_iter=ctx.train_iter,
            best_eval_return=self.evaluator.best_return,
            last_eval_return=None if ctx.last_eval_iter < 0 else ctx.last_eval_value,
            stop=self.evaluator.stop_weights is not None,
            wall_s=time.perf_counter() - self._start,
            env_steps_before=int(before.get("env_steps", 0)),
            train_iter_before=int(before.get("train_iter", 0)),
            **extra,
        )
        logger.info("result: %s", self.result)
        exp = self.cfg.exp_name
        logger.info(
            "the run is in %s: result.json, total_config.json, ckpt/ (best and final weights), "
            "checkpoints/ (what resume= continues from); "
            "TensorBoard: tensorboard --logdir %s; a plot: ding-ray plot %s",
            exp,
            os.path.join(exp, "log"),
            exp,
        )
        return self.result

    def __enter__(self) -> RayComponents:
        # SIGTERM (`kill`, `ray job stop`, a scheduler) stops the run as Ctrl-C does: with a checkpoint
        self._signals = contextlib.ExitStack()
        self._signals.enter_context(sigterm_as_interrupt())
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if getattr(self, "_signals", None) is not None:
            self._signals.close()
        try:
            if self._monitor is not None:
                last_eval = None if self.ctx.last_eval_iter < 0 else self.ctx.last_eval_value
                # the progress bar's stderr may be a closed pipe (Ctrl-C ended `| tee` too): the
                # checkpoint and result.json below must come all the same
                with contextlib.suppress(OSError, ValueError):
                    self._monitor.report(self.ctx.env_step, self.ctx.train_iter, last_eval, force=True)
                self._monitor.close()
            self.collectors.close()

            def save_last() -> None:
                # Ctrl-C, SIGTERM (as a SystemExit where Ray's own handler got it first): resume= goes on
                if exc is None or isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    self._last_checkpoint()
                if exc is None:
                    if self.evaluator.stop_weights is not None:  # held by the learner: fetch before the kill
                        self.stop_weights = ray.get(self.evaluator.stop_weights.ref)
                    self.state = self.recovery.get(self.actors.learner.state_dict.remote())
                    # after_run hooks: ckpt_final.pth.tar
                    self.recovery.get(self.actors.learner.close.remote())

            end_of_run(save_last, self.write_result, exc)  # result.json also when the checkpoint fails
        finally:
            self.recovery.sweep(wait_s=1.0)
            self.actors.kill()
            self.lock.release()

    def save_checkpoint(self, ctx: OnlineRLContext) -> Checkpoint | None:
        """A run checkpoint of the state now, waited for (a Tune report carries one); None if an
        actor died while writing it."""
        self.ctx = ctx
        return self.checkpointer.save_now(ctx.train_iter, self._counters)

    def _last_checkpoint(self) -> None:
        try:
            ckpt = self.checkpointer.save_now(self.ctx.train_iter, self._counters)
        except (Recovered, ActorDiedError) as err:  # the run's earlier checkpoints stay
            logger.warning("no checkpoint at the end of the run: %s", err)
            return
        if ckpt is not None:
            logger.info("saved %s: resume=%r continues the run", ckpt.folder, self.cfg.exp_name)
