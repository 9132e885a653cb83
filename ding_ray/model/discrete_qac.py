"""``DiscreteQAC``: a Q actor-critic for discrete actions (DI-engine's name and kwargs), used by
discrete SAC: an actor giving action logits and one or two critics giving a Q-value per action."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from ding_ray.errors import ConfigError
from ding_ray.model.common import MLP, float_obs, vector_size
from ding_ray.utils.registry import MODEL_REGISTRY


@MODEL_REGISTRY.register("discrete_qac")
class DiscreteQAC(nn.Module):
    """``forward(obs, mode)``: 'compute_actor' -> ``{'logit': [B, A]}``; 'compute_critic' ->
    ``{'q_value': [B, A]}``, or a list of two with ``twin_critic``. Vector observations only."""

    mode = ("compute_actor", "compute_critic")

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int | Sequence[int],
        twin_critic: bool = False,
        actor_head_hidden_size: int = 64,
        actor_head_layer_num: int = 1,
        critic_head_hidden_size: int = 64,
        critic_head_layer_num: int = 1,
        activation: str | nn.Module | None = "relu",
        norm_type: str | None = None,
        encoder_hidden_size_list: Sequence[int] | None = None,
        share_encoder: bool = False,
    ) -> None:
        super().__init__()
        obs_dim = vector_size(obs_shape, "obs_shape", "DiscreteQAC")
        action_dim = vector_size(action_shape, "action_shape", "DiscreteQAC")
        if encoder_hidden_size_list is not None or share_encoder:
            raise ConfigError(
                "DiscreteQAC's encoder_hidden_size_list and share_encoder are for image observations "
                "(DI-engine's conv encoder), which ding_ray's DiscreteQAC does not take: leave them unset "
                "(for images use the 'dqn' or 'vac' model, DQN or PPO)."
            )
        self.obs_dim, self.twin_critic = obs_dim, twin_critic

        # DI-engine's layout per head: one plain input layer, ``layer_num`` hidden layers, the output.
        def head(hidden: int, layer_num: int) -> MLP:
            widths = [hidden] * (1 + layer_num) + [action_dim]
            return MLP(obs_dim, widths, activation, False, norm_type, plain_first=True)

        self.actor = head(actor_head_hidden_size, actor_head_layer_num)
        # A ModuleList either way, so that ``critic.parameters()`` feeds one optimizer (as DI-engine).
        self.critic = nn.ModuleList(
            head(critic_head_hidden_size, critic_head_layer_num) for _ in range(1 + twin_critic)
        )

    def forward(self, obs: torch.Tensor, mode: str) -> dict[str, object]:
        if mode == "compute_actor":
            return self.compute_actor(obs)
        if mode == "compute_critic":
            return self.compute_critic(obs)
        raise ValueError(f"DiscreteQAC mode {mode!r} unknown; use one of {self.mode}.")

    def compute_actor(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"logit": self.actor.forward(float_obs(obs.reshape(obs.shape[0], self.obs_dim)))}

    def compute_critic(self, obs: torch.Tensor) -> dict[str, torch.Tensor | list[torch.Tensor]]:
        x = float_obs(obs.reshape(obs.shape[0], self.obs_dim))
        q = [critic.forward(x) for critic in self.critic]
        return {"q_value": q if self.twin_critic else q[0]}
