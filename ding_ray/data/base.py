"""The buffer interface every replay buffer implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from easydict import EasyDict

from ding_ray.config.merge import default_config_of
from ding_ray.errors import DataFormatError


class IBuffer(ABC):
    """A store of experience: collectors ``push``, learners ``sample`` and ``update``.

    Typical loop::

        buffer.push(collector.collect(...), cur_collector_envstep=envstep)
        batch = buffer.sample(batch_size, learner.train_iter)
        if batch is not None:
            learner.train(batch)
            buffer.update(learner.priority_info)
    """

    config: dict = {}

    @classmethod
    def default_config(cls) -> EasyDict:
        return default_config_of(cls)

    @abstractmethod
    def push(self, data: Any, cur_collector_envstep: int) -> None:
        """Store one item, a list of items or a columnar ``Batch``."""

    @abstractmethod
    def update(self, info: dict) -> None:
        """Update per-item information (priorities) of sampled data."""

    @abstractmethod
    def sample(self, batch_size: int, cur_learner_iter: int) -> Any:
        """``batch_size`` items, or None when the buffer cannot serve that many yet."""

    @abstractmethod
    def clear(self) -> None:
        """Drop all data and reset the counters that depend on it."""

    @abstractmethod
    def count(self) -> int:
        """Number of valid (sampleable) items."""

    @abstractmethod
    def state_dict(self) -> dict:
        """Everything needed to rebuild the buffer: numpy arrays, python scalars, lists and dicts."""

    @abstractmethod
    def load_state_dict(self, _state_dict: dict) -> None:
        """Replace the contents with a ``state_dict``; on error the buffer is left unchanged."""

    @property
    def frame_stores(self) -> list:
        """The ``FrameStore`` objects holding this buffer's image frames once each (none here)."""
        return []

    def save_data(self, file_name: str) -> None:
        """Write the buffer's state to ``file_name`` in the msgpack buffer format (atomically)."""
        from ding_ray.data.file_format import save_state

        save_state(file_name, self.state_dict(), type(self).__name__)

    def load_data(self, file_name: str) -> None:
        """Read a file written by ``save_data``; raises ``DataFormatError`` and changes nothing if
        the file is truncated, tampered with, of another version or of another buffer type."""
        from ding_ray.data.file_format import file_error, load_state

        state = load_state(file_name, type(self).__name__)
        try:
            self.load_state_dict(state)
        except DataFormatError as err:
            raise file_error(file_name, err) from err

    def start(self) -> None:  # noqa: B027 - optional hook
        """Start background work (none by default)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Stop background work and release the data."""
