"""TD(lambda) returns and loss (Sutton & Barto, eq. 12.18), as DI-engine's ``ding.rl_utils.td``.

Every tensor is time first: values with their bootstrap ``[T + 1, B]``, the rest ``[T, B]``.
"""

from __future__ import annotations

from collections import namedtuple

import torch
import torch.nn.functional as F

from ding_ray.errors import ShapeError

td_lambda_data = namedtuple("td_lambda_data", ["value", "reward", "weight"])
td_lambda_data.__doc__ = """Inputs of ``td_lambda_error``: ``value`` [T + 1, B] (state values of steps
0..T; after a terminal step values and rewards must be 0, the terminal state's value included),
``reward`` [T, B], ``weight`` [T, B] (or broadcastable to it) or None (all 1)."""


def multistep_forward_view(
    bootstrap_values: torch.Tensor,
    rewards: torch.Tensor,
    gammas: torch.Tensor,
    lambda_: torch.Tensor,
    done: torch.Tensor | None = None,
) -> torch.Tensor:
    """Lambda returns from the last step backwards, all inputs [T, B] (``bootstrap_values`` are the
    values of steps 1..T):

    ``G_{T-1} = r_{T-1} + (1 - d_{T-1}) gamma_{T-1} V_T`` and
    ``G_t = r_t + (1 - d_t) (gamma_t lambda_t G_{t+1} + (gamma_t - gamma_t lambda_t) V_{t+1})``.
    ``lambda_`` of the last step is not used. ``done`` None: no step ends an episode.
    """
    returns = torch.empty_like(rewards)
    if done is None:
        done = torch.zeros_like(rewards)
    returns[-1] = rewards[-1] + (1 - done[-1]) * gammas[-1] * bootstrap_values[-1]
    traced = gammas * lambda_
    for t in reversed(range(rewards.shape[0] - 1)):
        returns[t] = rewards[t] + (1 - done[t]) * (
            traced[t] * returns[t + 1] + (gammas[t] - traced[t]) * bootstrap_values[t]
        )
    return returns


def generalized_lambda_returns(
    bootstrap_values: torch.Tensor,
    rewards: torch.Tensor,
    gammas: torch.Tensor | float,
    lambda_: torch.Tensor | float,
    done: torch.Tensor | None = None,
) -> torch.Tensor:
    """Lambda returns [T, B] of steps 0..T-1 from ``bootstrap_values`` [T + 1, B] (values of steps
    0..T) and ``rewards`` [T, B]; ``gammas`` and ``lambda_`` are numbers or per-step [T, B] tensors."""
    if bootstrap_values.shape[0] != rewards.shape[0] + 1:
        raise ShapeError(
            f"bootstrap_values must hold one more step than rewards ([T + 1, B] for [T, B]), got "
            f"{tuple(bootstrap_values.shape)} and {tuple(rewards.shape)}."
        )
    if not isinstance(gammas, torch.Tensor):
        gammas = gammas * torch.ones_like(rewards)
    if not isinstance(lambda_, torch.Tensor):
        lambda_ = lambda_ * torch.ones_like(rewards)
    return multistep_forward_view(bootstrap_values[1:], rewards, gammas, lambda_, done)


def td_lambda_error(data: td_lambda_data, gamma: float = 0.9, lambda_: float = 0.8) -> torch.Tensor:
    """Half the weighted mean squared difference between ``value[:-1]`` and the (detached) lambda
    returns; the last value only bootstraps. Returns the 0-dim loss."""
    value, reward, weight = data
    if weight is None:
        weight = torch.ones_like(reward)
    with torch.no_grad():
        returns = generalized_lambda_returns(value, reward, gamma, lambda_)
    return 0.5 * (F.mse_loss(returns, value[:-1], reduction="none") * weight).mean()
