"""DI-engine's recurrent cells (``get_lstm``): inputs [seq_len, batch, input_size], and the hidden state
in the formats DI-engine's recurrent models (DRQN, R2D2) pass around.

``prev_state`` may be None (zeros), a dict ``{'h': [num_layers, batch, hidden], 'c': ...}``, or a list
with one entry per sample: None (zeros), ``{'h': [num_layers, 1, hidden], 'c': ...}`` or an (h, c)
pair. The next state comes back as such a per-sample list of dicts (``list_next_state=True``) or as one
batched dict. Parameter names and initialisation order are DI-engine's, so the same seed gives the
same weights and DI-engine's state dicts load.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch
from torch import nn

LSTM_TYPES = ("normal", "pytorch", "gru")
NORM_TYPES = ("LN", None)


def batched_state(
    prev_state, inputs: torch.Tensor, num_layers: int, hidden_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``prev_state`` in any accepted format as (h, c), each [num_layers, batch, hidden_size]."""
    batch_size = inputs.shape[1]
    if prev_state is None:
        zeros = inputs.new_zeros(num_layers, batch_size, hidden_size)
        return zeros, zeros
    if isinstance(prev_state, Mapping):
        return prev_state["h"], prev_state["c"]
    if not isinstance(prev_state, (list, tuple)):
        raise TypeError(
            f"prev_state is a {type(prev_state).__name__}; pass None, a dict with 'h' and 'c', "
            "or a list with one entry (None, a dict or an (h, c) pair) per sample."
        )
    if len(prev_state) != batch_size:
        raise RuntimeError(
            f"prev_state has {len(prev_state)} entries for a batch of {batch_size}; pass one per sample."
        )
    zeros = inputs.new_zeros(num_layers, 1, hidden_size)
    pairs = []
    for sample_state in prev_state:
        if sample_state is None:
            pairs.append((zeros, zeros))
        elif isinstance(sample_state, Mapping):
            pairs.append((sample_state["h"], sample_state["c"]))
        else:
            pairs.append(tuple(sample_state))
    return torch.cat([h for h, _ in pairs], dim=1), torch.cat([c for _, c in pairs], dim=1)


def state_for_caller(h: torch.Tensor, c: torch.Tensor, list_next_state: bool):
    """(h, c) [num_layers, batch, hidden] as one dict, or as a list of per-sample dicts."""
    if not list_next_state:
        return {"h": h, "c": c}
    batch_size = h.shape[1]
    per_sample = zip(torch.chunk(h, batch_size, dim=1), torch.chunk(c, batch_size, dim=1))
    return [{"h": h_sample, "c": c_sample} for h_sample, c_sample in per_sample]


class LSTM(nn.Module):
    """DI-engine's own LSTM: each gate's input and recurrent products normalised separately (LayerNorm
    with ``norm_type='LN'``; None: not at all), dropout between layers."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int,
        norm_type: str | None = None,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if norm_type not in NORM_TYPES:
            raise ValueError(
                f"norm_type={norm_type!r} is not supported by the LSTM; choose one of {NORM_TYPES}."
            )
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        gates = 4 * hidden_size
        self.norm = nn.ModuleList(
            [nn.LayerNorm(gates) if norm_type == "LN" else nn.Identity() for _ in range(2 * num_layers)]
        )
        sizes = [input_size] + [hidden_size] * num_layers
        self.wx = nn.ParameterList(
            [nn.Parameter(torch.zeros(sizes[layer], gates)) for layer in range(num_layers)]
        )
        self.wh = nn.ParameterList([nn.Parameter(torch.zeros(hidden_size, gates)) for _ in range(num_layers)])
        self.bias = nn.Parameter(torch.zeros(num_layers, gates))
        self.use_dropout = dropout > 0.0
        if self.use_dropout:
            self.dropout = nn.Dropout(dropout)
        bound = math.sqrt(1.0 / hidden_size)
        for layer in range(num_layers):  # DI-engine's draw order, so a seed gives its weights
            nn.init.uniform_(self.wx[layer], -bound, bound)
            nn.init.uniform_(self.wh[layer], -bound, bound)
            nn.init.uniform_(self.bias[layer], -bound, bound)

    def forward(self, inputs: torch.Tensor, prev_state, list_next_state: bool = True):
        h_all, c_all = batched_state(prev_state, inputs, self.num_layers, self.hidden_size)
        x, last = inputs, []
        for layer in range(self.num_layers):
            h, c = h_all[layer], c_all[layer]
            norm_x, norm_h = self.norm[2 * layer], self.norm[2 * layer + 1]
            outputs = []
            for x_t in x:
                gates = norm_x(x_t @ self.wx[layer]) + norm_h(h @ self.wh[layer]) + self.bias[layer]
                input_gate, forget_gate, output_gate, candidate = torch.chunk(gates, 4, dim=1)
                c = torch.sigmoid(forget_gate) * c + torch.sigmoid(input_gate) * torch.tanh(candidate)
                h = torch.sigmoid(output_gate) * torch.tanh(c)
                outputs.append(h)
            last.append((h, c))
            x = torch.stack(outputs, dim=0)
            if self.use_dropout and layer != self.num_layers - 1:
                x = self.dropout(x)
        h_next = torch.stack([h for h, _ in last], dim=0)
        c_next = torch.stack([c for _, c in last], dim=0)
        return x, state_for_caller(h_next, c_next, list_next_state)


class PytorchLSTM(nn.LSTM):
    """torch's ``nn.LSTM`` taking and returning the hidden state in DI-engine's formats."""

    def forward(self, inputs: torch.Tensor, prev_state, list_next_state: bool = True):
        state = batched_state(prev_state, inputs, self.num_layers, self.hidden_size)
        output, (h, c) = super().forward(inputs, state)
        return output, state_for_caller(h, c, list_next_state)


class GRU(nn.GRUCell):
    """torch's ``nn.GRUCell`` for one step (``seq_len`` 1) in DI-engine's state formats; the state's
    ``'c'`` is a copy of ``'h'``, and only ``'h'`` is read."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int) -> None:
        if num_layers != 1:
            raise ValueError(f"lstm_type='gru' has one layer; got num_layers={num_layers}.")
        super().__init__(input_size, hidden_size)
        self.num_layers = num_layers

    def forward(self, inputs: torch.Tensor, prev_state=None, list_next_state: bool = True):
        if inputs.shape[0] != 1:
            raise ValueError(
                f"lstm_type='gru' steps once: inputs must be [1, batch, input_size], "
                f"got {list(inputs.shape)}; call it once per time step."
            )
        h, _ = batched_state(prev_state, inputs, self.num_layers, self.hidden_size)
        h_next = super().forward(inputs[0], h[0]).unsqueeze(0)
        return h_next, state_for_caller(h_next, h_next.clone(), list_next_state)


def get_lstm(
    lstm_type: str,
    input_size: int,
    hidden_size: int,
    num_layers: int = 1,
    norm_type: str | None = "LN",
    dropout: float = 0.0,
    seq_len: int | None = None,
    batch_size: int | None = None,
) -> LSTM | PytorchLSTM | GRU:
    """The recurrent cell ``lstm_type`` names: ``'normal'`` (DI-engine's LSTM, normalised by
    ``norm_type``), ``'pytorch'`` (torch's LSTM; ``norm_type`` unused) or ``'gru'`` (one GRU cell).
    ``seq_len`` and ``batch_size`` are for DI-engine's CUDA-only ``'hpc'`` cell, which ding_ray has not."""
    if lstm_type == "normal":
        return LSTM(input_size, hidden_size, num_layers, norm_type, dropout=dropout)
    if lstm_type == "pytorch":
        return PytorchLSTM(input_size, hidden_size, num_layers, dropout=dropout)
    if lstm_type == "gru":
        return GRU(input_size, hidden_size, num_layers)
    hint = " ('hpc' is DI-engine's CUDA extension hpc_rll: use 'normal')" if lstm_type == "hpc" else ""
    raise ValueError(f"lstm_type={lstm_type!r} is not supported{hint}; choose one of {LSTM_TYPES}.")
