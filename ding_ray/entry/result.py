"""``result.json`` (the record lives in ``ding_ray.utils.result``, where the Ray layer writes it too)."""

from ding_ray.utils.result import read_result, write_result

__all__ = ["read_result", "write_result"]
