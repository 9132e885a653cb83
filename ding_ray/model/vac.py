"""``VAC``: a value actor-critic (DI-engine's name and kwargs), used by PPO: an MLP encoder for vector
observations, a conv encoder for images (``model.conv``).

Discrete actions get a categorical head (logits); continuous ones a diagonal Gaussian head
(``ReparameterizationHead``: ``{'mu', 'sigma'}``)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from ding_ray.errors import ConfigError
from ding_ray.model.common import MLP, ReparameterizationHead
from ding_ray.model.conv import make_encoder
from ding_ray.model.foreign_state import rename_foreign_state
from ding_ray.utils.registry import MODEL_REGISTRY


@MODEL_REGISTRY.register("vac")
class VAC(nn.Module):
    """``forward(obs, mode)``: 'compute_actor' -> ``{'logit'}``, 'compute_critic' -> ``{'value'}``
    [B], 'compute_actor_critic' -> both (one encoder pass when it is shared). ``logit`` is [B, A]
    for discrete actions and ``{'mu': [B, A], 'sigma': [B, A]}`` for continuous ones."""

    mode = ("compute_actor", "compute_critic", "compute_actor_critic")

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int,
        action_space: str = "discrete",
        share_encoder: bool = True,
        encoder_hidden_size_list: Sequence[int] | None = None,
        actor_head_hidden_size: int = 64,
        actor_head_layer_num: int = 1,
        critic_head_hidden_size: int = 64,
        critic_head_layer_num: int = 1,
        activation: str | nn.Module | None = "relu",
        norm_type: str | None = None,
        sigma_type: str = "independent",
        fixed_sigma_value: float = 0.3,
        bound_type: str | None = None,
        encoder_kernel_size: Sequence[int] | None = None,
        encoder_stride: Sequence[int] | None = None,
    ) -> None:
        """Encoder (one shared, or one each for actor and critic): an MLP of
        ``encoder_hidden_size_list`` for a vector ``obs_shape`` (default [128, 128, 64]), a conv
        encoder for a 3-D one ``(C, H, W)``: the list is the conv channels then the linear width,
        DI-engine's meaning (``model.conv``; default the Nature CNN [32, 64, 64, 512]), with
        ``encoder_kernel_size`` / ``encoder_stride`` per conv layer (default [8, 4, 3] / [4, 2, 1]).
        Each head: ``*_head_layer_num`` hidden layers of ``*_head_hidden_size``, then the
        output layer (action logits, Gaussian mu (and sigma), or one value). ``sigma_type``,
        ``fixed_sigma_value`` and ``bound_type`` shape the continuous head (``ReparameterizationHead``)."""
        super().__init__()
        if action_space not in ("discrete", "continuous"):
            raise ConfigError(
                f"VAC action_space={action_space!r} is not supported: choose 'discrete' (a Discrete env "
                "action space) or 'continuous' (a Box one)."
            )
        self.action_space = action_space
        self.share_encoder = share_encoder
        self.register_load_state_dict_pre_hook(rename_foreign_state)  # DI-engine checkpoints load

        def encoder() -> nn.Module:
            kwargs = dict(kernel_size=encoder_kernel_size, stride=encoder_stride)
            return make_encoder(obs_shape, encoder_hidden_size_list, activation, norm_type, **kwargs)

        if share_encoder:
            # Registered once: aliases as module attributes would repeat its weights in state_dict.
            self.encoder = encoder()
            feature = self.encoder.output_size
        else:
            self.actor_encoder, self.critic_encoder = encoder(), encoder()
            feature = self.actor_encoder.output_size
        # the critic before the actor, as DI-engine's VAC: the parameters (and the optimizer's list,
        # and the global norm that clips their gradients) come in DI-engine's order
        self.critic_head = MLP(
            feature,
            [critic_head_hidden_size] * critic_head_layer_num + [1],
            activation,
            last_activation=False,
            norm_type=norm_type,
        )
        if action_space == "continuous":
            self.actor_head = ReparameterizationHead(
                feature,
                int(action_shape),
                actor_head_layer_num,
                sigma_type=sigma_type,
                fixed_sigma_value=fixed_sigma_value,
                activation=activation,
                norm_type=norm_type,
                bound_type=bound_type,
                hidden_size=actor_head_hidden_size,
            )
        else:
            self.actor_head = MLP(
                feature,
                [actor_head_hidden_size] * actor_head_layer_num + [int(action_shape)],
                activation,
                last_activation=False,
                norm_type=norm_type,
            )

    @property
    def _actor_encoder(self) -> nn.Module:
        return self.encoder if self.share_encoder else self.actor_encoder

    @property
    def _critic_encoder(self) -> nn.Module:
        return self.encoder if self.share_encoder else self.critic_encoder

    @property
    def actor(self) -> nn.ModuleList:
        """The actor's modules (DI-engine's ``model.actor``), e.g. for its own optimizer or init."""
        return nn.ModuleList([self._actor_encoder, self.actor_head])

    @property
    def critic(self) -> nn.ModuleList:
        return nn.ModuleList([self._critic_encoder, self.critic_head])

    def forward(self, obs: torch.Tensor, mode: str) -> dict[str, torch.Tensor]:
        if mode == "compute_actor":
            return {"logit": self.actor_head.forward(self._actor_encoder.forward(obs))}
        if mode == "compute_critic":
            return {"value": self.critic_head.forward(self._critic_encoder.forward(obs)).squeeze(-1)}
        if mode == "compute_actor_critic":
            actor_feature = self._actor_encoder.forward(obs)
            critic_feature = actor_feature if self.share_encoder else self._critic_encoder.forward(obs)
            return {
                "logit": self.actor_head.forward(actor_feature),
                "value": self.critic_head.forward(critic_feature).squeeze(-1),
            }
        raise ValueError(f"VAC forward mode {mode!r} unknown; choose from {list(self.mode)}.")
