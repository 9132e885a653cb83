"""DI-engine's exchangers, which share context fields and model weights between the processes of
its parallel runs. A ding_ray pipeline is one driver process: its other processes are Ray actors
the driver calls, and weights travel through Ray's object store (``ding_ray.distributed``). So
there is nothing to exchange: each stage does nothing, and says why once per process.
"""

from __future__ import annotations

import logging
from typing import Any

from ding_ray.framework.context import Context

logger = logging.getLogger(__name__)
_explained: set[str] = set()


def _explain_once(name: str) -> None:
    if name not in _explained:
        _explained.add(name)
        logger.info(
            "%s does nothing here: a ding_ray pipeline runs in one process (task.router.is_active is "
            "False); its collectors, buffers and learners scale out as Ray actors, whose weights go "
            "through Ray's object store (see ding_ray.distributed).",
            name,
        )


class ContextExchanger:
    """DI-engine's exchange of ``ctx`` fields between processes: a no-op stage in ding_ray."""

    def __init__(self, skip_n_iter: int = 1, storage_loader: Any = None) -> None:
        _explain_once(type(self).__name__)

    def __call__(self, ctx: Context) -> None:
        return None


class ModelExchanger:
    """DI-engine's sending of the learner's weights to other processes: a no-op stage in ding_ray."""

    def __init__(self, model: Any, model_loader: Any = None) -> None:
        _explain_once(type(self).__name__)

    def __call__(self, ctx: Context) -> None:
        return None
