"""Middleware that reshape what ``sample`` returns: ``group_sample``, ``padding``,
``sample_range_view``."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ding_ray.data.buffer.buffer import BufferedData

if TYPE_CHECKING:
    from ding_ray.data.buffer.buffer import Buffer


def group_sample(
    size_in_group: int, ordered_in_group: bool = True, max_use_in_group: bool = True
) -> Callable:
    """Cut each group of a ``groupby`` sample to ``size_in_group`` items: a run of consecutive items
    (``ordered_in_group``; with ``max_use_in_group`` the run never starts so late that it is
    short), or a random choice without repeats."""

    def _group_sample(action: str, chain: Callable, *args: Any, **kwargs: Any) -> Any:
        if action != "sample":
            return chain(*args, **kwargs)
        if not kwargs.get("groupby"):
            raise ValueError("group_sample needs samples by group: call sample(size, groupby='<meta key>').")
        groups = chain(*args, **kwargs)
        for i, group in enumerate(groups):
            if ordered_in_group:
                end = max(0, len(group) - size_in_group) + 1 if max_use_in_group else len(group)
                start = random.choice(range(end))
                groups[i] = group[start : start + size_in_group]
            else:
                groups[i] = random.sample(group, k=size_in_group)
        return groups

    return _group_sample


def padding(policy: str = "random") -> Callable:
    """Lengthen every group of a ``groupby`` sample to the longest one's length: with copies of
    random items of the group (``'random'``) or with empty ``BufferedData(None, None, None)``
    (``'none'``)."""
    if policy not in ("random", "none"):
        raise ValueError(f"padding(policy={policy!r}): use 'random' or 'none'.")

    def _padding(action: str, chain: Callable, *args: Any, **kwargs: Any) -> Any:
        sampled = chain(*args, **kwargs)
        if action != "sample" or not sampled or isinstance(sampled[0], BufferedData):
            return sampled
        longest = max(len(group) for group in sampled)
        for group in sampled:
            while len(group) < longest:
                filler = copy.deepcopy(random.choice(group)) if policy == "random" else None
                group.append(filler or BufferedData(data=None, index=None, meta=None))
        return sampled

    return _padding


def sample_range_view(buffer_: Buffer, start: int | None = None, end: int | None = None) -> Callable:
    """Draw only from items ``[start, end)`` (positions, oldest first; negative ones count back
    from the buffer's size)."""
    if start is None and end is None:
        raise ValueError("sample_range_view needs a start, an end or both.")
    if start and start < 0:
        start += buffer_.size
    if end and end < 0:
        end += buffer_.size
    sample_range = slice(start, end)

    def _sample_range_view(action: str, chain: Callable, *args: Any, **kwargs: Any) -> Any:
        if action == "sample":
            return chain(*args, **dict(kwargs, sample_range=sample_range))
        return chain(*args, **kwargs)

    return _sample_range_view
