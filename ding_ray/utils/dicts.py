"""``deep_merge_dicts``: DI-engine's permissive recursive merge of config dicts."""

from __future__ import annotations

import copy
from collections.abc import Mapping

from easydict import EasyDict


def deep_merge_dicts(original: Mapping, new_dict: Mapping | None) -> EasyDict:
    """Recursively merge ``new_dict`` over a copy of ``original``; new keys are allowed.

    This is the permissive merge of DI-engine; use ``ding_ray.config.merge_config`` for user input.
    """
    merged = EasyDict(copy.deepcopy(dict(original)))
    for key, value in (new_dict or {}).items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge_dicts(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
