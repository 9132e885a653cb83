"""DI-engine's ``BaseEnvManagerV2`` and ``SubprocessEnvManagerV2``, the managers its framework
scripts build for ``StepCollector`` and ``interaction_evaluator``.

DI-engine's V2 managers differ from V1 in their interface (observations stacked into treetensor
arrays, ``step`` taking a list of actions), which its new middleware speaks. ding_ray's stages speak
one interface, ``{env_id: ...}`` dicts, for every manager, so these are the V1 managers under
DI-engine's names and registry types (``base_v2``, ``subprocess_v2``).
"""

from __future__ import annotations

from ding_ray.envs.env_manager import BaseEnvManager
from ding_ray.envs.subprocess_env_manager import SyncSubprocessEnvManager
from ding_ray.utils.registry import ENV_MANAGER_REGISTRY


@ENV_MANAGER_REGISTRY.register("base_v2")
class BaseEnvManagerV2(BaseEnvManager):
    """``BaseEnvManager`` (envs stepped in this process) under DI-engine's V2 name."""

    config = dict(BaseEnvManager.config, type="base_v2")


@ENV_MANAGER_REGISTRY.register("subprocess_v2")
class SubprocessEnvManagerV2(SyncSubprocessEnvManager):
    """``SyncSubprocessEnvManager`` (one process per env, stepped together) under DI-engine's V2 name."""

    config = dict(SyncSubprocessEnvManager.config, type="subprocess_v2")
