"""Helpers below every layer: registries, process settings (seeds, threads, logging), checkpoints,
and the ``ding.utils`` names dizoo scripts import (``set_pkg_seed``, ``deep_merge_dicts``,
``EasyTimer``, ``build_logger``)."""

from ding_ray.utils.dicts import deep_merge_dicts
from ding_ray.utils.ding_helpers import EasyTimer, build_logger
from ding_ray.utils.registry import (
    BUFFER_REGISTRY,
    ENV_MANAGER_REGISTRY,
    ENV_REGISTRY,
    LEARNER_REGISTRY,
    MODEL_REGISTRY,
    POLICY_REGISTRY,
    SERIAL_COLLECTOR_REGISTRY,
    SERIAL_EVALUATOR_REGISTRY,
    Registry,
    close_matches,
)
from ding_ray.utils.runtime import set_pkg_seed, set_torch_threads

__all__ = [
    "EasyTimer",
    "build_logger",
    "deep_merge_dicts",
    "set_pkg_seed",
    "set_torch_threads",
    "Registry",
    "close_matches",
    "POLICY_REGISTRY",
    "MODEL_REGISTRY",
    "ENV_REGISTRY",
    "ENV_MANAGER_REGISTRY",
    "BUFFER_REGISTRY",
    "SERIAL_COLLECTOR_REGISTRY",
    "SERIAL_EVALUATOR_REGISTRY",
    "LEARNER_REGISTRY",
]
