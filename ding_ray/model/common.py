"""Building blocks: MLP, fully connected encoder, Q-value heads.

Small networks on a CPU spend most of their forward time in Python, not in the matrix
multiplies: a collector steps 8 envs with one forward per step. So these blocks call ``F.linear``
in a loop instead of nesting ``nn.Sequential`` containers, and a block calls its sub-blocks'
``forward`` directly: ``nn.Module.__call__`` costs about as much as a small matmul here, and
nobody hooks the inner blocks (hooks on the outer model still run).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh, "gelu": F.gelu, "silu": F.silu, "elu": F.elu}


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
        # The same Parameter objects as in ``layers``, in a plain list: looking parameters up
        # through nn.Module attributes costs more than the matmuls at collector batch sizes.
        # ``load_state_dict``, ``.to()`` and ``deepcopy`` keep these references valid.
        self._params = [(layer.weight, layer.bias) for layer in self.layers]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        activation = self.activation
        *hidden, (weight, bias) = self._params
        for w, b in hidden:
            x = activation(F.linear(x, w, b))
        x = F.linear(x, weight, bias)
        return activation(x) if self.last_activation else x


class FCEncoder(nn.Module):
    """Vector observation (flattened) -> feature vector of size ``hidden_size_list[-1]``."""

    def __init__(self, obs_shape: int | Sequence[int], hidden_size_list: Sequence[int], activation="relu"):
        super().__init__()
        self.obs_dim = obs_shape if isinstance(obs_shape, int) else math.prod(obs_shape)
        self.mlp = MLP(self.obs_dim, hidden_size_list, activation)
        self.output_size = self.mlp.output_size

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if obs.dim() != 2:
            obs = obs.reshape(obs.shape[0], self.obs_dim)
        return self.mlp.forward(obs)


class DiscreteHead(nn.Module):
    """Features -> one Q-value per action."""

    def __init__(self, hidden_size: int, action_shape: int, layer_num: int = 1, activation: str = "relu"):
        super().__init__()
        self.mlp = MLP(
            hidden_size, [hidden_size] * layer_num + [action_shape], activation, last_activation=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp.forward(x)


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
        self.first = MLP(hidden_size, [2 * hidden_size], activation)  # [advantage stream; value stream]
        self.advantage = MLP(hidden_size, [hidden_size] * (layer_num - 1) + [action_shape], activation, False)
        self.value = MLP(hidden_size, [hidden_size] * (layer_num - 1) + [1], activation, False)
        # A @ (I - 1/n) is A - mean(A): with it, Q = V + A - mean(A) is a single addmm.
        centering = torch.eye(action_shape) - 1.0 / action_shape
        self.register_buffer("centering", centering, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        advantage_in, value_in = self.first.forward(x).chunk(2, dim=1)
        advantage = self.advantage.forward(advantage_in)
        value = self.value.forward(value_in)
        return torch.addmm(value, advantage, self.centering)
