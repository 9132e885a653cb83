"""A model with known outputs, shared by the actor-critic policy tests (PPO, IMPALA).

Kept apart from ``tests.fakes``: the envs' worker processes import that module, and torch with it
would slow every worker's start.
"""

from __future__ import annotations

import math

import torch


class StubActorCritic(torch.nn.Module):
    """Critic: V(obs) = obs[0]. Actor: fixed logits [0, ln 3] (p = .25 / .75)."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(()))

    def forward(self, obs, mode):
        logit = torch.tensor([0.0, math.log(3.0)]).expand(len(obs), 2) * self.scale
        return {"logit": logit, "value": obs[:, 0] * self.scale}
