"""Q-network for discrete actions: an MLP encoder and a plain or dueling head."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from ding_ray.model.common import MLP, DiscreteHead, DuelingHead, FCEncoder
from ding_ray.utils.registry import MODEL_REGISTRY


@MODEL_REGISTRY.register("dqn")
class DQN(nn.Module):
    """``obs [B, *obs_shape] -> {'logit': Q [B, action_shape]}``."""

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int,
        encoder_hidden_size_list: Sequence[int] = (128, 128, 64),
        dueling: bool = True,
        head_hidden_size: int | None = None,
        head_layer_num: int = 1,
        activation: str = "relu",
    ) -> None:
        super().__init__()
        self.encoder = FCEncoder(obs_shape, list(encoder_hidden_size_list), activation)
        hidden = head_hidden_size or self.encoder.output_size
        if hidden != self.encoder.output_size:
            self.encoder = nn.Sequential(self.encoder, MLP(self.encoder.output_size, [hidden], activation))
        head_cls = DuelingHead if dueling else DiscreteHead
        self.head = head_cls(hidden, int(action_shape), head_layer_num, activation)

    def forward(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"logit": self.head.forward(self.encoder.forward(obs))}
