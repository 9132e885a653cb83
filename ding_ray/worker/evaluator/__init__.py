from ding_ray.worker.evaluator.interaction_evaluator import (
    InteractionSerialEvaluator,
    ISerialEvaluator,
    create_serial_evaluator,
)
from ding_ray.worker.evaluator.metric_evaluator import IMetric, MetricSerialEvaluator
from ding_ray.worker.evaluator.vector_eval_monitor import VectorEvalMonitor

__all__ = [
    "IMetric",
    "ISerialEvaluator",
    "InteractionSerialEvaluator",
    "MetricSerialEvaluator",
    "VectorEvalMonitor",
    "create_serial_evaluator",
]
