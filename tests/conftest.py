"""Settings every test process shares: torch on one thread, as every ding_ray process runs."""

from ding_ray.utils.runtime import set_torch_threads

set_torch_threads(1)
