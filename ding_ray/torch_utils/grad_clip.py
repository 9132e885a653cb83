"""Gradient clipping and ignoring by value or norm: DI-engine's ``grad_clip_type`` and
``grad_ignore_type``, for its optimizers (``ding_ray.torch_utils.Adam``, ``RMSprop``) and the policies
that clip between ``backward`` and the optimizer's step.

Clipping bounds the gradients; ignoring zeroes every gradient of the step (the step then changes no
weight through them) when one is out of bounds. The momentum variants need the optimizer's running
second moment, so they live with the optimizers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch

GRAD_CLIP_TYPES = (None, "clip_value", "clip_norm", "clip_momentum", "clip_momentum_norm")
GRAD_IGNORE_TYPES = (None, "ignore_value", "ignore_norm", "ignore_momentum", "ignore_momentum_norm")


def check_choice(name: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not supported; choose one of {allowed}.")


def clip_grads(
    parameters: Iterable[torch.Tensor], clip_type: str | None, bound: float, norm_type: float = 2.0
) -> None:
    """``'clip_norm'`` scales the gradients down to a global ``norm_type`` norm of at most ``bound``,
    ``'clip_value'`` clamps each element to [-bound, bound]; None leaves them as they are."""
    if clip_type == "clip_norm":
        torch.nn.utils.clip_grad_norm_(parameters, bound, norm_type)
    elif clip_type == "clip_value":
        torch.nn.utils.clip_grad_value_(parameters, bound)
    elif clip_type is not None:
        raise ValueError(f"clip_grads clips by 'clip_norm' or 'clip_value', not {clip_type!r}.")


def sum_of_powered_norms(grads: Iterable[torch.Tensor], norm_type: float) -> float:
    """sum over tensors of ``norm(g) ** norm_type``, in python floats as DI-engine adds them."""
    return sum(g.norm(norm_type).item() ** norm_type for g in grads)


def global_norm(grads: list[torch.Tensor], norm_type: float) -> float:
    if norm_type == math.inf:
        return float(max(g.abs().max() for g in grads))
    return sum_of_powered_norms(grads, norm_type) ** (1.0 / norm_type)


def ignore_grads(
    parameters: Iterable[torch.Tensor], ignore_type: str | None, bound: float, norm_type: float = 2.0
) -> bool:
    """Zero every gradient when ``'ignore_value'``: one element's magnitude reaches ``bound``, or
    ``'ignore_norm'``: their global norm exceeds ``bound`` (by more than 1e-6 of slack). Returns
    whether they were zeroed."""
    grads = [p.grad for p in parameters if p.grad is not None]
    if ignore_type is None or not grads:
        return False
    if ignore_type == "ignore_value":
        out_of_bounds = any(bool(g.abs().max() >= bound) for g in grads)
    elif ignore_type == "ignore_norm":
        out_of_bounds = float(bound) / (global_norm(grads, float(norm_type)) + 1e-6) < 1
    else:
        raise ValueError(f"ignore_grads ignores by 'ignore_value' or 'ignore_norm', not {ignore_type!r}.")
    if out_of_bounds:
        for g in grads:
            g.zero_()
    return out_of_bounds
