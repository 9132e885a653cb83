"""DI-engine's ``ding.data.storage_loader`` path, for scripts written against it:
``FileStorageLoader`` lives with the other DI-engine shims in ``ding_ray.compat.storage_loader``."""

from ding_ray.compat.storage_loader import FileStorageLoader

__all__ = ["FileStorageLoader"]
