"""Short folders under /tmp for what needs a short path: ``RAY_TMPDIR`` (Ray's unix sockets live
under it, and a socket path has at most 107 bytes, more than pytest's ``tmp_path`` leaves) and
the ``HOME`` or working folder of a process a test starts. Each test process removes the folders it
made at the end of its session (``tests/conftest.py``)."""

from __future__ import annotations

import shutil
import tempfile

_MADE: list[str] = []


def short_tmp(prefix: str) -> str:
    """A new folder ``/tmp/<prefix><random>``, removed when the test session ends."""
    path = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    _MADE.append(path)
    return path


def remove_short_tmps() -> None:
    while _MADE:
        shutil.rmtree(_MADE.pop(), ignore_errors=True)
