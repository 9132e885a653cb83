"""``FileModelLoader``: importable so DI-engine's scripts run; refused when built.

DI-engine's model loaders move a learner's weights to other processes through files, for its
``ModelExchanger``. ding_ray's processes are Ray actors: the learner puts its weights into Ray's
object store once per version and collectors and evaluators read them from there.
"""

from __future__ import annotations

from typing import Any

from ding_ray.errors import NotSupportedError


class FileModelLoader:
    def __init__(self, model: Any, dirname: str, ttl: int = 20) -> None:
        raise NotSupportedError(
            "FileModelLoader (weights sent between DI-engine's processes through files) is not supported: "
            "ding_ray publishes weights through Ray's object store. Run the collectors and the learner as "
            "Ray actors (ding_ray.entry.ray_pipeline, or ding_ray.distributed) instead of ModelExchanger."
        )
