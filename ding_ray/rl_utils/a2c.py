"""Advantage actor-critic losses (Mnih et al., 2016, arXiv:1602.01783), DI-engine's ``rl_utils.a2c``."""

from __future__ import annotations

from collections import namedtuple

import torch
import torch.nn.functional as F
from torch.distributions import Categorical, Distribution, Independent, Normal

a2c_data = namedtuple("a2c_data", ["logit", "action", "value", "adv", "return_", "weight"])
a2c_data.__doc__ = """Inputs of ``a2c_error``: ``logit`` [B, A] (``a2c_error_continuous``: a dict of
``mu`` and ``sigma`` [B, A]), ``action`` [B] ([B, A]), ``value``, ``adv``, ``return_`` [B],
``weight`` [B] or None (all 1)."""

a2c_loss = namedtuple("a2c_loss", ["policy_loss", "value_loss", "entropy_loss"])
a2c_loss.__doc__ = """0-dim tensors: ``policy_loss`` ``-mean(log pi(a|s) adv w)``, ``value_loss``
``mean((return_ - value)^2 w)``, ``entropy_loss`` ``mean(H(pi(.|s)) w)`` (an entropy to maximise:
subtract it, scaled, from the total loss)."""


def _a2c_loss(dist: Distribution, data: a2c_data) -> a2c_loss:
    _, action, value, adv, return_, weight = data
    if weight is None:
        weight = torch.ones_like(value)
    policy_loss = -(dist.log_prob(action) * adv * weight).mean()
    value_loss = (F.mse_loss(return_, value, reduction="none") * weight).mean()
    entropy_loss = (dist.entropy() * weight).mean()
    return a2c_loss(policy_loss, value_loss, entropy_loss)


def a2c_error(data: a2c_data) -> a2c_loss:
    """A2C's losses for discrete actions: a categorical policy over ``logit``."""
    return _a2c_loss(Categorical(logits=data.logit), data)


def a2c_error_continuous(data: a2c_data) -> a2c_loss:
    """A2C's losses for continuous actions: a diagonal Gaussian policy of ``logit['mu']`` and
    ``logit['sigma']``, the action's log-probability summed over its dimensions."""
    if not isinstance(data.logit, dict) or not {"mu", "sigma"} <= data.logit.keys():
        raise ValueError(
            "a2c_error_continuous needs logit={'mu': [B, A], 'sigma': [B, A]}; use a2c_error for logits."
        )
    return _a2c_loss(Independent(Normal(data.logit["mu"], data.logit["sigma"]), 1), data)
