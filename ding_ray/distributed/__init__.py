"""Ray layer: the workers as named actors, weights through the object store, and the pipelines.

Building blocks for a driver of your own (``examples/apex_dqn.py`` is one)::

    cfg = compile_ray_config((main_config, create_config), seed)   # ding_ray.entry
    plan = make_plan(cfg)
    init_ray(cfg.ray, plan.namespace)
    actors = create_actors(cfg, plan.namespace)    # learner, buffer, evaluator, collector-0..n-1
    ApexDriver(cfg, actors, plan, max_env_step=...).run()

Nothing below this package imports ray.
"""

from ding_ray.distributed.actors import (
    Actors,
    BufferWorker,
    CollectorActor,
    CollectorWorker,
    EvaluatorActor,
    EvaluatorWorker,
    LearnerActor,
    LearnerWorker,
    ReplayBufferActor,
    create_actors,
    wait_ready,
)
from ding_ray.distributed.apex import ApexDriver
from ding_ray.distributed.cluster import ClusterError, check_cluster, check_resources, init_ray
from ding_ray.distributed.collector_pool import CollectorPool
from ding_ray.distributed.config import Plan, RayConfig, make_plan
from ding_ray.distributed.driver import Driver
from ding_ray.distributed.metrics import RayMetrics, metric_name
from ding_ray.distributed.sync import SyncDriver
from ding_ray.distributed.weights import WeightsPublisher, WeightsRef, pull

__all__ = [
    "Actors",
    "ApexDriver",
    "BufferWorker",
    "ClusterError",
    "CollectorActor",
    "CollectorPool",
    "CollectorWorker",
    "Driver",
    "EvaluatorActor",
    "EvaluatorWorker",
    "LearnerActor",
    "LearnerWorker",
    "Plan",
    "RayConfig",
    "RayMetrics",
    "ReplayBufferActor",
    "SyncDriver",
    "WeightsPublisher",
    "WeightsRef",
    "check_cluster",
    "check_resources",
    "create_actors",
    "init_ray",
    "make_plan",
    "metric_name",
    "pull",
    "wait_ready",
]
