"""IQN: DI-engine's ``IQNPolicy`` (``'iqn'``), Q-learning of the return's quantile function at
sampled fractions (Dabney et al., 2018, arXiv:1806.06923)."""

from __future__ import annotations

from typing import Any

import torch

from ding_ray.policy.distributional_q import DistributionalQPolicy
from ding_ray.rl_utils import iqn_nstep_td_data, iqn_nstep_td_error
from ding_ray.utils.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register("iqn")
class IQNPolicy(DistributionalQPolicy):
    """Learn: the quantile Huber loss (threshold ``learn.kappa``) between ``Z(s, a)`` at fractions
    drawn for this batch and the target net's n-step values at other drawn fractions, at the online
    net's greedy next action. Collect: epsilon-greedy on the mean over drawn fractions. Eval: greedy.
    Each forward draws its fractions from torch's global generator, in DI-engine's order."""

    # Over DQNPolicy's config, DI-engine's IQNPolicy defaults:
    config = dict(
        type="iqn",
        learn=dict(
            kappa=1.0,  # threshold of the quantile Huber loss
        ),
    )

    def default_model(self) -> tuple[str, list[str]]:
        return "iqn", ["ding_ray.model.distributional"]

    def _init_learn(self) -> None:
        super()._init_learn()
        self._kappa = float(self._cfg.learn.kappa)

    def _td_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        data = self._nstep_inputs(batch)
        output, target, next_action = self._forward_online_and_target(data)
        target_q = target["q"]
        td_data = iqn_nstep_td_data(
            output["q"],
            target_q,
            data["action"],
            next_action,
            data["reward"],
            data["done"],
            output["quantiles"],
            data["weight"],
        )
        loss, td_error_per_sample = iqn_nstep_td_error(
            td_data, self._gamma, nstep=self._nstep, kappa=self._kappa, value_gamma=data["value_gamma"]
        )
        return loss, td_error_per_sample, {}
