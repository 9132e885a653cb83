"""``eval``: load a trained policy, run the evaluator once, optionally save videos (``env.replay_path``)."""

from __future__ import annotations

import logging
import os
import shutil
from functools import partial
from typing import Any

import torch
from easydict import EasyDict
from tensorboardX import SummaryWriter

from ding_ray.config import compile_config
from ding_ray.config.compile import split_input_cfg
from ding_ray.entry.serial_entry import check_env_setting, env_class
from ding_ray.entry.trained_policy import load_weights_of
from ding_ray.envs import create_env_manager, get_vec_env_setting, space_info
from ding_ray.envs.model_shapes import fill_model_shapes
from ding_ray.errors import ConfigError
from ding_ray.policy import create_policy
from ding_ray.utils.runtime import set_pkg_seed, set_torch_threads, setup_logging
from ding_ray.worker import InteractionSerialEvaluator
from ding_ray.worker.learner import load_checkpoint

logger = logging.getLogger(__name__)


def eval(  # noqa: A001 - DI-engine's name for this entry
    input_cfg: str | tuple[dict, dict],
    seed: int = 0,
    env_setting: Any = None,
    model: torch.nn.Module | None = None,
    state_dict: dict | None = None,
    load_path: str | None = None,
    replay_path: str | None = None,
) -> float:
    """Evaluate the weights in ``state_dict``, ``load_path`` or ``policy.load_path``; return the
    mean evaluation return (DI-engine's signature and result).

    ``input_cfg`` is ``(main_config, create_config)`` or a config file path; ``env_setting`` as in
    ``serial_pipeline``. With ``replay_path`` (or ``env.replay_path``) every evaluation episode is
    saved as a video there (``pip install "ding_ray[video]"``). The episode info is logged and
    written to TensorBoard under ``<exp_name>/log/eval``.
    """
    setup_logging()
    main_cfg, create_cfg = split_input_cfg(input_cfg)
    env_cls = env_class(env_setting)
    cfg = compile_config(
        main_cfg,
        seed=seed,
        env=env_cls,
        auto=True,
        create_cfg=create_cfg,
        save_cfg=True,
        save_path="eval_config.json",
    )
    try:
        return _evaluate(cfg, env_setting, model, state_dict, load_path, replay_path)
    except Exception:
        shutil.rmtree(cfg.exp_name, ignore_errors=True)  # a failed evaluation leaves no folder behind
        raise


def _evaluate(
    cfg: EasyDict,
    env_setting: Any,
    model: torch.nn.Module | None,
    state_dict: dict | None,
    load_path: str | None,
    replay_path: str | None,
) -> float:
    set_torch_threads(cfg.policy.learn.get("num_threads", 1))
    set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
    if env_setting is None:
        env_fn, _, evaluator_env_cfg = get_vec_env_setting(cfg.env)
    else:
        env_fn, _, evaluator_env_cfg = check_env_setting(env_setting)
    evaluator_env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in evaluator_env_cfg])
    evaluator_env.seed(cfg.seed, dynamic_seed=False)
    replay_path = replay_path or cfg.env.get("replay_path")
    if replay_path:
        evaluator_env.enable_save_replay(replay_path)
    fill_model_shapes(cfg, evaluator_env.observation_space, evaluator_env.action_space)
    policy = create_policy(cfg.policy, model=model, enable_field=["eval"])
    policy.check_spaces(evaluator_env.observation_space.shape, *space_info(evaluator_env.action_space))
    source = "the state_dict given"
    if state_dict is None:
        source = load_path or cfg.policy.get("load_path")
        if not source:
            raise ConfigError("eval needs weights: pass state_dict or load_path, or set policy.load_path.")
        state_dict = load_checkpoint(source)
        logger.info("evaluating the weights of %s", source)
    load_weights_of(policy.eval_mode, state_dict, source, cfg.policy.type)
    tb_logger = SummaryWriter(os.path.join(cfg.exp_name, "log", "eval"))
    evaluator = InteractionSerialEvaluator(
        cfg.policy.eval.evaluator, evaluator_env, policy.eval_mode, tb_logger, exp_name=cfg.exp_name
    )
    _, episode_info = evaluator.eval()
    evaluator.close()
    tb_logger.close()
    episode_return = float(episode_info["eval_episode_return_mean"])
    logger.info(
        "evaluation over %d episodes: mean return %.3f", cfg.policy.eval.evaluator.n_episode, episode_return
    )
    return episode_return
