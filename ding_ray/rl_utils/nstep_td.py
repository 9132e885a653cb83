"""DI-engine's Q-learning TD errors: n-step returns, 1-step and n-step Q TD losses, value rescaling.

Layouts follow DI-engine's ``ding.rl_utils.td``: rewards are time first, ``[nstep, B]``; ``q`` and
``next_n_q`` are ``[B, A]`` (or ``[B, agents, A]`` with actions ``[B, agents]``); the next action
is chosen by the caller (the target network's argmax for DQN, the online one's for double DQN).
A ``done`` of bools is accepted and read as 0/1.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable

import numpy as np
import torch
import torch.nn as nn

from ding_ray.errors import ShapeError
from ding_ray.rl_utils.value_rescale import value_inv_transform, value_transform

nstep_return_data = namedtuple("nstep_return_data", ["reward", "next_value", "done"])
nstep_return_data.__doc__ = """Inputs of ``nstep_return``: ``reward`` [nstep, B, ...] (time first),
``next_value`` [B, ...] the value nstep steps ahead, ``done`` [B] 1 where no bootstrap is taken."""

q_1step_td_data = namedtuple(
    "q_1step_td_data", ["q", "next_q", "act", "next_act", "reward", "done", "weight"]
)
q_1step_td_data.__doc__ = """Inputs of ``q_1step_td_error``: ``q``/``next_q`` [B, A], ``act``/``next_act``
[B], ``reward`` [B], ``done`` [B], ``weight`` [B] or None (all 1)."""

q_nstep_td_data = namedtuple(
    "q_nstep_td_data", ["q", "next_n_q", "action", "next_n_action", "reward", "done", "weight"]
)
q_nstep_td_data.__doc__ = """Inputs of ``q_nstep_td_error``: ``q``/``next_n_q`` [B, A],
``action``/``next_n_action`` [B], ``reward`` [nstep, B] (or [B] with ``cum_reward``), ``done`` [B],
``weight`` [B] or None (all 1)."""

_SQUARED_ERROR = nn.MSELoss(reduction="none")


def as_float(done: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``done`` as a float tensor of ``like``'s dtype, so ``1 - done`` works for bool flags too."""
    return done.to(like.dtype) if torch.is_tensor(done) else torch.as_tensor(done, dtype=like.dtype)


def _trailing_ones(x: torch.Tensor, ndim: int) -> torch.Tensor:
    """``x`` viewed with trailing singleton axes up to ``ndim`` axes, to broadcast from the left."""
    return x.reshape(*x.shape, *([1] * (ndim - x.dim())))


def reward_discounts(gamma: float, nstep: int, device: torch.device | str | None = None) -> torch.Tensor:
    """``[1, gamma, gamma^2, ...]`` of length ``nstep``, each the float32 product of the previous
    one and ``gamma`` (the order DI-engine multiplies in, so the sums match it to the last bit)."""
    discounts = torch.ones(nstep, device=device)
    for i in range(1, nstep):
        discounts[i] = gamma * discounts[i - 1]
    return discounts


def discounted_reward_sum(reward: torch.Tensor, gamma: float, nstep: int) -> torch.Tensor:
    """``sum_k gamma^k reward[k]`` over the leading (time) axis of ``reward`` [nstep, B, ...]."""
    if reward.dim() == 0 or reward.shape[0] != nstep:
        raise ShapeError(
            f"reward must be time first, [nstep={nstep}, B], got {tuple(reward.shape)}; "
            "pass nstep equal to the number of reward rows (transpose a [B, nstep] reward)."
        )
    discounts = _trailing_ones(reward_discounts(gamma, nstep, reward.device), reward.dim())
    return reward.mul(discounts).sum(0)


def nstep_return(
    data: nstep_return_data,
    gamma: float | list,
    nstep: int,
    value_gamma: torch.Tensor | float | None = None,
) -> torch.Tensor:
    """``sum_k gamma^k r_k + value_gamma * next_value * (1 - done)``, shape of ``next_value``.

    ``value_gamma`` (a tensor [B] or a number) discounts the bootstrap; None means ``gamma ** nstep``.
    ``gamma`` may also be a list of B 0-dim tensors, one discount per sample (NGU's several
    gammas): then sample b's reward step k is discounted by ``gamma[b] ** k`` and its bootstrap by
    ``gamma[b] ** nstep``; ``value_gamma`` is not used.
    """
    reward, next_value, done = data
    done = as_float(done, reward)
    if isinstance(gamma, (float, int)):
        return_ = discounted_reward_sum(reward, float(gamma), nstep)
        if value_gamma is None:
            return return_ + (gamma**nstep) * next_value * (1 - done)
        if np.isscalar(value_gamma):
            value_gamma = torch.full_like(next_value, value_gamma)
        value_gamma = _trailing_ones(value_gamma, next_value.dim())
        done = _trailing_ones(done, next_value.dim())
        return return_ + value_gamma * next_value * (1 - done)
    if isinstance(gamma, list):
        if reward.shape[0] != nstep:
            raise ShapeError(f"reward must be [nstep={nstep}, B], got {tuple(reward.shape)}.")
        per_sample = torch.stack(gamma, dim=0).to(reward.device)
        discounts = torch.ones(nstep + 1, done.shape[0], device=reward.device)
        for i in range(1, nstep + 1):
            discounts[i] = per_sample * discounts[i - 1]
        discounts = _trailing_ones(discounts, reward.dim())
        return reward.mul(discounts[:nstep]).sum(0) + discounts[nstep] * next_value * (1 - done)
    raise TypeError(f"gamma must be a float or a list of per-sample tensors, got {type(gamma).__name__}.")


def _check_one_dim(**tensors: torch.Tensor) -> None:
    for name, tensor in tensors.items():
        if tensor.dim() != 1:
            raise ShapeError(f"{name} must be one-dimensional [B], got shape {tuple(tensor.shape)}.")


def q_1step_td_error(
    data: q_1step_td_data, gamma: float, criterion: nn.Module = _SQUARED_ERROR
) -> torch.Tensor:
    """1-step Q-learning loss: the weighted mean of ``criterion(Q(s, a), r + gamma (1 - done) Q'(s', a'))``,
    the target detached. Returns the 0-dim loss."""
    q, next_q, act, next_act, reward, done, weight = data
    _check_one_dim(act=act, reward=reward)
    if weight is None:
        weight = torch.ones_like(reward)
    rows = torch.arange(act.shape[0])
    q_s_a = q[rows, act]
    target_q_s_a = gamma * (1 - as_float(done, reward)) * next_q[rows, next_act] + reward
    return (criterion(q_s_a, target_q_s_a.detach()) * weight).mean()


def _pick(q: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """``q[..., action]``: the value of each action, for [B] actions of [B, A] values (or per agent)."""
    if action.dim() >= q.dim():
        raise ShapeError(
            f"action {tuple(action.shape)} must have one axis fewer than q {tuple(q.shape)} "
            "([B] actions for [B, A] values, [B, agents] for [B, agents, A])."
        )
    return q.gather(-1, action.long().unsqueeze(-1)).squeeze(-1)


def q_nstep_td_error(
    data: q_nstep_td_data,
    gamma: float | list,
    nstep: int = 1,
    cum_reward: bool = False,
    value_gamma: torch.Tensor | None = None,
    criterion: nn.Module = _SQUARED_ERROR,
) -> tuple[torch.Tensor, torch.Tensor]:
    """N-step Q-learning loss. Returns ``(loss, td_error_per_sample)``: the per-sample
    ``criterion(Q(s, a), G)`` with ``G`` the detached n-step target (``nstep_return``), and its
    ``weight``-weighted mean. With ``cum_reward`` the reward is already the discounted [B] sum."""
    q, next_n_q, action, next_n_action, reward, done, weight = data
    if weight is None:
        weight = torch.ones_like(reward)
    q_s_a = _pick(q, action)
    target_q_s_a = _pick(next_n_q, next_n_action)
    if cum_reward:
        bootstrap = gamma**nstep if value_gamma is None else value_gamma
        target_q_s_a = reward + bootstrap * target_q_s_a * (1 - as_float(done, reward))
    else:
        target_q_s_a = nstep_return(nstep_return_data(reward, target_q_s_a, done), gamma, nstep, value_gamma)
    td_error_per_sample = criterion(q_s_a, target_q_s_a.detach())
    return (td_error_per_sample * weight).mean(), td_error_per_sample


def q_nstep_td_error_with_rescale(
    data: q_nstep_td_data,
    gamma: float | list,
    nstep: int = 1,
    value_gamma: torch.Tensor | None = None,
    criterion: nn.Module = _SQUARED_ERROR,
    trans_fn: Callable[[torch.Tensor], torch.Tensor] = value_transform,
    inv_trans_fn: Callable[[torch.Tensor], torch.Tensor] = value_inv_transform,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``q_nstep_td_error`` on rescaled values (R2D2): the n-step return is taken on
    ``inv_trans_fn(Q'(s', a'))`` and rescaled back with ``trans_fn``. Returns ``(loss, per_sample)``."""
    q, next_n_q, action, next_n_action, reward, done, weight = data
    _check_one_dim(action=action)
    if weight is None:
        weight = torch.ones_like(action)
    rows = torch.arange(action.shape[0])
    target_q_s_a = inv_trans_fn(next_n_q[rows, next_n_action])
    target_q_s_a = nstep_return(nstep_return_data(reward, target_q_s_a, done), gamma, nstep, value_gamma)
    td_error_per_sample = criterion(q[rows, action], trans_fn(target_q_s_a).detach())
    return (td_error_per_sample * weight).mean(), td_error_per_sample
