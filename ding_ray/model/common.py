"""Building blocks: MLP, fully connected encoder, Q-value heads, a Gaussian head (the conv encoder
for image observations is in ``model.conv``).

Small networks on a CPU spend most of their forward time in Python, not in the matrix
multiplies: a collector steps 8 envs with one forward per step. So these blocks call ``F.linear``
in a loop instead of nesting ``nn.Sequential`` containers, and a block calls its sub-blocks'
``forward`` directly: ``nn.Module.__call__`` costs about as much as a small matmul here, and
nobody hooks the inner blocks (hooks on the outer model still run).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ding_ray.errors import ConfigError

ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh, "gelu": F.gelu, "silu": F.silu, "elu": F.elu}
# DI-engine passes activations as modules (``activation=nn.ReLU()``); the same functions by name.
_MODULE_ACTIVATIONS = {nn.ReLU: "relu", nn.Tanh: "tanh", nn.GELU: "gelu", nn.SiLU: "silu", nn.ELU: "elu"}
# DI-engine's norm_type names; 'IN' and 'SyncBN' have no meaning for a vector (B, C) or one process.
NORMS = {"LN": nn.LayerNorm, "BN": nn.BatchNorm1d}


def activation_name(activation: str | nn.Module | None) -> str:
    """The name of an activation given as a name, a module such as ``nn.ReLU()``, or None (relu)."""
    if activation is None:
        return "relu"
    if isinstance(activation, nn.Module):
        name = _MODULE_ACTIVATIONS.get(type(activation))
        if name is None:
            raise ConfigError(f"Activation {activation!r} not supported; use one of {sorted(ACTIVATIONS)}.")
        return name
    if activation not in ACTIVATIONS:
        raise ConfigError(f"Activation '{activation}' unknown; use one of {sorted(ACTIVATIONS)}.")
    return activation


def check_norm_type(norm_type: str | None) -> None:
    if norm_type is not None and norm_type not in NORMS:
        raise ConfigError(
            f"policy.model.norm_type={norm_type!r} is not supported; ding_ray's fully connected models "
            f"take {sorted(NORMS)} or None."
        )


def vector_size(shape: int | Sequence[int], name: str, model: str) -> int:
    """The size of a vector ``obs_shape`` / ``action_shape`` (an int or a 1-element list)."""
    if isinstance(shape, int):
        return shape
    shape = list(shape)
    if len(shape) != 1:
        image = " Image observations (channels, height, width) need a conv encoder: use the 'dqn' or "
        image += "'vac' model (DQN, PPO), which build one for a 3-D obs_shape."
        raise ConfigError(
            f"{model} takes vector {name}s (an int or a 1-element list), got {shape}."
            + (image if name == "obs_shape" and len(shape) == 3 else "")
        )
    return int(shape[0])


def float_obs(obs: torch.Tensor) -> torch.Tensor:
    """The model's first step: uint8 observations (pixels) -> float32 in [0, 1]; any other dtype as
    it is. Observations travel as uint8 up to here (4x less to store, copy and send), and float
    observations are taken as already scaled (DI-engine's Atari env hands over frames / 255)."""
    if obs.dtype == torch.uint8:
        return obs.to(torch.float32).div_(255.0)
    return obs


class MLP(nn.Module):
    """Linear layers of the given widths, each followed by ``activation`` (the last one optional).

    With ``norm_type`` and/or ``dropout`` (DI-engine's options) each activated layer is linear ->
    norm -> activation -> dropout, as DI-engine's ``fc_block``. ``plain_first``: the first layer is
    linear -> activation only, as the first layer of DI-engine's ``FCEncoder`` (its ``init``) and of
    ``ContinuousQAC``'s actor and critics, which sit outside DI-engine's normed ``MLP`` blocks.
    ``layer_fn(in_size, out_size)`` builds each layer (DI-engine's ``layer_fn``): ``nn.Linear``, or
    a layer with its own ``forward`` such as ``model.noisy.NoiseLinearLayer``.
    """

    def __init__(
        self,
        in_size: int,
        hidden_sizes: Sequence[int],
        activation: str | nn.Module = "relu",
        last_activation: bool = True,
        norm_type: str | None = None,
        dropout: float | None = None,
        plain_first: bool = False,
        layer_fn: Callable[[int, int], nn.Module] = nn.Linear,
    ) -> None:
        super().__init__()
        check_norm_type(norm_type)
        sizes = [in_size, *hidden_sizes]
        self.layers = nn.ModuleList(layer_fn(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.activation = ACTIVATIONS[activation_name(activation)]
        self.last_activation = last_activation
        self.output_size = sizes[-1]
        self.plain_first = int(plain_first)  # norms[i] belongs to layer i + plain_first
        activated = sizes[1:] if last_activation else sizes[1:-1]
        normed = activated[self.plain_first :]
        self.norms = nn.ModuleList(NORMS[norm_type](n) for n in normed) if norm_type and normed else None
        self.dropout = float(dropout or 0.0)
        # The same Parameter objects as in ``layers``, in a plain list: looking parameters up
        # through nn.Module attributes costs more than the matmuls at collector batch sizes.
        # ``load_state_dict``, ``.to()`` and ``deepcopy`` keep these references valid. Other layers
        # than nn.Linear run their own forward.
        linear = layer_fn is nn.Linear
        self._params = [(layer.weight, layer.bias) for layer in self.layers] if linear else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.norms is not None or self.dropout or self._params is None:
            return self._forward_blocks(x)
        activation = self.activation
        *hidden, (weight, bias) = self._params
        for w, b in hidden:
            x = activation(F.linear(x, w, b))
        x = F.linear(x, weight, bias)
        return activation(x) if self.last_activation else x

    def _forward_blocks(self, x: torch.Tensor) -> torch.Tensor:
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            x = layer.forward(x)
            if i == last and not self.last_activation:
                break
            plain = i < self.plain_first
            if self.norms is not None and not plain:
                x = self.norms[i - self.plain_first](x)
            x = self.activation(x)
            if self.dropout and not plain:
                x = F.dropout(x, self.dropout, self.training)
        return x


class FCEncoder(nn.Module):
    """Vector observation (flattened) -> feature vector of size ``hidden_size_list[-1]``.

    As DI-engine's ``FCEncoder``: ``norm_type`` is accepted and adds no norm layers (DI-engine uses
    it only in residual blocks, which this encoder does not have), and ``dropout`` follows every
    layer but the first.
    """

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        hidden_size_list: Sequence[int],
        activation: str | nn.Module = "relu",
        norm_type: str | None = None,
        dropout: float | None = None,
    ):
        super().__init__()
        if not isinstance(obs_shape, int) and len(obs_shape) == 3:
            raise ConfigError(
                f"obs_shape={list(obs_shape)} is an image (channels, height, width): encode it with a "
                "ConvEncoder (ding_ray.model.conv; the 'dqn' and 'vac' models build one for a 3-D "
                "obs_shape). To train an MLP on it instead, flatten the observations "
                "(gymnasium.wrappers.FlattenObservation) and set obs_shape to their size."
            )
        self.obs_dim = obs_shape if isinstance(obs_shape, int) else math.prod(obs_shape)
        check_norm_type(norm_type)
        self.mlp = MLP(self.obs_dim, hidden_size_list, activation, True, None, dropout, plain_first=True)
        self.output_size = self.mlp.output_size

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if obs.dim() != 2:
            obs = obs.reshape(obs.shape[0], self.obs_dim)
        return self.mlp.forward(float_obs(obs))


class DiscreteHead(nn.Module):
    """Features -> one Q-value per action."""

    def __init__(
        self,
        hidden_size: int,
        action_shape: int,
        layer_num: int = 1,
        activation: str | nn.Module = "relu",
        norm_type: str | None = None,
        dropout: float | None = None,
    ):
        super().__init__()
        self.mlp = MLP(
            hidden_size, [hidden_size] * layer_num + [action_shape], activation, False, norm_type, dropout
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp.forward(x)


class DuelingHead(nn.Module):
    """Features -> Q = V + A - mean(A), with separate value and advantage streams.

    The first hidden layers of both streams run as one wider layer (their weights stacked), which
    is the same function as two separate layers at half the number of matrix multiplies. With a
    ``norm_type`` each stream normalises its own features, so there the streams stay apart.
    """

    def __init__(
        self,
        hidden_size: int,
        action_shape: int,
        layer_num: int = 1,
        activation: str | nn.Module = "relu",
        norm_type: str | None = None,
        dropout: float | None = None,
    ):
        super().__init__()
        if layer_num < 1:
            raise ValueError("DuelingHead needs layer_num >= 1")
        self.hidden_size = hidden_size
        widths = [hidden_size] * (layer_num - 1)
        if norm_type is None:
            # [advantage; value] first layers; fork_rng: their initial weights are drawn below
            with torch.random.fork_rng(devices=[]):
                self.first = MLP(hidden_size, [2 * hidden_size], activation, True, None, dropout)
            # DI-engine's order of random draws: the advantage stream's layers, then the value stream's
            first_advantage = nn.Linear(hidden_size, hidden_size)
            self.advantage = MLP(hidden_size, widths + [action_shape], activation, False, None, dropout)
            first_value = nn.Linear(hidden_size, hidden_size)
            self.value = MLP(hidden_size, widths + [1], activation, False, None, dropout)
            with torch.no_grad():
                stacked = self.first.layers[0]
                stacked.weight.copy_(torch.cat([first_advantage.weight, first_value.weight]))
                stacked.bias.copy_(torch.cat([first_advantage.bias, first_value.bias]))
        else:
            self.first = None
            widths = [hidden_size] + widths
            self.advantage = MLP(hidden_size, widths + [action_shape], activation, False, norm_type, dropout)
            self.value = MLP(hidden_size, widths + [1], activation, False, norm_type, dropout)
        # A @ (I - 1/n) is A - mean(A): with it, Q = V + A - mean(A) is a single addmm.
        centering = torch.eye(action_shape) - 1.0 / action_shape
        self.register_buffer("centering", centering, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.first is None:
            return torch.addmm(self.value.forward(x), self.advantage.forward(x), self.centering)
        advantage_in, value_in = self.first.forward(x).chunk(2, dim=1)
        advantage = self.advantage.forward(advantage_in)
        value = self.value.forward(value_in)
        return torch.addmm(value, advantage, self.centering)


class ReparameterizationHead(nn.Module):
    """Features -> ``{'mu', 'sigma'}`` [B, A] of a diagonal Gaussian (DI-engine's name and kwargs).

    ``sigma_type``: 'independent' (a learned log std per action dimension, the same for every
    state: PPO's default), 'conditioned' (log std from the features, clamped to [-20, 2]) or
    'fixed' (``fixed_sigma_value``). ``bound_type='tanh'`` squashes ``mu`` into [-1, 1]; the
    sampled action itself stays unbounded (whoever sends it to the env clips or scales it).
    """

    sigma_types = ("fixed", "independent", "conditioned")
    bound_types = (None, "tanh")

    def __init__(
        self,
        input_size: int,
        output_size: int,
        layer_num: int = 2,
        sigma_type: str = "independent",
        fixed_sigma_value: float = 1.0,
        activation: str | nn.Module = "relu",
        norm_type: str | None = None,
        bound_type: str | None = None,
        hidden_size: int | None = None,
    ) -> None:
        super().__init__()
        if sigma_type not in self.sigma_types:
            raise ConfigError(f"sigma_type={sigma_type!r} unknown; choose from {list(self.sigma_types)}.")
        if bound_type not in self.bound_types:
            raise ConfigError(f"bound_type={bound_type!r} unknown; choose from {list(self.bound_types)}.")
        hidden_size = input_size if hidden_size is None else hidden_size
        self.sigma_type, self.bound_type = sigma_type, bound_type
        # layer_num hidden layers (none when 0), then the mu layer
        self.main = (
            MLP(input_size, [hidden_size] * layer_num, activation, True, norm_type) if layer_num else None
        )
        feature = hidden_size if layer_num else input_size
        self.mu = nn.Linear(feature, output_size)
        if sigma_type == "independent":
            self.log_sigma_param = nn.Parameter(torch.zeros(1, output_size))
        elif sigma_type == "conditioned":
            self.log_sigma_layer = nn.Linear(feature, output_size)
        else:
            self.register_buffer(
                "sigma", torch.full((1, output_size), float(fixed_sigma_value)), persistent=False
            )

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        if self.main is not None:
            x = self.main.forward(x)
        mu = F.linear(x, self.mu.weight, self.mu.bias)
        if self.bound_type == "tanh":
            mu = torch.tanh(mu)
        if self.sigma_type == "independent":
            sigma = (self.log_sigma_param + torch.zeros_like(mu)).exp()
        elif self.sigma_type == "conditioned":
            log_sigma = F.linear(x, self.log_sigma_layer.weight, self.log_sigma_layer.bias)
            sigma = log_sigma.clamp(-20.0, 2.0).exp()
        else:
            sigma = self.sigma.expand_as(mu)
        return {"mu": mu, "sigma": sigma}
