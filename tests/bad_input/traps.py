"""Damaged files for the bad-input suite: truncations, bit flips and pickles that act when loaded."""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator


class MarkerTrap:
    """Unpickling this creates the file ``path`` (``open(path, 'w')`` runs as the unpickler's call):
    if the file ever exists after a load, the loader executed code from the file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def pickle_trap(marker: str) -> bytes:
    """A pickle whose loading creates ``marker``, inside a dict as a checkpoint would hold it."""
    return pickle.dumps({"model": MarkerTrap(marker), "last_iter": 1})


def assert_trap_is_live(tmp_dir: str) -> None:
    """The trap really runs code when unpickled (so a loader that never creates the marker did
    refuse to unpickle, not merely fail to trigger it)."""
    probe = os.path.join(tmp_dir, "trap_probe")
    pickle.loads(pickle_trap(probe))["model"].close()
    assert os.path.exists(probe)
    os.unlink(probe)


def truncations(blob: bytes) -> Iterator[tuple[str, bytes]]:
    yield "empty", b""
    yield "first 100 bytes", blob[:100]
    yield "half", blob[: len(blob) // 2]
    yield "last byte missing", blob[:-1]


def bit_flip(blob: bytes, pos: int, bit: int = 4) -> bytes:
    flipped = bytearray(blob)
    flipped[pos] ^= 1 << bit
    return bytes(flipped)
