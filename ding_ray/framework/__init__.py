"""Task pipelines: ``Task``, the contexts, and the middleware stages (``ding_ray.framework.middleware``).

This layer imports no Ray: a stage calls the plain interfaces of the components it is given
(collector, buffer, learner, evaluator), and the Ray actors of ``ding_ray.distributed`` offer the
same interfaces as remote calls. ``task`` and ``ding_init`` are DI-engine's global task and
process setup (``global_task``), a face over ``Task``.
"""

from ding_ray.framework.context import Context, OfflineRLContext, OnlineRLContext
from ding_ray.framework.global_task import ding_init, task
from ding_ray.framework.task_runner import Task, current_task, stage_name

__all__ = [
    "Context",
    "OfflineRLContext",
    "OnlineRLContext",
    "Task",
    "current_task",
    "ding_init",
    "stage_name",
    "task",
]
