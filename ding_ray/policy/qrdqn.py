"""QR-DQN: DI-engine's ``QRDQNPolicy`` (``'qrdqn'``), Q-learning of the return's quantiles
(Dabney et al., 2017, arXiv:1710.10044)."""

from __future__ import annotations

from typing import Any

import torch

from ding_ray.policy.distributional_q import DistributionalQPolicy
from ding_ray.rl_utils import qrdqn_nstep_td_data, qrdqn_nstep_td_error
from ding_ray.utils.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register("qrdqn")
class QRDQNPolicy(DistributionalQPolicy):
    """Learn: the quantile Huber loss between the N quantiles of ``Z(s, a)`` and the target net's
    n-step quantiles at the online net's greedy next action. Collect: epsilon-greedy on the mean of
    the quantiles. Eval: greedy."""

    # Over DQNPolicy's config, DI-engine's QRDQNPolicy defaults:
    config = dict(
        type="qrdqn",
        learn=dict(
            # dizoo's QR-DQN configs set it; DI-engine's QR-DQN loss takes no kappa (its Huber
            # threshold is 1) and reads nothing here, nor does ding_ray
            kappa=1.0,
        ),
    )

    def default_model(self) -> tuple[str, list[str]]:
        return "qrdqn", ["ding_ray.model.distributional"]

    def _td_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        data = self._nstep_inputs(batch)
        output, target, next_action = self._forward_online_and_target(data)
        loss, td_error_per_sample = self._quantile_loss(output, target, next_action, data)
        return loss, td_error_per_sample, {}

    def _quantile_loss(
        self, output: dict, target: dict, next_action: torch.Tensor, data: dict[str, Any]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The n-step quantile Huber loss of the online ``output`` against the ``target`` net's
        quantiles at ``next_action``, and its per-sample TD error."""
        td_data = qrdqn_nstep_td_data(
            output["q"],
            target["q"],
            data["action"],
            next_action,
            data["reward"],
            data["done"],
            output["tau"],
            data["weight"],
        )
        return qrdqn_nstep_td_error(td_data, self._gamma, nstep=self._nstep, value_gamma=data["value_gamma"])
