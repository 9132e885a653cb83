"""Entry points: pipelines that wire the components together.

Names are imported on first use: ``ray_pipeline`` pulls in Ray and the others torch, and a
driver that starts Ray first (``ding_ray.distributed.start_run``) loads torch meanwhile.
"""

import importlib

_EXPORTS = {
    "collect_demo_data": "ding_ray.entry.demo_entry",
    "compile_ray_config": "ding_ray.distributed.run_config",
    "eval": "ding_ray.entry.eval_entry",
    "load_policy": "ding_ray.entry.trained_policy",
    "ray_pipeline": "ding_ray.entry.ray_entry",
    "read_result": "ding_ray.entry.result",
    "serial_pipeline": "ding_ray.entry.serial_entry",
    "serial_pipeline_bc": "ding_ray.entry.serial_entry_bc",
    "serial_pipeline_offline": "ding_ray.entry.serial_entry_offline",
    "serial_pipeline_onpolicy": "ding_ray.entry.serial_entry_onpolicy",
    "tune_pipeline": "ding_ray.entry.tune",
    "write_result": "ding_ray.entry.result",
}

__all__ = sorted(_EXPORTS)


# Lazy: static imports (torch, Ray, the policies) add about 1.3 s to every `ding-ray` command, --help too
def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ding_ray.entry' has no attribute '{name}'")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return __all__
