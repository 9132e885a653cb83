"""Building blocks: MLP, fully connected encoder, Q-value heads.

Small networks on a CPU spend most of their forward time in Python module calls, not in the
matrix multiplies: a collector steps 8 envs with one forward per step, so these blocks call
``F.linear`` in a loop inside one module instead of nesting ``nn.Sequential`` containers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

ACTIVATIONS = {"relu": F.relu, "tanh": torch.tanh, "gelu": F.gelu, "silu": F.silu, "elu": F.elu}


class MLP(nn.Module):
    """Linear layers of the given widths, each followed by ``activation`` (the last one optional)."""

    def __init__(
        self,
        in_size: int,
        hidden_sizes: Sequence[int],
        activation: str = "relu",
        last_activation: bool = True,
    ) -> None:
        super().__init__()
        sizes = [in_size, *hidden_sizes]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.activation = ACTIVATIONS[activation]
        self.last_activation = last_activation
        self.output_size = sizes[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            x = F.linear(x, layer.weight, layer.bias)
            if i < last or self.last_activation:
                x = self.activation(x)
        return x


class FCEncoder(nn.Module):
    """Vector observation (flattened) -> feature vector of size ``hidden_size_list[-1]``."""

    def __init__(self, obs_shape: int | Sequence[int], hidden_size_list: Sequence[int], activation="relu"):
        super().__init__()
        self.obs_dim = obs_shape if isinstance(obs_shape, int) else math.prod(obs_shape)
        self.mlp = MLP(self.obs_dim, hidden_size_list, activation)
        self.output_size = self.mlp.output_size

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.mlp(obs.reshape(obs.shape[0], self.obs_dim))


class DiscreteHead(nn.Module):
    """Features -> one Q-value per action."""

    def __init__(self, hidden_size: int, action_shape: int, layer_num: int = 1, activation: str = "relu"):
        super().__init__()
        self.mlp = MLP(
            hidden_size, [hidden_size] * layer_num + [action_shape], activation, last_activation=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)


class DuelingHead(nn.Module):
    """Features -> Q = V + A - mean(A), with separate value and advantage streams.

    The hidden layers of both streams run as one wider layer (their weights stacked), which is
    the same function as two separate layers at half the number of matrix multiplies.
    """

    def __init__(self, hidden_size: int, action_shape: int, layer_num: int = 1, activation: str = "relu"):
        super().__init__()
        if layer_num < 1:
            raise ValueError("DuelingHead needs layer_num >= 1")
        self.hidden_size = hidden_size
        self.first = nn.Linear(hidden_size, 2 * hidden_size)  # [advantage stream; value stream]
        self.advantage = MLP(hidden_size, [hidden_size] * (layer_num - 1) + [action_shape], activation, False)
        self.value = MLP(hidden_size, [hidden_size] * (layer_num - 1) + [1], activation, False)
        self.activation = ACTIVATIONS[activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.activation(F.linear(x, self.first.weight, self.first.bias))
        advantage = self.advantage(h[:, : self.hidden_size])
        value = self.value(h[:, self.hidden_size :])
        return value + advantage - advantage.mean(dim=-1, keepdim=True)
