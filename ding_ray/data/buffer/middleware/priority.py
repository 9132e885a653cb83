"""``PriorityExperienceReplay``: prioritized sampling (PER) for a ``Buffer``, on ding_ray's sum tree."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ding_ray.data.buffer.buffer import BufferedData
from ding_ray.data.segment_tree import SumSegmentTree

if TYPE_CHECKING:
    from ding_ray.data.buffer.buffer import Buffer


class PriorityExperienceReplay:
    """Items are drawn in proportion to ``priority ** priority_power_factor``.

    A push takes its priority from ``meta['priority']``, else from ``data['priority']`` (removed
    from the data), else the largest priority seen so far; the item's slot in the tree is
    ``meta['priority_idx']``, slots being reused round-robin. ``sample(size)`` draws one item in
    each of ``size`` equal slices of the total weight (repeats possible) and, with ``IS_weight``,
    puts the importance-sampling weight ``(N * P(i)) ** -beta`` over its largest possible value in
    ``meta['priority_IS']`` and ``data['priority_IS']`` (float32, shape ``(1,)``); beta grows from
    ``IS_weight_power_factor`` to 1 over ``IS_weight_anneal_train_iter`` samples. New priorities
    come in through ``buffer_.update(index, None, meta)`` with ``meta['priority']`` (1e-5 is added).
    """

    def __init__(
        self,
        buffer: Buffer,
        IS_weight: bool = True,  # noqa: N803 - DI-engine's argument names
        priority_power_factor: float = 0.6,
        IS_weight_power_factor: float = 0.4,  # noqa: N803
        IS_weight_anneal_train_iter: int = int(1e5),  # noqa: N803
    ) -> None:
        if IS_weight_anneal_train_iter <= 0:
            raise ValueError(
                f"IS_weight_anneal_train_iter must be > 0 (samples over which beta reaches 1), "
                f"got {IS_weight_anneal_train_iter}."
            )
        self.buffer = buffer
        self.buffer_size = buffer.size
        self.IS_weight = IS_weight
        self.priority_power_factor = priority_power_factor
        self.IS_weight_power_factor = IS_weight_power_factor
        self.IS_weight_anneal_train_iter = IS_weight_anneal_train_iter
        self.delta_anneal = (1 - IS_weight_power_factor) / IS_weight_anneal_train_iter
        self.sum_tree = SumSegmentTree(self.buffer_size)
        self.buffer_idx: dict[int, str] = {}  # tree slot -> item index
        self.max_priority = 1.0
        self.pivot = 0

    def __call__(self, action: str, chain: Callable, *args: Any, **kwargs: Any) -> Any:
        handler = {
            "push": self.push,
            "sample": self.sample,
            "update": self.update,
            "delete": self.delete,
            "clear": self.clear,
        }.get(action)
        return chain(*args, **kwargs) if handler is None else handler(chain, *args, **kwargs)

    def push(
        self, chain: Callable, data: Any, meta: dict | None = None, *args: Any, **kwargs: Any
    ) -> BufferedData:
        if meta is None:
            has_priority = isinstance(data, dict) and "priority" in data
            meta = {"priority": data.pop("priority") if has_priority else self.max_priority}
        else:
            meta.setdefault("priority", self.max_priority)
        meta["priority"] = float(meta["priority"])
        meta["priority_idx"] = self.pivot
        self._set_priority(self.pivot, meta["priority"])
        buffered = chain(data, meta, *args, **kwargs)
        self.buffer_idx[self.pivot] = buffered.index
        self.pivot = (self.pivot + 1) % self.buffer_size
        return buffered

    def sample(self, chain: Callable, size: int, *args: Any, **kwargs: Any) -> list[BufferedData]:
        total = self.sum_tree.reduce()
        if total <= 0:  # nothing held
            if kwargs.get("ignore_insufficient"):
                return []
            raise ValueError(f"There are less than {size} records/groups in buffer({self.buffer.count()})")
        mass = (np.arange(size) + np.random.uniform(size=size)) / size * total
        slots = self.sum_tree.find_prefixsum_idx(mass)
        data = chain(*args, indices=[self.buffer_idx[int(s)] for s in slots], **kwargs)
        if self.IS_weight:
            count = self.buffer.count()
            max_weight = (count * self.sum_tree.min_positive() / total) ** -self.IS_weight_power_factor
            for item in data:
                p_sample = self.sum_tree[item.meta["priority_idx"]] / total
                weight = (count * p_sample) ** -self.IS_weight_power_factor / max_weight
                item.meta["priority_IS"] = float(weight)
                if isinstance(item.data, dict):
                    item.data["priority_IS"] = np.array([weight], dtype=np.float32)
            self.IS_weight_power_factor = min(1.0, self.IS_weight_power_factor + self.delta_anneal)
        return data

    def update(
        self, chain: Callable, index: str, data: Any = None, meta: dict | None = None, *args: Any
    ) -> bool:
        updated = chain(index, data, meta, *args)
        if updated and meta is not None and "priority" in meta:
            priority = float(meta["priority"])
            if not priority >= 0:
                raise ValueError(f"A priority must be >= 0, got {priority} for item {index!r}.")
            priority += 1e-5  # a zero priority would never be drawn again
            self._set_priority(meta["priority_idx"], priority)
            self.max_priority = max(self.max_priority, priority)
        return updated

    def delete(self, chain: Callable, indices: Any, *args: Any, **kwargs: Any) -> None:
        for index in [indices] if isinstance(indices, str) else list(indices):
            slot = self._slot_of(index)
            if slot is not None:
                self.sum_tree.update(np.array([slot]), 0.0)
                self.buffer_idx.pop(slot, None)
        return chain(indices, *args, **kwargs)

    def clear(self, chain: Callable) -> None:
        self.sum_tree.clear()
        self.buffer_idx = {}
        self.max_priority = 1.0
        self.pivot = 0
        return chain()

    def _slot_of(self, index: str) -> int | None:
        try:
            return self.buffer.get_by_index(index).meta["priority_idx"]
        except KeyError:
            return None

    def _set_priority(self, slot: int, priority: float) -> None:
        self.sum_tree.update(np.array([slot]), float(priority) ** self.priority_power_factor)

    def state_dict(self) -> dict:
        """What sampling depends on besides the items: slots, priorities and the annealed beta."""
        return {
            "max_priority": self.max_priority,
            "IS_weight_power_factor": self.IS_weight_power_factor,
            "pivot": self.pivot,
            "buffer_idx": dict(self.buffer_idx),
            "weights": self.sum_tree.leaves[: self.buffer_size].copy(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.max_priority = float(state["max_priority"])
        self.IS_weight_power_factor = float(state["IS_weight_power_factor"])
        self.pivot = int(state["pivot"])
        self.buffer_idx = {int(k): v for k, v in state["buffer_idx"].items()}
        self.sum_tree.clear()
        self.sum_tree.update(np.arange(self.buffer_size), np.asarray(state["weights"], dtype=np.float64))
