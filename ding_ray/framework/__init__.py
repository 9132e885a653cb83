"""Task pipelines: ``Task``, the contexts, and the middleware stages (``ding_ray.framework.middleware``).

This layer imports no Ray: a stage calls the plain interfaces of the components it is given
(collector, buffer, learner, evaluator), and the Ray actors of ``ding_ray.distributed`` offer the
same interfaces as remote calls.

This facade also gives DI-engine's names from ``ding_ray.compat``: ``task`` and ``ding_init`` (the
global task and process setup, a face over ``Task``), and ``FileModelLoader`` / ``FileStorageLoader``
(refused when built). DI-engine's ``Parallel`` (its launcher of a pipeline over processes) is
refused at import with what to use instead: ding_ray spreads a run over Ray actors.
"""

from ding_ray.compat.global_task import ding_init, task
from ding_ray.compat.model_loader import FileModelLoader
from ding_ray.compat.storage_loader import FileStorageLoader
from ding_ray.framework.context import Context, OfflineRLContext, OnlineRLContext
from ding_ray.framework.task_runner import Task, current_task, stage_name

__all__ = [
    "Context",
    "FileModelLoader",
    "FileStorageLoader",
    "OfflineRLContext",
    "OnlineRLContext",
    "Task",
    "current_task",
    "ding_init",
    "stage_name",
    "task",
]


def __getattr__(name: str) -> object:
    if name == "Parallel":  # DI-engine's multi-process launcher: say what replaces it
        raise ImportError(
            "DI-engine's Parallel (Parallel.runner(...)(main)) is not in ding_ray: a ding_ray run spreads "
            "over processes and machines as Ray actors instead. Run the same config with "
            "ding_ray.entry.ray_pipeline((main_config, create_config), seed=0) or `ding-ray train "
            "CONFIG --mode ray` (on a cluster: ray submit cluster.yaml your_script.py); a task script "
            "written for Parallel runs as it is in one process (task.router.is_active is False).",
            name="Parallel",
        )
    raise AttributeError(f"module 'ding_ray.framework' has no attribute '{name}'")
