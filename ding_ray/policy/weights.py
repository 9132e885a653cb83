"""Model weights as plain numpy arrays: what a learner publishes and collectors load.

A state dict of CPU numpy arrays pickles without torch, lives in Ray's object store as one
shared copy, and is read zero-copy by every process on the node. Loading checks every key and
shape first, so a collector built from another config fails with a message, not a half-load.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import torch

from ding_ray.errors import ShapeError

Weights = dict[str, np.ndarray]


def state_dict_to_numpy(state_dict: Mapping[str, torch.Tensor]) -> Weights:
    """A copy of ``state_dict`` as CPU numpy arrays (safe to publish while training goes on)."""
    out: Weights = {}
    for key, value in state_dict.items():
        if not isinstance(value, torch.Tensor):
            raise ShapeError(f"State dict entry '{key}' is a {type(value).__name__}, not a tensor.")
        out[key] = value.detach().to("cpu", copy=True).numpy()
    return out


def check_weights(expected: Mapping[str, torch.Tensor], weights: Mapping[str, np.ndarray]) -> None:
    """Raise ``ShapeError`` naming every missing, unexpected or reshaped key."""
    missing = sorted(set(expected) - set(weights))
    unexpected = sorted(set(weights) - set(expected))
    reshaped = [
        f"'{k}': model {tuple(expected[k].shape)}, weights {tuple(np.shape(weights[k]))}"
        for k in expected
        if k in weights and tuple(expected[k].shape) != tuple(np.shape(weights[k]))
    ]
    if missing or unexpected or reshaped:
        parts = []
        if missing:
            parts.append(f"missing keys {missing}")
        if unexpected:
            parts.append(f"unexpected keys {unexpected}")
        if reshaped:
            parts.append("shape mismatch " + "; ".join(reshaped))
        raise ShapeError(
            "The published weights do not fit this model (" + ", ".join(parts) + "). "
            "Build the learner and the collectors from the same policy.model config."
        )


def numpy_to_state_dict(weights: Mapping[str, np.ndarray], like: Mapping[str, torch.Tensor]) -> dict:
    """Tensors for ``load_state_dict``, checked against the state dict ``like``."""
    check_weights(like, weights)
    out = {}
    with warnings.catch_warnings():
        # Arrays from Ray's object store are read-only. load_state_dict copies them into the
        # parameters and never writes to the source, so sharing the memory is safe.
        warnings.filterwarnings("ignore", message=".*not writable.*")
        for key, reference in like.items():
            out[key] = torch.from_numpy(np.asarray(weights[key])).to(reference.dtype)
    return out


def load_weights(mode, weights: Mapping[str, np.ndarray]) -> None:
    """Load numpy ``weights`` into a policy mode (collect or eval) after checking keys and shapes."""
    current = mode.state_dict()["model"]
    mode.load_state_dict({"model": numpy_to_state_dict(weights, current)})


def num_parameters(weights: Mapping[str, np.ndarray]) -> int:
    return int(sum(np.size(v) for v in weights.values()))
