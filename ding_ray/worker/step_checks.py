"""What collectors and evaluators check in every env step: finite values (collectors, before a step
becomes training data) and observations of the shape and dtype the model was built for (both, before
an observation reaches the model)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

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


class ObsSpec(NamedTuple):
    """What every observation of a Box space must be: its shape, and the dtype kinds that fit its
    dtype (a float space takes floats of any width and booleans; an integer space, such as uint8
    pixels, integers and booleans)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    kinds: str


def obs_spec(space: Any) -> ObsSpec | None:
    """The spec of a Box space's observations; None for spaces without one array shape (Dict
    observations with action masks, Tuple observations of board games), which are not checked."""
    if not isinstance(space, gym.spaces.Box):
        return None
    kind = space.dtype.kind
    kinds = "fb" if kind == "f" else "iub" if kind in "iub" else "biufc"
    return ObsSpec(tuple(space.shape), space.dtype, kinds)


def obs_fits(spec: ObsSpec | None, obs: Any) -> bool:
    """False if ``obs`` is not an observation of ``spec`` (None: anything fits). Runs for every
    observation a collector or an evaluator sees, so an array is tested first."""
    if spec is None:
        return True
    if type(obs) is np.ndarray:
        return obs.shape == spec.shape and obs.dtype.kind in spec.kinds
    if obs is None:
        return False
    return isinstance(obs, Mapping) or np.shape(obs) == spec.shape


def episode_moment(step: int) -> str:
    """Where in its episode an env is after ``step`` steps, for error messages."""
    return f"at step {step} of its episode" if step else "at reset"


def obs_error(spec: ObsSpec, obs: Any, env_name: str, when: str) -> ShapeError:
    """The error for an observation that does not fit the env's space, naming env, shapes and dtypes."""
    space = "its observation_space (and so the model, policy.model.obs_shape)"
    if obs is None:
        return ShapeError(
            f"{env_name} returned None as its observation {when}, but {space} has shape {spec.shape}: "
            "reset and step must return an observation, an array of that shape."
        )
    shape = tuple(np.shape(obs))
    if shape != spec.shape:
        return ShapeError(
            f"{env_name} returned an observation of shape {shape} {when}, but {space} has shape "
            f"{spec.shape}. An env must keep one observation shape: fix the env, or wrap it in a "
            "gymnasium.ObservationWrapper that pads or crops its observations to one shape."
        )
    dtype = np.asarray(obs).dtype
    return ShapeError(
        f"{env_name} returned an observation of dtype {dtype} {when}, but its observation_space has dtype "
        f"{spec.dtype}, which the model is built for. Return observations of the space's dtype "
        f"(obs.astype(np.{spec.dtype})), or wrap the env: gymnasium.wrappers.TransformObservation(env, "
        f"lambda obs: obs.astype(np.{spec.dtype}), env.observation_space)."
    )


def too_many_nonfinite(env_name: str, count: int) -> NonFiniteError:
    """The error raised when one env keeps returning NaN/inf, so collecting from it is hopeless."""
    return NonFiniteError(
        f"{env_name} returned NaN or infinite observations or rewards in {count} steps in a row "
        "(each was dropped and the env reset). Fix the env, or clip its values with a gymnasium "
        "wrapper (e.g. gymnasium.wrappers.TransformObservation / TransformReward)."
    )
