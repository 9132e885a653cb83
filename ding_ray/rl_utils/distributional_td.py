"""DI-engine's distributional TD errors: C51's projected categorical loss (Bellemare et al., 2017,
arXiv:1707.06887), QR-DQN's quantile Huber loss (Dabney et al., 2017, arXiv:1710.10044) and IQN's
(Dabney et al., 2018, arXiv:1806.06923).

Layouts follow DI-engine's ``ding.rl_utils.td``: rewards time first ``[nstep, B]``, actions ``[B]``
(C51 also ``[B, agents]``), the next action chosen by the caller. Each n-step error returns
``(loss, per_sample_loss)``; ``weight`` [B] (or None: all 1) weights the mean.
"""

from __future__ import annotations

from collections import namedtuple

import torch

from ding_ray.errors import ShapeError
from ding_ray.rl_utils.nstep_td import as_float, discounted_reward_sum

dist_1step_td_data = namedtuple(
    "dist_1step_td_data", ["dist", "next_dist", "act", "next_act", "reward", "done", "weight"]
)
dist_1step_td_data.__doc__ = """Inputs of ``dist_1step_td_error``: ``dist``/``next_dist`` [B, A, n_atom]
probabilities, ``act``/``next_act`` [B] (or [B, agents] with [B, agents, A, n_atom] dists), ``reward``
and ``done`` [B], ``weight`` [B] or None."""

dist_nstep_td_data = namedtuple(
    "dist_nstep_td_data", ["dist", "next_n_dist", "act", "next_n_act", "reward", "done", "weight"]
)
dist_nstep_td_data.__doc__ = """Inputs of ``dist_nstep_td_error``: as ``dist_1step_td_data`` with
``reward`` [nstep, B]."""

qrdqn_nstep_td_data = namedtuple(
    "qrdqn_nstep_td_data", ["q", "next_n_q", "action", "next_n_action", "reward", "done", "tau", "weight"]
)
qrdqn_nstep_td_data.__doc__ = """Inputs of ``qrdqn_nstep_td_error``: ``q``/``next_n_q`` [B, A, N] quantile
values, ``action``/``next_n_action`` and ``done`` [B], ``reward`` [nstep, B], ``tau`` the quantile
fractions of ``q``, [B, N, 1] (as QR-DQN models give them) or [1, N, 1], ``weight`` [B] or None."""

iqn_nstep_td_data = namedtuple(
    "iqn_nstep_td_data",
    ["q", "next_n_q", "action", "next_n_action", "reward", "done", "replay_quantiles", "weight"],
)
iqn_nstep_td_data.__doc__ = """Inputs of ``iqn_nstep_td_error``: ``q`` [tau, B, A] and ``next_n_q``
[tau', B, A] values at sampled quantiles, ``action``/``next_n_action`` and ``done`` [B], ``reward``
[nstep, B], ``replay_quantiles`` the tau fractions of ``q`` ([tau * B, 1] or [tau, B, 1]),
``weight`` [B] or None."""


def _check_dims(**named: tuple[torch.Tensor, int]) -> None:
    for name, (tensor, ndim) in named.items():
        if tensor.dim() != ndim:
            raise ShapeError(f"{name} must have {ndim} dimension(s), got shape {tuple(tensor.shape)}.")


def huber(x: torch.Tensor, kappa: float = 1.0) -> torch.Tensor:
    """``0.5 x^2`` where ``|x| <= kappa``, else ``kappa (|x| - kappa / 2)``, elementwise."""
    magnitude = x.abs()
    return torch.where(magnitude <= kappa, 0.5 * x**2, kappa * (magnitude - 0.5 * kappa))


def _project(
    next_dist: torch.Tensor, target_z: torch.Tensor, v_min: float, v_max: float, n_atom: int
) -> torch.Tensor:
    """Each row's ``next_dist`` [R, n_atom], moved to the atoms ``target_z`` [R, n_atom] and shared out
    onto the fixed support's two neighbouring atoms in proportion to closeness."""
    delta_z = (v_max - v_min) / (n_atom - 1)
    position = (target_z.clamp(min=v_min, max=v_max) - v_min) / delta_z
    lower, upper = position.floor().long(), position.ceil().long()
    # a target right on an atom: give its mass to the pair (atom - 1, atom), or (0, 1) at the bottom
    lower[(upper > 0) & (lower == upper)] -= 1
    upper[(lower < n_atom - 1) & (lower == upper)] += 1
    projected = torch.zeros_like(next_dist)
    projected.scatter_add_(-1, lower, next_dist * (upper.float() - position))
    projected.scatter_add_(-1, upper, next_dist * (position - lower.float()))
    return projected


def _categorical_td(
    dist: torch.Tensor,
    next_dist: torch.Tensor,
    act: torch.Tensor,
    next_act: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    bootstrap_discount: torch.Tensor | float,
    v_min: float,
    v_max: float,
    n_atom: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``log p(s, a)`` and the projected target distribution, per row [R, n_atom] (R = B, or B * agents)."""
    if act.dim() == 2:  # per agent: every agent's row shares its sample's reward and done
        agents = act.shape[1]
        reward = reward.unsqueeze(-1).repeat(1, agents).reshape(-1)
        done = done.unsqueeze(-1).repeat(1, agents).reshape(-1)
        dist = dist.reshape(-1, *dist.shape[2:])
        next_dist = next_dist.reshape(-1, *next_dist.shape[2:])
        act, next_act = act.reshape(-1), next_act.reshape(-1)
    rows = torch.arange(act.shape[0])
    support = torch.linspace(v_min, v_max, n_atom).to(reward.device)
    target_z = (
        reward.unsqueeze(-1) + (1 - as_float(done, reward).unsqueeze(-1)) * bootstrap_discount * support
    )
    projected = _project(next_dist[rows, next_act].detach(), target_z, v_min, v_max, n_atom)
    return torch.log(dist[rows, act]), projected


def _row_weight(weight: torch.Tensor | float | None, log_p: torch.Tensor) -> torch.Tensor:
    if weight is None:
        return torch.ones(log_p.shape[0], 1, dtype=log_p.dtype, device=log_p.device)
    weight = torch.as_tensor(weight, dtype=log_p.dtype, device=log_p.device)
    return weight.unsqueeze(-1) if weight.dim() == 1 else weight


def dist_1step_td_error(
    data: dist_1step_td_data, gamma: float, v_min: float, v_max: float, n_atom: int
) -> torch.Tensor:
    """C51's 1-step loss: the weighted mean cross-entropy of ``dist(s, a)`` against the target
    distribution ``r + gamma (1 - done) z`` projected onto the support. Returns the 0-dim loss.
    (A [B] weight multiplies each sample's row; DI-engine would broadcast it against the atoms.)"""
    dist, next_dist, act, next_act, reward, done, weight = data
    _check_dims(reward=(reward, 1))
    log_p, projected = _categorical_td(
        dist, next_dist, act, next_act, reward, done, gamma, v_min, v_max, n_atom
    )
    return -(log_p * projected * _row_weight(weight, log_p)).sum(-1).mean()


def dist_nstep_td_error(
    data: dist_nstep_td_data,
    gamma: float,
    v_min: float,
    v_max: float,
    n_atom: int,
    nstep: int = 1,
    value_gamma: torch.Tensor | float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """C51's n-step loss: cross-entropy of ``dist(s, a)`` against the projected
    ``sum_k gamma^k r_k + value_gamma (1 - done) z`` (``value_gamma`` None: ``gamma ** nstep``).
    Returns ``(loss, td_error_per_sample)``; the probabilities of the taken actions must be > 0."""
    dist, next_n_dist, act, next_n_act, reward, done, weight = data
    reward = discounted_reward_sum(reward, gamma, nstep)
    if value_gamma is None:
        bootstrap_discount = gamma**nstep
    else:
        bootstrap_discount = torch.as_tensor(value_gamma, dtype=reward.dtype, device=reward.device).unsqueeze(
            -1
        )
    log_p, projected = _categorical_td(
        dist, next_n_dist, act, next_n_act, reward, done, bootstrap_discount, v_min, v_max, n_atom
    )
    if not bool(torch.isfinite(log_p).all()):
        raise ValueError(
            "dist holds a zero or negative probability for a taken action, so its log is not finite: "
            "pass softmax outputs clamped away from 0 (C51 models clamp at a small epsilon)."
        )
    td_error_per_sample = -(log_p * projected).sum(-1)
    loss = -(log_p * projected * _row_weight(weight, log_p)).sum(-1).mean()
    return loss, td_error_per_sample


def _nstep_quantile_target(
    next_value: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    gamma: float,
    nstep: int,
    value_gamma: torch.Tensor | None,
) -> torch.Tensor:
    """``sum_k gamma^k r_k + value_gamma (1 - done) next_value`` for [B, N] quantile values."""
    discounted = discounted_reward_sum(reward, gamma, nstep).unsqueeze(-1)
    bootstrap = gamma**nstep if value_gamma is None else value_gamma.unsqueeze(-1)
    return discounted + bootstrap * next_value * (1 - as_float(done, reward)).unsqueeze(-1)


def qrdqn_nstep_td_error(
    data: qrdqn_nstep_td_data,
    gamma: float,
    nstep: int = 1,
    value_gamma: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """QR-DQN's n-step quantile Huber loss between the N quantiles of ``Q(s, a)`` and the N target
    quantiles. Returns ``(loss, per_sample_loss)``; per sample: the sum over target quantiles of the
    mean over predicted ones of ``|tau - 1{target < pred}| * huber(target - pred)``."""
    q, next_n_q, action, next_n_action, reward, done, tau, weight = data
    _check_dims(
        action=(action, 1), next_n_action=(next_n_action, 1), done=(done, 1), q=(q, 3), next_n_q=(next_n_q, 3)
    )
    _check_dims(reward=(reward, 2))
    if weight is None:
        weight = torch.ones_like(action)
    rows = torch.arange(action.shape[0])
    q_s_a = q[rows, action, :].unsqueeze(2)  # [B, N, 1]
    target = _nstep_quantile_target(next_n_q[rows, next_n_action, :], reward, done, gamma, nstep, value_gamma)
    target = target.unsqueeze(1)  # [B, 1, N]
    below = (target - q_s_a).detach().le(0.0).float()
    per_sample = (huber(target - q_s_a) * (tau - below).abs()).sum(-1).mean(1)
    return (per_sample * weight).mean(), per_sample


def iqn_nstep_td_error(
    data: iqn_nstep_td_data,
    gamma: float,
    nstep: int = 1,
    kappa: float = 1.0,
    value_gamma: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """IQN's n-step quantile Huber loss between ``Q(s, a)`` at the tau sampled fractions and the
    tau' target values. Returns ``(loss, per_sample_loss)``; per sample: the mean over target samples
    of the sum over predicted ones of ``|fraction - 1{error < 0}| * huber(error, kappa) / kappa``."""
    q, next_n_q, action, next_n_action, reward, done, replay_quantiles, weight = data
    _check_dims(
        action=(action, 1), next_n_action=(next_n_action, 1), done=(done, 1), q=(q, 3), next_n_q=(next_n_q, 3)
    )
    _check_dims(reward=(reward, 2))
    if weight is None:
        weight = torch.ones_like(action)
    batch_size, tau, tau_prime = done.shape[0], q.shape[0], next_n_q.shape[0]
    q_s_a = q.gather(-1, action.repeat(tau, 1).unsqueeze(-1)).permute(1, 0, 2)  # [B, tau, 1]
    next_value = next_n_q.gather(-1, next_n_action.repeat(tau_prime, 1).unsqueeze(-1)).permute(1, 0, 2)
    target = _nstep_quantile_target(next_value.squeeze(-1), reward, done, gamma, nstep, value_gamma)
    errors = target[:, :, None, None] - q_s_a[:, None, :, :]  # [B, tau', tau, 1]
    fractions = replay_quantiles.reshape(tau, batch_size, 1).permute(1, 0, 2)[:, None, :, :]
    quantile_huber = (fractions - (errors < 0).float().detach()).abs() * huber(errors, kappa) / kappa
    per_sample = quantile_huber.sum(dim=2).mean(dim=1)[:, 0]
    return (per_sample * weight).mean(), per_sample
