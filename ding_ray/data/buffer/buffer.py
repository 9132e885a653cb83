"""DI-engine's new buffer interface: ``Buffer``, ``BufferedData`` and the middleware chain.

A middleware is a callable ``mw(action, chain, *args, **kwargs)``: ``action`` names the buffer
method called (``push``, ``sample``, ``update``, ``delete``, ``clear``), ``chain(*args, **kwargs)``
runs the rest of the chain and then the method itself. A middleware may change the arguments,
the result, or both; one that does not care about ``action`` returns ``chain(*args, **kwargs)``.
"""

from __future__ import annotations

import copy
import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass
class BufferedData:
    """One stored item: the data pushed, its id in the buffer (``index``) and its ``meta`` dict."""

    data: Any
    index: str
    meta: dict


def apply_middleware(action: str) -> Callable:
    """Route calls of the decorated buffer method through the buffer's middleware, first used first."""

    def decorate(method: Callable) -> Callable:
        @functools.wraps(method)
        def run(buffer_: Buffer, *args: Any, **kwargs: Any) -> Any:
            middleware = buffer_.middleware

            def call(position: int, *args: Any, **kwargs: Any) -> Any:
                if position == len(middleware):
                    return method(buffer_, *args, **kwargs)
                return middleware[position](action, functools.partial(call, position + 1), *args, **kwargs)

            return call(0, *args, **kwargs)

        return run

    return decorate


class Buffer(ABC):
    """A store of ``BufferedData`` items whose behaviour middleware extends (``use``)."""

    def __init__(self, size: int) -> None:
        self._middleware: list[Callable] = []
        self.size = size

    @property
    def middleware(self) -> tuple[Callable, ...]:
        """The middleware in use, in the order of ``use`` calls."""
        return tuple(self._middleware)

    def use(self, func: Callable) -> Buffer:
        """Add a middleware (see the module docstring); returns the buffer, so calls chain."""
        if not callable(func):
            raise TypeError(
                f"Buffer.use takes a middleware callable (action, chain, *args, **kwargs), got "
                f"{type(func).__name__}; e.g. buffer_.use(PriorityExperienceReplay(buffer_))."
            )
        self._middleware.append(func)
        return self

    def view(self) -> Buffer:
        """A buffer sharing this one's storage, with its own list of middleware."""
        return copy.copy(self)

    @abstractmethod
    def push(self, data: Any, meta: dict | None = None) -> BufferedData: ...

    @abstractmethod
    def sample(
        self,
        size: int | None = None,
        indices: list[str] | None = None,
        replace: bool = False,
        sample_range: slice | None = None,
        ignore_insufficient: bool = False,
        groupby: str | None = None,
        unroll_len: int | None = None,
    ) -> list[BufferedData] | list[list[BufferedData]]: ...

    @abstractmethod
    def update(self, index: str, data: Any | None = None, meta: dict | None = None) -> bool: ...

    @abstractmethod
    def delete(self, indices: str | Iterable[str]) -> None: ...

    @abstractmethod
    def save_data(self, file_name: str) -> None: ...

    @abstractmethod
    def load_data(self, file_name: str) -> None: ...

    @abstractmethod
    def count(self) -> int: ...

    @abstractmethod
    def clear(self) -> None: ...

    @abstractmethod
    def get(self, idx: int) -> BufferedData: ...

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, idx: int) -> BufferedData:
        return self.get(idx)
