"""``ray_pipeline``: the serial pipeline's components as Ray actors, on a laptop or a cluster."""

from __future__ import annotations

import logging
import time
from typing import Any

import ray
from easydict import EasyDict

from ding_ray.config import compile_config
from ding_ray.config.compile import split_input_cfg
from ding_ray.distributed import (
    ApexDriver,
    RayConfig,
    SyncDriver,
    check_cluster,
    create_actors,
    start_run,
)
from ding_ray.entry.result import write_result
from ding_ray.entry.serial_entry import fill_model_shapes
from ding_ray.envs import get_vec_env_setting
from ding_ray.policy import create_policy
from ding_ray.policy.weights import load_weights
from ding_ray.utils.runtime import set_torch_threads, setup_logging

logger = logging.getLogger(__name__)


def compile_ray_config(input_cfg: Any, seed: int = 0, save_cfg: bool = True) -> EasyDict:
    """``compile_config`` with the ``ray`` section's defaults, and model shapes read from the env."""
    main_cfg, create_cfg = split_input_cfg(input_cfg)
    cfg = compile_config(
        main_cfg,
        seed=seed,
        create_cfg=create_cfg,
        save_cfg=save_cfg,
        # The Ray namespace and the actors' paths are fixed from exp_name before this runs.
        renew_dir=False,
        extra_defaults={"ray": RayConfig.default_config()},
    )
    model = cfg.policy.model
    if model.get("obs_shape") is None or model.get("action_shape") is None:
        env_fn, env_cfgs, _ = get_vec_env_setting(cfg.env)
        env = env_fn(cfg=env_cfgs[0])
        fill_model_shapes(cfg, env.observation_space, env.action_space)
        env.close()
    return cfg


def pipeline_of(cfg: EasyDict) -> str:
    """'sync' or 'async': ``ray.pipeline``, or by ``policy.on_policy`` when it is 'auto'."""
    if cfg.ray.pipeline != "auto":
        return cfg.ray.pipeline
    return "sync" if cfg.policy.on_policy else "async"


def ray_pipeline(
    input_cfg: Any,
    seed: int = 0,
    max_env_step: int | None = None,
    max_train_iter: int | None = None,
) -> Any:
    """Train with collector, evaluator, buffer and learner actors until ``env.stop_value`` or a
    budget is reached; return the trained policy (learn, collect and eval modes).

    Off-policy policies run the async (Ape-X) pipeline, on-policy ones the sync pipeline. Writes
    ``<exp_name>/total_config.json``, TensorBoard logs under ``<exp_name>/log/ray``, the best
    evaluated weights as ``<exp_name>/ckpt/ckpt_best.pth.tar`` and ``<exp_name>/result.json``.
    """
    start = time.perf_counter()
    setup_logging()
    cfg, plan, started_ray = start_run(input_cfg, seed)  # compiles the config while Ray starts
    try:
        set_torch_threads(cfg.ray.torch_threads)
        pipeline = pipeline_of(cfg)
        if cfg.ray.check_resources:
            check_cluster(cfg.ray)
        actors = create_actors(cfg, plan.namespace)
        try:
            driver_cls = SyncDriver if pipeline == "sync" else ApexDriver
            driver = driver_cls(cfg, actors, plan, max_env_step, max_train_iter)
            try:
                driver.run()
            finally:
                driver.close()
            state = driver.get(actors.learner.state_dict.remote())
            driver.get(actors.learner.close.remote())  # after_run hooks: the final checkpoint
            stop_weights = None if driver.stop_weights is None else ray.get(driver.stop_weights.ref)
        finally:
            actors.kill()
    finally:
        if started_ray:
            ray.shutdown()

    record = write_result(
        cfg.exp_name,
        env_steps=driver.env_steps,
        train_iter=driver.train_iter,
        best_eval_return=driver.best_eval,
        last_eval_return=driver.last_eval,
        stop=driver.stop,
        wall_s=time.perf_counter() - start,
        seed=cfg.seed,
        **driver.summary(),
    )
    logger.info("result: %s", record)
    policy = create_policy(cfg.policy, enable_field=["learn", "collect", "eval"])
    policy.learn_mode.load_state_dict(state)
    if stop_weights is not None:  # return the weights that reached the stop value, not later ones
        load_weights(policy.eval_mode, stop_weights)
    return policy
