"""Losses of DI-engine's ``ding.torch_utils.loss`` that ding_ray's policies use."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class LabelSmoothCELoss(nn.Module):
    """Cross entropy against smoothed labels, DI-engine's definition: every wrong class gets
    ``ratio / (N - 1)`` and the right one ``1 - ratio / (N - 1)`` (for N > 2 the targets sum to more
    than 1, unlike torch's ``label_smoothing``); the sum over classes is averaged over the batch."""

    def __init__(self, ratio: float) -> None:
        super().__init__()
        self.ratio = ratio

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        batch, classes = logits.shape
        off = float(self.ratio) / (classes - 1)
        target = torch.full_like(logits, off).scatter_(1, labels.unsqueeze(1), 1 - off)
        return -(F.log_softmax(logits, dim=1) * target).sum() / batch
