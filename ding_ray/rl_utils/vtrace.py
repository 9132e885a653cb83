"""V-trace off-policy targets and IMPALA's losses (Espeholt et al., 2018, arXiv:1802.01561).

``vtrace`` is the pure form: per-step discounts (0 where an episode ends), clipped importance
weights ``rho`` and ``c``, a bootstrap value after the last step; it returns the value targets
``vs`` and the policy-gradient advantages. The backward recursion over time is written as one
product-matrix sum, so a whole unroll is a few tensor operations rather than a Python loop.

DI-engine's names are kept alongside: ``vtrace_nstep_return``, ``vtrace_advantage``,
``vtrace_data``, ``vtrace_loss``, ``vtrace_error_discrete_action``,
``vtrace_error_continuous_action`` and ``compute_importance_weights``. Every input is time first:
``[T, B]`` (or ``[T]``), values with their bootstrap ``[T + 1, B]`` where DI-engine has them so.
"""

from __future__ import annotations

from collections import namedtuple

import torch
import torch.nn.functional as F
from torch.distributions import Categorical, Independent, Normal

vtrace_returns = namedtuple("vtrace_returns", ["vs", "pg_advantages"])
vtrace_returns.__doc__ = """``vs`` [T, B]: the V-trace value targets; ``pg_advantages`` [T, B]: the
policy-gradient advantages ``rho_pg_t * (r_t + discount_t * vs_{t+1} - V(x_t))``."""

vtrace_data = namedtuple(
    "vtrace_data",
    ["target_output", "behaviour_output", "action", "value", "reward", "weight", "done"],
    defaults=(None,),
)
vtrace_data.__doc__ = """Inputs of ``vtrace_error_*``: the learner's and the behaviour policy's outputs
(logits [T, B, A], or ``{'mu', 'sigma'}`` dicts), ``action`` [T, B] (or [T, B, A]), ``value``
[T + 1, B] (the last row bootstraps), ``reward`` [T, B], ``weight`` [T, B] per-step loss weights or
None (all 1). ``done`` [T, B] (ding_ray's addition, DI-engine's six fields still construct it): 1
where an episode ends, so nothing is bootstrapped or traced across it; None: no episode ends."""

vtrace_loss = namedtuple("vtrace_loss", ["policy_loss", "value_loss", "entropy_loss"])


def _discounted_sums(deltas: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
    """``x_t = deltas_t + factors_t * x_{t+1}`` with ``x_T = 0``, for every t at once.

    ``x_t = sum_{s >= t} (prod_{t <= i < s} factors_i) * deltas_s``: the products come from one
    cumulative product over a [T, T] matrix whose entries left of the diagonal are 1.
    """
    steps = deltas.shape[0]
    extra = (1,) * (deltas.dim() - 1)
    upper = torch.ones(steps, steps, dtype=torch.bool, device=deltas.device).triu().view(steps, steps, *extra)
    per_row = torch.where(upper, factors.unsqueeze(0), torch.ones_like(factors).unsqueeze(0))
    prods = torch.cumprod(per_row, dim=1)  # [t, i] = prod_{t <= j <= i} factors_j (i >= t)
    decay = torch.cat([torch.ones_like(prods[:, :1]), prods[:, :-1]], dim=1) * upper
    return (decay * deltas.unsqueeze(0)).sum(dim=1)


def discounted_sums_nbytes(steps: int, batch: int, itemsize: int = 4) -> int:
    """Peak bytes ``_discounted_sums`` holds for [steps, batch] inputs: four [T, T, B] tensors at
    once (the factors per row, their products, the decays, the weighted deltas) and the [T, T] mask."""
    return steps * steps * (4 * batch * itemsize + 1)


@torch.no_grad()
def vtrace(
    log_rhos: torch.Tensor,
    discounts: torch.Tensor,
    rewards: torch.Tensor,
    values: torch.Tensor,
    bootstrap_value: torch.Tensor,
    lambda_: float = 1.0,
    rho_clip_ratio: float = 1.0,
    c_clip_ratio: float = 1.0,
    rho_pg_clip_ratio: float | None = 1.0,
) -> vtrace_returns:
    """V-trace targets of one batch of unrolls (no gradient flows through them).

    Args:
        log_rhos: [T, B] ``log pi(a_t|x_t) - log mu(a_t|x_t)`` (learner over behaviour policy).
        discounts: [T, B] ``gamma`` where the episode goes on after step t, 0 where it ends.
        rewards, values: [T, B]; ``bootstrap_value`` [B]: ``V(x_T)``, the state after the last step.
        lambda_: scales every trace coefficient ``c`` (1: the paper's V-trace).
        rho_clip_ratio, c_clip_ratio, rho_pg_clip_ratio: the clips of ``rho`` in the targets, of
            ``c`` in the traces and of ``rho`` in the policy-gradient advantage (None: the
            advantage without ``rho``, for a loss that weighs it itself, as APPO's surrogate).
    """
    rhos = torch.exp(log_rhos)
    clipped_rhos = torch.clamp(rhos, max=rho_clip_ratio)
    cs = lambda_ * torch.clamp(rhos, max=c_clip_ratio)
    bootstrap_value = torch.as_tensor(bootstrap_value, dtype=values.dtype, device=values.device)
    next_values = torch.cat([values[1:], bootstrap_value.expand_as(values[:1])], dim=0)
    deltas = clipped_rhos * (rewards + discounts * next_values - values)
    vs = values + _discounted_sums(deltas, discounts * cs)
    next_vs = torch.cat([vs[1:], bootstrap_value.expand_as(values[:1])], dim=0)
    pg_advantages = rewards + discounts * next_vs - values
    if rho_pg_clip_ratio is not None:
        pg_advantages = torch.clamp(rhos, max=rho_pg_clip_ratio) * pg_advantages
    return vtrace_returns(vs, pg_advantages)


def vtrace_nstep_return(
    clipped_rhos: torch.Tensor,
    clipped_cs: torch.Tensor,
    reward: torch.Tensor,
    bootstrap_values: torch.Tensor,
    gamma: float | torch.Tensor = 0.99,
    lambda_: float = 0.95,
) -> torch.Tensor:
    """DI-engine's form: the V-trace targets [T, B] from clipped weights [T, B] and the values
    ``bootstrap_values`` [T + 1, B]. ``gamma`` may be a [T, B] tensor of discounts."""
    values = bootstrap_values[:-1]
    deltas = clipped_rhos * (reward + gamma * bootstrap_values[1:] - values)
    factors = torch.as_tensor(gamma * lambda_, dtype=values.dtype, device=values.device) * clipped_cs
    return values + _discounted_sums(deltas, factors.expand_as(deltas))


def vtrace_advantage(
    clipped_pg_rhos: torch.Tensor,
    reward: torch.Tensor,
    return_: torch.Tensor,
    bootstrap_values: torch.Tensor,
    gamma: float | torch.Tensor,
) -> torch.Tensor:
    """DI-engine's form: ``rho_pg * (r_t + gamma * return_ - V(x_t))``, where ``return_`` is the
    target one step later (``vs_{t+1}``, the bootstrap value after the last step) and
    ``bootstrap_values`` is ``V(x_t)`` [T, B]."""
    return clipped_pg_rhos * (reward + gamma * return_ - bootstrap_values)


def _distribution(output: torch.Tensor | dict, action_space: str) -> torch.distributions.Distribution:
    # no argument checks: they cost the learner ~5% a step, and non-finite outputs are caught as
    # non-finite losses (check_finite_loss) with the batch that made them
    if action_space == "continuous":
        normal = Normal(loc=output["mu"], scale=output["sigma"], validate_args=False)
        return Independent(normal, 1, validate_args=False)
    return Categorical(logits=output, validate_args=False)


def compute_importance_weights(
    target_output: torch.Tensor | dict,
    behaviour_output: torch.Tensor | dict,
    action: torch.Tensor,
    action_space_type: str = "discrete",
    requires_grad: bool = False,
) -> torch.Tensor:
    """``pi(a|x) / mu(a|x)`` [T, B] of the taken actions: categorical logits, or diagonal Gaussians
    (``{'mu', 'sigma'}``) for ``action_space_type='continuous'``."""
    with torch.enable_grad() if requires_grad else torch.no_grad():
        log_pi = _distribution(target_output, action_space_type).log_prob(action)
        log_mu = _distribution(behaviour_output, action_space_type).log_prob(action)
        return torch.exp(log_pi - log_mu)


def _vtrace_error(
    data: vtrace_data,
    action_space: str,
    gamma: float,
    lambda_: float,
    rho_clip_ratio: float,
    c_clip_ratio: float,
    rho_pg_clip_ratio: float,
    surrogate_clip_ratio: float | None = None,
) -> vtrace_loss:
    target_output, behaviour_output, action, value, reward, weight, done = data
    dist_target = _distribution(target_output, action_space)
    log_prob = dist_target.log_prob(action)
    with torch.no_grad():
        behaviour_log_prob = _distribution(behaviour_output, action_space).log_prob(action)
        log_rhos = log_prob - behaviour_log_prob
        discounts = torch.full_like(reward, gamma) if done is None else gamma * (1.0 - done.to(reward.dtype))
        vs, adv = vtrace(
            log_rhos,
            discounts,
            reward,
            value[:-1].detach(),
            value[-1].detach(),
            lambda_,
            rho_clip_ratio,
            c_clip_ratio,
            rho_pg_clip_ratio if surrogate_clip_ratio is None else None,  # the surrogate weighs it
        )
    if weight is None:
        weight = torch.ones_like(reward)
    if surrogate_clip_ratio is None:
        policy_loss = -(log_prob * adv * weight).mean()
    else:
        # APPO's trust region on stale data: the ratio to the behaviour policy is clipped to
        # [1 - eps, 1 + eps], so no step moves the policy far from the one that collected an unroll
        ratio = torch.exp(log_prob - behaviour_log_prob)
        clipped = ratio.clamp(1.0 - surrogate_clip_ratio, 1.0 + surrogate_clip_ratio)
        policy_loss = -(torch.min(ratio * adv, clipped * adv) * weight).mean()
    value_loss = (F.mse_loss(value[:-1], vs, reduction="none") * weight).mean()
    entropy_loss = (dist_target.entropy() * weight).mean()
    return vtrace_loss(policy_loss, value_loss, entropy_loss)


def vtrace_error_discrete_action(
    data: vtrace_data,
    gamma: float = 0.99,
    lambda_: float = 0.95,
    rho_clip_ratio: float = 1.0,
    c_clip_ratio: float = 1.0,
    rho_pg_clip_ratio: float = 1.0,
    surrogate_clip_ratio: float | None = None,
) -> vtrace_loss:
    """IMPALA's three losses for categorical policies (``target_output`` logits [T, B, A]):
    ``policy_loss = -mean(log pi(a_t) * A_t * w_t)``, ``value_loss = mean((V(x_t) - vs_t)^2 * w_t)``,
    ``entropy_loss = mean(H(pi(.|x_t)) * w_t)`` (a bonus: subtract it, weighted).

    ``surrogate_clip_ratio`` eps (ding_ray's addition; None, DI-engine's loss, by default): APPO's
    policy loss instead, ``-mean(min(r_t * A_t, clip(r_t, 1 - eps, 1 + eps) * A_t) * w_t)`` with
    ``r_t = pi(a_t) / mu(a_t)`` against the behaviour policy and ``A_t`` the V-trace advantage
    without ``rho`` (``rho_pg_clip_ratio`` is then unused)."""
    return _vtrace_error(
        data, "discrete", gamma, lambda_, rho_clip_ratio, c_clip_ratio, rho_pg_clip_ratio,
        surrogate_clip_ratio,
    )  # fmt: skip


def vtrace_error_continuous_action(
    data: vtrace_data,
    gamma: float = 0.99,
    lambda_: float = 0.95,
    rho_clip_ratio: float = 1.0,
    c_clip_ratio: float = 1.0,
    rho_pg_clip_ratio: float = 1.0,
    surrogate_clip_ratio: float | None = None,
) -> vtrace_loss:
    """``vtrace_error_discrete_action`` for diagonal Gaussian policies: outputs are
    ``{'mu', 'sigma'}`` dicts of [T, B, A], ``action`` [T, B, A]."""
    return _vtrace_error(
        data, "continuous", gamma, lambda_, rho_clip_ratio, c_clip_ratio, rho_pg_clip_ratio,
        surrogate_clip_ratio,
    )  # fmt: skip
