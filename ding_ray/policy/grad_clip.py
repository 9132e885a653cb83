"""DI-engine's ``learn.grad_clip_type`` of the actor-critic policies: checked when the policy is
built, applied between ``backward`` and the optimizer's step by ``ding_ray.torch_utils``'s
``clip_grads``, the clipping of DI-engine's ``Adam``."""

from __future__ import annotations

from typing import Any

from ding_ray.errors import ConfigError
from ding_ray.torch_utils.grad_clip import clip_grads

__all__ = ["LEARN_GRAD_CLIP_TYPES", "check_grad_clip_type", "clip_grads"]

LEARN_GRAD_CLIP_TYPES = (None, "clip_norm", "clip_value")  # what the policies' learn step clips by


def check_grad_clip_type(clip_type: Any) -> None:
    if clip_type not in LEARN_GRAD_CLIP_TYPES:
        raise ConfigError(
            f"policy.learn.grad_clip_type={clip_type!r} is not supported; "
            f"choose from {LEARN_GRAD_CLIP_TYPES}."
        )
