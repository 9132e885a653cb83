"""Game ids of ale-py and MinAtar, which register with gymnasium only when asked: registered here the
first time such an id is made, with an error naming the ``atari`` extra where a package is missing;
and MinAtar's observations made channel first for a conv model."""

from __future__ import annotations

import importlib.util
from typing import Any

import gymnasium as gym
import numpy as np

from ding_ray.errors import ConfigError

EXTRA_HINT = 'Atari and MinAtar games need the atari extra: pip install "ding_ray[atari]"'


def is_minatar_id(env_id: Any) -> bool:
    return isinstance(env_id, str) and env_id.startswith("MinAtar/")


def is_atari_id(env_id: Any) -> bool:
    """An id of ale-py's (``ALE/Pong-v5``, ``PongNoFrameskip-v4``), once ale-py has registered."""
    if not isinstance(env_id, str):
        return False
    if env_id.startswith("ALE/"):
        return True
    spec = gym.envs.registry.get(env_id)
    return spec is not None and str(spec.entry_point).startswith("ale_py")


def ensure_registered(env_id: str) -> bool:
    """Register ale-py's or MinAtar's ids if ``env_id`` is not known yet; True if it is known now."""
    if env_id in gym.envs.registry:
        return True
    if is_minatar_id(env_id):
        if importlib.util.find_spec("minatar") is not None:
            from minatar.gym import register_envs

            register_envs()
    elif importlib.util.find_spec("ale_py") is not None:
        import ale_py

        gym.register_envs(ale_py)
    return env_id in gym.envs.registry


def check_extra(env_id: Any, env_type: str | None = None) -> None:
    """Refuse (``ConfigError``), before anything starts, a MinAtar or Atari game whose package (of
    the ``atari`` extra) is not installed: a MinAtar id needs minatar, an ``ALE/`` id or the env type
    ``'atari'`` needs ale-py."""
    if is_minatar_id(env_id):
        needed = ["minatar"]
    elif env_type == "atari" or (isinstance(env_id, str) and env_id.startswith("ALE/")):
        needed = ["ale_py"]
    else:
        return
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(
            f"env.env_id={env_id!r} needs {', '.join(missing)}, which is not installed. {EXTRA_HINT}."
        )


def missing_packages() -> list[str]:
    return [name for name in ("ale_py", "minatar") if importlib.util.find_spec(name) is None]


def minatar_space(space: gym.spaces.Box) -> gym.spaces.Box:
    """MinAtar's ``(10, 10, C)`` bool space as the model sees it: ``(C, 10, 10)`` float32 in [0, 1]."""
    h, w, c = space.shape
    return gym.spaces.Box(0.0, 1.0, shape=(c, h, w), dtype=np.float32)


def minatar_obs(obs: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(obs, -1, 0), dtype=np.float32)
