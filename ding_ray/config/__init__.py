"""Config: per-class defaults, checked merging and ``compile_config``."""

from ding_ray.config.compile import build_default_tree, compile_config, read_config, save_config
from ding_ray.config.merge import deep_merge_dicts, default_config_of, merge_config
from ding_ray.errors import ConfigError

__all__ = [
    "ConfigError",
    "build_default_tree",
    "compile_config",
    "deep_merge_dicts",
    "default_config_of",
    "merge_config",
    "read_config",
    "save_config",
]
