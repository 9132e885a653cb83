"""Process-wide settings every ding_ray process applies: seeds, torch threads, logging."""

from __future__ import annotations

import logging
import os
import random

import numpy as np


def set_pkg_seed(seed: int, use_cuda: bool = False) -> None:
    """Seed python, numpy and torch."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if use_cuda and torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def set_torch_threads(num_threads: int = 1) -> None:
    """Limit torch's intra-op threads: on a small machine, processes competing for cores with
    torch's default thread pools slow everything down many times over."""
    import torch

    num_threads = max(1, int(num_threads))
    if torch.get_num_threads() != num_threads:
        torch.set_num_threads(num_threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(num_threads))


def setup_logging(level: int = logging.INFO) -> None:
    """A readable log format for ding_ray's loggers, unless the application configured logging."""
    root = logging.getLogger("ding_ray")
    if root.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname).1s %(name)s: %(message)s", "%H:%M:%S"))
    root.addHandler(handler)
    root.setLevel(level)
