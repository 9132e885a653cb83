"""Temporal-difference targets and losses for value-based methods."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def double_dqn_next_value(next_q_online: torch.Tensor, next_q_target: torch.Tensor) -> torch.Tensor:
    """Double DQN: the target network's value of the action the online network prefers. Shape [B]."""
    best_action = next_q_online.argmax(dim=-1, keepdim=True)
    return next_q_target.gather(-1, best_action).squeeze(-1)


def nstep_td_target(
    reward: torch.Tensor,
    next_value: torch.Tensor,
    done: torch.Tensor,
    gamma: float,
    value_gamma: torch.Tensor | None = None,
) -> torch.Tensor:
    """``sum_k gamma^k r_k + value_gamma * (1 - done) * next_value``.

    Args:
        reward: [B] (one step) or [B, n] rewards, zero-padded after the episode ends.
        next_value: [B] value of the observation n steps ahead.
        done: [B] 1 where the episode terminated inside the window (no bootstrap).
        value_gamma: [B] discount of the bootstrap, ``gamma ** k`` for a window of k steps;
            defaults to ``gamma ** n``.
    """
    if reward.dim() == 1:
        reward = reward.unsqueeze(-1)
    n = reward.shape[-1]
    discounts = gamma ** torch.arange(n, dtype=reward.dtype, device=reward.device)
    discounted_return = (reward * discounts).sum(-1)
    if value_gamma is None:
        value_gamma = torch.full_like(discounted_return, gamma**n)
    return discounted_return + value_gamma * (1.0 - done.to(reward.dtype)) * next_value


def td_loss(
    q_sa: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None = None,
    huber_kappa: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Weighted mean of squared (or Huber) TD errors. Returns ``(loss, td_error_per_sample)``."""
    td_error = target.detach() - q_sa
    if huber_kappa is None:
        per_sample = td_error.pow(2)
    else:
        per_sample = F.huber_loss(q_sa, target.detach(), reduction="none", delta=huber_kappa)
    if weight is not None:
        per_sample = per_sample * weight
    return per_sample.mean(), td_error.detach()


def q_nstep_td_error(
    q: torch.Tensor,
    next_q_online: torch.Tensor,
    next_q_target: torch.Tensor,
    action: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    gamma: float,
    value_gamma: torch.Tensor | None = None,
    weight: torch.Tensor | None = None,
    huber_kappa: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Double-DQN n-step TD loss of ``q[B, A]`` for ``action[B]``. Returns ``(loss, td_error)``."""
    q_sa = q.gather(-1, action.long().unsqueeze(-1)).squeeze(-1)
    next_value = double_dqn_next_value(next_q_online, next_q_target)
    target = nstep_td_target(reward, next_value, done, gamma, value_gamma)
    return td_loss(q_sa, target, weight, huber_kappa)
