"""UPGO, upgoing policy update (Vinyals et al., 2019, AlphaStar), as DI-engine's ``ding.rl_utils.upgo``.

The UPGO return follows the lambda return with lambda 1 while the next step does better than its
value estimate (``r_{t+1} + V_{t+2} >= V_{t+1}``) and bootstraps from ``V_{t+1}`` otherwise.
Time first: ``[T, B]``, values with their bootstrap ``[T + 1, B]``; no discount.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ding_ray.errors import ShapeError
from ding_ray.rl_utils.td_lambda import generalized_lambda_returns


def tb_cross_entropy(
    logit: torch.Tensor, label: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """The log-likelihood ``log pi(label)`` (a negated cross-entropy) per step, [T, B].

    ``logit`` [T, B, N] with ``label`` [T, B]; or ``logit`` [T, B, S, N] with ``label`` [T, B, S]
    (S sub-actions, their log-likelihoods summed, each multiplied by ``mask`` [T, B, S] if given).
    As in DI-engine, ``mask`` is applied to sub-action labels only.
    """
    if label.dim() not in (2, 3):
        raise ShapeError(f"label must be [T, B] or [T, B, S], got {tuple(label.shape)}.")
    steps, batch = label.shape[:2]
    log_likelihood = -F.cross_entropy(logit.reshape(-1, logit.shape[-1]), label.reshape(-1), reduction="none")
    if label.dim() == 2:
        return log_likelihood.reshape(steps, batch)
    log_likelihood = log_likelihood.view(steps * batch, -1)
    if mask is not None:
        log_likelihood = log_likelihood * mask.reshape(-1, logit.shape[-2])
    return log_likelihood.sum(dim=1).reshape(steps, batch)


def upgo_returns(rewards: torch.Tensor, bootstrap_values: torch.Tensor) -> torch.Tensor:
    """UPGO returns [T, B] of steps 0..T-1 from ``rewards`` [T, B] and ``bootstrap_values`` [T + 1, B]."""
    improves = (rewards + bootstrap_values[1:]) >= bootstrap_values[:-1]
    # step t traces on to t + 1 when step t + 1 improved; the last step's lambda is unused
    lambdas = torch.cat([improves[1:], torch.ones_like(improves[-1:])], dim=0)
    return generalized_lambda_returns(bootstrap_values, rewards, 1.0, lambdas)


def upgo_loss(
    target_output: torch.Tensor,
    rhos: torch.Tensor,
    action: torch.Tensor,
    rewards: torch.Tensor,
    bootstrap_values: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """``-mean(rho_t (G_t - V_t) log pi(a_t))`` with ``G`` the UPGO returns (detached), ``rhos`` [T, B]
    the importance ratios, ``target_output`` the learner's logits [T, B, N]. Returns the 0-dim loss."""
    with torch.no_grad():
        advantages = rhos * (upgo_returns(rewards, bootstrap_values) - bootstrap_values[:-1])
    log_likelihood = tb_cross_entropy(target_output, action, mask)
    return -(advantages * log_likelihood).mean()
