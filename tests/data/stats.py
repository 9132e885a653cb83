"""A chi-square goodness-of-fit check without scipy."""

from __future__ import annotations

import math

import numpy as np

_Z = {0.01: 2.3263, 0.001: 3.0902, 0.0001: 3.7190}  # upper standard-normal quantiles


def chi_square(observed: np.ndarray, expected_prob: np.ndarray) -> float:
    expected = expected_prob * observed.sum()
    return float(((observed - expected) ** 2 / expected).sum())


def chi_square_threshold(dof: int, p_value: float = 0.001) -> float:
    """Upper ``p_value`` quantile of chi-square(dof), Wilson-Hilferty approximation."""
    a = 2.0 / (9.0 * dof)
    return dof * (1.0 - a + _Z[p_value] * math.sqrt(a)) ** 3
