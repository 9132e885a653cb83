"""Exploration schedules."""

from __future__ import annotations

import math
from collections.abc import Callable

from ding_ray.errors import ConfigError


def get_epsilon_greedy_fn(start: float, end: float, decay: int, type_: str = "exp") -> Callable[[int], float]:
    """Epsilon as a function of the collector's env step.

    ``'exp'``: ``end + (start - end) * exp(-step / decay)``;
    ``'linear'``: from ``start`` down to ``end`` over ``decay`` steps, then ``end``.
    """
    if decay <= 0:
        raise ConfigError(f"eps.decay must be positive (env steps), got {decay}.")
    if type_ == "exp":
        return lambda step: end + (start - end) * math.exp(-step / decay)
    if type_ == "linear":
        return lambda step: max(end, start - (start - end) * step / decay)
    raise ConfigError(f"Unknown eps.type '{type_}'; use 'exp' or 'linear'.")
