"""``FileStorageLoader``: importable so DI-engine's scripts run; refused when built.

DI-engine's storage loaders move context data (trajectories) to other processes as pickle files,
for its ``ContextExchanger``. ding_ray's processes are Ray actors that hand each other numpy
batches through Ray's object store, and ding_ray writes no pickle files.
"""

from __future__ import annotations

from ding_ray.errors import NotSupportedError


class FileStorageLoader:
    def __init__(self, dirname: str, ttl: int = 20, worker_num: int = 3) -> None:
        raise NotSupportedError(
            "FileStorageLoader (context data sent between DI-engine's processes as pickle files) is not "
            "supported: ding_ray's collectors, buffers and learners are Ray actors that pass numpy batches "
            "through the object store (ding_ray.entry.ray_pipeline, or ding_ray.distributed)."
        )
