"""``serial_pipeline``: collect, train and evaluate in one process, without Ray."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import torch
from easydict import EasyDict

from ding_ray.config import compile_config
from ding_ray.config.compile import check_priority_buffer, split_input_cfg
from ding_ray.envs import create_env_manager, get_vec_env_setting, space_info
from ding_ray.envs.model_shapes import fill_model_shapes
from ding_ray.errors import ConfigError, DingRayError, StageError, StorageError
from ding_ray.framework import pipelines
from ding_ray.framework.context import OnlineRLContext
from ding_ray.framework.run import RunBase
from ding_ray.policy import create_policy
from ding_ray.utils.checkpoint import (
    BUFFER_FILE,
    LEARNER_FILE,
    Checkpoint,
    CheckpointSchedule,
    FrameBlocks,
    buffer_bytes,
    learner_bytes,
    load_buffer_bytes,
    load_learner_bytes,
    restore_learner,
)
from ding_ray.utils.result import log_config
from ding_ray.utils.resume import checkpoint_store, claim_run_dir
from ding_ray.utils.run_dir import discard_unstarted, events_writer
from ding_ray.utils.runtime import set_pkg_seed, set_torch_threads, setup_logging
from ding_ray.worker import (
    BaseLearner,
    InteractionSerialEvaluator,
    create_buffer,
    create_serial_collector,
)

logger = logging.getLogger(__name__)


def build_envs(cfg: EasyDict, dynamic_seed: bool = True, env_setting: Any = None):
    """The collector and evaluator env managers of ``cfg.env`` (or of DI-engine's ``env_setting``,
    ``[env class, collector env configs, evaluator env configs]``), seeded as DI-engine seeds them.

    ``env.replay_path`` is not used here: as in DI-engine, only the ``eval`` entry records videos.
    """
    if env_setting is None:
        env_fn, collector_env_cfg, evaluator_env_cfg = get_vec_env_setting(cfg.env)
    else:
        env_fn, collector_env_cfg, evaluator_env_cfg = check_env_setting(env_setting)
    collector_env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in collector_env_cfg])
    evaluator_env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in evaluator_env_cfg])
    collector_env.seed(cfg.seed, dynamic_seed=dynamic_seed)
    evaluator_env.seed(cfg.seed, dynamic_seed=False)
    return collector_env, evaluator_env


def check_env_setting(env_setting: Any) -> tuple[Any, list, list]:
    if not (isinstance(env_setting, (list, tuple)) and len(env_setting) == 3 and callable(env_setting[0])):
        raise ConfigError(
            "env_setting must be [env class, collector env configs, evaluator env configs], as "
            "get_vec_env_setting returns it."
        )
    return env_setting[0], list(env_setting[1]), list(env_setting[2])


def env_class(env_setting: Any) -> Any:
    """The env class of an ``env_setting`` (checked), or None without one: what ``compile_config``
    takes as ``env``."""
    return None if env_setting is None else check_env_setting(env_setting)[0]


def serial_pipeline(
    input_cfg: str | tuple[dict, dict],
    seed: int = 0,
    env_setting: Any = None,
    model: torch.nn.Module | None = None,
    max_train_iter: int | None = None,
    max_env_step: int | None = None,
    dynamic_seed: bool = True,
    resume: str | None = None,
) -> Any:
    """Train until the evaluator reaches ``env.stop_value`` or a budget runs out; return the policy.

    ``input_cfg`` is ``(main_config, create_config)`` or the path of a DI-engine style config file.
    ``env_setting`` (``[env class, collector env configs, evaluator env configs]``) replaces the
    envs the config names. As in DI-engine, ``policy.load_path`` and ``env.replay_path`` belong to
    the ``eval`` entry and are not used here: a run starts from fresh weights unless the learner's
    ``load_ckpt_before_run`` hook names a checkpoint (``policy.learn.resume_training=True`` also
    continues its counters in the same folder). With an ``exp_name`` folder already there, the run
    writes to ``<exp_name>_<timestamp>`` (DI-engine's ``renew_dir``), so no run overwrites another.

    The run is the ``off_policy`` stage list of ``ding_ray.framework.pipelines`` on local
    components: collect, push to the replay buffer, ``update_per_collect`` rounds of sample and
    train, evaluate when due, checkpoint when due.

    Run checkpoints (every ``checkpoint.freq`` learner iterations, at the end, and on Ctrl-C or
    SIGTERM) hold the learner state, counters, evaluator best, RNG states and, with
    ``checkpoint.save_buffer``, the replay buffer. ``resume=<run folder>`` continues that run from
    its latest complete checkpoint, in the same folder: counters, buffer and TensorBoard curves go on.

    Writes ``<exp_name>/total_config.json``, TensorBoard logs under ``<exp_name>/log/serial``,
    checkpoints under ``<exp_name>/ckpt`` and ``<exp_name>/result.json`` at the end.
    """
    start = time.perf_counter()
    setup_logging()
    main_cfg, create_cfg = split_input_cfg(input_cfg)
    from ding_ray.entry.serial_entry_onpolicy import is_on_policy  # that module imports this one

    if is_on_policy(main_cfg, create_cfg):
        # A replay buffer would train on data of old weights again and again: wrong for on-policy
        # algorithms. DI-engine has a separate entry for them, and so does ding_ray.
        raise ConfigError(
            "serial_pipeline is for off-policy policies, and this config's policy is on-policy "
            "(policy.on_policy=True, e.g. PPO). Use ding_ray.entry.serial_pipeline_onpolicy with the "
            "same arguments, as in DI-engine."
        )
    run = SerialRun(
        main_cfg, create_cfg, seed, env_setting, model, dynamic_seed, False, resume, start_at=start
    )
    return train(run, max_env_step, max_train_iter)


def train(run: SerialRun, max_env_step: int | None, max_train_iter: int | None) -> Any:
    """Run ``run``'s stage list (``off_policy`` or ``on_policy``) until the stop value or a budget."""
    run.budget = dict(max_env_step=max_env_step, max_train_iter=max_train_iter)
    random_collect = int(run.cfg.policy.get("random_collect_size") or 0)
    key = "policy.random_collect_size"
    run.warn_short_budget(random_collect, f"{key}={random_collect}", key)
    stages = pipelines.on_policy if run.on_policy else pipelines.off_policy
    with run, run.task() as task:
        stages(task, run.cfg, run, max_env_step, max_train_iter)
        try:
            task.run()
        except StageError as err:
            # as serial_pipeline always raised them: ding_ray's own errors (a bad env, a wrong
            # shape) as they are, the stage named in a note; anything else stays a StageError
            if not isinstance(err.__cause__, DingRayError):
                raise
            err.__cause__.add_note(str(err).split(":", 1)[0])
            raise err.__cause__ from None
    return run.policy


class SerialRun(RunBase):
    """A run in one process: the compiled config, envs, policy, learner, collector, evaluator (and,
    off-policy, the replay buffer) built as DI-engine's entries build them, behind the protocols
    the stages call, and the stages that depend on running here (``monitor``, ``checkpoint``,
    ``wait``). Checkpoints, resume and the end of the run are ``RunBase``'s."""

    weights_sinks: list = []  # the collector and evaluator act with the learner's own policy object

    def __init__(
        self,
        main_cfg: EasyDict,
        create_cfg: EasyDict,
        seed: int,
        env_setting: Any,
        model: torch.nn.Module | None,
        dynamic_seed: bool,
        on_policy: bool,
        resume: str | None = None,
        start_at: float | None = None,
    ) -> None:
        """``on_policy``: no replay buffer, the learner takes the collector's train samples.
        ``resume``: the folder of a run to continue. ``start_at``: when the process started its
        work (``result.json``'s ``wall_s``)."""
        learn = (main_cfg.get("policy") or {}).get("learn")  # not a dict: compile_config says so
        self.resume_training = isinstance(learn, Mapping) and bool(learn.get("resume_training", False))
        if resume is not None:  # the same folder: logs, checkpoints and result.json go on there
            main_cfg = EasyDict({**main_cfg, "exp_name": os.fspath(resume)})
        cfg = compile_config(
            main_cfg,
            seed=seed,
            env=env_class(env_setting),
            auto=True,
            create_cfg=create_cfg,
            save_cfg=resume is None,  # a resumed run writes its config once every check passed
            renew_dir=not (self.resume_training or resume is not None),
        )
        self.on_policy = on_policy
        self.pipeline = "serial_onpolicy" if on_policy else "serial"
        try:
            if not on_policy:
                check_priority_buffer(cfg)
            store, resumed = checkpoint_store(cfg, resume)  # reads only
            super().__init__(cfg, store, resumed, {}, start_at)
            set_torch_threads(cfg.policy.learn.get("num_threads", 1))
            set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
            collector_env, evaluator_env = build_envs(cfg, dynamic_seed, env_setting)
        except BaseException:  # a new run that did not start leaves no folder to divert the next one
            if resume is None:
                discard_unstarted(cfg.exp_name)
            raise
        self.lock = None
        try:
            fill_model_shapes(cfg, collector_env.observation_space, collector_env.action_space)
            policy = create_policy(cfg.policy, model=model, enable_field=["learn", "collect", "eval"])
            policy.check_spaces(
                collector_env.observation_space.shape, *space_info(collector_env.action_space)
            )
            self.policy = policy
            self.lock = claim_run_dir(cfg, self.store, self.resumed, policy.learn_mode.state_dict())
            self._build_workers(collector_env, evaluator_env, on_policy)
        except BaseException:  # the folder (as it was) and the env processes are free again
            if self.lock is not None:
                self.lock.undo()
            elif resume is None:
                discard_unstarted(cfg.exp_name)
            collector_env.close()
            evaluator_env.close()
            raise
        self.train_rounds = int(cfg.policy.learn.get("update_per_collect") or 1)
        self._schedule: CheckpointSchedule | None = None
        self.last_checkpoint: Checkpoint | None = None
        self.checkpoints_saved = 0

    def _build_workers(self, collector_env: Any, evaluator_env: Any, on_policy: bool) -> None:
        cfg, policy = self.cfg, self.policy
        collector_cfg = cfg.policy.collect.collector
        buffer_cfg = cfg.policy.other.get("replay_buffer") or {}
        # the learner side takes an episode collector's train samples, unless a buffer of episodes
        # stores them whole
        if collector_cfg.type == "episode" and (on_policy or buffer_cfg.get("type") != "episode"):
            collector_cfg.get_train_sample = True
        self.tb_logger = events_writer(cfg.exp_name, "serial")
        log_config(self.tb_logger, cfg)
        self.learner = BaseLearner(
            cfg.policy.learn.learner, policy.learn_mode, self.tb_logger, exp_name=cfg.exp_name
        )
        self.collector = create_serial_collector(
            collector_cfg,
            env=collector_env,
            policy=policy.collect_mode,
            tb_logger=self.tb_logger,
            exp_name=cfg.exp_name,
        )
        self.evaluator = InteractionSerialEvaluator(
            cfg.policy.eval.evaluator, evaluator_env, policy.eval_mode, self.tb_logger, exp_name=cfg.exp_name
        )
        self.evaluator.save_ckpt_fn = self.learner.save_checkpoint  # ckpt_best.pth.tar
        self.buffer: Any = None
        if not on_policy:  # part of every run checkpoint (with checkpoint.save_buffer)
            self.buffer = create_buffer(buffer_cfg, tb_logger=self.tb_logger, exp_name=cfg.exp_name)
        self.frames = FrameBlocks(self.store)  # a pixel buffer's frames, saved incrementally

    # ----- the stages of running here --------------------------------------------------------------
    def monitor(self) -> Callable:
        """Keeps the latest context for the run's checkpoints and ``result.json``; the learner's,
        collector's and evaluator's own loggers write the logs and TensorBoard scalars."""

        def _monitor(ctx: OnlineRLContext) -> None:
            self.ctx = ctx

        return _monitor

    def checkpoint(self) -> Callable:
        """A run checkpoint every ``checkpoint.freq`` learner iterations or ``checkpoint.every_s``.

        Reads ctx: train_iter, env_step, env_episode, last_eval_iter, last_eval_value.
        """

        def _checkpoint(ctx: OnlineRLContext) -> None:
            self.ctx = ctx
            if self._schedule is not None and self._schedule.due(ctx.train_iter):
                self.save_checkpoint()
                self._schedule.done(ctx.train_iter)

        return _checkpoint

    def wait(self) -> Callable:
        """Nothing to wait for: every call returned its result."""

        def _wait(ctx: OnlineRLContext) -> None:
            pass

        return _wait

    # ----- run checkpoints -------------------------------------------------------------------------
    def __enter__(self) -> SerialRun:
        """before_run hooks, then a resumed run's state (or a learner hook's checkpoint's counters)."""
        super().__enter__()
        try:
            self.learner.call_hook("before_run")
            if self.resume_training:
                self.collector.envstep = self.learner.collector_envstep
            if self.resumed is not None:
                self.restore(self.resumed)
        except BaseException:  # not started: nothing of this run stays (a resumed folder as it was)
            self.abandon()
            raise
        self._schedule = CheckpointSchedule(self.cfg.checkpoint, self.learner.train_iter)
        return self

    def context(self) -> OnlineRLContext:
        ctx = super().context()
        ctx.env_step, ctx.env_episode = self.collector.envstep, self.collector.envepisode
        ctx.train_iter = self.learner.train_iter
        return ctx

    def save_checkpoint(self) -> Checkpoint:
        """Write a run checkpoint of everything the run holds now."""
        learner = self.learner
        folder = self.store.folder(learner.train_iter)
        learner.collector_envstep = self.collector.envstep
        try:
            files = {LEARNER_FILE: self.store.write(folder, LEARNER_FILE, learner_bytes(learner))}
            meta = self.counters()
            if self.buffer is not None and self.cfg.checkpoint.save_buffer:
                data = buffer_bytes(self.buffer, self.frames)
                files[BUFFER_FILE] = self.store.write(folder, BUFFER_FILE, data)
                meta["frame_blocks"] = self.frames.referenced()
        except StorageError:
            self.store.abandon(folder)
            raise
        self.last_checkpoint = self.store.commit(folder, files, meta)
        self.checkpoints_saved += 1
        return self.last_checkpoint

    def restore(self, ckpt: Checkpoint) -> None:
        """Put the run back where ``ckpt`` left it (the envs start new episodes)."""
        state = load_learner_bytes(self.store.read(ckpt, LEARNER_FILE), f"{ckpt.folder}/{LEARNER_FILE}")
        restore_learner(self.learner, state)
        self.collector.envstep = state["envstep"]
        self.collector.envepisode = ckpt.meta.get("episodes", 0)
        evaluator = ckpt.meta.get("evaluator", {})
        self.evaluator.restore(evaluator.get("best_return"), evaluator.get("last_eval_iter", -1))
        if self.buffer is not None and ckpt.has_buffer:
            load_buffer_bytes(self.buffer, self.store.read(ckpt, BUFFER_FILE), self.frames)
        logger.info(
            "resumed %s at iteration %d, %d env steps%s",
            ckpt.folder,
            state["train_iter"],
            state["envstep"],
            f", {self.buffer.count()} buffered transitions" if self.buffer is not None else "",
        )

    # ----- the end of the run --------------------------------------------------------------------
    def best_return(self) -> float:
        return self.evaluator.best_return

    def stopped(self) -> bool:
        return bool(self.ctx.eval_output.get("stop"))

    def save_last(self, error: BaseException | None) -> Checkpoint:
        """after_run hooks (a clean end) and a last run checkpoint."""
        if error is None:
            self.learner.call_hook("after_run")
        ckpt = self.save_checkpoint()
        if error is not None:
            logger.warning("interrupted: saved %s; resume=%r goes on", ckpt.folder, self.cfg.exp_name)
        return ckpt

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(checkpoints_saved=self.checkpoints_saved)
        if self.last_checkpoint is not None:
            out["last_checkpoint"] = self.last_checkpoint.folder
        return out

    def close(self) -> None:
        closers = [self.collector.close, self.evaluator.close, self.learner.close]
        if self.buffer is not None:
            closers.append(self.buffer.close)
        try:
            for close in closers:
                close()
        finally:
            self.lock.release()
            self.tb_logger.close()
