"""Transitions shaped like CartPole's, for buffer tests."""

from __future__ import annotations

import numpy as np

from ding_ray.data import Batch


def transition(i: int, done: bool = False) -> dict:
    """One item whose every field encodes ``i`` so a test can tell which item it got back."""
    return {
        "obs": np.full(4, i, dtype=np.float32),
        "next_obs": np.full(4, i + 1, dtype=np.float32),
        "action": np.int64(i % 2),
        "reward": np.float32(i),
        "done": done,
    }


def batch(start: int, n: int) -> Batch:
    """Columnar form of ``transition(start) ... transition(start + n - 1)``."""
    ids = np.arange(start, start + n)
    return Batch(
        obs=np.repeat(ids[:, None], 4, axis=1).astype(np.float32),
        next_obs=np.repeat(ids[:, None] + 1, 4, axis=1).astype(np.float32),
        action=(ids % 2).astype(np.int64),
        reward=ids.astype(np.float32),
        done=np.zeros(n, dtype=bool),
    )


def check_consistent(item: dict) -> int:
    """The id an item encodes, after asserting all its fields agree on it (no torn writes)."""
    i = int(item["reward"])
    assert np.all(item["obs"] == i) and np.all(item["next_obs"] == i + 1), item
    assert int(item["action"]) == i % 2, item
    return i
