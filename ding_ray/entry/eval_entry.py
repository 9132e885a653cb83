"""``eval``: load a trained policy, run the evaluator once, optionally save videos (``env.replay_path``)."""

from __future__ import annotations

import copy
import os
from functools import partial
from typing import Any

import torch
from tensorboardX import SummaryWriter

from ding_ray.config import compile_config
from ding_ray.entry.serial_entry import fill_model_shapes
from ding_ray.envs import create_env_manager, get_vec_env_setting, space_info
from ding_ray.errors import ConfigError
from ding_ray.policy import create_policy
from ding_ray.utils.runtime import set_pkg_seed, set_torch_threads, setup_logging
from ding_ray.worker import InteractionSerialEvaluator
from ding_ray.worker.learner import load_checkpoint


def eval(  # noqa: A001 - DI-engine's name for this entry
    input_cfg: tuple[dict, dict],
    seed: int = 0,
    model: torch.nn.Module | None = None,
    state_dict: dict | None = None,
    load_path: str | None = None,
) -> dict[str, Any]:
    """Evaluate the weights in ``state_dict``, ``load_path`` or ``policy.load_path``.

    Returns the evaluator's episode info (``eval_episode_return_mean`` and friends). With
    ``env.replay_path`` set, every evaluation episode is saved as a video there.
    """
    setup_logging()
    main_cfg, create_cfg = input_cfg if isinstance(input_cfg, (tuple, list)) else (input_cfg, {})
    cfg = compile_config(copy.deepcopy(main_cfg), seed=seed, auto=True, create_cfg=create_cfg, save_cfg=True)
    set_torch_threads(cfg.policy.learn.get("num_threads", 1))
    set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
    env_fn, _, evaluator_env_cfg = get_vec_env_setting(cfg.env)
    evaluator_env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in evaluator_env_cfg])
    evaluator_env.seed(cfg.seed, dynamic_seed=False)
    if cfg.env.get("replay_path"):
        evaluator_env.enable_save_replay(cfg.env.replay_path)
    fill_model_shapes(cfg, evaluator_env.observation_space, evaluator_env.action_space)
    policy = create_policy(cfg.policy, model=model, enable_field=["eval"])
    policy.check_spaces(evaluator_env.observation_space.shape, *space_info(evaluator_env.action_space))
    if state_dict is None:
        path = load_path or cfg.policy.get("load_path")
        if not path:
            raise ConfigError("eval needs weights: pass state_dict or load_path, or set policy.load_path.")
        state_dict = load_checkpoint(path)
    policy.eval_mode.load_state_dict(state_dict)
    tb_logger = SummaryWriter(os.path.join(cfg.exp_name, "log", "eval"))
    evaluator = InteractionSerialEvaluator(
        cfg.policy.eval.evaluator, evaluator_env, policy.eval_mode, tb_logger, exp_name=cfg.exp_name
    )
    _, episode_info = evaluator.eval()
    evaluator.close()
    tb_logger.close()
    return episode_info
