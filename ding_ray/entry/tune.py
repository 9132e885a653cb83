"""Ray Tune over the serial pipelines: one trial is one serial run, reporting each evaluation.

A trial takes its hyperparameters as dotted keys of the config (``{"policy.nstep": 3}``), runs
the same loop as ``serial_pipeline`` (or ``serial_pipeline_onpolicy`` for on-policy configs) in
its Ray worker, and calls ``tune.report`` after every evaluation with ``eval_return``,
``env_step`` and ``train_iter``, so Tune's schedulers can stop a weak trial early, and with a
run checkpoint (learner state, counters, replay buffer) that Tune keeps: a restored trial
(``Tuner.restore``, a failed trial retried, PBT) resumes from it, and the best trial's checkpoint
continues as any run does (``resume=``).

Needs the ``tune`` extra (``pip install 'ding_ray[tune]'``).
"""

from __future__ import annotations

import os
import tempfile
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


def _trial_config(tune: Any, config: dict, input_cfg: Any) -> tuple[EasyDict, EasyDict, str]:
    """The trial's ``(main_config, create_config, experiment base name)``: ``config``'s dotted
    overrides applied, the run's folder inside the trial's."""
    main_cfg, create_cfg = resolve_input(input_cfg)
    apply_dotted(main_cfg, create_cfg, config)
    exp_base = os.path.basename(str(main_cfg.get("exp_name") or "default_experiment"))
    main_cfg.exp_name = os.path.join(tune.get_context().get_trial_dir(), exp_base)
    return main_cfg, create_cfg, exp_base


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
    tune = _import_tune()
    main_cfg, create_cfg, _ = _trial_config(tune, config, input_cfg)
    resume = _restore_trial(tune, main_cfg.exp_name)
    budget = dict(seed=seed, max_env_step=max_env_step, max_train_iter=max_train_iter, resume=resume)
    _train_reporting(tune, (main_cfg, create_cfg), "serial", budget)


def ray_trainable(
    config: dict,
    input_cfg: str | tuple[Mapping, Mapping] = "apex_dqn",
    seed: int = 0,
    max_env_step: int | None = None,
    max_train_iter: int | None = None,
) -> None:
    """Function trainable for ``tune.Tuner``: one ``ray_pipeline`` run with ``config``'s dotted
    overrides, its actors in a namespace of the trial's own. Reports each evaluation as it comes
    back from the evaluator actor, with a run checkpoint (as ``serial_trainable``)."""
    tune = _import_tune()
    main_cfg, create_cfg, exp_base = _trial_config(tune, config, input_cfg)
    # the actors go into the trial's placement group (ray_trial_resources), which Tune already placed
    main_cfg.setdefault("ray", EasyDict()).update(
        namespace=f"{exp_base}_{tune.get_context().get_trial_id()}",
        progress_bar=False,
        check_resources=False,
        collector_scheduling="DEFAULT",
    )
    resume = _restore_trial(tune, main_cfg.exp_name)
    budget = dict(seed=seed, max_env_step=max_env_step, max_train_iter=max_train_iter, resume=resume)
    _train_reporting(tune, (main_cfg, create_cfg), "ray", budget)


def _train_reporting(tune: Any, input_cfg: tuple[EasyDict, EasyDict], mode: str, budget: dict) -> None:
    """Train an ``Algorithm`` to its end, reporting each evaluation (a ``train()`` call ends at
    one) to Tune with a run checkpoint that Tune keeps (a trial that Tune restores, e.g. after a
    failure or for PBT, goes on from it)."""
    from ding_ray.algorithm import Algorithm

    # exp_name as given: the run's folder is the trial's own, where _restore_trial looks
    with Algorithm(input_cfg, mode, exp_name=input_cfg[0].exp_name, **budget) as algo:
        while True:
            metrics = algo.train()
            if metrics["evaluated"]:
                report = {key: metrics[key] for key in REPORTED}
                report.update({k: v for k, v in metrics.items() if k.startswith("learner/")})
                with tempfile.TemporaryDirectory(prefix="ding_ray_tune_") as staged:  # Tune copies it
                    try:
                        algo.save(staged)  # the checkpoint with the frame blocks it names
                    except DingRayError:  # an actor died while writing it: the report goes without
                        tune.report(report)
                    else:
                        tune.report(report, checkpoint=tune.Checkpoint.from_directory(staged))
            if metrics["done"]:
                break


REPORTED = ("eval_return", "env_step", "train_iter", "stop_value_reached")  # and the learner's outputs


def ray_trial_resources(input_cfg: str | tuple[Mapping, Mapping], cpus_per_trial: float) -> Any:
    """Tune's resources of a ``ray_trainable`` trial: a placement group with a bundle for its
    driver and one per actor of the trial's config (so a sweep over ``ray.num_collectors`` asks
    for what each trial needs)."""
    from ding_ray.distributed.config import RayConfig
    from ding_ray.distributed.placement import actor_demands

    tune = _import_tune()

    def resources(config: dict) -> Any:
        main_cfg, create_cfg = resolve_input(input_cfg)
        apply_dotted(main_cfg, create_cfg, config)
        ray_cfg = RayConfig.default_config()
        ray_cfg.update(main_cfg.get("ray") or {})
        bundles = [{"CPU": cpus_per_trial}] + [res for _, res in actor_demands(ray_cfg) if res]
        return tune.PlacementGroupFactory(bundles)

    return resources


def _restore_trial(tune: Any, exp_name: str) -> str | None:
    """The run folder to resume when Tune restores the trial: the trial's own run if it left a
    checkpoint, else Tune's latest reported checkpoint copied into a new run folder."""
    from ding_ray.utils.checkpoint import CheckpointStore

    if CheckpointStore(exp_name).latest() is not None:
        return exp_name
    checkpoint = tune.get_checkpoint()
    if checkpoint is None:
        return None
    with checkpoint.as_directory() as folder:
        CheckpointStore(exp_name).import_checkpoint(folder)
    return exp_name


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
    pipeline: str = "serial",
) -> Any:
    """Sweep ``param_space`` (dotted config keys -> values or ``tune`` search spaces) with one
    run per trial; return Tune's ``ResultGrid`` (``.get_best_result()`` is the best trial by the
    last reported ``metric``).

    ``input_cfg`` is a bundled config name, a config file or ``(main_config, create_config)``;
    ``max_env_step`` defaults to the bundled config's budget. ``pipeline``: ``'serial'`` (one
    process per trial, ``cpus_per_trial`` CPUs) or ``'ray'`` (each trial a ``ray_pipeline`` run: its
    driver takes ``cpus_per_trial``, its actors the ``ray.*_num_cpus`` of the config beside).
    Ray is joined or started as a ``ray_pipeline`` driver does it (``init_ray``): the cluster
    RAY_ADDRESS or ``ray start`` left here, else a Ray on this machine with every port on
    127.0.0.1; a Ray this process is connected to already is used as it is.
    """
    tune = _import_tune()
    if pipeline not in ("serial", "ray"):
        raise ConfigError(f"pipeline must be 'serial' or 'ray', got {pipeline!r}.")
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
    from ding_ray.distributed.cluster import init_ray
    from ding_ray.distributed.config import RayConfig

    # before anything Tune puts in the object store: left to Ray, its ray.init() would open Ray's
    # ports on every interface
    init_ray(RayConfig.default_config(), name or "ding_ray_tune")
    trainable = tune.with_parameters(
        serial_trainable if pipeline == "serial" else ray_trainable,
        input_cfg=input_cfg,
        seed=seed,
        max_env_step=max_env_step,
        max_train_iter=max_train_iter,
    )
    if pipeline == "serial":
        trainable = tune.with_resources(trainable, {"cpu": cpus_per_trial})
    else:
        trainable = tune.with_resources(trainable, ray_trial_resources(input_cfg, cpus_per_trial))
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
