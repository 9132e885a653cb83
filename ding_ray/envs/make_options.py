"""What ``GymnasiumEnv`` does with the env keys that dizoo's env classes read and gymnasium has:
the ``gymnasium.make`` arguments (``continuous``, FrozenLake's ``desc``, ``map_name``, ``is_slippery``)
and a 1-D Box env turned into evenly spaced discrete actions (dizoo's Pendulum with
``continuous=False``)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from ding_ray.errors import EnvError

# Keys dizoo's env classes pass to gymnasium.make: LunarLander's and CarRacing's `continuous`,
# FrozenLake's `desc`, `map_name` and `is_slippery`. None: the env's own default.
MAKE_KEYS = ("continuous", "desc", "map_name", "is_slippery")

# dizoo's PendulumEnv with continuous=False: this many actions, evenly spaced over [-1, 1].
DISCRETE_ACTIONS = 11


def takes_argument(env_id: str, name: str) -> bool:
    """Whether gymnasium's env class (or creator) behind ``env_id`` has an argument ``name``."""
    spec = gym.spec(env_id)
    creator = spec.entry_point
    if isinstance(creator, str):
        creator = gym.envs.registration.load_env_creator(creator)
    try:
        params = inspect.signature(creator).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def make_kwargs(cfg: Mapping, env_id: str | None) -> dict[str, Any]:
    """The ``MAKE_KEYS`` set in ``cfg`` that the env takes, as ``gymnasium.make`` keyword arguments.

    ``continuous`` that the env does not take is left to ``GymnasiumEnv`` (it discretises a 1-D Box);
    any other such key is an error.
    """
    kwargs = {}
    for key in MAKE_KEYS:
        value = cfg.get(key)
        if value is None or env_id is None:
            continue
        if env_id in gym.envs.registry and takes_argument(env_id, key):
            kwargs[key] = value
        elif key != "continuous":
            raise EnvError(
                f"env.{key}={value!r} is not supported for '{env_id}': its gymnasium class takes no "
                f"'{key}' argument (dizoo passes it to FrozenLake). Remove it from the env config."
            )
    return kwargs


def discretised_space(space: gym.Space, continuous: bool | None) -> gym.spaces.Discrete | None:
    """dizoo's PendulumEnv with ``continuous=False``: a 1-D Box env becomes ``Discrete(11)``.

    None when the env's action space stays as it is; an error where ``continuous`` asks for
    something ding_ray cannot make of this env.
    """
    if continuous is None:
        return None
    if isinstance(space, gym.spaces.Box):
        if continuous:
            return None
        if space.shape == (1,) and space.is_bounded():
            return gym.spaces.Discrete(DISCRETE_ACTIONS)
        raise EnvError(
            f"env.continuous=False on an env with actions {space} is not supported yet: ding_ray "
            "discretises a bounded Box of one dimension only (as dizoo's Pendulum). Use a policy for "
            "continuous actions (SAC, PPO with action_space='continuous') or leave continuous unset."
        )
    if not continuous:
        return None
    raise EnvError(
        f"env.continuous=True on an env with actions {space} is not supported yet: its gymnasium class "
        "has no continuous variant. Leave continuous unset."
    )


def unit_of_index(index: int) -> float:
    """The action in [-1, 1] of a discretised Box's action index."""
    return index / (DISCRETE_ACTIONS - 1) * 2.0 - 1.0
