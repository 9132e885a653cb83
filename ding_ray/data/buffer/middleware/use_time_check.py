"""``use_time_check``: drop an item once it has been sampled ``max_use`` times."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ding_ray.data.buffer.buffer import BufferedData

if TYPE_CHECKING:
    from ding_ray.data.buffer.buffer import Buffer


def use_time_check(buffer_: Buffer, max_use: int | float = float("inf")) -> Callable:
    """Count each item's samples in its ``meta['use_count']``; after the sample that brings it to
    ``max_use`` the item is deleted from ``buffer_`` (the sample still returns it)."""
    if not max_use >= 1:
        raise ValueError(f"use_time_check(max_use={max_use}): an item must be usable at least once.")
    use_count: defaultdict[str, int] = defaultdict(int)

    def _used_up(items: list[BufferedData]) -> list[str]:
        spent = []
        for item in items:
            use_count[item.index] += 1
            item.meta["use_count"] = use_count[item.index]
            if use_count[item.index] >= max_use:
                spent.append(item.index)
        return spent

    def _use_time_check(action: str, chain: Callable, *args: Any, **kwargs: Any) -> Any:
        if action != "sample":
            return chain(*args, **kwargs)
        sampled = chain(*args, **kwargs)
        if not sampled:
            return sampled
        groups = [sampled] if isinstance(sampled[0], BufferedData) else sampled
        for group in groups:
            spent = _used_up(group)
            buffer_.delete(spent)
            for index in spent:
                del use_count[index]
        return sampled

    return _use_time_check
