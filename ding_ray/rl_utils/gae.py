"""Generalized Advantage Estimation (Schulman et al., 2016, arXiv:1506.02438)."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import torch

gae_data = namedtuple("gae_data", ["value", "next_value", "reward", "done", "traj_flag"])
gae_data.__doc__ = """Inputs of ``gae``, each [T] or [T, B] (time first).

``done``: 1 where the episode terminated at that step (no bootstrap from ``next_value``);
``traj_flag``: 1 where the trajectory stops (termination, time limit or a cut in the data), so no
later step's advantage flows back across it; None means ``done``."""


def gae(data: gae_data, gamma: float = 0.99, lambda_: float = 0.97) -> torch.Tensor:
    """Advantages ``A_t = delta_t + gamma * lambda * (1 - traj_flag_t) * A_{t+1}``, where
    ``delta_t = r_t + gamma * (1 - done_t) * V(s_{t+1}) - V(s_t)``. Same shape as ``value``.

    ``value`` may carry one more trailing dimension than ``reward`` (several agents sharing a
    reward); the inputs are not modified. The advantages are targets: no gradient flows back
    through them.
    """
    value, next_value, reward, done, traj_flag = data
    if done is None:
        done = torch.zeros_like(reward)
    if traj_flag is None:
        traj_flag = done
    done, traj_flag = done.to(value.dtype), traj_flag.to(value.dtype)
    reward = reward.to(value.dtype)
    if value.dim() == reward.dim() + 1:
        reward, done, traj_flag = reward.unsqueeze(-1), done.unsqueeze(-1), traj_flag.unsqueeze(-1)
    delta = reward + gamma * (1.0 - done) * next_value - value
    factor = gamma * lambda_ * (1.0 - traj_flag)
    # The recurrence runs backwards over time in numpy: one step costs ~0.3 us there and ~5 us as
    # torch ops. Same dtype and the same two roundings per step (multiply, then add), so the result
    # equals the torch loop's bit for bit.
    delta_np, factor_np = delta.detach().cpu().numpy(), factor.detach().cpu().numpy()
    adv = np.empty_like(delta_np)
    running = np.zeros_like(delta_np[0])
    for t in range(len(delta_np) - 1, -1, -1):
        running = delta_np[t] + factor_np[t] * running
        adv[t] = running
    return torch.from_numpy(adv).to(delta.device)
