"""Episode replay: each stored item is a whole episode, sampled uniformly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ding_ray.data.columnar import (
    Batch,
    Path,
    as_batch,
    batch_size,
    flatten,
    stack_items,
    unflatten,
    unstack_batch,
)
from ding_ray.data.naive import NaiveReplayBuffer
from ding_ray.data.storage import column_state, columns_from_state, conform
from ding_ray.errors import DataFormatError, ShapeError
from ding_ray.utils.registry import BUFFER_REGISTRY


class EpisodeRing:
    """A ring of ``capacity`` episodes, each kept as its own ``Batch`` (episodes differ in length).

    The first episode fixes the fields, dtypes and per-step shapes every later episode must have.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ShapeError(f"A buffer needs a capacity of at least 1, got {capacity}.")
        self.capacity = int(capacity)
        self.head = 0
        self.filled = 0
        self._slots: list[Batch | None] = [None] * self.capacity
        self._paths: list[Path] = []
        self._protos: list[np.ndarray] = []  # empty arrays carrying each field's dtype and step shape
        self._castable: dict = {}

    @property
    def schema(self) -> list[dict]:
        return [
            {"path": list(p), "dtype": a.dtype.str, "shape": list(a.shape[1:])}
            for p, a in zip(self._paths, self._protos, strict=True)
        ]

    def _own(self, episode: Batch) -> Batch:
        """A private copy of ``episode`` in the schema's dtypes."""
        flat = flatten(episode)
        if not self._paths:
            self._paths = list(flat)
            self._protos = [np.empty((0, *a.shape[1:]), dtype=a.dtype) for a in flat.values()]
        columns = conform(flat, self._paths, self._protos, self._castable)
        owned = {
            p: np.array(c, dtype=proto.dtype)
            for p, c, proto in zip(self._paths, columns, self._protos, strict=True)
        }
        return unflatten(owned, Batch)

    def write(self, episodes: list[Batch], n: int) -> tuple[int, int]:
        episodes = [self._own(ep) for ep in episodes[-self.capacity :]]  # validate all before storing any
        start = self.head
        for episode in episodes:
            self._slots[self.head] = episode
            self.head = (self.head + 1) % self.capacity
        self.filled = min(self.filled + len(episodes), self.capacity)
        return start, len(episodes)

    def physical(self, positions: np.ndarray) -> np.ndarray:
        return (positions + (self.head - self.filled)) % self.capacity

    def gather(self, idx: np.ndarray) -> list[Batch]:
        return [_copy(self._slots[i]) for i in idx]

    def clear(self) -> None:
        self.__init__(self.capacity)

    def state_dict(self) -> dict:
        episodes = []
        for slot in self._slots[: self.filled]:
            flat = flatten(slot)
            episodes.append(column_state(self._paths, [flat[p] for p in self._paths], batch_size(slot)))
        return {
            "capacity": self.capacity,
            "head": self.head,
            "filled": self.filled,
            "schema": self.schema,
            "lengths": [batch_size(s) for s in self._slots[: self.filled]],
            "episodes": episodes,
        }

    @classmethod
    def from_state_dict(cls, state: Mapping) -> EpisodeRing:
        try:
            ring = cls(int(state["capacity"]))
            head, filled = int(state["head"]), int(state["filled"])
            lengths, episodes = list(state["lengths"]), list(state["episodes"])
        except (KeyError, TypeError, ValueError, ShapeError) as err:
            raise DataFormatError(f"Episode storage state is incomplete or malformed: {err!r}") from err
        if not (0 <= filled <= ring.capacity and 0 <= head < ring.capacity) or len(episodes) != filled:
            raise DataFormatError(
                f"Episode storage state: head={head}, filled={filled}, {len(episodes)} episodes."
            )
        if len(lengths) != filled or filled < ring.capacity and head != filled:
            raise DataFormatError("Episode storage state: lengths or head do not match the episodes held.")
        for i, (entries, length) in enumerate(zip(episodes, lengths, strict=True)):
            try:
                ring._slots[i] = ring._own(unflatten(columns_from_state(entries, int(length)), Batch))
            except ShapeError as err:
                raise DataFormatError(
                    f"Episode storage state: episode {i} does not fit the schema: {err}"
                ) from err
        if state.get("schema") != ring.schema and filled:
            raise DataFormatError("Episode storage state: episodes do not match the schema.")
        ring.head, ring.filled = head, filled
        return ring


def _copy(batch: Mapping) -> Batch:
    return Batch({k: _copy(v) if isinstance(v, Mapping) else v.copy() for k, v in batch.items()})


@BUFFER_REGISTRY.register("episode")
class EpisodeReplayBuffer(NaiveReplayBuffer):
    """Stores whole episodes; ``sample(size, ...)`` returns ``size`` episodes drawn uniformly.

    Push one episode as a list of transition dicts or as a ``Batch`` (leading axis = steps), or
    several as a list of those. A sampled episode is a list of transition dicts, or with
    ``columnar=True`` a ``Batch``; ``count()`` and ``replay_buffer_size`` are in episodes.
    """

    config = dict(type="episode")

    def _make_storage(self) -> EpisodeRing:
        return EpisodeRing(self._cfg.replay_buffer_size)

    def _to_batch(self, data: Any) -> tuple[list[Batch] | None, int]:
        if isinstance(data, Batch):
            return [as_batch(data)], 1
        if isinstance(data, (list, tuple)) and data:
            if isinstance(data[0], Mapping) and not isinstance(data[0], Batch):
                return [stack_items(data)], 1  # one episode given as its transitions
            episodes = [as_batch(ep) if isinstance(ep, Batch) else stack_items(ep) for ep in data]
            return episodes, len(episodes)
        if isinstance(data, (list, tuple)):
            return None, 0
        raise ShapeError(
            "EpisodeReplayBuffer.push() takes an episode (a list of transition dicts or a Batch) "
            f"or a list of episodes, got {type(data).__name__}."
        )

    def _present(self, gathered: list[Batch], columnar: bool) -> list:
        return gathered if columnar else [unstack_batch(ep) for ep in gathered]
