"""``RayRun``: one run's actors, behind the protocols the stages call, as a ``Run``.

What every Ray run does around its pipeline lives here, once, for ``ray_pipeline`` and for a
driver script alike: the cluster check (fail in seconds when the cluster is too small), the
actors (``create_actors``) behind their protocols (``collector``, ``buffer``, ``learner``,
``evaluator``), a rate limiter between collection and sampling (off-policy), run checkpoints
(``rc.checkpoint()``), every actor watched by one ``ActorSupervisor`` (the learner and the buffer
come back from the checkpoints when they die), and the stages of running on Ray (``monitor``,
``wait``). Counters, resume, ``result.json`` and the end of the run are ``RunBase``'s, shared with
the serial run::

    with RayRun(cfg, plan) as rc, rc.task() as task:
        pipelines.off_policy(task, cfg, rc)     # or its stages written out (examples/apex_dqn.py)
        task.run()
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import os
from typing import Any

import ray
from easydict import EasyDict

from ding_ray.data.rate_limiter import RateLimiter
from ding_ray.distributed.actors import CORE_ACTORS, create_actors
from ding_ray.distributed.buffer_client import BufferClient
from ding_ray.distributed.checkpointer import RayCheckpointer
from ding_ray.distributed.collectors_client import AsyncCollectorsClient, SyncCollectorsClient
from ding_ray.distributed.config import Plan, pipeline_of
from ding_ray.distributed.errors import ActorDiedError
from ding_ray.distributed.evaluator_client import EvaluatorClient
from ding_ray.distributed.head_watch import HeadWatch, head_lost, resume_words
from ding_ray.distributed.learner_client import AsyncLearnerClient, SyncLearnerClient
from ding_ray.distributed.monitor import RunMonitor, monitor_stage
from ding_ray.distributed.placement import check_cluster
from ding_ray.distributed.ray_port import RayPort
from ding_ray.distributed.supervisor import ActorSupervisor, Recovered
from ding_ray.framework import OnlineRLContext
from ding_ray.framework.middleware.evaluate import take_evaluation
from ding_ray.framework.run import RunBase
from ding_ray.utils.checkpoint import Checkpoint
from ding_ray.utils.resume import checkpoint_store, claim_run_dir
from ding_ray.utils.run_dir import discard_unstarted
from ding_ray.utils.runtime import process_age_s, set_torch_threads

logger = logging.getLogger(__name__)


def _learn_state(cfg: EasyDict) -> dict:
    """The learn mode's state dict of the policy ``cfg`` builds (on the CPU): what a resumed
    checkpoint's weights must fit before the learner actor loads them."""
    from ding_ray.policy import create_policy

    policy_cfg = EasyDict(copy.deepcopy(dict(cfg.policy)))
    policy_cfg.cuda = False
    return create_policy(policy_cfg, enable_field=["learn"]).learn_mode.state_dict()


class RayRun(RunBase):
    train_rounds = 1  # one sample-and-train call per iteration: the rate limiter paces the learner

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
        set_torch_threads(cfg.ray.torch_threads)  # the driver too: it shares the cores
        self.plan = plan
        self.on_policy = pipeline_of(cfg) == "sync"
        self.pipeline = "ray-sync" if self.on_policy else "ray-async"
        store, resumed = checkpoint_store(cfg, resume)  # before any actor reads it
        budget = dict(max_env_step=max_env_step, max_train_iter=max_train_iter)
        super().__init__(cfg, store, resumed, budget, started_at)
        if not self.on_policy:
            self._warn_short_budget(cfg, plan)
        try:
            if cfg.ray.check_resources:
                check_cluster(cfg.ray)
            self.lock = claim_run_dir(cfg, self.store, self.resumed, _learn_state(cfg) if resume else None)
        except BaseException:  # a new run that did not start leaves no folder to divert the next one
            if resume is None:
                discard_unstarted(cfg.exp_name)
            raise
        try:
            self._build(cfg, plan)
        except BaseException:  # the folder as it was (a new run: none left to divert the next one)
            self.lock.undo()
            raise

    def _warn_short_budget(self, cfg: EasyDict, plan: Plan) -> None:
        """The learner's first sample waits for the buffer's minimum size (``make_plan``): say so
        if the budget ends before it, naming what sets that size."""
        size = plan.min_replay_size
        if cfg.ray.min_replay_size:
            setting, lower = f"ray.min_replay_size={size}", "ray.min_replay_size"
        elif size == plan.random_collect_size:
            setting, lower = f"policy.random_collect_size={size}", "policy.random_collect_size"
        else:
            setting = (
                f"unset ray.min_replay_size: twice a learner call's sample, 2 x ray.train_iters_per_call x "
                f"policy.learn.batch_size = 2 x {cfg.ray.train_iters_per_call} x {plan.batch_size}"
            )
            lower = "ray.train_iters_per_call, or set ray.min_replay_size"
        self.warn_short_budget(size, setting, lower)

    def _build(self, cfg: EasyDict, plan: Plan) -> None:
        """The actors and the run's parts around them (the folder is locked for this run)."""
        sync = self.on_policy
        # sync: each round splits n_sample over the collectors
        per_call = math.ceil(plan.n_sample / cfg.ray.num_collectors) if sync else plan.n_sample
        self.actors = create_actors(cfg, plan.namespace, n_sample=per_call, buffer=not sync)
        self.supervisor = self._supervise(cfg)
        meta = {} if self.resumed is None else self.resumed.meta
        self.limiter = None
        if not sync:
            self.limiter = RateLimiter(
                plan.samples_per_insert,
                plan.min_replay_size,
                plan.tolerance,
                cfg.ray.backpressure,
                max_in_flight=cfg.ray.sample_prefetch,  # sample calls waiting on the learner
            )
            self.limiter.check_chunks(plan.n_sample, plan.sample_size)
            self.limiter.restore(meta.get("limiter"))
        start_timeout_s, train_iter = cfg.ray.actor_start_timeout_s, int(meta.get("train_iter", 0))
        if sync:
            self.buffer = None
            self.collector = SyncCollectorsClient(cfg, self.actors, plan, self.supervisor)
            self.learner = SyncLearnerClient(self.actors, self.supervisor, start_timeout_s, train_iter)
        else:
            self.buffer = BufferClient(
                self.actors,
                self.supervisor,
                self.limiter,
                cfg.ray.train_iters_per_call,
                # nobody waits: a buffer slower than the collectors loses batches, not memory
                max_pushes=2 * cfg.ray.num_collectors if cfg.ray.backpressure == "drop" else None,
            )
            self.collector = AsyncCollectorsClient(cfg, self.actors, plan, self.supervisor, self.limiter)
            priority = bool(cfg.policy.get("priority", False))
            self.learner = AsyncLearnerClient(
                self.actors, self.supervisor, self.buffer, start_timeout_s, priority, train_iter
            )
        # On-policy policies can peak and fall back within a few rounds: every due version is
        # evaluated (a backlog, also of those due while the evaluator starts), not only the latest.
        self.evaluator = EvaluatorClient(
            self.actors,
            self.supervisor,
            max_backlog=8 if sync else 0,
            restart_timeout_s=cfg.ray.actor_start_timeout_s,
        )
        self.weights_sinks = [self.collector, self.evaluator]
        self.checkpointer = RayCheckpointer(cfg, self.actors, self.supervisor, self.store, self.resumed)
        if self.buffer is not None:
            self.supervisor.on_back("buffer", self._buffer_restarted)
        if self.resumed is not None:
            self._resume_counters(meta)
        self.head_watch = HeadWatch.of_driver(cfg.ray.head_timeout_s, self._head_lost)
        self.state: dict[str, Any] | None = None  # the learner's final state, once the run ended well
        self.stop_weights: Any = None  # the weights that reached the stop value, once the run ended well
        self._monitor: RunMonitor | None = None

    # ----- resume and recovery ------------------------------------------------------------------
    def _supervise(self, cfg: EasyDict) -> ActorSupervisor:
        """The run's supervisor, watching the learner and the buffer from the start (the
        evaluator and the collectors join as their clients start them)."""
        supervisor = ActorSupervisor(RayPort(self.actors))
        timeout_s = cfg.ray.actor_start_timeout_s
        advice = (
            f"It is restarted at most ray.core_max_restarts={cfg.ray.core_max_restarts} times, within "
            f"{timeout_s:g} s each (ray.actor_start_timeout_s). The run's latest checkpoint is in its "
            "checkpoints/ folder: resume=<the run's folder> goes on from there."
        )
        for name, handle in (("learner", self.actors.learner), ("buffer", self.actors.buffer)):
            if handle is not None:
                supervisor.add(
                    name,
                    handle,
                    restart_timeout_s=timeout_s,
                    call_timeout_s=self.actors.call_timeout_s,
                    advice=advice,
                )
        return supervisor

    def _head_lost(self, silent_s: float) -> str:
        """result.json with the error, and the line the driver ends with (``HeadWatch``)."""
        error = head_lost(self.head_watch.address, silent_s)
        with contextlib.suppress(Exception):  # the line matters more than the file
            self.write_result(error)
        return f"{error}. {resume_words(self.cfg.exp_name, self.store)}"

    def _resume_counters(self, meta: dict) -> None:
        self.collector.envstep = int(meta["env_steps"])
        self.collector.envepisode = int(meta.get("episodes", 0))
        self.evaluator.best_return = meta.get("evaluator", {}).get("best_return")
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

    def counters(self) -> dict[str, Any]:
        return dict(super().counters(), limiter=None if self.limiter is None else self.limiter.state())

    # ----- stages --------------------------------------------------------------------------------
    def checkpoint(self):
        """Run checkpoints every ``checkpoint.freq`` learner iterations or ``checkpoint.every_s``
        seconds, whichever comes first: the learner and the buffer actor write their files while
        training goes on, the driver commits them once in.

        Reads ctx: train_iter, env_step, env_episode, last_eval_iter, last_eval_value.
        """

        def _checkpoint(ctx: OnlineRLContext) -> None:
            self.ctx = ctx
            self.checkpointer.step(ctx.train_iter, self.counters)

        return _checkpoint

    def wait(self, timeout_s: float = 1.0):
        """Block until a call of some actor finishes; not while the driver has work of its own: the
        buffer to warm up, or a sample to launch because the learner just finished a call.

        Fails the run when the learner or every collector did not start within
        ``ray.actor_start_timeout_s``.
        """

        def _wait(ctx: OnlineRLContext) -> None:
            if self.collector.warming_up or (self.buffer is not None and self.buffer.wants_sample()):
                return
            refs = (
                self.collector.refs() + self.learner.refs() + self.evaluator.refs() + self.supervisor.refs()
            )
            if not refs:
                raise RuntimeError("Nothing is in flight on any actor; the rate limiter setup has a bug.")
            if not ray.wait(refs, num_returns=1, timeout=timeout_s)[0]:
                # collectors first: when neither started, theirs is the message that names the cause
                # more often (a learner waits on a busy machine, a collector on a node that never comes)
                self.collector.check_started()
                self.learner.check_started()

        return _wait

    def monitor(self):
        """The progress bar, TensorBoard (``<exp_name>/log/ray``) and dashboard metrics of the run
        (``distributed.monitor``).

        Reads ctx: env_step, train_iter, train_output, eval_output, last_eval_value.
        """
        self._monitor, stage = monitor_stage(self)
        return stage

    # ----- the end of the run --------------------------------------------------------------------
    def best_return(self) -> float | None:
        return self.evaluator.best_return

    def stopped(self) -> bool:
        return self.evaluator.stop_weights is not None

    def summary(self) -> dict[str, Any]:
        out = dict(self.collector.summary())
        out["since_launch_s"] = round(process_age_s(), 2)  # the process's age when the run ended
        out["policy_version"] = -1 if self.learner.latest is None else self.learner.latest.version
        # learner iterations between the weights that collected the data and the training on it
        out["policy_lag"] = self.learner.policy_lag
        # the evaluator runs beside training: the weights that reached the stop value were taken
        # at this many env steps, while env_steps counts what was collected until it said so
        out["stop_env_step"] = self.evaluator.stop_env_step
        out["recoveries"] = self.supervisor.events  # each restart of learner, buffer, evaluator; its losses
        out.update(self.checkpointer.summary())
        if self.limiter is not None:
            out.update(
                samples_per_insert_target=self.limiter.samples_per_insert,
                samples_per_insert=round(self.limiter.samples_per_insert_now(), 3),
                samples_per_insert_tolerance=self.limiter.tolerance,
                inserted=self.limiter.inserted,
                sampled=self.limiter.sampled,
                learner_busy=self.learner.busy(),
                learner_waits=self.limiter.learner_waits,
                backpressure=self.limiter.backpressure,
                dropped_batches=self.buffer.dropped_batches + self.collector.dropped_batches,
            )
        return out

    def write_result(self, error: BaseException | None = None) -> dict[str, Any]:
        result = super().write_result(error)
        logger.info("result: %s", result)
        exp = self.cfg.exp_name
        logger.info(
            "the run is in %s: result.json, total_config.json, ckpt/ (best and final weights), "
            "checkpoints/ (what resume= continues from); "
            "TensorBoard: tensorboard --logdir %s; a plot: ding-ray plot %s",
            exp,
            os.path.join(exp, "log"),
            exp,
        )
        return result

    def __enter__(self) -> RayRun:
        if self.head_watch is not None:
            self.head_watch.start()
        return super().__enter__()

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if self._task is not None and self._task.ctx is not self.ctx:
            # the iteration that ended the run stopped before the monitor stage: its evaluation
            # (the one that reached the stop value, usually) still counts
            if self._task.ctx.eval_output and self._monitor is not None:
                self._monitor.evaluated(self._task.ctx.eval_output["episode_info"])
            self.ctx = self._task.ctx
        try:
            if exc_type is None:
                self._finish_in_flight()
            if self._monitor is not None:
                # the progress bar's stderr may be a closed pipe (Ctrl-C ended `| tee` too), the
                # disk full: the checkpoint and result.json below must come all the same
                with contextlib.suppress(OSError, ValueError):
                    self._monitor.report(
                        self.ctx.env_step, self.ctx.train_iter, self.last_eval_return(), force=True
                    )
                try:
                    self._monitor.close()
                except (OSError, ValueError) as err:  # a full disk: the checkpoint's error says it
                    logger.warning("the run's last TensorBoard events were not written: %s", err)
            self.collector.close()
        finally:
            super().__exit__(exc_type, exc, tb)

    def _finish_in_flight(self) -> None:
        """After a clean end, the learner's train calls in flight and the evaluations in flight or
        queued are waited for (each up to ``ray.call_timeout_s``) and counted, as DI-engine's loop,
        where both are synchronous, counts them, and a restart of the learner or the buffer not
        noticed yet is recorded: result.json and the last checkpoint agree on ``train_iter``, and a
        run shorter than one evaluation still reports its iteration-0 evaluation."""
        timeout_s = float(self.cfg.ray.call_timeout_s)
        try:
            before = self.learner.train_iter
            self.supervisor.check(timeout_s)  # a restart not seen yet takes back the iterations it lost
            self.learner.finish(timeout_s)
            self.ctx.train_iter += self.learner.train_iter - before
            evaluations = self.evaluator.finish(timeout_s)
        except (Recovered, ray.exceptions.RayError, ActorDiedError) as err:  # the run itself is over
            logger.warning("the calls in flight at the end of the run were not taken: %s", err)
            return
        for evaluation in evaluations:
            take_evaluation(self.ctx, evaluation)
            if self._monitor is not None:
                self._monitor.evaluated(self.ctx.eval_output["episode_info"])

    def save_last(self, error: BaseException | None) -> Checkpoint | None:
        """The last run checkpoint (resume= goes on from it); after a clean end also the weights
        that reached the stop value, the learner's final state and its after_run hooks."""
        ckpt = self.save_checkpoint(final=True)
        if error is None:
            if self.evaluator.stop_weights is not None:  # held by the learner: fetch before the kill
                self.stop_weights = ray.get(self.evaluator.stop_weights.ref)
            self.state = self.supervisor.get(self.actors.learner.state_dict.remote(), CORE_ACTORS)
            self.supervisor.get(
                self.actors.learner.close.remote(), CORE_ACTORS
            )  # after_run hooks: ckpt_final.pth.tar
        return ckpt

    def close(self) -> None:
        if self.head_watch is not None:
            self.head_watch.stop()
        try:
            self.supervisor.port.sweep(wait_s=1.0)
            self.actors.kill()
            if self.store is not None:
                self.store.forget_incarnations(self.actors.cfg.ray.run_id)
        finally:
            self.lock.release()

    def save_checkpoint(self, final: bool = False) -> Checkpoint | None:
        """A run checkpoint of the state now, waited for (a Tune report carries one); None if an
        actor died while writing it (``final``: the end of the run, logged either way)."""
        try:
            ckpt = self.checkpointer.save_now(self.ctx.train_iter, self.counters)
        except (Recovered, ActorDiedError) as err:
            if not final:
                raise
            logger.warning("no checkpoint at the end of the run: %s", err)  # earlier ones stay
            return None
        if final and ckpt is not None:
            logger.info("saved %s: resume=%r continues the run", ckpt.folder, self.cfg.exp_name)
        return ckpt
