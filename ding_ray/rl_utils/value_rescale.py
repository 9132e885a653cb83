"""Invertible value rescaling for TD targets (R2D2, Kapturowski et al., 2019; Pohlen et al., 2018,
arXiv:1805.11593) and the symmetric log of DreamerV3 (arXiv:2301.04104)."""

from __future__ import annotations

import torch


def value_transform(x: torch.Tensor, eps: float = 1e-2) -> torch.Tensor:
    """``h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x``: squashes large values, invertible for eps > 0."""
    return torch.sign(x) * (torch.sqrt(torch.abs(x) + 1) - 1) + eps * x


def value_inv_transform(x: torch.Tensor, eps: float = 1e-2) -> torch.Tensor:
    """The inverse of ``value_transform`` with the same ``eps``:
    ``sign(x) (((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1)``."""
    root = torch.sqrt(1 + 4 * eps * (torch.abs(x) + 1 + eps))
    return torch.sign(x) * (((root - 1) / (2 * eps)) ** 2 - 1)


def symlog(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) ln(|x| + 1)``."""
    return torch.sign(x) * torch.log(torch.abs(x) + 1)


def inv_symlog(x: torch.Tensor) -> torch.Tensor:
    """The inverse of ``symlog``: ``sign(x) (exp(|x|) - 1)``."""
    return torch.sign(x) * (torch.exp(torch.abs(x)) - 1)
