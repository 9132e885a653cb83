"""Noisy linear layers (NoisyNet exploration, as in Rainbow) with DI-engine's semantics.

A ``NoiseLinearLayer`` learns a mean and a scale for every weight and bias. In training mode its
weights are ``mu + sigma * eps``, with factorised Gaussian noise ``eps`` (one draw per input and one
per output, each passed through ``sign(x) * sqrt(|x|)``, their outer product for the weights); in
eval mode it is the plain linear layer of the means. The noise stays fixed until ``reset_noise``
draws new noise, which the policy calls before each collect and learn forward, as DI-engine's
Rainbow policy does.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class NoiseLinearLayer(nn.Module):
    """``x [B, in_channels] -> [B, out_channels]``; ``sigma0`` sets the initial noise scales
    (``sigma0 / sqrt(in_channels)`` for the weights and ``sigma0 / sqrt(out_channels)`` for the biases,
    DI-engine's choice)."""

    def __init__(self, in_channels: int, out_channels: int, sigma0: float = 0.4) -> None:
        super().__init__()
        if in_channels < 1 or out_channels < 1:
            raise ValueError(f"NoiseLinearLayer needs positive sizes, got {in_channels} -> {out_channels}.")
        self.in_channels, self.out_channels, self.sigma0 = in_channels, out_channels, sigma0
        self.weight_mu = nn.Parameter(torch.empty(out_channels, in_channels))
        self.weight_sigma = nn.Parameter(torch.empty(out_channels, in_channels))
        self.bias_mu = nn.Parameter(torch.empty(out_channels))
        self.bias_sigma = nn.Parameter(torch.empty(out_channels))
        self.register_buffer("weight_eps", torch.zeros(out_channels, in_channels))
        self.register_buffer("bias_eps", torch.zeros(out_channels))
        self.reset_parameters()
        self.reset_noise()

    def reset_parameters(self) -> None:
        """Means uniform in ``±1/sqrt(in_channels)`` (weights drawn first, then biases); constant scales."""
        bound = 1.0 / math.sqrt(self.in_channels)
        with torch.no_grad():
            self.weight_mu.uniform_(-bound, bound)
            self.bias_mu.uniform_(-bound, bound)
            self.weight_sigma.fill_(self.sigma0 / math.sqrt(self.in_channels))
            self.bias_sigma.fill_(self.sigma0 / math.sqrt(self.out_channels))

    def reset_noise(self) -> None:
        """New factorised noise from torch's global CPU generator: the input noise, then the output noise."""
        in_noise = _signed_sqrt(torch.randn(self.in_channels))
        out_noise = _signed_sqrt(torch.randn(self.out_channels))
        device = self.weight_mu.device
        self.weight_eps = torch.outer(out_noise, in_noise).to(device)
        self.bias_eps = out_noise.to(device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return F.linear(x, self.weight_mu, self.bias_mu)
        weight = self.weight_mu + self.weight_sigma * self.weight_eps
        return F.linear(x, weight, self.bias_mu + self.bias_sigma * self.bias_eps)


def _signed_sqrt(x: torch.Tensor) -> torch.Tensor:
    return x.sign() * x.abs().sqrt()


def reset_noise(model: nn.Module) -> None:
    """Draw new noise for every noisy layer in ``model``, in module order (DI-engine's
    ``_reset_noise``: every module with a ``reset_noise`` method)."""
    for module in model.modules():
        if isinstance(module, NoiseLinearLayer):
            module.reset_noise()
