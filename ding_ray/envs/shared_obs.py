"""Shared memory for the observations of the subprocess env managers: one buffer per env, written
by its worker, read by the manager, so an observation array is never pickled."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ding_ray.errors import ConfigError


class InShm:
    """Marks an observation that was written into the shared-memory buffer."""


IN_SHM = InShm()  # pickled afresh for each answer: the parent tests isinstance, not identity


class ObsBuffer:
    """Shared memory for one env's observation: an array, or a dict of arrays for Dict spaces.

    Built in the parent and handed to the worker at start, so a replacement worker reuses it.
    """

    def __init__(self, ctx: Any, space: Any) -> None:
        layout = _layout(space)
        if layout is None:
            raise ConfigError(
                f"env.manager.shared_memory=True needs an observation space of fixed shape and dtype "
                f"(Box, Discrete, MultiBinary, MultiDiscrete or a Dict of them); got {space}. "
                "Set env.manager.shared_memory=False to send observations through the pipe."
            )
        self._layout = layout
        self._raw = {
            k: ctx.RawArray("b", max(1, int(np.prod(s)) * d.itemsize)) for k, (s, d) in layout.items()
        }
        self._arrays: dict | None = None

    def __getstate__(self) -> dict:
        return {"_layout": self._layout, "_raw": self._raw, "_arrays": None}

    def _views(self) -> dict:
        if self._arrays is None:
            self._arrays = {
                k: np.frombuffer(self._raw[k], dtype=d, count=int(np.prod(s))).reshape(s)
                for k, (s, d) in self._layout.items()
            }
        return self._arrays

    def fill(self, obs: Any) -> bool:
        """Write ``obs`` if it has exactly the buffer's shapes and dtypes; False leaves it to the pipe."""
        if None in self._layout:
            parts = {None: obs}
        elif isinstance(obs, Mapping) and set(obs) == set(self._layout):
            parts = obs
        else:
            return False
        views = self._views()
        for k, value in parts.items():
            v = views[k]
            if not (isinstance(value, np.ndarray) and value.shape == v.shape and value.dtype == v.dtype):
                return False
        for k, value in parts.items():
            views[k][...] = value
        return True

    def get(self, copy: bool) -> Any:
        views = self._views()
        out = {k: (v.copy() if copy else v) for k, v in views.items()}
        return out[None] if None in out else out


def _layout(space: Any) -> dict | None:
    """``{key: (shape, dtype)}`` (key None for a plain space), or None if the space has no fixed layout."""
    spaces = getattr(space, "spaces", None)
    if isinstance(spaces, Mapping):
        parts = {k: _layout(s) for k, s in spaces.items()}
        if any(p is None or None not in p for p in parts.values()):
            return None  # nested dicts or parts of no fixed layout
        return {k: p[None] for k, p in parts.items()}
    shape, dtype = getattr(space, "shape", None), getattr(space, "dtype", None)
    if shape is None or dtype is None:
        return None
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        return None
    return {None: (tuple(shape), dtype)}
