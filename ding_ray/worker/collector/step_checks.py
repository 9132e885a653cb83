"""What a collector checks in every env step before it becomes training data: finite values and
observations of the shape the model was built for."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from ding_ray.errors import NonFiniteError, ShapeError

# Non-finite steps one env may return in a row before the collector gives up on it: an env that
# is NaN from its first observation on would otherwise be reset for ever without a sample.
MAX_NONFINITE_IN_A_ROW = 100


def all_finite(*values: Any) -> bool:
    """True if no float (or complex) number in ``values`` (arrays, scalars, nested dicts, lists
    and tuples) is NaN or infinite. Integer, boolean and non-numeric values are not looked at.

    Runs for every env step, so the common cases (a Python float, an array) are tested first.
    """
    for value in values:
        if type(value) is float:
            if not math.isfinite(value):
                return False
        elif isinstance(value, np.ndarray):
            if value.dtype.kind in "fc" and not np.isfinite(value).all():
                return False
        elif isinstance(value, (np.floating, np.complexfloating, float)):
            if not np.isfinite(value):
                return False
        elif isinstance(value, Mapping):
            if not all_finite(*value.values()):
                return False
        elif isinstance(value, (list, tuple)):
            if not all_finite(*value):
                return False
    return True


def fixed_obs_shape(space: Any) -> tuple[int, ...] | None:
    """The shape every observation of a Box space has; None for spaces without one array shape
    (Dict observations with action masks, Tuple observations of board games)."""
    if isinstance(space, gym.spaces.Box):
        return tuple(space.shape)
    return None


def obs_shape_ok(want: tuple[int, ...] | None, obs: Any) -> bool:
    """False if ``obs`` is an array observation whose shape is not ``want`` (None: any shape)."""
    if want is None:
        return True
    if type(obs) is np.ndarray:
        return obs.shape == want
    return isinstance(obs, Mapping) or np.shape(obs) == want


def obs_shape_error(want: tuple[int, ...], obs: Any, env_name: str, when: str) -> ShapeError:
    """The error for an observation of another shape than the env's space, naming env and shapes."""
    return ShapeError(
        f"{env_name} returned an observation of shape {tuple(np.shape(obs))} {when}, but its "
        f"observation_space (and so the model, policy.model.obs_shape) has shape {want}. An env must "
        "keep one observation shape: fix the env, or wrap it in a gymnasium.ObservationWrapper that "
        "pads or crops its observations to one shape."
    )


def too_many_nonfinite(env_name: str, count: int) -> NonFiniteError:
    """The error raised when one env keeps returning NaN/inf, so collecting from it is hopeless."""
    return NonFiniteError(
        f"{env_name} returned NaN or infinite observations or rewards in {count} steps in a row "
        "(each was dropped and the env reset). Fix the env, or clip its values with a gymnasium "
        "wrapper (e.g. gymnasium.wrappers.TransformObservation / TransformReward)."
    )
