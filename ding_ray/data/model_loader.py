"""DI-engine's ``ding.data.model_loader`` path, for scripts written against it: ``FileModelLoader``
lives with the other DI-engine shims in ``ding_ray.compat.model_loader``."""

from ding_ray.compat.model_loader import FileModelLoader

__all__ = ["FileModelLoader"]
