"""``clone_object``: the buffer keeps its own copy of what is pushed and hands out copies."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any


def clone_object() -> Callable:
    """Deep-copy data on push and whole samples (data and meta) on sample, so a caller that changes
    what it pushed or sampled (e.g. in another thread) never changes what the buffer holds."""

    def _clone_object(action: str, chain: Callable, *args: Any, **kwargs: Any) -> Any:
        if action == "push":
            data, *rest = args
            return chain(copy.deepcopy(data), *rest, **kwargs)
        if action == "sample":
            return copy.deepcopy(chain(*args, **kwargs))
        return chain(*args, **kwargs)

    return _clone_object
