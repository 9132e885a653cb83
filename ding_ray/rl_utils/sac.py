"""Soft actor-critic math: the tanh-squashed Gaussian, the soft TD target, the three losses."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import torch

# Added inside the log of the tanh correction, as DI-engine does: at |a| -> 1 the Jacobian
# 1 - tanh(u)^2 underflows to 0 in float32 and its log would be -inf.
TANH_EPS = 1e-6
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def tanh_gaussian_sample(
    mu: torch.Tensor, sigma: torch.Tensor, noise: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``a = tanh(mu + sigma * noise)`` and its log-density, summed over the action dims ([B, A], [B]).

    ``noise`` is standard normal (drawn when not given); the sample is reparameterized, so the
    gradient flows into ``mu`` and ``sigma``. The log-density of the squashed action is the
    Gaussian's minus ``sum log(1 - a^2 + eps)``, the log-Jacobian of tanh.
    """
    if noise is None:
        noise = torch.randn_like(mu)
    pre_tanh = mu + sigma * noise
    action = torch.tanh(pre_tanh)
    gaussian_log_prob = (-0.5 * noise.pow(2) - sigma.log() - _HALF_LOG_2PI).sum(-1)
    log_prob = gaussian_log_prob - torch.log(1.0 - action.pow(2) + TANH_EPS).sum(-1)
    return action, log_prob


def twin_min(q: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
    """One critic's Q values as they are; of twin critics' list, the elementwise minimum (clipped
    double Q-learning, which SAC and TD3 use against overestimation)."""
    if isinstance(q, torch.Tensor):
        return q
    return torch.min(*q) if len(q) == 2 else q[0]


def soft_q_target(
    next_q: torch.Tensor | Sequence[torch.Tensor],
    next_log_prob: torch.Tensor,
    reward: torch.Tensor,
    done: torch.Tensor,
    gamma: float,
    alpha: float | torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The TD target ``r + gamma * (1 - done) * V(s')`` and the soft value of the next state
    ``V(s') = min_i Q_i(s', a') - alpha * log pi(a'|s')`` (what DI-engine logs as ``target_q_value``,
    ``target_value`` in discrete SAC), all [B].

    ``next_q`` is one [B] tensor or the twin critics' list (their minimum is taken).
    """
    soft_value = twin_min(next_q) - alpha * next_log_prob
    return reward + gamma * (1.0 - done.to(reward.dtype)) * soft_value, soft_value


def sac_critic_loss(
    q_value: torch.Tensor | Sequence[torch.Tensor],
    q_target: torch.Tensor,
    weight: torch.Tensor | None = None,
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Each critic's mean (weighted) squared TD error (their sum is the loss to minimise), and the
    per-sample squared TD error averaged over the critics, unweighted: DI-engine's ``td_error``
    and the priority it gives a prioritized buffer."""
    q_values = [q_value] if isinstance(q_value, torch.Tensor) else list(q_value)
    q_target = q_target.detach()
    losses, td_error = [], 0.0
    for q in q_values:
        squared = (q - q_target).pow(2)
        losses.append(squared.mean() if weight is None else (squared * weight).mean())
        td_error = td_error + squared.detach()
    return losses, td_error / len(q_values)


def sac_policy_loss(
    log_prob: torch.Tensor, q_new: torch.Tensor | Sequence[torch.Tensor], alpha: float | torch.Tensor
) -> torch.Tensor:
    """``mean(alpha * log pi(a|s) - min_i Q_i(s, a))`` for actions ``a`` freshly sampled from the actor."""
    return (alpha * log_prob - twin_min(q_new)).mean()


def sac_alpha_loss(alpha_param: torch.Tensor, log_prob: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """``-mean(alpha_param * (log pi + target_entropy))``, with ``log pi`` held fixed.

    ``alpha_param`` is log(alpha) (DI-engine's ``log_space=True``) or alpha itself. Its gradient
    raises alpha while the policy's entropy ``-log pi`` is below ``target_entropy`` and lowers
    it above.
    """
    return -(alpha_param * (log_prob.detach() + target_entropy)).mean()


def discrete_sac_policy_loss(
    prob: torch.Tensor, log_prob: torch.Tensor, q: torch.Tensor, alpha: float | torch.Tensor
) -> torch.Tensor:
    """Discrete SAC's actor loss ``mean_b sum_a pi(a|s) (alpha log pi(a|s) - Q(s, a))``, all [B, A]:
    an expectation over the actions instead of a sampled action; ``q`` carries no gradient."""
    return (prob * (alpha * log_prob - q.detach())).sum(-1).mean()


@torch.no_grad()
def soft_update(target: Iterable[torch.Tensor], source: Iterable[torch.Tensor], theta: float) -> None:
    """Polyak averaging in place: ``target <- (1 - theta) * target + theta * source``."""
    target, source = list(target), list(source)
    if len(target) != len(source):
        raise ValueError(f"soft_update: {len(target)} target tensors but {len(source)} source tensors.")
    torch._foreach_lerp_(target, source, theta)
