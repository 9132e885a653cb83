"""Workers: collectors, evaluators, the learner, the commander, and the replay buffers (re-exported)."""

from ding_ray.data import (
    AdvancedReplayBuffer,
    DequeBufferWrapper,
    EpisodeReplayBuffer,
    IBuffer,
    NaiveReplayBuffer,
    SequenceReplayBuffer,
    create_buffer,
    get_buffer_cls,
)
from ding_ray.worker.collector import (
    EpisodeSerialCollector,
    ISerialCollector,
    SampleSerialCollector,
    create_serial_collector,
    get_serial_collector_cls,
)
from ding_ray.worker.commander import BaseSerialCommander
from ding_ray.worker.evaluator import (
    IMetric,
    InteractionSerialEvaluator,
    ISerialEvaluator,
    MetricSerialEvaluator,
    VectorEvalMonitor,
    create_serial_evaluator,
)
from ding_ray.worker.learner import (
    BaseLearner,
    LearnerHook,
    LogReduceHook,
    add_learner_hook,
    build_learner_hook_by_cfg,
    create_learner,
    merge_hooks,
    register_learner_hook,
)

__all__ = [
    "AdvancedReplayBuffer",
    "DequeBufferWrapper",
    "EpisodeReplayBuffer",
    "SequenceReplayBuffer",
    "BaseLearner",
    "BaseSerialCommander",
    "EpisodeSerialCollector",
    "IBuffer",
    "IMetric",
    "ISerialCollector",
    "ISerialEvaluator",
    "InteractionSerialEvaluator",
    "LearnerHook",
    "LogReduceHook",
    "MetricSerialEvaluator",
    "NaiveReplayBuffer",
    "SampleSerialCollector",
    "VectorEvalMonitor",
    "add_learner_hook",
    "build_learner_hook_by_cfg",
    "create_buffer",
    "create_learner",
    "create_serial_collector",
    "create_serial_evaluator",
    "get_buffer_cls",
    "get_serial_collector_cls",
    "merge_hooks",
    "register_learner_hook",
]
