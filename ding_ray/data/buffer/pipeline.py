"""A ``Buffer`` seen through the calls the pipeline stages make of every buffer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ding_ray.data.buffer.buffer import Buffer, BufferedData
from ding_ray.data.buffer.middleware.priority import PriorityExperienceReplay


class PipelineBuffer:
    """``push(data, envstep)``, ``sample(size, train_iter)`` and ``update(info)`` on a ``Buffer``,
    doing what DI-engine's stages do with one:

    - each transition is pushed as one item (a list is pushed item by item), each episode as one
      (``push_episode``);
    - ``sample`` returns the items' data, or None where the buffer raises ``ValueError`` (too few
      items): the learner trains nothing this round;
    - with ``PriorityExperienceReplay`` in use, each sampled item carries its ``replay_unique_id``
      (the item's index) and its importance weight as ``IS`` too (the key ding_ray's policies read),
      and ``update`` gives each item its new ``priority`` through ``buffer_.update(index, None, meta)``.
    """

    def __init__(self, buffer_: Buffer) -> None:
        self.buffer = buffer_
        self._metas: dict[str, dict] = {}

    @property
    def prioritized(self) -> bool:
        return any(isinstance(m, PriorityExperienceReplay) for m in self.buffer.middleware)

    def push(self, data: Any, cur_collector_envstep: int = -1) -> None:
        for item in [data] if isinstance(data, Mapping) else data:
            self.buffer.push(item)

    def push_episode(self, episode: list, cur_collector_envstep: int = -1) -> None:
        """A whole episode (a list of transitions) as one item, as DI-engine's ``data_pusher`` does."""
        self.buffer.push(episode)

    def sample(self, size: int, cur_learner_iter: int = 0) -> list | None:
        try:
            sampled: list[BufferedData] = self.buffer.sample(size)
        except ValueError:
            return None
        if not self.prioritized:
            return [item.data for item in sampled]
        self._metas = {item.index: item.meta for item in sampled}
        data = []
        for position, item in enumerate(sampled):
            extra = {"replay_unique_id": item.index, "replay_buffer_idx": position}
            if "priority_IS" in item.meta:
                extra["IS"] = item.meta["priority_IS"]
            data.append({**item.data, **extra})
        return data

    def update(self, info: Mapping) -> None:
        """New priorities, ``info['priority']``, of the items ``info['replay_unique_id']``."""
        for index, priority in zip(info["replay_unique_id"], info["priority"], strict=True):
            meta = self._metas.get(index)
            if meta is not None:
                meta["priority"] = float(priority)
                self.buffer.update(index, None, meta)


def pipeline_buffer(buffer_: Any) -> Any:
    """``buffer_`` as the stages call it: a ``Buffer`` wrapped in ``PipelineBuffer``, anything else
    (the replay buffers of ``ding_ray.data``, their actors' clients) as it is."""
    return PipelineBuffer(buffer_) if isinstance(buffer_, Buffer) else buffer_
