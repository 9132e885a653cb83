"""ding_ray: DI-engine's component model (policies, collectors, evaluators, learners, buffers) on Ray."""

__version__ = "0.1.0"
