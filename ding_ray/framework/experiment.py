"""The experiment folder of this process, where a stage given no folder of its own writes (the
TensorBoard writer of ``online_logger()``, for one)."""

from __future__ import annotations

import os

_exp_name: str | None = None


def set_default_exp_name(exp_name: str | None) -> None:
    """Name the folder; DI-engine's ``ding_init(cfg)`` names ``cfg.exp_name``."""
    global _exp_name
    _exp_name = exp_name


def default_exp_name() -> str:
    """The folder ``set_default_exp_name`` named, or ``./default_experiment``."""
    return _exp_name or os.path.join(os.getcwd(), "default_experiment")
