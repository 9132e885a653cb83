"""ding_ray's double-DQN TD loss on raw tensors, with rewards batch first (``[B, n]``), as its DQN
policy trains. DI-engine's named-tuple functions (``q_nstep_td_error`` ...) are in ``nstep_td``."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ding_ray.rl_utils.nstep_td import nstep_return, nstep_return_data


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
    """``sum_k gamma^k r_k + value_gamma * (1 - done) * next_value`` (``nstep_return`` batch first).

    Args:
        reward: [B] (one step) or [B, n] rewards, zero-padded after the episode ends.
        next_value: [B] value of the observation n steps ahead.
        done: [B] 1 where the episode terminated inside the window (no bootstrap).
        value_gamma: [B] discount of the bootstrap, ``gamma ** k`` for a window of k steps;
            defaults to ``gamma ** n``.
    """
    if reward.dim() == 1:
        reward = reward.unsqueeze(-1)
    time_first = reward.transpose(0, 1)
    return nstep_return(
        nstep_return_data(time_first, next_value, done), gamma, time_first.shape[0], value_gamma
    )


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


def double_dqn_nstep_loss(
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
    """Double-DQN n-step TD loss of ``q[B, A]`` for ``action[B]``, rewards ``[B, n]``. Returns
    ``(loss, td_error)``, the second the signed ``target - Q(s, a)`` per sample (for priorities)."""
    q_sa = q.gather(-1, action.long().unsqueeze(-1)).squeeze(-1)
    next_value = double_dqn_next_value(next_q_online, next_q_target)
    target = nstep_td_target(reward, next_value, done, gamma, value_gamma)
    return td_loss(q_sa, target, weight, huber_kappa)
