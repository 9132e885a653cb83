"""``staleness_check``: drop items collected too many training iterations ago."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ding_ray.data.buffer.deque_buffer import DequeBuffer


def staleness_check(buffer_: DequeBuffer, max_staleness: int | float = float("inf")) -> Callable:
    """Items are pushed with ``meta={'train_iter_data_collected': <iter>}``; ``sample`` then takes
    the current iteration first, ``sample(train_iter_sample_data, size, ...)``. Before drawing,
    every item's ``meta['staleness']`` is set to the difference and items staler than
    ``max_staleness`` are deleted."""

    def _staleness_check(action: str, chain: Callable, *args: Any, **kwargs: Any) -> Any:
        if action == "push":
            meta = kwargs.get("meta", args[1] if len(args) > 1 else None)
            if not isinstance(meta, dict) or "train_iter_data_collected" not in meta:
                raise ValueError(
                    "staleness_check needs each push to carry the training iteration it was collected "
                    "at: buffer_.push(data, meta={'train_iter_data_collected': train_iter})."
                )
            return chain(*args, **kwargs)
        if action == "sample":
            train_iter_sample_data, *args = args
            stale = []
            for item in buffer_:
                item.meta["staleness"] = train_iter_sample_data - item.meta["train_iter_data_collected"]
                if item.meta["staleness"] > max_staleness:
                    stale.append(item.index)
            buffer_.delete(stale)
            return chain(*args, **kwargs)
        return chain(*args, **kwargs)

    return _staleness_check
