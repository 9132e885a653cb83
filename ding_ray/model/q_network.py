"""Q-network for discrete actions: an MLP encoder (vector observations) or a conv encoder (images,
``model.conv``) and a plain or dueling head."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from ding_ray.model.common import MLP, DiscreteHead, DuelingHead
from ding_ray.model.conv import make_encoder
from ding_ray.model.foreign_state import rename_foreign_state
from ding_ray.utils.registry import MODEL_REGISTRY


@MODEL_REGISTRY.register("dqn")
class DQN(nn.Module):
    """``obs [B, *obs_shape] -> {'logit': Q [B, action_shape]}``."""

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
        dropout: float | None = None,
        init_bias: float | None = None,
        encoder_kernel_size: Sequence[int] | None = None,
        encoder_stride: Sequence[int] | None = None,
    ) -> None:
        """``encoder_hidden_size_list``: an MLP's widths for a vector ``obs_shape`` (default [128, 128,
        64]); for a 3-D one ``(C, H, W)`` the conv channels then the linear width, DI-engine's meaning
        (``model.conv``; default the Nature CNN [32, 64, 64, 512]), with ``encoder_kernel_size`` /
        ``encoder_stride`` per conv layer (ding_ray's addition; default DI-engine's [8, 4, 3] /
        [4, 2, 1]). ``norm_type`` ('LN', 'BN'), ``dropout`` and ``init_bias`` (the initial bias of
        the dueling head's advantage output; unused without ``dueling``) as in DI-engine's DQN;
        ``activation`` by name or as a module (``nn.ReLU()``)."""
        super().__init__()
        self.register_load_state_dict_pre_hook(rename_foreign_state)  # DI-engine checkpoints load
        self.encoder = make_encoder(
            obs_shape,
            encoder_hidden_size_list,
            activation,
            norm_type,
            dropout,
            encoder_kernel_size,
            encoder_stride,
        )
        hidden = head_hidden_size or self.encoder.output_size
        if hidden != self.encoder.output_size:
            self.encoder = nn.Sequential(
                self.encoder, MLP(self.encoder.output_size, [hidden], activation, True, norm_type, dropout)
            )
        head_cls = DuelingHead if dueling else DiscreteHead
        self.head = head_cls(hidden, int(action_shape), head_layer_num, activation, norm_type, dropout)
        if init_bias is not None and dueling:  # as DI-engine: the advantage stream's output bias only
            nn.init.constant_(self.head.advantage.layers[-1].bias, init_bias)

    def forward(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"logit": self.head.forward(self.encoder.forward(obs))}
