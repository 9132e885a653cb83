"""Environments: gymnasium by id (Atari and MinAtar games too), and the vectorized env managers."""

from ding_ray.envs.atari import AtariEnv
from ding_ray.envs.atari_vector_manager import AtariVectorEnvManager
from ding_ray.envs.board_game import TicTacToeEnv
from ding_ray.envs.env_manager import BaseEnvManager, create_env_manager, get_env_manager_cls
from ding_ray.envs.env_manager_v2 import BaseEnvManagerV2, SubprocessEnvManagerV2
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
