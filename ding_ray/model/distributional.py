"""Distributional Q-networks (DI-engine's ``C51DQN``, ``QRDQN``, ``IQN`` and ``RainbowDQN``) and their heads.

Each model is DQN's encoder (``model.conv.make_encoder``) and a head that predicts a distribution of
returns per action instead of one Q-value: C51 and Rainbow a categorical distribution on ``n_atom``
fixed atoms in ``[v_min, v_max]``, QR-DQN ``num_quantiles`` quantiles at fixed fractions, IQN the
returns at quantile fractions drawn anew for each forward. ``logit`` is always the expected return
per action, what action selection reads.

Constructor arguments, defaults, output keys and shapes are DI-engine 0.5.3's, and the layers are
created in DI-engine's order, so that the same torch seed starts from the same weights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from ding_ray.errors import ConfigError
from ding_ray.model.common import MLP, vector_size
from ding_ray.model.conv import make_encoder
from ding_ray.model.foreign_state import rename_foreign_state
from ding_ray.model.noisy import NoiseLinearLayer
from ding_ray.utils.registry import MODEL_REGISTRY

Activation = str | nn.Module | None


def _head_mlp(
    hidden_size: int,
    layer_num: int,
    out_size: int,
    activation: Activation,
    norm_type: str | None,
    noise: bool,
) -> MLP:
    """DI-engine's head body: ``layer_num`` activated layers of ``hidden_size``, then the output layer."""
    layer_fn = NoiseLinearLayer if noise else nn.Linear
    widths = [hidden_size] * layer_num + [out_size]
    return MLP(hidden_size, widths, activation or "relu", False, norm_type, layer_fn=layer_fn)


def _check_atoms(n_atom: int, v_min: float, v_max: float) -> None:
    if n_atom < 2:
        raise ConfigError(
            f"policy.model.n_atom={n_atom}: a categorical return distribution needs n_atom >= 2."
        )
    if not v_min < v_max:
        raise ConfigError(f"policy.model.v_min={v_min} must be below v_max={v_max} (the atoms' range).")


class _CategoricalHead(nn.Module):
    """Atoms' logits -> ``{'logit': expected return [B, A], 'distribution': [B, A, n_atom]}``."""

    def _init_atoms(self, output_size: int, n_atom: int, v_min: float, v_max: float, eps: float) -> None:
        self.output_size, self.n_atom, self.v_min, self.v_max, self.eps = (
            output_size,
            n_atom,
            v_min,
            v_max,
            eps,
        )
        self.register_buffer("support", torch.linspace(v_min, v_max, n_atom), persistent=False)

    def _output(self, atom_logits: torch.Tensor) -> dict[str, torch.Tensor]:
        # eps keeps every probability above 0, so that the loss's log never sees 0 (as DI-engine)
        distribution = torch.softmax(atom_logits, dim=-1) + self.eps
        return {"logit": (distribution * self.support).sum(-1), "distribution": distribution}


class DistributionHead(_CategoricalHead):
    """C51's head: features ``[B, hidden_size]`` -> a categorical return distribution per action."""

    def __init__(
        self,
        hidden_size: int,
        output_size: int,
        layer_num: int = 1,
        n_atom: int = 51,
        v_min: float = -10,
        v_max: float = 10,
        activation: Activation = "relu",
        norm_type: str | None = None,
        noise: bool = False,
        eps: float = 1e-6,
    ) -> None:
        super().__init__()
        _check_atoms(n_atom, v_min, v_max)
        self.mlp = _head_mlp(hidden_size, layer_num, output_size * n_atom, activation, norm_type, noise)
        self._init_atoms(output_size, n_atom, v_min, v_max, eps)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        atom_logits = self.mlp.forward(x)
        return self._output(atom_logits.view(*atom_logits.shape[:-1], self.output_size, self.n_atom))


class RainbowHead(_CategoricalHead):
    """Rainbow's head: a dueling categorical head (advantage and value streams per atom, the advantage
    centred over actions before the softmax), noisy layers by default."""

    def __init__(
        self,
        hidden_size: int,
        output_size: int,
        layer_num: int = 1,
        n_atom: int = 51,
        v_min: float = -10,
        v_max: float = 10,
        activation: Activation = "relu",
        norm_type: str | None = None,
        noise: bool = True,
        eps: float = 1e-6,
    ) -> None:
        super().__init__()
        _check_atoms(n_atom, v_min, v_max)
        # DI-engine's order: the advantage stream (its 'A') first, then the value stream (its 'Q')
        self.advantage = _head_mlp(hidden_size, layer_num, output_size * n_atom, activation, norm_type, noise)
        self.value = _head_mlp(hidden_size, layer_num, n_atom, activation, norm_type, noise)
        self._init_atoms(output_size, n_atom, v_min, v_max, eps)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        advantage = self.advantage.forward(x)
        advantage = advantage.view(*advantage.shape[:-1], self.output_size, self.n_atom)
        value = self.value.forward(x)
        value = value.view(*value.shape[:-1], 1, self.n_atom)
        return self._output(value + advantage - advantage.mean(dim=-2, keepdim=True))


class QRDQNHead(nn.Module):
    """QR-DQN's head: ``{'logit': mean of the quantiles [B, A], 'q': quantiles [B, A, N],
    'tau': their fractions, the midpoints of N equal bins of [0, 1], [B, N, 1]}``."""

    def __init__(
        self,
        hidden_size: int,
        output_size: int,
        layer_num: int = 1,
        num_quantiles: int = 32,
        activation: Activation = "relu",
        norm_type: str | None = None,
        noise: bool = False,
    ) -> None:
        super().__init__()
        if num_quantiles < 1:
            raise ConfigError(f"policy.model.num_quantiles={num_quantiles} must be at least 1.")
        self.mlp = _head_mlp(
            hidden_size, layer_num, output_size * num_quantiles, activation, norm_type, noise
        )
        self.output_size, self.num_quantiles = output_size, num_quantiles
        edges = torch.linspace(0, 1, num_quantiles + 1)
        self.register_buffer("tau", ((edges[:-1] + edges[1:]) / 2).view(1, -1, 1), persistent=False)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        q = self.mlp.forward(x)
        q = q.view(*q.shape[:-1], self.output_size, self.num_quantiles)
        return {"logit": q.mean(-1), "q": q, "tau": self.tau.repeat(q.shape[0], 1, 1)}


# Distortion of the fractions at which IQN's action values are taken; 'uniform' is risk-neutral.
BETA_FUNCTIONS = {"uniform": lambda fractions: fractions}


class QuantileHead(nn.Module):
    """IQN's head. Each forward draws ``num_quantiles`` fractions per sample uniformly in [0, 1) (from
    torch's global CPU generator, as DI-engine), embeds each as ``relu(W cos(pi * i * tau))`` for
    ``i = 1 .. quantile_embedding_size``, multiplies the features by it and maps the product to a
    return per action. Returns ``{'logit': [B, A] (the mean over a second, independent draw),
    'q': [num_quantiles, B, A], 'quantiles': the fractions of 'q', [num_quantiles * B, 1]}``; row
    ``k`` of the flattened draws belongs to sample ``k % B``."""

    def __init__(
        self,
        hidden_size: int,
        output_size: int,
        layer_num: int = 1,
        num_quantiles: int = 32,
        quantile_embedding_size: int = 128,
        beta_function_type: str = "uniform",
        activation: Activation = "relu",
        norm_type: str | None = None,
        noise: bool = False,
    ) -> None:
        super().__init__()
        if num_quantiles < 1 or quantile_embedding_size < 1:
            raise ConfigError(
                f"policy.model.num_quantiles={num_quantiles} and quantile_embedding_size="
                f"{quantile_embedding_size} must both be at least 1."
            )
        if beta_function_type not in BETA_FUNCTIONS:
            raise ConfigError(
                f"beta_function_type={beta_function_type!r} is not supported; use one of "
                f"{sorted(BETA_FUNCTIONS)}."
            )
        self.mlp = _head_mlp(hidden_size, layer_num, output_size, activation, norm_type, noise)
        self.num_quantiles, self.quantile_embedding_size = num_quantiles, quantile_embedding_size
        self.output_size = output_size
        self.iqn_fc = nn.Linear(quantile_embedding_size, hidden_size)
        self.beta_function = BETA_FUNCTIONS[beta_function_type]
        frequencies = torch.arange(1, quantile_embedding_size + 1, dtype=torch.float32) * math.pi
        self.register_buffer("frequencies", frequencies, persistent=False)

    def quantile_net(self, quantiles: torch.Tensor) -> torch.Tensor:
        """Fractions ``[M, 1]`` -> their embeddings ``[M, hidden_size]``."""
        return torch.relu(self.iqn_fc(torch.cos(self.frequencies.to(quantiles) * quantiles)))

    def forward(self, x: torch.Tensor, num_quantiles: int | None = None) -> dict[str, torch.Tensor]:
        num_quantiles = self.num_quantiles if num_quantiles is None else num_quantiles
        batch_size = x.shape[0]
        q_quantiles = torch.rand(num_quantiles * batch_size, 1).to(x)
        logit_quantiles = self.beta_function(torch.rand(num_quantiles * batch_size, 1).to(x))
        x = x.repeat(num_quantiles, 1)
        q = self.mlp.forward(x * self.quantile_net(q_quantiles)).reshape(num_quantiles, batch_size, -1)
        logit = self.mlp.forward(x * self.quantile_net(logit_quantiles))
        logit = logit.reshape(num_quantiles, batch_size, -1).mean(0)
        return {"logit": logit, "q": q, "quantiles": q_quantiles}


def encoder_for_head(
    model: str,
    obs_shape: int | Sequence[int],
    encoder_hidden_size_list: Sequence[int],
    head_hidden_size: int | None,
    activation: Activation,
    norm_type: str | None,
) -> nn.Module:
    """DQN's encoder for ``obs_shape`` (an MLP, or a conv encoder for a 3-D shape) whose output the
    head of ``model`` reads directly, as DI-engine's Q models do: ``head_hidden_size``, when given,
    must be the encoder's output width."""
    encoder = make_encoder(obs_shape, list(encoder_hidden_size_list), activation or "relu", norm_type)
    if head_hidden_size is not None and head_hidden_size != encoder.output_size:
        raise ConfigError(
            f"{model}: policy.model.head_hidden_size={head_hidden_size} differs from the encoder's "
            f"output width {encoder.output_size} (the last of encoder_hidden_size_list); the head reads "
            "the encoder's output directly, so leave head_hidden_size unset or make them equal."
        )
    return encoder


class _EncoderHeadModel(nn.Module):
    """``encoder_for_head``'s encoder feeding ``head``."""

    def _init_encoder(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int | Sequence[int],
        encoder_hidden_size_list: Sequence[int],
        head_hidden_size: int | None,
        activation: Activation,
        norm_type: str | None,
    ) -> tuple[int, int]:
        """Build ``self.encoder``; return ``(head_hidden_size, action count)``."""
        name = type(self).__name__
        actions = vector_size(action_shape, "action_shape", name)
        self.register_load_state_dict_pre_hook(rename_foreign_state)  # DI-engine checkpoints load
        self.encoder = encoder_for_head(
            name, obs_shape, encoder_hidden_size_list, head_hidden_size, activation, norm_type
        )
        return self.encoder.output_size, actions

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.head.forward(self.encoder.forward(x))


@MODEL_REGISTRY.register("c51dqn")
class C51DQN(_EncoderHeadModel):
    """``obs -> {'logit': [B, A], 'distribution': [B, A, n_atom]}`` (C51)."""

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int | Sequence[int],
        encoder_hidden_size_list: Sequence[int] = (128, 128, 64),
        head_hidden_size: int | None = None,
        head_layer_num: int = 1,
        activation: Activation = "relu",
        norm_type: str | None = None,
        v_min: float = -10,
        v_max: float = 10,
        n_atom: int = 51,
    ) -> None:
        super().__init__()
        hidden, actions = self._init_encoder(
            obs_shape, action_shape, encoder_hidden_size_list, head_hidden_size, activation, norm_type
        )
        self.head = DistributionHead(
            hidden, actions, head_layer_num, n_atom, v_min, v_max, activation, norm_type
        )


@MODEL_REGISTRY.register("qrdqn")
class QRDQN(_EncoderHeadModel):
    """``obs -> {'logit': [B, A], 'q': [B, A, num_quantiles], 'tau': [B, num_quantiles, 1]}`` (QR-DQN)."""

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int | Sequence[int],
        encoder_hidden_size_list: Sequence[int] = (128, 128, 64),
        head_hidden_size: int | None = None,
        head_layer_num: int = 1,
        num_quantiles: int = 32,
        activation: Activation = "relu",
        norm_type: str | None = None,
    ) -> None:
        super().__init__()
        hidden, actions = self._init_encoder(
            obs_shape, action_shape, encoder_hidden_size_list, head_hidden_size, activation, norm_type
        )
        self.head = QRDQNHead(hidden, actions, head_layer_num, num_quantiles, activation, norm_type)


@MODEL_REGISTRY.register("iqn")
class IQN(_EncoderHeadModel):
    """``obs -> {'logit': [B, A], 'q': [num_quantiles, B, A], 'quantiles': [num_quantiles * B, 1]}``
    (IQN; the fractions are drawn from torch's global generator on each forward)."""

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int | Sequence[int],
        encoder_hidden_size_list: Sequence[int] = (128, 128, 64),
        head_hidden_size: int | None = None,
        head_layer_num: int = 1,
        num_quantiles: int = 32,
        quantile_embedding_size: int = 128,
        activation: Activation = "relu",
        norm_type: str | None = None,
    ) -> None:
        super().__init__()
        hidden, actions = self._init_encoder(
            obs_shape, action_shape, encoder_hidden_size_list, head_hidden_size, activation, norm_type
        )
        self.head = QuantileHead(
            hidden,
            actions,
            head_layer_num,
            num_quantiles,
            quantile_embedding_size,
            activation=activation,
            norm_type=norm_type,
        )


@MODEL_REGISTRY.register("rainbowdqn")
class RainbowDQN(_EncoderHeadModel):
    """``obs -> {'logit': [B, A], 'distribution': [B, A, n_atom]}`` (Rainbow: a dueling categorical head
    of noisy layers; their noise acts in training mode only and changes on ``model.noisy.reset_noise``)."""

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int | Sequence[int],
        encoder_hidden_size_list: Sequence[int] = (128, 128, 64),
        head_hidden_size: int | None = None,
        head_layer_num: int = 1,
        activation: Activation = "relu",
        norm_type: str | None = None,
        v_min: float = -10,
        v_max: float = 10,
        n_atom: int = 51,
    ) -> None:
        super().__init__()
        hidden, actions = self._init_encoder(
            obs_shape, action_shape, encoder_hidden_size_list, head_hidden_size, activation, norm_type
        )
        self.head = RainbowHead(hidden, actions, head_layer_num, n_atom, v_min, v_max, activation, norm_type)
