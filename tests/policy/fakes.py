"""A model with known outputs, shared by the actor-critic policy tests (PPO, IMPALA), and the small
continuous-action policies and batches of the SAC and TD3/DDPG tests.

Kept apart from ``tests.fakes``: the envs' worker processes import that module, and torch with it
would slow every worker's start.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ding_ray.policy import create_policy


class StubActorCritic(torch.nn.Module):
    """Critic: V(obs) = obs[0]. Actor: fixed logits [0, ln 3] (p = .25 / .75)."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(()))

    def forward(self, obs, mode):
        logit = torch.tensor([0.0, math.log(3.0)]).expand(len(obs), 2) * self.scale
        return {"logit": logit, "value": obs[:, 0] * self.scale}


def continuous_policy(policy_type: str, model: dict, /, **overrides):
    """A seeded ``policy_type`` policy on 3-dim observations and 2-dim actions, batch size 8; a dict
    override updates that section, anything else replaces the key."""
    torch.manual_seed(0)
    cfg = dict(type=policy_type, model=dict(model), learn=dict(batch_size=8))
    for key, value in overrides.items():
        if isinstance(value, dict):
            cfg.setdefault(key, {}).update(value)
        else:
            cfg[key] = value
    return create_policy(cfg, enable_field=["learn", "collect", "eval"])


def continuous_batch(n: int = 8, seed: int = 0, done_every: int = 0) -> dict:
    """``n`` random transitions (obs 3, action 2 in [-1, 1]); every ``done_every``-th is terminal."""
    rng = np.random.default_rng(seed)
    done = np.arange(n) % done_every == done_every - 1 if done_every else np.zeros(n, dtype=bool)
    return {
        "obs": rng.normal(size=(n, 3)).astype(np.float32),
        "next_obs": rng.normal(size=(n, 3)).astype(np.float32),
        "action": rng.uniform(-1, 1, size=(n, 2)).astype(np.float32),
        "reward": rng.normal(size=n).astype(np.float32),
        "done": done,
    }
