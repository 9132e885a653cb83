"""Behaviour cloning networks (DI-engine's ``discrete_bc`` and ``continuous_bc``).

``DiscreteBC`` is DQN's network read as action logits: an encoder and a dueling or plain head, built
in the same order, so a seed draws DI-engine's initial weights and DI-engine's checkpoints load.
``ContinuousBC`` maps an observation to a tanh-bounded action (``'regression'``) or to a Gaussian's
``mu`` and ``sigma`` (``'reparameterization'``), with the actors of ``ContinuousQAC``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from ding_ray.errors import ConfigError
from ding_ray.model.common import float_obs, vector_size
from ding_ray.model.foreign_state import rename_foreign_state
from ding_ray.model.q_network import DQN
from ding_ray.model.qac import ACTORS
from ding_ray.utils.registry import MODEL_REGISTRY


@MODEL_REGISTRY.register("discrete_bc")
class DiscreteBC(DQN):
    """``obs [B, *obs_shape] -> {'logit': [B, action_shape]}``; the encoder widths default to DI-engine's
    [128, 128, 64] for vectors. ``strides``: the conv strides of an image encoder (DI-engine's name)."""

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int,
        encoder_hidden_size_list: Sequence[int] | None = None,
        dueling: bool = True,
        head_hidden_size: int | None = None,
        head_layer_num: int = 1,
        activation: str | nn.Module | None = "relu",
        norm_type: str | None = None,
        strides: Sequence[int] | None = None,
    ) -> None:
        super().__init__(
            obs_shape,
            action_shape,
            encoder_hidden_size_list,
            dueling,
            head_hidden_size,
            head_layer_num,
            activation,
            norm_type,
            encoder_stride=strides or None,
        )


@MODEL_REGISTRY.register("continuous_bc")
class ContinuousBC(nn.Module):
    """``obs [B, obs] -> {'action': [B, A]}`` in [-1, 1] (``action_space='regression'``; [B] when A is 1,
    as DI-engine squeezes it) or ``{'logit': [mu, sigma]}`` (``'reparameterization'``). The actor is one
    input layer, ``actor_head_layer_num`` hidden layers and the output layer, DI-engine's layout."""

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int | Sequence[int],
        action_space: str,
        actor_head_hidden_size: int = 64,
        actor_head_layer_num: int = 1,
        activation: str | nn.Module | None = "relu",
        norm_type: str | None = None,
    ) -> None:
        super().__init__()
        self.register_load_state_dict_pre_hook(rename_foreign_state)  # DI-engine checkpoints load
        if action_space not in ACTORS:
            raise ConfigError(
                f"ContinuousBC action_space={action_space!r} is not supported: use 'regression' or "
                "'reparameterization'."
            )
        self.obs_dim = vector_size(obs_shape, "obs_shape", "ContinuousBC")
        self.action_dim = vector_size(action_shape, "action_shape", "ContinuousBC")
        self.action_space = action_space
        self.actor = ACTORS[action_space](
            self.obs_dim,
            self.action_dim,
            actor_head_hidden_size,
            actor_head_layer_num,
            "relu" if activation is None else activation,
            norm_type,
        )

    def forward(self, obs: torch.Tensor) -> dict[str, torch.Tensor | list[torch.Tensor]]:
        out = self.actor(float_obs(obs.reshape(obs.shape[0], self.obs_dim)))
        if self.action_space == "regression":
            return {"action": out.squeeze(-1) if self.action_dim == 1 else out}
        return {"logit": list(out)}
