"""Rainbow: DI-engine's ``RainbowDQNPolicy`` (``'rainbow'``; Hessel et al., 2017, arXiv:1710.02298):
C51's distributional loss with n-step targets, prioritized replay with importance-sampling weights,
a dueling head of noisy layers and a target network."""

from __future__ import annotations

from typing import Any

import torch

from ding_ray.model.noisy import reset_noise
from ding_ray.policy.c51 import C51Policy
from ding_ray.policy.common import set_mode
from ding_ray.utils.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register("rainbow")
class RainbowDQNPolicy(C51Policy):
    """C51's learn step with new noise drawn in the online and target nets before the forwards, and
    again in the online net before it picks the next action. The noise acts in train mode only: the
    collect forward (which draws new noise too, as DI-engine's does) runs in eval mode and explores
    epsilon-greedily with ``other.eps`` (DI-engine's defaults keep it at 0.05)."""

    # Over C51Policy's config, DI-engine's RainbowDQNPolicy defaults:
    config = dict(
        type="rainbow",
        priority=True,
        priority_IS_weight=True,
        discount_factor=0.99,
        nstep=3,
        learn=dict(
            update_per_collect=1,
            batch_size=32,
        ),
        other=dict(
            eps=dict(start=0.05, end=0.05, decay=100000),
            replay_buffer=dict(replay_buffer_size=100000, alpha=0.6, beta=0.4, anneal_step=100000),
        ),
    )

    def default_model(self) -> tuple[str, list[str]]:
        return "rainbowdqn", ["ding_ray.model.distributional"]

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", "total_loss"]

    def _td_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        data = self._nstep_inputs(batch)
        set_mode(self._target_model, True)  # noisy target, as DI-engine's
        reset_noise(self._learn_model)
        reset_noise(self._target_model)
        output = self._learn_model(data["obs"])
        with torch.no_grad():
            target = self._target_model(data["next_obs"])
            reset_noise(self._learn_model)
            next_action = self._greedy(self._learn_model(data["next_obs"])["logit"], data["next_mask"])
        loss, td_error_per_sample = self._categorical_loss(output, target, next_action, data)
        return loss, td_error_per_sample, {}

    def _collect_columns(self, data: dict[int, Any], eps: float = 0.0) -> tuple[list[int], dict[str, Any]]:
        reset_noise(self._collect_model)  # outside inference mode: the noise buffers are trained with
        return super()._collect_columns(data, eps)
