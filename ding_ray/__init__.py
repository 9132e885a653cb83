"""ding_ray: DI-engine's component model (policies, collectors, evaluators, learners, buffers) on Ray."""

__version__ = "0.1.0"

from ding_ray.utils.runtime import install_log_fallback as _install_log_fallback

_install_log_fallback()  # INFO lines show once the application sets the level, as in DI-engine


# Static: ding_ray.algorithm loads torch, Ray and the policies only when an Algorithm is made, so this
# import adds about 8 ms to `import ding_ray`
from ding_ray.algorithm import Algorithm as Algorithm  # noqa: E402


# Lazy: a static import of load_policy (torch, the policies) makes `import ding_ray` about 1.2 s slower
def __getattr__(name: str):
    if name == "load_policy":
        from ding_ray.entry.trained_policy import load_policy

        return load_policy
    raise AttributeError(f"module 'ding_ray' has no attribute '{name}'")
