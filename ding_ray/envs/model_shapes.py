"""``fill_model_shapes``: the model's input and output sizes, read from an env where the config omits them."""

from __future__ import annotations

import logging
from typing import Any

import gymnasium as gym
import numpy as np
from easydict import EasyDict

from ding_ray.envs.gymnasium_env import space_info
from ding_ray.errors import ConfigError
from ding_ray.utils.registry import POLICY_REGISTRY

logger = logging.getLogger(__name__)


def fill_model_shapes(cfg: EasyDict, observation_space: Any, action_space: Any) -> None:
    """Take ``obs_shape`` / ``action_shape`` from the env when the config leaves them out, and
    check that a policy whose actions lie in [-1, 1] can reach the whole of the env's action range.
    The policy's type must be registered (``compile_config`` imports the policies)."""
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
