"""Replay buffers.

Pushing: ``buffer.push(data, cur_collector_envstep)`` where ``data`` is one item (a dict),
a list of items, or a ``Batch`` (a dict of numpy arrays with a leading batch axis).
Sampling: ``buffer.sample(size, cur_learner_iter)`` returns a list of dicts; pass
``columnar=True`` to get a ``Batch`` instead.
"""

from ding_ray.data.advanced import AdvancedReplayBuffer, PriorityError
from ding_ray.data.base import IBuffer
from ding_ray.data.columnar import Batch, stack_items, unstack_batch
from ding_ray.data.episode import EpisodeReplayBuffer
from ding_ray.data.factory import create_buffer, get_buffer_cls
from ding_ray.data.naive import NaiveReplayBuffer
from ding_ray.data.sequence import SequenceReplayBuffer

__all__ = [
    "AdvancedReplayBuffer",
    "Batch",
    "EpisodeReplayBuffer",
    "IBuffer",
    "NaiveReplayBuffer",
    "PriorityError",
    "SequenceReplayBuffer",
    "create_buffer",
    "get_buffer_cls",
    "stack_items",
    "unstack_batch",
]
