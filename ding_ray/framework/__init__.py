"""Task pipelines: ``Task``, the contexts, and the middleware stages (``ding_ray.framework.middleware``).

This layer imports no Ray: a stage calls the plain interfaces of the components it is given
(collector, buffer, learner, evaluator), and the Ray actors of ``ding_ray.distributed`` offer the
same interfaces as remote calls.

This facade also gives DI-engine's names from ``ding_ray.compat``: ``task`` and ``ding_init`` (the
global task and process setup, a face over ``Task``), and ``FileModelLoader`` / ``FileStorageLoader``
(refused when built).
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
