"""Entry points: pipelines that wire the components together."""

from ding_ray.entry.result import write_result
from ding_ray.entry.serial_entry import serial_pipeline

__all__ = ["serial_pipeline", "write_result"]
