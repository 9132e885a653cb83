"""Process-wide settings every ding_ray process applies: seeds, torch threads, logging."""

from __future__ import annotations

import contextlib
import logging
import os
import random
import signal
import threading
import time
from collections.abc import Iterator

import numpy as np

_IMPORTED = time.time()


def process_age_s() -> float:
    """Seconds since this Python process was launched (start-up included). Read from /proc on
    Linux; elsewhere, or where /proc counts time the machine spent paused (a suspended VM), the
    time since this module was imported."""
    since_import = time.time() - _IMPORTED
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return since_import
    age = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    # Imports before this module take seconds, not minutes: more means a pause was counted.
    return age if age - since_import < 60 else since_import


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


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM (what ``kill``, ``ray job stop`` and schedulers send) raises
    ``KeyboardInterrupt`` as Ctrl-C does, so a run stopped either way can save a checkpoint first.
    Outside the main thread (signals go to it only) this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"stopped by signal {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
