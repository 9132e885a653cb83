"""The env keys of DI-engine's dizoo env classes, read by ``GymnasiumEnv``.

dizoo has one env class per family (``PendulumEnv``, ``BipedalWalkerEnv``, ``MujocoEnv``, ...), each
with keys of its own; ding_ray has one env for every gymnasium id. A key one of those classes reads
is accepted here: it acts where ``GymnasiumEnv`` can do the same, and any other value of it is
refused with a "not supported yet" error that says what to do instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from ding_ray.errors import ConfigError, EnvError

# Keys dizoo's env classes pass to gymnasium.make: LunarLander's and CarRacing's `continuous`,
# FrozenLake's `desc`, `map_name` and `is_slippery`. None: the env's own default.
MAKE_KEYS = ("continuous", "desc", "map_name", "is_slippery")

# dizoo's PendulumEnv with continuous=False: this many actions, evenly spaced over [-1, 1].
DISCRETE_ACTIONS = 11

# DingEnvWrapper's named wrapper sets that add only the final ``eval_episode_return`` (which every
# ding_ray env reports).
PLAIN_WRAPPERS = ("default", "mujoco_default")

# key -> (the value that leaves the env as it is, what to do instead of another value)
NOT_YET: dict[str, tuple[Any, str]] = {
    "obs_plus_prev_action_reward": (
        False,
        "append the previous action and reward to the observation with a gymnasium.ObservationWrapper "
        "and pass the env through serial_pipeline(env_setting=...)",
    ),
    "action_bins_per_branch": (None, "ding_ray has no branching (BDQ) policy; leave it None"),
    "delay_reward_step": (0, "leave it 0 (no delay)"),
    "save_replay_gif": (False, "record mp4 videos with env.replay_path and the eval entry instead"),
    "replay_path_gif": (None, "record mp4 videos with env.replay_path and the eval entry instead"),
}


def check_dizoo_keys(cfg: Mapping) -> None:
    """Raise ``ConfigError`` for a dizoo key set to something ``GymnasiumEnv`` cannot do yet."""
    for key, (idle, instead) in NOT_YET.items():
        value = cfg.get(key, idle)
        if value != idle and not (key == "delay_reward_step" and value == 1):
            raise ConfigError(f"env.{key}={value!r} is not supported yet by ding_ray's env: {instead}.")
    wrapper = cfg.get("env_wrapper", "default")
    if wrapper not in PLAIN_WRAPPERS:
        raise ConfigError(
            f"env.env_wrapper={wrapper!r} is not supported yet: ding_ray's env has DI-engine's "
            f"{' and '.join(repr(w) for w in PLAIN_WRAPPERS)} sets only. Wrap the gymnasium env yourself "
            "(e.g. gymnasium.wrappers.AtariPreprocessing) and pass it through "
            "serial_pipeline(env_setting=...) or DingEnvWrapper(env)."
        )
    for key, what in (("norm_obs", "observation"), ("norm_reward", "reward")):
        norm = cfg.get(key)
        if norm is None:
            continue
        if not isinstance(norm, Mapping):
            raise ConfigError(f"env.{key} is dizoo's dict(use_norm=...), got {norm!r}.")
        if norm.get("use_norm", False):
            in_policy = "PPO's policy.obs_norm=True normalises them in the policy, " * (key == "norm_obs")
            raise ConfigError(
                f"env.{key}.use_norm=True (dizoo's running {what} normalisation in the env) is not "
                f"supported yet: {in_policy}or wrap the env with gymnasium.wrappers."
                f"Normalize{what.capitalize()} and pass it through serial_pipeline(env_setting=...). "
                "use_norm=False is accepted."
            )


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
