"""``Algorithm``: one run as an object, step by step, for users of RLlib and Stable-Baselines3.

    algo = ding_ray.Algorithm("cartpole_ppo", mode="serial")   # or mode="ray"
    while not (metrics := algo.train())["done"]:             # one evaluation interval per call
        print(metrics["env_step"], metrics["eval_return"])
    folder = algo.save()                                      # a run checkpoint
    action = algo.act(obs)                                    # the greedy action
    algo.stop()                                               # actors, envs and the folder freed

It is the run ``ding-ray train`` makes (the same config resolution, folder, checkpoints,
``result.json``), held open: the run's ``Task`` runs its stage list a few iterations per ``train``
call instead of to the end. Nothing here trains, evaluates or saves in a way of its own.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Mapping
from typing import Any

from easydict import EasyDict

from ding_ray.errors import ConfigError, DingRayError, StageError

MODES = ("serial", "ray")


class Algorithm:
    """A training run that ``train`` advances one evaluation at a time (see the module docstring).

    Args:
        config: a bundled config's name (``ding-ray list``), a config file, or
            ``(main_config, create_config)``; None with ``resume``.
        mode: ``'serial'`` (one process) or ``'ray'`` (actors); default: the bundled config's, a
            resumed run's, else serial.
        seed, max_env_step, max_train_iter, resume: as ``ding-ray train``'s options (a bundled
            config's budget by default; a resumed run's own seed and budget).
        overrides: config values by dotted key, as ``--set`` takes them
            (``**{"policy.learn.learning_rate": 3e-4}``, ``exp_name="mine"``); a dict value sets the
            keys inside it (``env=dict(stop_value=400)``).
    """

    def __init__(
        self,
        config: str | os.PathLike | tuple[Mapping, Mapping] | None = None,
        mode: str | None = None,
        *,
        seed: int | None = None,
        max_env_step: int | None = None,
        max_train_iter: int | None = None,
        resume: str | os.PathLike | None = None,
        **overrides: Any,
    ) -> None:
        from ding_ray.entry.cli_commands import apply_overrides, settle_run_args
        from ding_ray.utils.runtime import setup_logging

        start = time.perf_counter()
        setup_logging()
        if mode is not None and mode not in MODES:
            raise ConfigError(f"mode must be 'serial' or 'ray', got {mode!r}.")
        resume = None if resume is None else os.fspath(resume)
        main_cfg, create_cfg, defaults = _resolve(config, resume)
        args = argparse.Namespace(
            seed=seed, max_env_step=max_env_step, max_train_iter=max_train_iter, resume=resume
        )
        meta = settle_run_args(args, defaults.get("max_env_step"))
        if resume is not None:  # the run's folder and mode
            main_cfg.exp_name = resume
            defaults["mode"] = "ray" if str(meta.get("pipeline", "")).startswith("ray") else "serial"
        items = _override_items(overrides)
        if resume is None and "exp_name" not in overrides:
            # <name>_seed<N>, as ding-ray train names a run (a run's own config carries a suffix already)
            base = re.sub(r"_seed\d+$", "", str(main_cfg.get("exp_name") or "default_experiment"))
            main_cfg.exp_name = f"{base}_seed{args.seed}"
        apply_overrides(main_cfg, create_cfg, items)
        self.mode = mode or defaults.get("mode", "serial")
        self.seed = args.seed
        self.budget = dict(max_env_step=args.max_env_step, max_train_iter=args.max_train_iter)
        self._started_ray = False
        self._stack = contextlib.ExitStack()
        self._acting: Any = None  # the TrainedPolicy act() uses, and the train_iter of its weights
        self._acting_iter = -1
        self._done = False
        self._fresh = True  # no train() call ran an iteration yet
        self.run = self._make_run(main_cfg, create_cfg, resume, start)
        try:
            self._stack.enter_context(self.run)
            self.task = self._stack.enter_context(self.run.task())
            from ding_ray.framework import pipelines

            stages = pipelines.on_policy if self.run.on_policy else pipelines.off_policy
            stages(self.task, self.run.cfg, self.run, *self.budget.values())
        except BaseException:
            self._end(*sys.exc_info())
            raise

    def _make_run(self, main_cfg: EasyDict, create_cfg: EasyDict, resume: str | None, start: float) -> Any:
        """The ``SerialRun`` or ``RayRun`` that ``ding-ray train`` would run."""
        max_env_step, max_train_iter = self.budget.values()
        if self.mode == "ray":
            from ding_ray import distributed

            cfg, plan, self._started_ray = distributed.start_run(
                (main_cfg, create_cfg), self.seed, resume=resume
            )
            try:
                return distributed.RayRun(
                    cfg, plan, max_env_step, started_at=start, resume=resume, max_train_iter=max_train_iter
                )
            except BaseException:
                self._shutdown_ray()
                raise
        from ding_ray.entry.serial_entry import SerialRun
        from ding_ray.entry.serial_entry_onpolicy import is_on_policy

        on_policy = is_on_policy(main_cfg, create_cfg)
        run = SerialRun(main_cfg, create_cfg, self.seed, None, None, True, on_policy, resume, start_at=start)
        run.budget = dict(self.budget)
        warm_up = int(run.cfg.policy.get("random_collect_size") or 0)
        key = "policy.random_collect_size"
        run.warn_short_budget(warm_up, f"{key}={warm_up}", key)
        return run

    # ----- training ---------------------------------------------------------------------------------
    def train(self) -> dict[str, Any]:
        """Run the pipeline until its next evaluation is in (or the run ends); return the metrics:
        ``env_step``, ``train_iter``, ``eval_return`` (the latest evaluation's mean return),
        ``best_eval_return``, ``evaluated`` (an evaluation came in during this call),
        ``stop_value_reached``, ``done`` (the stop value or the budget ended the run: later calls
        return at once), ``iterations`` (pipeline iterations run), ``time_s`` and the learner's
        outputs averaged over the call (``learner/<name>``, e.g. ``learner/total_loss``)."""
        self._check_open()
        start, iterations, evaluated = time.perf_counter(), 0, False
        outputs: list[Mapping] = []
        try:
            while not self._done:
                steps = self.task.ctx.total_step
                self.task.run(max_step=1)
                ctx = self.task.ctx
                # no iteration ran: a stage ended the task for good (the first one starts at step 0)
                ran = ctx.total_step > steps or self._fresh
                self._fresh = False
                iterations += int(ran)
                self.run.ctx = ctx
                outputs += _as_list(ctx.train_output)
                evaluated = evaluated or bool(ctx.eval_output)
                self._done = self._ended() or not ran
                if ctx.eval_output:
                    break
        except StageError as err:
            # as the serial entries raise them: ding_ray's own errors (a bad env, a wrong shape) as
            # they are, the stage named in a note
            if isinstance(err.__cause__, DingRayError):
                err.__cause__.add_note(str(err).split(":", 1)[0])
                self._end(type(err.__cause__), err.__cause__, err.__cause__.__traceback__)
                raise err.__cause__ from None
            self._end(*sys.exc_info())
            raise
        except BaseException:
            self._end(*sys.exc_info())
            raise
        metrics = self._metrics()
        metrics.update(evaluated=evaluated, iterations=iterations, time_s=time.perf_counter() - start)
        metrics.update(_mean_outputs(outputs))
        return metrics

    def _ended(self) -> bool:
        from ding_ray.framework.middleware.control import budget_spent

        if self.run.stopped():
            return True
        return budget_spent(self.task.ctx, *self.budget.values()) is not None

    def _metrics(self) -> dict[str, Any]:
        from ding_ray.utils.result import finite_or_none

        ctx = self.task.ctx
        return dict(
            env_step=int(ctx.env_step),
            train_iter=int(ctx.train_iter),
            eval_return=self.run.last_eval_return(),
            best_eval_return=finite_or_none(self.run.best_return()),
            stop_value_reached=bool(self.run.stopped()),
            done=self._done,
        )

    # ----- evaluating and acting ----------------------------------------------------------------
    def evaluate(self) -> dict[str, Any]:
        """Evaluate the current weights now, as ``ding-ray eval`` does (``env.n_evaluator_episode``
        episodes, the run's seed; logs under ``<run>/eval``); ``eval_return`` is their mean."""
        from ding_ray.entry.eval_entry import eval as eval_entry

        self._check_open()
        cfg = EasyDict(copy.deepcopy(dict(self.run.cfg)))
        cfg.exp_name = os.path.join(self.run.cfg.exp_name, "eval")
        cfg.policy.cuda = False
        mean = eval_entry((cfg, EasyDict()), seed=self.run.cfg.seed, state_dict=self._learn_state())
        ctx = self.task.ctx
        return dict(eval_return=mean, env_step=int(ctx.env_step), train_iter=int(ctx.train_iter))

    def act(self, obs: Any) -> Any:
        """The greedy action (the eval mode's) of the current weights for one observation (an int,
        or an array for continuous actions), or for a batch ``(B, *obs_shape)``: what
        ``ding_ray.load_policy(...).act`` gives for a checkpoint of them."""
        from ding_ray.entry.trained_policy import load_weights_of

        self._check_open()
        train_iter = int(self.task.ctx.train_iter)
        if self._acting is None:
            self._acting = self._load_acting_policy()
        elif train_iter != self._acting_iter:
            policy_type = self.run.cfg.policy.type
            load_weights_of(
                self._acting.policy.eval_mode, self._learn_state(), "the run's learner", policy_type
            )
        self._acting_iter = train_iter
        return self._acting.act(obs)

    def _load_acting_policy(self) -> Any:
        """``load_policy`` of the current weights (its config, shapes and action scaling)."""
        import torch

        from ding_ray.entry.trained_policy import load_policy

        cfg = EasyDict(copy.deepcopy(dict(self.run.cfg)))
        with tempfile.TemporaryDirectory(prefix="ding_ray_act_") as folder:
            path = os.path.join(folder, "policy.pth.tar")
            torch.save(self._learn_state(), path)
            return load_policy(path, config=(cfg, EasyDict()))

    def _learn_state(self) -> dict[str, Any]:
        """The learner's state now (model, target model, optimizer)."""
        if self.mode == "ray":
            from ding_ray.distributed.actors import CORE_ACTORS

            ref = self.run.actors.learner.state_dict.remote()
            return self.run.supervisor.get(ref, CORE_ACTORS)
        return self.run.policy.learn_mode.state_dict()

    # ----- checkpoints ------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike | None = None) -> str:
        """Write a run checkpoint now; return its folder (``<run>/checkpoints/iter_N``). With
        ``path``, the checkpoint is also copied there, whole (as Ray Tune keeps one), and ``path``
        is returned. ``Algorithm.from_checkpoint`` takes either."""
        self._check_open()
        self.run.ctx = self.task.ctx
        ckpt = self.run.save_checkpoint()
        if ckpt is None:
            raise DingRayError(
                "No checkpoint was written: an actor died while writing it (the log says which). "
                "The run goes on; save again once it is back."
            )
        if path is None:
            return ckpt.folder
        path = os.fspath(path)
        if os.path.exists(path) and os.listdir(path):
            raise ConfigError(f"save: '{path}' is not empty; name a new folder.")
        self.run.store.export(ckpt, path)
        return path

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, mode: str | None = None, **kwargs: Any) -> Algorithm:
        """An Algorithm that goes on from a checkpoint, as ``resume=`` does.

        ``path`` is a run folder (the run goes on in it, from its latest checkpoint: stop the
        Algorithm that runs there first), or one checkpoint folder as ``save`` returns it (copied
        into a new run folder ``<exp_name>_iter<N>``, which goes on from it). ``kwargs`` as for
        ``Algorithm`` (a larger ``max_env_step``, overrides)."""
        from ding_ray.utils.checkpoint import META_FILE

        path = os.fspath(path)
        if os.path.isfile(os.path.join(path, META_FILE)):
            path = _run_of_checkpoint(path)
        return cls(None, mode=mode, resume=path, **kwargs)

    # ----- the end ------------------------------------------------------------------------------------
    def stop(self) -> None:
        """End the run as ``ding-ray train`` ends one (a last checkpoint, ``result.json``), and free
        its actors, envs and folder. Calling it again does nothing."""
        self._end(None, None, None)

    def _end(self, *exc_info: Any) -> None:
        stack, self._stack = self._stack, None
        if stack is None:
            return
        try:
            stack.__exit__(*exc_info)
        finally:
            self._shutdown_ray()

    def _shutdown_ray(self) -> None:
        if self._started_ray:
            import ray

            ray.shutdown()
            self._started_ray = False

    def _check_open(self) -> None:
        if self._stack is None:
            raise DingRayError(
                "This Algorithm is stopped; Algorithm.from_checkpoint(<its run folder>) goes on from "
                "its last checkpoint."
            )

    def __enter__(self) -> Algorithm:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._end(*exc_info)

    def __repr__(self) -> str:
        state = "stopped" if self._stack is None else ("done" if self._done else "running")
        return f"Algorithm({self.run.cfg.exp_name!r}, mode={self.mode!r}, {state})"


def _resolve(config: Any, resume: str | None) -> tuple[EasyDict, EasyDict, dict[str, Any]]:
    """``(main_config, create_config, defaults)`` as ``ding-ray train`` resolves its CONFIG."""
    from ding_ray.config.compile import split_input_cfg
    from ding_ray.entry.cli_commands import resolve_config

    if config is None:
        if resume is None:
            raise ConfigError("Algorithm needs a config (a bundled name, a file or a pair), or resume=.")
        from ding_ray.distributed.config import CPU_SHARES
        from ding_ray.utils.resume import resume_config

        # the CPU shares the run was fitted to are no choice of this one (ding-ray train drops them too)
        main_cfg = resume_config(resume)
        for key in CPU_SHARES:
            main_cfg.get("ray", {}).pop(key, None)
        return main_cfg, EasyDict(), {}
    if isinstance(config, (str, os.PathLike)):
        return resolve_config(os.fspath(config))
    main_cfg, create_cfg = split_input_cfg(config)
    return main_cfg, create_cfg, {}


def _override_items(overrides: Mapping[str, Any], prefix: str = "") -> list[str]:
    """``--set`` items (``key.path=value``) of keyword overrides; a dict value stands for its keys."""
    import ast

    items = []
    for key, value in overrides.items():
        if isinstance(value, Mapping) and value:
            items += _override_items(value, f"{prefix}{key}.")
            continue
        plain = value.item() if hasattr(value, "item") and callable(value.item) else value  # numpy scalars
        text = repr(plain)
        try:
            same = ast.literal_eval(text) == plain
        except (ValueError, SyntaxError):
            same = False
        if not same:
            raise ConfigError(
                f"Override {prefix}{key}={text}: values are Python literals (numbers, strings, lists, "
                "dicts, True/False/None), as for ding-ray train --set."
            )
        items.append(f"{prefix}{key}={text}")
    return items


def _run_of_checkpoint(folder: str) -> str:
    """A new run folder holding the checkpoint in ``folder`` (``<exp_name>_iter<N>``)."""
    from ding_ray.config.as_data import config_as_data
    from ding_ray.utils.checkpoint import META_FILE, CheckpointStore
    from ding_ray.utils.resume import CONFIG_FILE
    from ding_ray.utils.run_dir import make_run_dir, save_config

    with open(os.path.join(folder, META_FILE)) as f:
        meta = json.load(f)
    config = config_as_data(meta.get("config") or {}, os.path.join(folder, META_FILE))
    run_dir = make_run_dir(f"{config.get('exp_name') or 'default_experiment'}_iter{meta['train_iter']}")
    CheckpointStore(run_dir).import_checkpoint(folder)
    save_config(config, os.path.join(run_dir, CONFIG_FILE))
    return run_dir


def _as_list(train_output: Any) -> list[Mapping]:
    if isinstance(train_output, Mapping):
        return [train_output]
    if isinstance(train_output, (list, tuple)):
        return [o for o in train_output if isinstance(o, Mapping)]
    return []


def _mean_outputs(outputs: list[Mapping]) -> dict[str, float]:
    """The learner's scalar outputs (losses, learning rate, ...) averaged, as ``learner/<name>``."""
    sums: dict[str, list[float]] = {}
    for output in outputs:
        for name, value in output.items():
            if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
                value = value.item()
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                sums.setdefault(f"learner/{name}", []).append(float(value))
    return {key: sum(values) / len(values) for key, values in sums.items()}
