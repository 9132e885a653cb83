"""DI-engine's buffer middleware: pass one to ``buffer_.use(...)``."""

from ding_ray.data.buffer.middleware.clone_object import clone_object
from ding_ray.data.buffer.middleware.priority import PriorityExperienceReplay
from ding_ray.data.buffer.middleware.sampling import group_sample, padding, sample_range_view
from ding_ray.data.buffer.middleware.staleness_check import staleness_check
from ding_ray.data.buffer.middleware.use_time_check import use_time_check

__all__ = [
    "PriorityExperienceReplay",
    "clone_object",
    "group_sample",
    "padding",
    "sample_range_view",
    "staleness_check",
    "use_time_check",
]
