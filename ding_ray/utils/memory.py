"""This machine's memory, the bound that sizes checked at compile time are held against."""

from __future__ import annotations

import os

# cgroup v2, then v1: a container's limit ("max" or a huge number when there is none)
_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def system_memory() -> int | None:
    """Bytes of memory this process can have: the machine's physical memory, or its container's
    (cgroup) limit when lower, the figure Ray sizes its object store against. None where the
    platform does not say (then nothing is checked against it)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):  # no sysconf (Windows)
        return None
    for path in _CGROUP_LIMITS:
        try:
            with open(path) as f:
                limit = f.read().strip()
        except OSError:
            continue
        if limit.isdigit():
            total = min(total, int(limit))
    return total
