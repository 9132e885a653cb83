"""Tests that drive a program of the operating system (a real Prometheus, a headless browser): on a
machine without it they are skipped with the line that installs it; with
``DING_RAY_REQUIRE_SYSTEM_TESTS=1`` (CI, which installs them) its absence is a failure."""

from __future__ import annotations

import os
import shutil

import pytest

REQUIRE = "DING_RAY_REQUIRE_SYSTEM_TESTS"


def require_binary(name: str, install: str) -> str:
    """The path of the program ``name``; skip (or, with ``DING_RAY_REQUIRE_SYSTEM_TESTS=1``, fail) the
    test when it is missing, naming ``install``."""
    path = shutil.which(name)
    if path is not None:
        return path
    message = f"needs the program '{name}': {install}"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{message} ({REQUIRE}=1 makes its absence a failure)")
    pytest.skip(message)
