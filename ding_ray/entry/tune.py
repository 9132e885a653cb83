"""Ray Tune over the serial pipelines: one trial is one serial run, reporting each evaluation.

A trial takes its hyperparameters as dotted keys of the config (``{"policy.nstep": 3}``), runs
the same loop as ``serial_pipeline`` (or ``serial_pipeline_onpolicy`` for on-policy configs) in
its Ray worker, and calls ``tune.report`` after every evaluation with ``eval_return``,
``env_step`` and ``train_iter``, so Tune's schedulers can stop a weak trial early.

Needs the ``tune`` extra (``pip install 'ding_ray[tune]'``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from easydict import EasyDict

from ding_ray.config.compile import split_input_cfg
from ding_ray.config.merge import set_dotted
from ding_ray.errors import ConfigError, DingRayError


def _import_tune() -> Any:
    try:
        from ray import tune
    except ImportError as err:
        raise DingRayError(
            f"Ray Tune is not installed ({err}); install the extra: pip install 'ding_ray[tune]'."
        ) from err
    return tune


def resolve_input(config: str | tuple[Mapping, Mapping]) -> tuple[EasyDict, EasyDict]:
    """``(main_config, create_config)`` of a bundled config name, a config file or a pair."""
    if isinstance(config, str) and not config.endswith((".py", ".json")) and os.sep not in config:
        from ding_ray.configs import load_config

        bundled = load_config(config)
        return bundled.main_config, bundled.create_config
    return split_input_cfg(config)  # fresh copies


def apply_dotted(main_cfg: dict, create_cfg: dict, overrides: Mapping[str, Any]) -> None:
    """Set each ``"a.b.c": value`` of ``overrides`` (``ding_ray.config.merge.set_dotted``)."""
    for key, value in overrides.items():
        # Tune samples numpy scalars; the config and its JSON copy want plain Python numbers
        plain = value.item() if hasattr(value, "item") and callable(value.item) else value
        try:
            set_dotted(main_cfg, create_cfg, key, plain)
        except ConfigError as err:
            raise ConfigError(f"Tune parameter {err}") from err


def serial_trainable(
    config: dict,
    input_cfg: str | tuple[Mapping, Mapping] = "cartpole_dqn",
    seed: int = 0,
    max_env_step: int | None = None,
    max_train_iter: int | None = None,
) -> None:
    """Function trainable for ``tune.Tuner``: one serial run with ``config``'s dotted overrides.

    Bind the fixed arguments with ``tune.with_parameters(serial_trainable, input_cfg=...,
    max_env_step=...)``. The run writes its usual folder (config, TensorBoard, checkpoints,
    ``result.json``) inside the trial's folder.
    """
    from ding_ray.entry.serial_entry import SerialRun
    from ding_ray.entry.serial_entry_onpolicy import is_on_policy
    from ding_ray.rl_utils import get_epsilon_greedy_fn
    from ding_ray.utils.runtime import setup_logging
    from ding_ray.worker import create_buffer

    tune = _import_tune()
    start = time.perf_counter()
    setup_logging()
    main_cfg, create_cfg = resolve_input(input_cfg)
    apply_dotted(main_cfg, create_cfg, config)
    exp_base = os.path.basename(str(main_cfg.get("exp_name") or "default_experiment"))
    main_cfg.exp_name = os.path.join(tune.get_context().get_trial_dir(), exp_base)
    on_policy = is_on_policy(main_cfg, create_cfg)
    run = SerialRun(
        main_cfg,
        create_cfg,
        seed,
        None,
        None,
        True,
        episodes_as_samples=lambda c: on_policy or c.policy.other.replay_buffer.type != "episode",
    )
    cfg, learner, collector, evaluator = run.cfg, run.learner, run.collector, run.evaluator
    if on_policy:
        buffer = None
    else:
        buffer = create_buffer(cfg.policy.other.replay_buffer, tb_logger=run.tb_logger, exp_name=cfg.exp_name)
        run.closers.append(buffer.close)
        eps = cfg.policy.other.get("eps")
        epsilon_greedy = get_epsilon_greedy_fn(eps.start, eps.end, eps.decay, eps.type) if eps else None
        batch_size = learner.policy.get_attribute("batch_size")
        priority = learner.policy.get_attribute("priority")

    run.before_run()
    if buffer is not None and cfg.policy.get("random_collect_size", 0) > 0:
        data = collector.collect(n_sample=cfg.policy.random_collect_size, random_collect=True)
        buffer.push(data, cur_collector_envstep=collector.envstep)
    try:
        while True:
            # SerialRun.evaluate's step, spelled out so that each evaluation is reported
            if evaluator.should_eval(learner.train_iter):
                run.stop, info = evaluator.eval(
                    learner.save_checkpoint, learner.train_iter, collector.envstep
                )
                run.last_eval = float(info["eval_episode_return_mean"])
                tune.report(
                    {
                        "eval_return": run.last_eval,
                        "env_step": collector.envstep,
                        "train_iter": learner.train_iter,
                        "stop_value_reached": bool(run.stop),
                    }
                )
            if run.stop or run.budget_spent(max_train_iter, max_env_step):
                break
            if buffer is None:
                learner.train(collector.collect(train_iter=learner.train_iter), collector.envstep)
                continue
            policy_kwargs = {"eps": epsilon_greedy(collector.envstep)} if epsilon_greedy else {}
            buffer.push(
                collector.collect(train_iter=learner.train_iter, policy_kwargs=policy_kwargs),
                cur_collector_envstep=collector.envstep,
            )
            for _ in range(cfg.policy.learn.update_per_collect):
                train_data = buffer.sample(batch_size, learner.train_iter)
                if train_data is None:
                    break
                learner.train(train_data, collector.envstep)
                if priority:
                    buffer.update(learner.priority_info)
    finally:
        run.finish(start, "serial_onpolicy" if on_policy else "serial")


def tune_pipeline(
    input_cfg: str | tuple[Mapping, Mapping],
    param_space: Mapping[str, Any],
    num_samples: int = 1,
    max_env_step: int | None = None,
    max_train_iter: int | None = None,
    metric: str = "eval_return",
    mode: str = "max",
    storage_path: str | None = None,
    seed: int = 0,
    name: str | None = None,
    cpus_per_trial: float = 1,
    max_concurrent_trials: int | None = None,
) -> Any:
    """Sweep ``param_space`` (dotted config keys -> values or ``tune`` search spaces) with one
    serial run per trial; return Tune's ``ResultGrid`` (``.get_best_result()`` is the best trial
    by the last reported ``metric``).

    ``input_cfg`` is a bundled config name, a config file or ``(main_config, create_config)``;
    ``max_env_step`` defaults to the bundled config's budget. Starts a local Ray unless one is
    already connected.
    """
    tune = _import_tune()
    if not param_space:
        raise ConfigError("param_space is empty: give at least one dotted config key to sweep.")
    if mode not in ("max", "min"):
        raise ConfigError(f"mode must be 'max' or 'min', got {mode!r}.")
    resolve_input(input_cfg)  # a bad name or file fails here, not in every trial
    if max_env_step is None and max_train_iter is None and isinstance(input_cfg, str):
        from ding_ray.configs import list_configs, load_config

        if input_cfg in list_configs():
            max_env_step = load_config(input_cfg).max_env_step
    if max_env_step is None and max_train_iter is None:
        raise ConfigError("Give a budget: max_env_step or max_train_iter (a trial would run until it wins).")
    trainable = tune.with_parameters(
        serial_trainable,
        input_cfg=input_cfg,
        seed=seed,
        max_env_step=max_env_step,
        max_train_iter=max_train_iter,
    )
    trainable = tune.with_resources(trainable, {"cpu": cpus_per_trial})
    run_config = tune.RunConfig(
        name=name,
        storage_path=None if storage_path is None else os.path.abspath(storage_path),
        verbose=0,
    )
    tuner = tune.Tuner(
        trainable,
        param_space=dict(param_space),
        tune_config=tune.TuneConfig(
            metric=metric,
            mode=mode,
            num_samples=num_samples,
            max_concurrent_trials=max_concurrent_trials,
        ),
        run_config=run_config,
    )
    return tuner.fit()
