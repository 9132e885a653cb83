"""``serial_pipeline_onpolicy``: collect ``n_sample``, train on exactly that data, evaluate (PPO).

No replay buffer: each learner call gets the samples of the collect call just made, with the
weights that produced them, and the data is dropped afterwards.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import torch
from tensorboardX import SummaryWriter

from ding_ray.config import compile_config
from ding_ray.config.compile import split_input_cfg
from ding_ray.entry.result import write_result
from ding_ray.entry.serial_entry import _budget_spent, build_envs, check_env_setting, fill_model_shapes
from ding_ray.envs import space_info
from ding_ray.policy import create_policy, get_policy_cls
from ding_ray.utils.registry import POLICY_REGISTRY
from ding_ray.utils.runtime import set_pkg_seed, set_torch_threads, setup_logging
from ding_ray.worker import BaseLearner, InteractionSerialEvaluator, create_serial_collector


def serial_pipeline_onpolicy(
    input_cfg: str | tuple[dict, dict],
    seed: int = 0,
    env_setting: Any = None,
    model: torch.nn.Module | None = None,
    max_train_iter: int | None = None,
    max_env_step: int | None = None,
    dynamic_seed: bool = True,
) -> Any:
    """Train an on-policy policy until the evaluator reaches ``env.stop_value`` or a budget runs
    out; return the policy. Arguments and output folder as ``serial_pipeline``; ``result.json``
    says ``"pipeline": "serial_onpolicy"``. One learner iteration is one learn call on one collect
    call's data (PPO runs its ``epoch_per_collect`` minibatch passes inside it), so
    ``eval_freq`` counts collect calls.
    """
    start = time.perf_counter()
    setup_logging()
    main_cfg, create_cfg = split_input_cfg(input_cfg)
    resume = bool(main_cfg.get("policy", {}).get("learn", {}).get("resume_training", False))
    cfg = compile_config(
        main_cfg,
        seed=seed,
        env=None if env_setting is None else check_env_setting(env_setting)[0],
        auto=True,
        create_cfg=create_cfg,
        save_cfg=True,
        renew_dir=not resume,
    )
    set_torch_threads(cfg.policy.learn.get("num_threads", 1))
    set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
    collector_env, evaluator_env = build_envs(cfg, dynamic_seed, env_setting)
    fill_model_shapes(cfg, collector_env.observation_space, collector_env.action_space)

    policy = create_policy(cfg.policy, model=model, enable_field=["learn", "collect", "eval"])
    policy.check_spaces(collector_env.observation_space.shape, *space_info(collector_env.action_space))
    collector_cfg = cfg.policy.collect.collector
    if collector_cfg.type == "episode":
        collector_cfg.get_train_sample = True  # the learner takes samples (with advantages), not episodes
    tb_logger = SummaryWriter(os.path.join(cfg.exp_name, "log", "serial"))
    learner = BaseLearner(cfg.policy.learn.learner, policy.learn_mode, tb_logger, exp_name=cfg.exp_name)
    collector = create_serial_collector(
        collector_cfg,
        env=collector_env,
        policy=policy.collect_mode,
        tb_logger=tb_logger,
        exp_name=cfg.exp_name,
    )
    evaluator = InteractionSerialEvaluator(
        cfg.policy.eval.evaluator, evaluator_env, policy.eval_mode, tb_logger, exp_name=cfg.exp_name
    )

    learner.call_hook("before_run")
    if resume:
        collector.envstep = learner.collector_envstep
    stop, last_eval = False, None
    while True:
        if evaluator.should_eval(learner.train_iter):
            stop, episode_info = evaluator.eval(
                learner.save_checkpoint, learner.train_iter, collector.envstep
            )
            last_eval = episode_info["eval_episode_return_mean"]
            if stop:
                break
        if _budget_spent(learner.train_iter, collector.envstep, max_train_iter, max_env_step):
            break
        new_data = collector.collect(train_iter=learner.train_iter)
        learner.train(new_data, collector.envstep)
    learner.call_hook("after_run")

    write_result(
        cfg.exp_name,
        env_steps=collector.envstep,
        train_iter=learner.train_iter,
        best_eval_return=evaluator.best_return,
        last_eval_return=last_eval,
        stop=stop,
        wall_s=time.perf_counter() - start,
        seed=cfg.seed,
        pipeline="serial_onpolicy",
    )
    for component in (collector, evaluator, learner):
        component.close()
    tb_logger.close()
    return policy


def is_on_policy(main_cfg: Mapping, create_cfg: Mapping) -> bool:
    """Whether the config names an on-policy policy (its ``on_policy`` key, else its class default)."""
    policy = main_cfg.get("policy") or {}
    if "on_policy" in policy:
        return bool(policy["on_policy"])
    name = str((create_cfg.get("policy") or {}).get("type") or policy.get("type") or "")
    name = name.removesuffix("_command")  # DI-engine's entries ask for '<type>_command'
    if not name or name not in POLICY_REGISTRY:
        return False  # compile_config reports an unknown type with its own message
    return bool(get_policy_cls({"type": name}).default_config().get("on_policy", False))
