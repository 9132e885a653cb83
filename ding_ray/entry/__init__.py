"""Entry points: pipelines that wire the components together.

Names are imported on first use: ``ray_pipeline`` pulls in Ray and the others torch, and a
driver that starts Ray first (``ding_ray.distributed.start_run``) loads torch meanwhile.
"""

import importlib

_EXPORTS = {
    "compile_ray_config": "ray_entry",
    "eval": "eval_entry",
    "load_policy": "trained_policy",
    "ray_pipeline": "ray_entry",
    "read_result": "result",
    "serial_pipeline": "serial_entry",
    "serial_pipeline_onpolicy": "serial_entry_onpolicy",
    "tune_pipeline": "tune",
    "write_result": "result",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ding_ray.entry' has no attribute '{name}'")
    return getattr(importlib.import_module(f"ding_ray.entry.{_EXPORTS[name]}"), name)


def __dir__() -> list[str]:
    return __all__
