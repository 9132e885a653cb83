"""``ray_pipeline``: the serial pipeline's components as Ray actors, on a laptop or a cluster."""

from __future__ import annotations

import time
from typing import Any

import ray

from ding_ray import distributed  # names load on first use
from ding_ray.framework import pipelines
from ding_ray.utils.runtime import setup_logging

# torch, the policies and the actors' code load in start_run's thread while Ray starts, not on import


def ray_pipeline(
    input_cfg: Any,
    seed: int = 0,
    max_env_step: int | None = None,
    max_train_iter: int | None = None,
    resume: str | None = None,
) -> Any:
    """Train with collector, evaluator, buffer and learner actors until ``env.stop_value`` or a
    budget is reached; return the trained policy (learn, collect and eval modes).

    Off-policy policies run the async (Ape-X) form of the ``off_policy`` stage list, on-policy ones
    the sync form of ``on_policy`` (``ding_ray.framework.pipelines``, the lists the serial entries
    run on local components). Writes ``<exp_name>/total_config.json``, TensorBoard
    logs under ``<exp_name>/log/ray``, the best evaluated weights as
    ``<exp_name>/ckpt/ckpt_best.pth.tar``, the learner's final ones as ``ckpt_final.pth.tar``, and
    ``<exp_name>/result.json`` (also when the run fails, with the error).

    Run checkpoints every ``checkpoint.freq`` learner iterations (and at the end, and on Ctrl-C or
    SIGTERM) go to ``<exp_name>/checkpoints`` or ``checkpoint.storage_path``; a learner or buffer
    actor that dies comes back from the latest one. ``resume=<run folder>`` continues that run.
    """
    start = time.perf_counter()
    setup_logging()
    # compiles the config while Ray starts
    cfg, plan, started_ray = distributed.start_run(input_cfg, seed, resume=resume)
    from ding_ray.policy import create_policy
    from ding_ray.policy.weights import load_weights

    try:
        with (
            distributed.RayRun(
                cfg, plan, max_env_step, started_at=start, resume=resume, max_train_iter=max_train_iter
            ) as rc,
            rc.task() as task,
        ):
            stages = pipelines.on_policy if rc.on_policy else pipelines.off_policy
            stages(task, cfg, rc, max_env_step, max_train_iter)
            task.run()
    finally:
        if started_ray:
            ray.shutdown()
    policy = create_policy(cfg.policy, enable_field=["learn", "collect", "eval"])
    policy.learn_mode.load_state_dict(rc.state)
    if rc.stop_weights is not None:  # return the weights that reached the stop value, not later ones
        load_weights(policy.eval_mode, rc.stop_weights)
    return policy
