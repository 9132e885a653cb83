"""Entry points: pipelines that wire the components together."""

from ding_ray.entry.eval_entry import eval
from ding_ray.entry.result import write_result
from ding_ray.entry.serial_entry import serial_pipeline

__all__ = ["compile_ray_config", "eval", "ray_pipeline", "serial_pipeline", "write_result"]


def __getattr__(name: str):
    # The Ray entry imports ray (~1 s); serial users should not pay for it.
    if name in ("ray_pipeline", "compile_ray_config"):
        from ding_ray.entry import ray_entry

        return getattr(ray_entry, name)
    raise AttributeError(f"module 'ding_ray.entry' has no attribute '{name}'")
