"""Bundled configs, DI-engine style: each module holds a ``main_config`` and a ``create_config``.

``ding-ray train cartpole_dqn`` and the example scripts run these. A module also names the budget
(``max_env_step``) and the pipeline (``mode``: 'serial' or 'ray') it was tuned with.
"""

from __future__ import annotations

import copy
import importlib
from dataclasses import dataclass

from easydict import EasyDict

from ding_ray.errors import ConfigError
from ding_ray.utils.registry import close_matches

_NAMES = (
    "acrobot_dqn",
    "apex_dqn",
    "cartpole_dqn",
    "cartpole_impala",
    "cartpole_ppo",
    "hopper_sac",
    "minatar_breakout_dqn",
    "minatar_breakout_impala",
    "minatar_breakout_ppo",
    "pendulum_ppo",
    "pendulum_sac",
)


@dataclass
class BundledConfig:
    """One bundled config: fresh copies of its two dicts, so callers may edit them."""

    name: str
    main_config: EasyDict
    create_config: EasyDict
    max_env_step: int | None  # the budget it was tuned with
    mode: str  # 'serial' or 'ray'
    description: str  # first paragraph of the module docstring


def list_configs() -> list[str]:
    """Names of the bundled configs."""
    return list(_NAMES)


def load_config(name: str) -> BundledConfig:
    """The bundled config ``name`` (``ConfigError`` naming the nearest ones when unknown)."""
    if name not in _NAMES:
        hint = close_matches(name, _NAMES)
        did_you_mean = f" Did you mean {' or '.join(repr(h) for h in hint)}?" if hint else ""
        raise ConfigError(
            f"No bundled config named '{name}'.{did_you_mean} Bundled: {', '.join(_NAMES)} "
            "(or pass the path of a Python config file)."
        )
    module = importlib.import_module(f"ding_ray.configs.{name}")
    return BundledConfig(
        name=name,
        main_config=EasyDict(copy.deepcopy(module.main_config)),
        create_config=EasyDict(copy.deepcopy(module.create_config)),
        max_env_step=getattr(module, "max_env_step", None),
        mode=getattr(module, "mode", "serial"),
        description=" ".join((module.__doc__ or "").strip().split("\n\n")[0].split()),
    )
