"""ding_ray: DI-engine's component model (policies, collectors, evaluators, learners, buffers) on Ray."""

__version__ = "0.1.0"

from ding_ray.utils.runtime import install_log_fallback as _install_log_fallback

_install_log_fallback()  # INFO lines show once the application sets the level, as in DI-engine
