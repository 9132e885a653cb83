from ding_ray.worker.learner.base_learner import BaseLearner, CountVar, create_learner
from ding_ray.worker.learner.hook_config import (
    add_learner_hook,
    build_learner_hook_by_cfg,
    merge_hooks,
    register_learner_hook,
)
from ding_ray.worker.learner.hooks import (
    LearnerHook,
    LoadCkptHook,
    LogReduceHook,
    LogShowHook,
    SaveCkptHook,
    load_checkpoint,
)
from ding_ray.worker.learner.log_buffer import LogBuffer

__all__ = [
    "BaseLearner",
    "CountVar",
    "LearnerHook",
    "LoadCkptHook",
    "LogBuffer",
    "LogReduceHook",
    "LogShowHook",
    "SaveCkptHook",
    "add_learner_hook",
    "build_learner_hook_by_cfg",
    "create_learner",
    "load_checkpoint",
    "merge_hooks",
    "register_learner_hook",
]
