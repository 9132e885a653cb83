"""Frames kept outside a buffer's file: what lets a run checkpoint save a pixel buffer incrementally.

A buffer of a million Atari transitions holds about a million distinct 84x84 frames (7 GB); writing
them all into every run checkpoint takes tens of seconds, longer than ``ray job stop`` waits between
SIGTERM and SIGKILL. Inside ``with archived_frames(archive):``, a buffer's state (``state_dict``,
``save_data``) holds, for each frame store, the manifest ``archive.save(store)`` returns instead of
its frames, and loading a state reads them back through ``archive.load_into``. The run checkpoint's
archive (``ding_ray.utils.checkpoint.FrameBlocks``) writes a store's frames as blocks of
``BLOCK_FRAMES`` slots, each block only when it was written since its last save, so a save costs
what changed since the one before. A buffer file written outside the block is self-contained.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Protocol

import numpy as np

from ding_ray.data.frames import FrameStore


class FrameArchive(Protocol):
    def save(self, store: FrameStore) -> dict:
        """Keep the frames of ``store``; a manifest (plain values) that ``load`` reads them back by."""

    def load_into(self, manifest: Mapping, out: np.ndarray) -> None:
        """Write the frames of the ``manifest["slots"]`` slots it covers into ``out`` (zeros, as a new
        store's frames are); a damaged or missing part is a ``DataFormatError`` naming it."""

    def adopt(self, store: FrameStore, manifest: Mapping) -> None:
        """``store`` was loaded from ``manifest``: its next save writes only what changes after."""


_ARCHIVE: ContextVar[FrameArchive | None] = ContextVar("frame_archive", default=None)


@contextlib.contextmanager
def archived_frames(archive: FrameArchive | None) -> Iterator[None]:
    """Within the block, buffer states keep their frames in ``archive`` (None: in the state)."""
    token = _ARCHIVE.set(archive)
    try:
        yield
    finally:
        _ARCHIVE.reset(token)


def current_archive() -> FrameArchive | None:
    return _ARCHIVE.get()
