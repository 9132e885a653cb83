"""Buffers by name: ``cfg.type`` is one of the names registered in ``BUFFER_REGISTRY``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ding_ray.data.base import IBuffer
from ding_ray.errors import ConfigError
from ding_ray.utils.registry import BUFFER_REGISTRY


def get_buffer_cls(cfg: Mapping) -> type[IBuffer]:
    """The buffer class named by ``cfg.type`` ('naive', 'advanced', 'episode', 'sequence')."""
    if "type" not in cfg:
        raise ConfigError(f"A buffer config needs a 'type' key, one of {BUFFER_REGISTRY.names()}.")
    return BUFFER_REGISTRY.get(cfg["type"])


def create_buffer(cfg: Mapping, *args: Any, **kwargs: Any) -> IBuffer:
    """Build the buffer named by ``cfg.type``; further arguments go to its constructor."""
    return get_buffer_cls(cfg)(cfg, *args, **kwargs)
