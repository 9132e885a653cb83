"""Environments: gymnasium by id (Atari and MinAtar games too), and the vectorized env managers.

This facade also installs DI-engine's env habits from ``ding_ray.compat``: the check of dizoo's env
keys on ``GymnasiumEnv``, and the V2 managers (``BaseEnvManagerV2``, ``SubprocessEnvManagerV2``,
types ``base_v2`` and ``subprocess_v2``).
"""

import ding_ray.compat.dizoo_env_keys  # noqa: F401
from ding_ray.compat.env_managers_v2 import BaseEnvManagerV2, SubprocessEnvManagerV2
from ding_ray.envs.atari import AtariEnv
from ding_ray.envs.atari_vector_manager import AtariVectorEnvManager
from ding_ray.envs.board_game import TicTacToeEnv
from ding_ray.envs.env_manager import BaseEnvManager, create_env_manager, get_env_manager_cls
from ding_ray.envs.gymnasium_env import (
    BaseEnvTimestep,
    DingEnvWrapper,
    GymnasiumEnv,
    get_vec_env_setting,
    make_gymnasium,
    space_info,
)
from ding_ray.envs.subprocess_env_manager import AsyncSubprocessEnvManager, SyncSubprocessEnvManager

__all__ = [
    "AtariEnv",
    "AtariVectorEnvManager",
    "AsyncSubprocessEnvManager",
    "BaseEnvManager",
    "BaseEnvManagerV2",
    "BaseEnvTimestep",
    "DingEnvWrapper",
    "GymnasiumEnv",
    "SubprocessEnvManagerV2",
    "SyncSubprocessEnvManager",
    "TicTacToeEnv",
    "create_env_manager",
    "get_env_manager_cls",
    "get_vec_env_setting",
    "make_gymnasium",
    "space_info",
]
