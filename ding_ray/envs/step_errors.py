"""Why an env's step failed, in words the user can act on: what a gymnasium env's ``step`` returned
that does not fit gymnasium's API, and the error that ends an env that fails every step (which an
env manager would otherwise reset for ever)."""

from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np

from ding_ray.errors import EnvError


def step_result_error(result: Any) -> EnvError | None:
    """The ``EnvError`` saying what is wrong with ``result`` (what a gymnasium env's ``step``
    returned), or None if it has the API's form, ``(obs, reward, terminated, truncated, info)``
    with a number for the reward and a dict for the info.

    Called only once a step's result could not be used, so a correct step costs nothing."""
    n = len(result) if isinstance(result, (tuple, list)) else None
    if n == 4:
        return EnvError(
            "The env's step returns 4 values (obs, reward, done, info): the old gym API. gymnasium's "
            "step returns 5, (obs, reward, terminated, truncated, info). Wrap the env with gymnasium's "
            "compatibility wrapper for old gym envs (shimmy.GymV21CompatibilityV0, pip install shimmy), "
            "or return the 5 values."
        )
    if n != 5:
        what = f"{n} values" if n is not None else _a(result)
        return EnvError(
            f"The env's step returns {what}; gymnasium's step returns the 5 values "
            "(obs, reward, terminated, truncated, info)."
        )
    _, reward, _, _, info = result
    if not _is_number(reward):
        kind = f"an array of shape {reward.shape}" if isinstance(reward, np.ndarray) else _a(reward)
        return EnvError(
            f"The env's reward is {kind} ({reward!r:.60}), not a number: "
            "step must return one float per step (a reward of several parts: return their sum)."
        )
    if not isinstance(info, dict):
        return EnvError(
            f"The env's info is not a dict but {_a(info)} ({info!r:.60}): step must return "
            "a dict as its fifth value (an empty one, {}, if there is nothing to tell)."
        )
    return None


def _a(value: Any) -> str:
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiouAEIOU' else 'a'} {name}"


def _is_number(value: Any) -> bool:
    if isinstance(value, Real):
        return True
    return isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "biuf"


def too_many_step_failures(env_name: str, count: int, error: str) -> EnvError:
    """The error of an env that failed ``count`` (``env.manager.max_step_failures``) steps in a row."""
    return EnvError(
        f"{env_name} failed in step {count} times in a row (env.manager.max_step_failures={count}; each "
        "time its episode was dropped and the env reset), so it would fail for ever: giving up. "
        f"Last error: {error}. Fix the env's step (see the traceback of its last failure), or raise "
        "env.manager.max_step_failures if it only fails now and then."
    )
