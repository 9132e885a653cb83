"""C51: DI-engine's ``C51Policy`` (``'c51'``), distributional Q-learning over a fixed support of atoms
(Bellemare et al., 2017, arXiv:1707.06887)."""

from __future__ import annotations

from typing import Any

import torch

from ding_ray.policy.distributional_q import DistributionalQPolicy
from ding_ray.rl_utils import dist_nstep_td_data, dist_nstep_td_error
from ding_ray.utils.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register("c51")
class C51Policy(DistributionalQPolicy):
    """Learn: the cross-entropy between ``Z(s, a)`` and the target net's n-step distribution at the
    online net's greedy next action, projected onto the atoms. Collect: epsilon-greedy on the mean
    return. Eval: greedy."""

    # Over DQNPolicy's config, DI-engine's C51Policy defaults:
    config = dict(
        type="c51",
        model=dict(
            v_min=-10,  # the smallest atom of the return support
            v_max=10,  # the largest atom
            n_atom=51,  # atoms of the support
        ),
    )

    def default_model(self) -> tuple[str, list[str]]:
        return "c51dqn", ["ding_ray.model.distributional"]

    def _init_learn(self) -> None:
        super()._init_learn()
        model = self._cfg.model
        self._v_min, self._v_max, self._n_atom = float(model.v_min), float(model.v_max), int(model.n_atom)

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", "total_loss", "q_value", "target_q_value"]

    def _td_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        data = self._nstep_inputs(batch)
        output, target, next_action = self._forward_online_and_target(data)
        loss, td_error_per_sample = self._categorical_loss(output, target, next_action, data)
        return (
            loss,
            td_error_per_sample,
            {"q_value": output["logit"].detach().mean(), "target_q_value": target["logit"].mean()},
        )

    def _categorical_loss(
        self, output: dict, target: dict, next_action: torch.Tensor, data: dict[str, Any]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        td_data = dist_nstep_td_data(
            output["distribution"],
            target["distribution"],
            data["action"],
            next_action,
            data["reward"],
            data["done"],
            data["weight"],
        )
        return dist_nstep_td_error(
            td_data,
            self._gamma,
            self._v_min,
            self._v_max,
            self._n_atom,
            nstep=self._nstep,
            value_gamma=data["value_gamma"],
        )
