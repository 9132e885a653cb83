"""Building blocks: MLP, fully connected encoder, Q-value heads."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU, "silu": nn.SiLU, "elu": nn.ELU}


def MLP(in_size: int, hidden_sizes: Sequence[int], activation: str = "relu", last_activation: bool = True):
    """Linear layers of the given widths, each followed by ``activation`` (the last one optional)."""
    layers: list[nn.Module] = []
    sizes = [in_size, *hidden_sizes]
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if last_activation or i < len(sizes) - 2:
            layers.append(ACTIVATIONS[activation]())
    return nn.Sequential(*layers)


class FCEncoder(nn.Module):
    """Flattened vector observation -> feature vector of size ``hidden_size_list[-1]``."""

    def __init__(self, obs_shape: int | Sequence[int], hidden_size_list: Sequence[int], activation="relu"):
        super().__init__()
        obs_dim = obs_shape if isinstance(obs_shape, int) else int(torch.tensor(obs_shape).prod())
        self.net = nn.Sequential(nn.Flatten(), MLP(obs_dim, hidden_size_list, activation))
        self.output_size = hidden_size_list[-1]

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)


class DiscreteHead(nn.Module):
    """Features -> one Q-value per action."""

    def __init__(self, hidden_size: int, action_shape: int, layer_num: int = 1, activation: str = "relu"):
        super().__init__()
        self.net = nn.Sequential(
            MLP(hidden_size, [hidden_size] * layer_num, activation), nn.Linear(hidden_size, action_shape)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class DuelingHead(nn.Module):
    """Features -> Q = V + A - mean(A), with separate value and advantage streams."""

    def __init__(self, hidden_size: int, action_shape: int, layer_num: int = 1, activation: str = "relu"):
        super().__init__()
        self.advantage = nn.Sequential(
            MLP(hidden_size, [hidden_size] * layer_num, activation), nn.Linear(hidden_size, action_shape)
        )
        self.value = nn.Sequential(
            MLP(hidden_size, [hidden_size] * layer_num, activation), nn.Linear(hidden_size, 1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        advantage = self.advantage(x)
        return self.value(x) + advantage - advantage.mean(dim=-1, keepdim=True)
