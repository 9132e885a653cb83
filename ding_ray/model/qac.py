"""``ContinuousQAC``: a Q actor-critic for continuous actions (DI-engine's name and kwargs), used by SAC
(``action_space='reparameterization'``) and DDPG/TD3 (``action_space='regression'``)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from ding_ray.errors import ConfigError
from ding_ray.model.common import MLP, float_obs, vector_size
from ding_ray.model.foreign_state import rename_foreign_state
from ding_ray.utils.registry import MODEL_REGISTRY

# DI-engine's bounds on the conditioned log standard deviation: exp(-20) to exp(2).
LOG_SIGMA_MIN, LOG_SIGMA_MAX = -20.0, 2.0


class GaussianActor(nn.Module):
    """Observation -> ``mu`` and ``sigma`` of a diagonal Gaussian (sigma conditioned on the observation)."""

    def __init__(
        self, obs_dim: int, action_dim: int, hidden_size: int, layer_num: int, activation, norm_type
    ) -> None:
        super().__init__()
        # DI-engine's layout: one input layer (never normed), then ``layer_num`` hidden layers, then
        # the two outputs.
        widths = [hidden_size] * (1 + layer_num)
        self.trunk = MLP(obs_dim, widths, activation, True, norm_type, plain_first=True)
        self.mu = nn.Linear(hidden_size, action_dim)
        self.log_sigma_layer = nn.Linear(hidden_size, action_dim)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.trunk.forward(obs)
        log_sigma = self.log_sigma_layer(x).clamp(LOG_SIGMA_MIN, LOG_SIGMA_MAX)
        return self.mu(x), log_sigma.exp()


class RegressionActor(nn.Module):
    """Observation -> a deterministic action in [-1, 1] (tanh of the last layer): DDPG's and TD3's actor."""

    def __init__(
        self, obs_dim: int, action_dim: int, hidden_size: int, layer_num: int, activation, norm_type
    ) -> None:
        super().__init__()
        # DI-engine's layout, in its order of construction (so a seed draws the same weights): one
        # input layer (never normed), ``layer_num`` hidden layers, then the output layer
        widths = [hidden_size] * (1 + layer_num)
        self.trunk = MLP(obs_dim, widths, activation, True, norm_type, plain_first=True)
        self.last = nn.Linear(hidden_size, action_dim)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.last(self.trunk.forward(obs)))


ACTORS = {"reparameterization": GaussianActor, "regression": RegressionActor}


@MODEL_REGISTRY.register("continuous_qac")
class ContinuousQAC(nn.Module):
    """``forward(inputs, mode)``: 'compute_actor' (obs) -> ``{'logit': [mu, sigma]}``, each [B, A]
    (``action_space='reparameterization'``, SAC's tanh-squashed Gaussian) or ``{'action'}`` in
    [-1, 1] (``'regression'``, DDPG/TD3; [B, A], or [B] when A is 1, as DI-engine squeezes it);
    'compute_critic' (``{'obs', 'action'}``) -> ``{'q_value'}``: [B], or a list of two [B] with
    ``twin_critic``. Vector observations only.
    """

    mode = ("compute_actor", "compute_critic")

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int | Sequence[int],
        action_space: str = "reparameterization",
        twin_critic: bool = False,
        actor_head_hidden_size: int = 64,
        actor_head_layer_num: int = 1,
        critic_head_hidden_size: int = 64,
        critic_head_layer_num: int = 1,
        activation: str | nn.Module | None = "relu",
        norm_type: str | None = None,
    ) -> None:
        super().__init__()
        if action_space not in ACTORS:
            raise ConfigError(
                f"ContinuousQAC action_space={action_space!r} is not supported: use 'regression' "
                "(DDPG, TD3) or 'reparameterization' (SAC)."
            )
        obs_dim = vector_size(obs_shape, "obs_shape", "ContinuousQAC")
        action_dim = vector_size(action_shape, "action_shape", "ContinuousQAC")
        activation = "relu" if activation is None else activation
        self.action_space, self.twin_critic = action_space, twin_critic
        self.register_load_state_dict_pre_hook(rename_foreign_state)  # DI-engine checkpoints load
        self.obs_dim, self.action_dim = obs_dim, action_dim
        self.actor = ACTORS[action_space](
            obs_dim, action_dim, actor_head_hidden_size, actor_head_layer_num, activation, norm_type
        )
        widths = [critic_head_hidden_size] * (1 + critic_head_layer_num) + [1]
        critics = [
            MLP(obs_dim + action_dim, widths, activation, False, norm_type, plain_first=True)
            for _ in range(1 + twin_critic)
        ]
        # A ModuleList either way, so that ``critic.parameters()`` feeds one optimizer (as DI-engine).
        self.critic = nn.ModuleList(critics)

    def forward(self, inputs: torch.Tensor | dict[str, torch.Tensor], mode: str) -> dict[str, object]:
        if mode == "compute_actor":
            return self.compute_actor(inputs)
        if mode == "compute_critic":
            return self.compute_critic(inputs)
        raise ValueError(f"ContinuousQAC mode {mode!r} unknown; use one of {self.mode}.")

    def compute_actor(self, obs: torch.Tensor) -> dict[str, torch.Tensor | list[torch.Tensor]]:
        out = self.actor(float_obs(obs.reshape(obs.shape[0], self.obs_dim)))
        if self.action_space == "regression":
            return {"action": out.squeeze(-1) if self.action_dim == 1 else out}
        return {"logit": list(out)}

    def compute_critic(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor | list[torch.Tensor]]:
        obs, action = inputs["obs"], inputs["action"]
        x = torch.cat(
            [float_obs(obs.reshape(obs.shape[0], self.obs_dim)), action.reshape(action.shape[0], -1)], dim=1
        )
        q = [critic.forward(x).squeeze(-1) for critic in self.critic]
        return {"q_value": q if self.twin_critic else q[0]}
