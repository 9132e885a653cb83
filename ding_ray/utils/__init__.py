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
