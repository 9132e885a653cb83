"""``serial_pipeline``: collect, train and evaluate in one process, without Ray."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from easydict import EasyDict
from tensorboardX import SummaryWriter

from ding_ray.config import compile_config
from ding_ray.config.compile import split_input_cfg
from ding_ray.envs import create_env_manager, get_vec_env_setting, space_info
from ding_ray.errors import ConfigError
from ding_ray.policy import create_policy
from ding_ray.rl_utils import get_epsilon_greedy_fn
from ding_ray.utils.checkpoint import (
    BUFFER_FILE,
    LEARNER_FILE,
    Checkpoint,
    CheckpointSchedule,
    buffer_bytes,
    learner_bytes,
    load_buffer_bytes,
    load_learner_bytes,
    restore_learner,
)
from ding_ray.utils.registry import POLICY_REGISTRY
from ding_ray.utils.result import end_of_run, finite_or_none, log_config, write_result
from ding_ray.utils.resume import checkpoint_store, claim_run_dir
from ding_ray.utils.runtime import set_pkg_seed, set_torch_threads, setup_logging, sigterm_as_interrupt
from ding_ray.worker import (
    BaseLearner,
    InteractionSerialEvaluator,
    create_buffer,
    create_serial_collector,
)

logger = logging.getLogger(__name__)


def fill_model_shapes(cfg: EasyDict, observation_space: Any, action_space: Any) -> None:
    """Take ``obs_shape`` / ``action_shape`` from the env when the config leaves them out, and
    check that a policy whose actions lie in [-1, 1] can reach the whole of the env's action range."""
    model = cfg.policy.model
    if model.get("obs_shape") is None:
        shape = tuple(observation_space.shape)
        model.obs_shape = shape[0] if len(shape) == 1 else list(shape)
        logger.info("policy.model.obs_shape=%s, from the env's observations", model.obs_shape)
    if model.get("action_shape") is None:
        model.action_shape = space_info(action_space)[1]
        logger.info("policy.model.action_shape=%s, from the env's actions", model.action_shape)
    _check_action_scale(cfg, action_space)


def _check_action_scale(cfg: EasyDict, action_space: Any) -> None:
    squashed = getattr(POLICY_REGISTRY.get(cfg.policy.type), "squashed_actions", False)
    if not squashed or cfg.env.get("act_scale") or not isinstance(action_space, gym.spaces.Box):
        return
    if np.any(action_space.low != -1.0) or np.any(action_space.high != 1.0):
        raise ConfigError(
            f"policy '{cfg.policy.type}' acts in [-1, 1] but the env's actions range over "
            f"[{action_space.low.min()}, {action_space.high.max()}]: set env.act_scale=True to map "
            "[-1, 1] onto the env's bounds (dizoo's configs do), or the policy never uses the rest."
        )


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
    # A buffer of transitions takes an episode collector's train samples, not whole episodes.
    run = SerialRun(
        main_cfg,
        create_cfg,
        seed,
        env_setting,
        model,
        dynamic_seed,
        episodes_as_samples=lambda cfg: cfg.policy.other.replay_buffer.type != "episode",
        resume=resume,
    )
    train_off_policy(run, start, max_train_iter, max_env_step)
    return run.policy


def train_off_policy(
    run: SerialRun, start: float, max_train_iter: int | None = None, max_env_step: int | None = None
) -> None:
    """``serial_pipeline``'s loop on a built ``SerialRun``: collect, push to the replay buffer,
    sample and train ``update_per_collect`` times, evaluate when due, checkpoint when due."""
    cfg, learner, collector = run.cfg, run.learner, run.collector
    replay_buffer = run.buffer = create_buffer(
        cfg.policy.other.replay_buffer, tb_logger=run.tb_logger, exp_name=cfg.exp_name
    )
    run.closers.append(replay_buffer.close)
    eps = cfg.policy.other.get("eps")
    epsilon_greedy = get_epsilon_greedy_fn(eps.start, eps.end, eps.decay, eps.type) if eps else None
    batch_size = learner.policy.get_attribute("batch_size")
    priority = learner.policy.get_attribute("priority")

    with run.running(start, "serial", dict(max_env_step=max_env_step, max_train_iter=max_train_iter)):
        if cfg.policy.get("random_collect_size", 0) > 0 and run.resumed is None:
            data = collector.collect(n_sample=cfg.policy.random_collect_size, random_collect=True)
            replay_buffer.push(data, cur_collector_envstep=collector.envstep)

        while not run.evaluate() and not run.budget_spent(max_train_iter, max_env_step):
            policy_kwargs = {"eps": epsilon_greedy(collector.envstep)} if epsilon_greedy else {}
            new_data = collector.collect(train_iter=learner.train_iter, policy_kwargs=policy_kwargs)
            replay_buffer.push(new_data, cur_collector_envstep=collector.envstep)
            for _ in range(cfg.policy.learn.update_per_collect):
                train_data = replay_buffer.sample(batch_size, learner.train_iter)
                if train_data is None:
                    break
                learner.train(train_data, collector.envstep)
                if priority:
                    replay_buffer.update(learner.priority_info)
            run.checkpoint_if_due()


class SerialRun:
    """What both serial entries share: the compiled config, envs, policy, learner, collector and
    evaluator built as DI-engine's entries build them, the evaluation step, run checkpoints
    (``resume=``), and the end of a run (after_run hooks, ``result.json``, closing)."""

    def __init__(
        self,
        main_cfg: EasyDict,
        create_cfg: EasyDict,
        seed: int,
        env_setting: Any,
        model: torch.nn.Module | None,
        dynamic_seed: bool,
        episodes_as_samples: Any,
        resume: str | None = None,
    ) -> None:
        """``episodes_as_samples(cfg)``: whether an episode collector hands the learner side the
        episodes' train samples (not the episodes). ``resume``: the folder of a run to continue."""
        learn = (main_cfg.get("policy") or {}).get("learn")  # not a dict: compile_config says so
        self.resume_training = isinstance(learn, Mapping) and bool(learn.get("resume_training", False))
        if resume is not None:  # the same folder: logs, checkpoints and result.json go on there
            main_cfg = EasyDict({**main_cfg, "exp_name": os.fspath(resume)})
        cfg = compile_config(
            main_cfg,
            seed=seed,
            env=None if env_setting is None else check_env_setting(env_setting)[0],
            auto=True,
            create_cfg=create_cfg,
            save_cfg=resume is None,  # a resumed run writes its config once every check passed
            renew_dir=not (self.resume_training or resume is not None),
        )
        self.store, self.resumed = checkpoint_store(cfg, resume)  # reads only
        set_torch_threads(cfg.policy.learn.get("num_threads", 1))
        set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
        collector_env, evaluator_env = build_envs(cfg, dynamic_seed, env_setting)
        self.lock = None
        try:
            fill_model_shapes(cfg, collector_env.observation_space, collector_env.action_space)
            policy = create_policy(cfg.policy, model=model, enable_field=["learn", "collect", "eval"])
            policy.check_spaces(
                collector_env.observation_space.shape, *space_info(collector_env.action_space)
            )
            self.cfg, self.policy = cfg, policy
            self.lock = claim_run_dir(cfg, self.store, self.resumed, policy.learn_mode.state_dict())
            self._build_workers(collector_env, evaluator_env, episodes_as_samples)
        except BaseException:  # the folder and the env processes are free again
            if self.lock is not None:
                self.lock.release()
            collector_env.close()
            evaluator_env.close()
            raise
        self.buffer: Any = None  # the off-policy entry's replay buffer: part of every checkpoint
        self.closers = [self.collector.close, self.evaluator.close, self.learner.close, self.lock.release]
        self.stop, self.last_eval = False, None
        self.on_eval: Callable[[dict], None] | None = None  # called with each evaluation's info (Tune)
        self._schedule: CheckpointSchedule | None = None
        self.last_checkpoint: Checkpoint | None = None
        self.checkpoints_saved = 0
        self.budget: dict[str, int | None] = {}  # max_env_step and max_train_iter: a resume keeps them

    def _build_workers(self, collector_env: Any, evaluator_env: Any, episodes_as_samples: Any) -> None:
        cfg, policy = self.cfg, self.policy
        collector_cfg = cfg.policy.collect.collector
        if collector_cfg.type == "episode" and episodes_as_samples(cfg):
            collector_cfg.get_train_sample = True
        self.tb_logger = SummaryWriter(os.path.join(cfg.exp_name, "log", "serial"))
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

    @contextlib.contextmanager
    def running(self, start: float, pipeline: str, budget: dict | None = None) -> Iterator[None]:
        """Around the training loop: before_run hooks and the checkpoint to resume from first; at
        the end ``finish``. Ctrl-C or SIGTERM saves a checkpoint and ``result.json`` with the error,
        then the interrupt goes on; any other error is recorded in ``result.json`` too. ``budget``
        (``max_env_step``, ``max_train_iter``) goes into the checkpoints: a resume keeps it."""
        self.learner.call_hook("before_run")
        if self.resume_training:
            self.collector.envstep = self.learner.collector_envstep
        if self.resumed is not None:
            self.restore(self.resumed)
        self.budget = dict(budget or {})
        self._schedule = CheckpointSchedule(self.cfg.checkpoint, self.learner.train_iter)
        try:
            with sigterm_as_interrupt():
                yield
        except KeyboardInterrupt as err:
            self.finish(start, pipeline, error=err, save=True)
            raise
        except Exception as err:
            self.finish(start, pipeline, error=err)
            raise
        self.finish(start, pipeline)

    def evaluate(self) -> bool:
        """Evaluate when due; True once the stop value is reached."""
        learner, collector = self.learner, self.collector
        if self.evaluator.should_eval(learner.train_iter):
            self.stop, info = self.evaluator.eval(
                learner.save_checkpoint, learner.train_iter, collector.envstep
            )
            self.last_eval = info["eval_episode_return_mean"]
            if self.on_eval is not None:
                self.on_eval(info)
        return self.stop

    def budget_spent(self, max_train_iter: int | None, max_env_step: int | None) -> bool:
        return _budget_spent(self.learner.train_iter, self.collector.envstep, max_train_iter, max_env_step)

    # ----- run checkpoints -------------------------------------------------------------------------
    def checkpoint_if_due(self) -> None:
        if self._schedule is not None and self._schedule.due(self.learner.train_iter):
            self.checkpoint()
            self._schedule.done(self.learner.train_iter)

    def checkpoint(self) -> Checkpoint:
        """Write a run checkpoint of everything the loop holds now."""
        learner, collector, evaluator = self.learner, self.collector, self.evaluator
        folder = self.store.folder(learner.train_iter)
        learner.collector_envstep = collector.envstep
        files = {LEARNER_FILE: self.store.write(folder, LEARNER_FILE, learner_bytes(learner))}
        if self.buffer is not None and self.cfg.checkpoint.save_buffer:
            files[BUFFER_FILE] = self.store.write(folder, BUFFER_FILE, buffer_bytes(self.buffer))
        meta = dict(
            train_iter=learner.train_iter,
            env_steps=collector.envstep,
            episodes=collector.envepisode,
            evaluator=dict(
                best_return=finite_or_none(evaluator.best_return), last_eval_iter=evaluator.last_eval_iter
            ),
            last_eval_return=self.last_eval,
            pipeline="serial",
            budget=self.budget,
            config=self.cfg,
        )
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
        self.last_eval = ckpt.meta.get("last_eval_return")
        if self.buffer is not None and ckpt.has_buffer:
            load_buffer_bytes(self.buffer, self.store.read(ckpt, BUFFER_FILE))
        logging.getLogger(__name__).info(
            "resumed %s at iteration %d, %d env steps%s",
            ckpt.folder,
            state["train_iter"],
            state["envstep"],
            f", {self.buffer.count()} buffered transitions" if self.buffer is not None else "",
        )

    def finish(
        self, start: float, pipeline: str, error: BaseException | None = None, save: bool | None = None
    ) -> None:
        """after_run hooks and a last run checkpoint (after a clean end, or with ``save`` after
        Ctrl-C/SIGTERM), ``result.json`` whatever happens (also when that checkpoint cannot be
        written), then close everything."""

        def save_last() -> None:
            if error is None:
                self.learner.call_hook("after_run")
            folder = self.checkpoint().folder
            if error is not None:
                logging.getLogger(__name__).warning(
                    "interrupted: saved %s; resume=%r goes on", folder, self.cfg.exp_name
                )

        try:
            end_of_run(
                save_last if save or error is None else None,
                partial(self._write_result, start, pipeline),
                error,
            )
        finally:
            for close in self.closers:
                close()
            self.tb_logger.close()

    def _write_result(self, start: float, pipeline: str, error: BaseException | None) -> None:
        extra = {} if error is None else {"error": f"{type(error).__name__}: {error}"}
        if self.resumed is not None:
            extra["resumed_from"] = self.resumed.folder
        if self.last_checkpoint is not None:
            extra["last_checkpoint"] = self.last_checkpoint.folder
        before = {} if self.resumed is None else self.resumed.meta  # rates count this process's work
        write_result(
            self.cfg.exp_name,
            env_steps=self.collector.envstep,
            train_iter=self.learner.train_iter,
            best_eval_return=self.evaluator.best_return,
            last_eval_return=self.last_eval,
            stop=self.stop,
            wall_s=time.perf_counter() - start,
            env_steps_before=int(before.get("env_steps", 0)),
            train_iter_before=int(before.get("train_iter", 0)),
            seed=self.cfg.seed,
            pipeline=pipeline,
            checkpoints_saved=self.checkpoints_saved,
            **extra,
        )


def _budget_spent(
    train_iter: int, envstep: int, max_train_iter: int | None, max_env_step: int | None
) -> bool:
    return (max_train_iter is not None and train_iter >= max_train_iter) or (
        max_env_step is not None and envstep >= max_env_step
    )
