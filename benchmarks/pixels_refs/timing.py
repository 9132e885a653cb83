"""The one timing loop every runner of ``bench_pixels.py`` uses (imported from beside the runner)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable


def measure(step: Callable[[], int], seconds: float, warmup: float) -> dict:
    """Call ``step`` (returns the env steps it made) for ``warmup`` then ``seconds`` wall seconds.

    The warm-up starts after the first call returns, so start-up (actors, processes, the first
    resets and model builds) never counts; only whole calls inside the timed window count.
    """
    step()
    end = time.perf_counter() + warmup
    while time.perf_counter() < end:
        step()
    env_steps, start = 0, time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        env_steps += step()
    elapsed = time.perf_counter() - start
    return dict(
        env_steps=env_steps, seconds=elapsed, steps_per_s=env_steps / elapsed, load=os.getloadavg()[0]
    )


def report(result: dict) -> None:
    """The line ``bench_pixels.py`` reads."""
    print("RESULT " + json.dumps(result), flush=True)
