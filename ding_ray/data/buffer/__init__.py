"""DI-engine's new buffer API (``ding.data.buffer``): ``DequeBuffer`` with middleware.

::

    buffer_ = DequeBuffer(size=10000)
    buffer_.use(PriorityExperienceReplay(buffer_, IS_weight=True))
    item = buffer_.push({"obs": obs, "action": 1, ...}, meta={"env": 0})    # -> BufferedData
    batch = buffer_.sample(64)                     # list of BufferedData; ValueError if too few
    buffer_.update(batch[0].index, meta=dict(batch[0].meta, priority=2.0))

The framework stages (``data_pusher``, ``OffPolicyLearner``, ``gae_estimator``) take such a buffer
as they take the others (``pipeline.PipelineBuffer``).
"""

from ding_ray.data.buffer.buffer import Buffer, BufferedData, apply_middleware
from ding_ray.data.buffer.deque_buffer import DequeBuffer
from ding_ray.data.buffer.middleware import (
    PriorityExperienceReplay,
    clone_object,
    group_sample,
    padding,
    sample_range_view,
    staleness_check,
    use_time_check,
)
from ding_ray.data.deque import DequeBufferWrapper  # DI-engine exports it here too

__all__ = [
    "Buffer",
    "BufferedData",
    "DequeBuffer",
    "DequeBufferWrapper",
    "PriorityExperienceReplay",
    "apply_middleware",
    "clone_object",
    "group_sample",
    "padding",
    "sample_range_view",
    "staleness_check",
    "use_time_check",
]
