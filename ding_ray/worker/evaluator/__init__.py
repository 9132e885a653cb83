from ding_ray.worker.evaluator.battle_evaluator import BattleInteractionSerialEvaluator
from ding_ray.worker.evaluator.interaction_evaluator import (
    InteractionSerialEvaluator,
    ISerialEvaluator,
    create_serial_evaluator,
)
from ding_ray.worker.evaluator.metric_evaluator import IMetric, MetricSerialEvaluator
from ding_ray.worker.evaluator.vector_eval_monitor import VectorEvalMonitor

__all__ = [
    "BattleInteractionSerialEvaluator",
    "IMetric",
    "ISerialEvaluator",
    "InteractionSerialEvaluator",
    "MetricSerialEvaluator",
    "VectorEvalMonitor",
    "create_serial_evaluator",
]
