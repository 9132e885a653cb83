"""Ray layer: the workers as named actors behind the stages' protocols, weights through the object store.

Building blocks for a driver of your own (``examples/apex_dqn.py`` is one)::

    cfg, plan, started_ray = start_run((main_config, create_config), seed)  # config, Ray up
    with RayRun(cfg, plan) as rc, rc.task() as task:                        # the actors
        task.use(collector(cfg, rc.collector))     # ... the middleware stages, given the actors
        task.use(rc.wait())
        task.run()

Nothing below this package imports ray. Names are imported on first use, so that an actor
process loads only its own module (the buffer actor never imports torch).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Actors": "actors",
    "CollectorActor": "actors",
    "EvaluatorActor": "actors",
    "LearnerActor": "actors",
    "create_actors": "actors",
    "wait_ready": "actors",
    "BufferActor": "buffer_actor",
    "ClusterError": "cluster",
    "check_cluster": "placement",
    "check_resources": "placement",
    "init_ray": "cluster",
    "start_run": "cluster",
    "CollectorPool": "collector_pool",
    "RayRun": "ray_run",
    "pipeline_of": "config",
    "BufferClient": "buffer_client",
    "EvaluatorClient": "evaluator_client",
    "LearnerClient": "learner_client",
    "AsyncLearnerClient": "learner_client",
    "SyncLearnerClient": "learner_client",
    "CollectorsClient": "collectors_client",
    "AsyncCollectorsClient": "collectors_client",
    "SyncCollectorsClient": "collectors_client",
    "ActorSupervisor": "supervisor",
    "Plan": "config",
    "RayConfig": "config",
    "make_plan": "config",
    "RayMetrics": "metrics",
    "metric_name": "metrics",
    "WeightsPublisher": "weights",
    "WeightsRef": "weights",
    "pull": "weights",
}

__all__ = sorted(_EXPORTS)


# Lazy: static imports would add about 1 s (torch, the workers) to each buffer actor's start
def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ding_ray.distributed' has no attribute '{name}'")
    return getattr(importlib.import_module(f"ding_ray.distributed.{_EXPORTS[name]}"), name)


def __dir__() -> list[str]:
    return __all__
