"""Deterministic actor-critic (DDPG, TD3) math: exploration and target-smoothing noise, the TD target."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ding_ray.rl_utils.sac import twin_min


def gaussian_action_noise(
    action: torch.Tensor,
    sigma: float,
    noise_range: tuple[float, float] | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """``clamp(action + clamp(sigma * N(0, 1), *noise_range), -1, 1)``: DI-engine's Gaussian
    ``action_noise`` wrapper. Collection adds unclipped noise (``noise_range`` None); TD3's target
    policy smoothing clips it to ``learn.noise_range``. Actions live in [-1, 1] (the actor's tanh),
    so the sum is clipped there. The draw comes from ``generator`` (torch's global one when None)."""
    noise = torch.randn(action.shape, generator=generator, device=action.device) * sigma
    if noise_range is not None:
        noise = noise.clamp(noise_range[0], noise_range[1])
    return (action + noise).clamp(-1.0, 1.0)


def deterministic_q_target(
    next_q: torch.Tensor | Sequence[torch.Tensor], reward: torch.Tensor, done: torch.Tensor, gamma: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The TD target ``r + gamma * (1 - done) * Q'(s', mu'(s'))`` and ``Q'(s', mu'(s'))`` itself,
    [B]; with twin target critics, their minimum (TD3's clipped double Q)."""
    next_value = twin_min(next_q)
    return reward + gamma * (1.0 - done.to(reward.dtype)) * next_value, next_value
