"""PPO's clipped objectives (Schulman et al., 2017, arXiv:1707.06347).

Names follow DI-engine: ``ppo_error`` takes a ``ppo_data`` and returns ``(ppo_loss, ppo_info)``;
``ppo_policy_error`` and ``ppo_value_error`` are its two halves. The ``*_continuous`` forms take
diagonal Gaussians (``{'mu', 'sigma'}`` dicts) where the others take categorical logits.
"""

from __future__ import annotations

from collections import namedtuple

import torch

ppo_data = namedtuple(
    "ppo_data", ["logit_new", "logit_old", "action", "value_new", "value_old", "adv", "return_", "weight"]
)
ppo_data.__doc__ = """Inputs of ``ppo_error``: logits [B, A], action [B] (int), values, adv, return_ [B];
``weight`` [B] per-sample loss weights or None (all 1)."""
ppo_data_continuous = namedtuple(
    "ppo_data_continuous",
    ["mu_sigma_new", "mu_sigma_old", "action", "value_new", "value_old", "adv", "return_", "weight"],
)
ppo_data_continuous.__doc__ = """``ppo_data`` of a Gaussian policy (``mu_sigma_*``: {'mu', 'sigma'} dicts)."""
ppo_policy_data = namedtuple("ppo_policy_data", ["logit_new", "logit_old", "action", "adv", "weight"])
ppo_policy_data_continuous = namedtuple(
    "ppo_policy_data_continuous", ["mu_sigma_new", "mu_sigma_old", "action", "adv", "weight"]
)
ppo_value_data = namedtuple("ppo_value_data", ["value_new", "value_old", "return_", "weight"])
ppo_loss = namedtuple("ppo_loss", ["policy_loss", "value_loss", "entropy_loss"])
ppo_policy_loss = namedtuple("ppo_policy_loss", ["policy_loss", "entropy_loss"])
ppo_info = namedtuple("ppo_info", ["approx_kl", "clipfrac"])


def _weighted_mean(x: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
    return x.mean() if weight is None else (x * weight).mean()


def ppo_policy_error(
    data: ppo_policy_data, clip_ratio: float = 0.2, dual_clip: float | None = None
) -> tuple[ppo_policy_loss, ppo_info]:
    """Clipped surrogate loss ``-mean(min(r * A, clip(r, 1 - eps, 1 + eps) * A))`` and the entropy
    of the new policy, with ``r = pi_new(a) / pi_old(a)``.

    ``dual_clip`` (> 1, Ye et al. 2020, arXiv:1912.09729) additionally bounds the objective from
    below by ``dual_clip * A`` where ``A < 0``, so one very unlikely old action cannot blow up the loss.
    ``approx_kl`` is ``mean(log pi_old(a) - log pi_new(a))``; ``clipfrac`` the share of samples with
    ``|r - 1| > clip_ratio``. Both are Python floats, for logging.
    """
    logit_new, logit_old, action, adv, weight = data
    dist_new = torch.distributions.Categorical(logits=logit_new)
    dist_old = torch.distributions.Categorical(logits=logit_old)
    return _clipped_surrogate(dist_new, dist_old, action, adv, weight, clip_ratio, dual_clip, adv < 0)


def ppo_policy_error_continuous(
    data: ppo_policy_data, clip_ratio: float = 0.2, dual_clip: float | None = None
) -> tuple[ppo_policy_loss, ppo_info]:
    """``ppo_policy_error`` for a diagonal Gaussian policy: ``data`` is a ``ppo_policy_data_continuous``
    (or a ``ppo_policy_data``: the fields are read in order) whose first two fields are
    ``{'mu': [B, A], 'sigma': [B, A]}``, ``action`` [B, A] the sampled (unclipped) actions. The
    log-probability and the entropy are sums over the action dimensions.

    ``dual_clip`` bounds the objective of **every** sample from below by ``dual_clip * A``, as
    DI-engine's continuous form does (its discrete form, and ``ppo_policy_error`` here, only where
    ``A < 0``). For ``A > 0`` that bound is above the clipped objective, so such a sample adds the
    constant ``-dual_clip * A`` to the loss and no gradient."""
    mu_sigma_new, mu_sigma_old, action, adv, weight = data
    dist_new = _gaussian(mu_sigma_new)
    dist_old = _gaussian(mu_sigma_old)
    if action.dim() == 1:
        action = action.unsqueeze(-1)
    everywhere = torch.ones_like(adv, dtype=torch.bool)
    return _clipped_surrogate(dist_new, dist_old, action, adv, weight, clip_ratio, dual_clip, everywhere)


def _gaussian(logit: dict) -> torch.distributions.Distribution:
    mu, sigma = logit["mu"], logit["sigma"]
    if mu.dim() == 1:  # one action dimension stored without its axis
        mu, sigma = mu.unsqueeze(-1), sigma.unsqueeze(-1)
    return torch.distributions.Independent(torch.distributions.Normal(mu, sigma), 1)


def _clipped_surrogate(dist_new, dist_old, action, adv, weight, clip_ratio, dual_clip, dual_clipped):
    """The clipped objective's loss; ``dual_clip`` bounds it from below where ``dual_clipped``."""
    if dual_clip is not None and dual_clip <= 1.0:
        raise ValueError(f"dual_clip must be greater than 1 (or None), got {dual_clip}.")
    logp_new = dist_new.log_prob(action)
    logp_old = dist_old.log_prob(action)
    entropy_loss = _weighted_mean(dist_new.entropy(), weight)
    ratio = torch.exp(logp_new - logp_old)
    surr1 = ratio * adv
    surr2 = ratio.clamp(1 - clip_ratio, 1 + clip_ratio) * adv
    objective = torch.min(surr1, surr2)
    if dual_clip is not None:
        objective = torch.where(dual_clipped, torch.max(objective, dual_clip * adv), objective)
    policy_loss = -_weighted_mean(objective, weight)
    with torch.no_grad():
        approx_kl = (logp_old - logp_new).mean().item()
        clipfrac = ((ratio - 1.0).abs() > clip_ratio).float().mean().item()
    return ppo_policy_loss(policy_loss, entropy_loss), ppo_info(approx_kl, clipfrac)


def ppo_value_error(
    data: ppo_value_data, clip_ratio: float = 0.2, use_value_clip: bool = True
) -> torch.Tensor:
    """``0.5 * mean((R - V)^2)``; with ``use_value_clip`` the larger of that error and the error of
    ``V_old + clip(V - V_old, -eps, eps)``, so one update cannot move the value far from the old one."""
    value_new, value_old, return_, weight = data
    error = (return_ - value_new).pow(2)
    if use_value_clip:
        value_clipped = value_old + (value_new - value_old).clamp(-clip_ratio, clip_ratio)
        error = torch.max(error, (return_ - value_clipped).pow(2))
    return 0.5 * _weighted_mean(error, weight)


def ppo_error(
    data: ppo_data, clip_ratio: float = 0.2, use_value_clip: bool = True, dual_clip: float | None = None
) -> tuple[ppo_loss, ppo_info]:
    """Policy, value and entropy terms of PPO; the caller weights them into one loss
    (``policy_loss + value_weight * value_loss - entropy_weight * entropy_loss``)."""
    logit_new, logit_old, action, value_new, value_old, adv, return_, weight = data
    policy, info = ppo_policy_error(
        ppo_policy_data(logit_new, logit_old, action, adv, weight), clip_ratio, dual_clip
    )
    value_loss = ppo_value_error(
        ppo_value_data(value_new, value_old, return_, weight), clip_ratio, use_value_clip
    )
    return ppo_loss(policy.policy_loss, value_loss, policy.entropy_loss), info


def ppo_error_continuous(
    data: ppo_data, clip_ratio: float = 0.2, use_value_clip: bool = True, dual_clip: float | None = None
) -> tuple[ppo_loss, ppo_info]:
    """``ppo_error`` for a diagonal Gaussian policy: ``data`` is a ``ppo_data_continuous`` (or a
    ``ppo_data``), its first two fields ``{'mu', 'sigma'}`` dicts; ``dual_clip`` as in
    ``ppo_policy_error_continuous``."""
    logit_new, logit_old, action, value_new, value_old, adv, return_, weight = data
    policy, info = ppo_policy_error_continuous(
        ppo_policy_data(logit_new, logit_old, action, adv, weight), clip_ratio, dual_clip
    )
    value_loss = ppo_value_error(
        ppo_value_data(value_new, value_old, return_, weight), clip_ratio, use_value_clip
    )
    return ppo_loss(policy.policy_loss, value_loss, policy.entropy_loss), info
