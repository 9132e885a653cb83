"""DI-engine's ``learn.grad_clip_type`` of the actor-critic policies: checked when the policy is
built, applied between ``backward`` and the optimizer's step."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from ding_ray.errors import ConfigError

GRAD_CLIP_TYPES = (None, "clip_norm", "clip_value")


def check_grad_clip_type(clip_type: Any) -> None:
    if clip_type not in GRAD_CLIP_TYPES:
        raise ConfigError(
            f"policy.learn.grad_clip_type={clip_type!r} is not supported; choose from {GRAD_CLIP_TYPES}."
        )


def clip_grads(parameters: Iterable[torch.nn.Parameter], clip_type: str | None, bound: float) -> None:
    """``'clip_norm'`` bounds the gradients' global norm by ``bound``, ``'clip_value'`` each
    element; None leaves them as they are."""
    if clip_type == "clip_norm":
        torch.nn.utils.clip_grad_norm_(parameters, bound)
    elif clip_type == "clip_value":
        torch.nn.utils.clip_grad_value_(parameters, bound)
