"""What DI-engine's distributional Q-learning policies (C51, QR-DQN, IQN, Rainbow) share over DQN."""

from __future__ import annotations

from typing import Any

import torch

from ding_ray.errors import ConfigError, ShapeError
from ding_ray.policy.action_mask import mask_q, split_obs_tensor
from ding_ray.policy.dqn import DQNPolicy


class DistributionalQPolicy(DQNPolicy):
    """DQN's collect and eval (epsilon-greedy and greedy on the model's ``logit``, the mean of the
    return distribution), its n-step samples, optimizer step, target update and checkpoints; the
    subclasses give the loss (``_td_loss``) on DI-engine's time-first n-step rewards."""

    def __init__(self, cfg: dict, model: Any = None, enable_field: Any = None) -> None:
        if ((cfg.get("learn") or {}).get("huber_kappa")) is not None:
            raise ConfigError(
                f"policy.learn.huber_kappa is DQN's Huber loss on the TD error; the '{cfg.get('type')}' "
                "policy's loss is over return distributions: remove the key."
            )
        super().__init__(cfg, model, enable_field)

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", "total_loss"]

    def _nstep_inputs(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The n-step loss inputs of a batch in DI-engine's layouts: ``obs``, ``next_obs``,
        ``next_mask`` (legal actions of ``next_obs`` or None), ``action`` [B], ``reward`` [nstep, B],
        ``done`` [B], ``weight`` [B] or None, ``value_gamma`` [B] or None."""
        (obs, _), (next_obs, next_mask) = split_obs_tensor(batch["obs"]), split_obs_tensor(batch["next_obs"])
        reward = batch["reward"]
        reward = reward.reshape(len(reward), -1).t()  # [B] or [B, nstep] -> [nstep, B]
        if len(reward) != self._nstep:
            raise ShapeError(
                f"policy.nstep is {self._nstep} but the batch's rewards hold {len(reward)} step(s) per "
                f"sample: data collected with another nstep (an offline dataset's collect_demo_data "
                f"policy) does not fit; set nstep={len(reward)} or collect the data with nstep={self._nstep}."
            )
        return dict(
            obs=obs,
            next_obs=next_obs,
            next_mask=next_mask,
            action=batch["action"].reshape(-1).long(),
            reward=reward,
            done=self._done(batch),
            weight=self._weight(batch),
            value_gamma=batch.get("value_gamma"),
        )

    def _forward_online_and_target(self, data: dict[str, Any]) -> tuple[dict, dict, torch.Tensor]:
        """``(online output at obs, target output at next_obs, the online net's greedy next action)``,
        forwarded in DI-engine's order (IQN draws its fractions in each forward)."""
        output = self._learn_model(data["obs"])
        with torch.no_grad():
            target = self._target_model(data["next_obs"])
            next_action = self._greedy(self._learn_model(data["next_obs"])["logit"], data["next_mask"])
        return output, target, next_action

    @staticmethod
    def _greedy(logit: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """The online net's choice at ``next_obs`` (double Q-learning), among the legal actions."""
        return mask_q(logit, mask).argmax(-1)
