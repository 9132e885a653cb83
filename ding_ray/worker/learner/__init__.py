from ding_ray.worker.learner.base_learner import BaseLearner, CountVar, create_learner
from ding_ray.worker.learner.hooks import (
    LearnerHook,
    LoadCkptHook,
    LogShowHook,
    SaveCkptHook,
    add_learner_hook,
    build_learner_hook_by_cfg,
    load_checkpoint,
    merge_hooks,
    register_learner_hook,
)

__all__ = [
    "BaseLearner",
    "CountVar",
    "LearnerHook",
    "LoadCkptHook",
    "LogShowHook",
    "SaveCkptHook",
    "add_learner_hook",
    "build_learner_hook_by_cfg",
    "create_learner",
    "load_checkpoint",
    "merge_hooks",
    "register_learner_hook",
]
