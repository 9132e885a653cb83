"""DI-engine's ``DRQN``: DQN with a recurrent cell between encoder and head (R2D2's network)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from ding_ray.errors import ShapeError
from ding_ray.model.common import DiscreteHead, DuelingHead, vector_size
from ding_ray.model.distributional import encoder_for_head
from ding_ray.model.foreign_state import rename_foreign_state
from ding_ray.torch_utils import get_lstm
from ding_ray.utils.registry import MODEL_REGISTRY


@MODEL_REGISTRY.register("drqn")
class DRQN(nn.Module):
    """``{'obs', 'prev_state'} -> {'logit', 'next_state', ...}``; the encoder, the cell
    (``get_lstm(lstm_type)``, of width ``head_hidden_size``) and the head are created in that order,
    as DI-engine's, so a seed gives DI-engine's weights. ``res_link`` adds the encoder's output to
    the cell's."""

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int | Sequence[int],
        encoder_hidden_size_list: Sequence[int] = (128, 128, 64),
        dueling: bool = True,
        head_hidden_size: int | None = None,
        head_layer_num: int = 1,
        lstm_type: str | None = "normal",
        activation: str | nn.Module | None = "relu",
        norm_type: str | None = None,
        res_link: bool = False,
    ) -> None:
        super().__init__()
        self.register_load_state_dict_pre_hook(rename_foreign_state)
        actions = vector_size(action_shape, "action_shape", "DRQN")
        self.encoder = encoder_for_head(
            "DRQN", obs_shape, encoder_hidden_size_list, head_hidden_size, activation, norm_type
        )
        hidden = self.encoder.output_size
        self.rnn = get_lstm(lstm_type, input_size=hidden, hidden_size=hidden)
        self.res_link = res_link
        head_cls = DuelingHead if dueling else DiscreteHead
        self.head = head_cls(hidden, actions, head_layer_num, activation or "relu", norm_type)

    def forward(
        self, inputs: dict, inference: bool = False, saved_state_timesteps: list[int] | None = None
    ) -> dict[str, Any]:
        """``inference``: one step, ``obs`` [B, ...] -> ``logit`` [B, A] and ``next_state``. Otherwise
        a sequence, ``obs`` [T, B, ...] -> ``logit`` [T, B, A], ``next_state`` (after the last step),
        ``hidden_state`` [T * num_layers, B, hidden] (each step's ``h``) and, for each step count in
        ``saved_state_timesteps``, the state after that many steps in ``saved_state``."""
        obs, state = inputs["obs"], inputs["prev_state"]
        if inference:
            x = self.encoder.forward(obs)
            out, next_state = self.rnn(x.unsqueeze(0), state)
            out = out.squeeze(0) + x if self.res_link else out.squeeze(0)
            return {"logit": self.head.forward(out), "next_state": next_state}
        if obs.dim() not in (3, 5):
            raise ShapeError(
                f"DRQN's sequence forward takes obs [T, B, obs_dim] or [T, B, C, H, W], got "
                f"{list(obs.shape)}; pass inference=True for a single step [B, ...]."
            )
        steps, batch = obs.shape[:2]
        x = self.encoder.forward(obs.reshape(steps * batch, *obs.shape[2:])).reshape(steps, batch, -1)
        outputs, hidden_states, saved = [], [], []
        for t in range(steps):
            out, state = self.rnn(x[t : t + 1], state)
            if saved_state_timesteps is not None and t + 1 in saved_state_timesteps:
                saved.append(state)
            outputs.append(out)
            hidden_states.append(torch.cat([s["h"] for s in state], dim=1))
        out = torch.cat(outputs, 0)
        if self.res_link:
            out = out + x
        logit = self.head.forward(out.reshape(steps * batch, -1)).reshape(steps, batch, -1)
        result = {"logit": logit, "next_state": state, "hidden_state": torch.cat(hidden_states, dim=0)}
        if saved_state_timesteps is not None:
            result["saved_state"] = saved
        return result
