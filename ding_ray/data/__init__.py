"""Replay buffers: uniform, prioritized, episode and sequence, on columnar ring storage.

Pushing (every buffer)::

    buffer.push(transition, cur_collector_envstep)            # one item: a dict
    buffer.push([t0, t1, ...], cur_collector_envstep)         # a list of items
    buffer.push(Batch(obs=obs, action=act, ...), envstep)     # columnar: arrays with a leading
                                                              # batch axis, wrapped in ``Batch``

A plain dict is always *one* item; wrap a dict of arrays in ``ding_ray.data.Batch`` to push it
as many. ``stack_items`` turns a list of items into a ``Batch``, ``unstack_batch`` the reverse.
Torch tensors are converted to numpy on the way in; nested dicts are allowed.

Sampling returns a list of dicts (DI-engine's form) or, with ``columnar=True``, a ``Batch``::

    items = buffer.sample(256, cur_learner_iter)                 # list of dicts, or None
    batch = buffer.sample(256, cur_learner_iter, columnar=True)  # Batch of arrays, or None

``AdvancedReplayBuffer`` samples also carry ``IS`` (float32), ``priority``, ``replay_unique_id``
and ``replay_buffer_idx``; hand the last two back with new priorities::

    buffer.update({"replay_unique_id": batch["replay_unique_id"],
                   "replay_buffer_idx": batch["replay_buffer_idx"], "priority": new_priority})

Image stacks are stored frame by frame: a uint8 ``(stack, H, W)`` field (Atari's ``obs`` and
``next_obs``, frame stack 4, 84x84) holds ``stack`` frame ids per item, each frame once, shared
by ``obs``, ``next_obs`` and neighbouring steps (``frames.FrameStore``): about 7.6 KB per Pong
transition instead of 56 KB. Samples rebuild the stacks byte for byte; ``frame_dedup=False`` in
the buffer config keeps plain columns.

DI-engine's new buffer API (``DequeBuffer(size)`` with middleware, ``BufferedData`` items) is
``ding_ray.data.buffer``.

``SequenceReplayBuffer.sample(batch, sequence, cur_learner_iter, ...)`` returns runs of
consecutive items (``(batch, sequence, ...)`` arrays when columnar). Files: ``save_data(path)`` /
``load_data(path)`` (msgpack, checksummed, see ``file_format``).
"""

from ding_ray.data.advanced import AdvancedReplayBuffer
from ding_ray.data.base import IBuffer
from ding_ray.data.buffer import Buffer, BufferedData, DequeBuffer
from ding_ray.data.columnar import Batch, stack_items, unstack_batch
from ding_ray.data.deque import DequeBufferWrapper
from ding_ray.data.episode import EpisodeReplayBuffer
from ding_ray.data.factory import create_buffer, get_buffer_cls
from ding_ray.data.monitors import PeriodicThruputMonitor, SampledDataAttrMonitor, ThruputController
from ding_ray.data.naive import NaiveReplayBuffer
from ding_ray.data.priority import PriorityError
from ding_ray.data.segment_tree import MinSegmentTree, SumSegmentTree
from ding_ray.data.sequence import SequenceReplayBuffer

__all__ = [
    "AdvancedReplayBuffer",
    "Batch",
    "Buffer",
    "BufferedData",
    "DequeBuffer",
    "DequeBufferWrapper",
    "EpisodeReplayBuffer",
    "IBuffer",
    "MinSegmentTree",
    "NaiveReplayBuffer",
    "PeriodicThruputMonitor",
    "PriorityError",
    "SampledDataAttrMonitor",
    "SequenceReplayBuffer",
    "SumSegmentTree",
    "ThruputController",
    "create_buffer",
    "get_buffer_cls",
    "stack_items",
    "unstack_batch",
]
