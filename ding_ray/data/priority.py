"""Priority bookkeeping for prioritized replay: per-row records, validation, the tree, draws in a range."""

from __future__ import annotations

from typing import Any

import numpy as np

from ding_ray.data.columnar import to_numpy
from ding_ray.data.segment_tree import SumSegmentTree
from ding_ray.errors import DingRayError, ShapeError

# Keys added to samples (DI-engine's); push drops an item's own values of them, except 'priority'
# (its initial priority).
RESERVED_KEYS = ("priority", "IS", "replay_unique_id", "replay_buffer_idx", "staleness", "use")
MIN_PRIORITY = 1e-6  # the PER paper's epsilon: a zero priority would make an item unsampleable
ROW_FIELDS = {"priority": np.float64, "unique_id": np.int64, "use_count": np.int64, "collect_iter": np.int64}


class PriorityError(DingRayError, ValueError):
    """A priority update is malformed (lengths differ, negative or non-finite values)."""


def row_records(capacity: int) -> np.ndarray:
    """Per-row bookkeeping (``ROW_FIELDS``), one record per row so that the fields of a sampled row
    share a cache line. ``unique_id`` holds the item's id + 1, 0 for an empty or removed row: a new
    record array is all zeros, whose memory the system provides only as rows are written (a large
    buffer costs nothing until it fills, and a push refused for its size allocated nothing)."""
    return np.zeros(capacity, dtype=list(ROW_FIELDS.items()))


def build_tree(priority: np.ndarray, held: np.ndarray, alpha: float) -> SumSegmentTree:
    """The sum tree over ``priority ** alpha`` of the ``held`` rows (the others weigh 0, also
    when ``alpha`` is 0)."""
    tree = SumSegmentTree(len(priority))
    weights = np.zeros(len(priority))
    weights[held] = priority[held] ** alpha
    tree.fill(weights)
    return tree


def parse_update(info: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """``(ids, rows, priorities, largest priority)`` of an ``update(info)``, priorities floored at
    ``MIN_PRIORITY``; None if there is nothing to update. Raises ``PriorityError``."""
    try:
        ids = as_vector(info["replay_unique_id"], np.int64)
        idx = as_vector(info["replay_buffer_idx"], np.int64)
        priority = as_vector(info["priority"], np.float64)
    except KeyError as err:
        raise PriorityError(f"update() needs the key {err} (from a sampled batch).") from err
    if not len(ids) == len(idx) == len(priority):
        raise PriorityError(
            f"update() got {len(ids)} ids, {len(idx)} indices and {len(priority)} priorities; "
            "they must have the same length."
        )
    if len(priority) == 0:
        return None
    # argmin/argmax are far cheaper than ufunc reductions on short arrays; a NaN wins both.
    low, top = priority.item(priority.argmin()), priority.item(priority.argmax())
    if not (low >= 0 and top < float("inf")):  # also false for NaN
        raise PriorityError(f"Priorities must be finite and non-negative, got values in [{low}, {top}].")
    if low < MIN_PRIORITY:
        priority = np.maximum(priority, MIN_PRIORITY)
    return ids, idx, priority, top


def as_vector(values: Any, dtype: type) -> np.ndarray:
    """``values`` as a 1-d array of ``dtype`` (no copy when it already is one)."""
    if type(values) is np.ndarray and values.dtype == dtype and values.ndim == 1:
        return values
    return np.asarray(to_numpy(values), dtype=dtype).ravel()


def ring_segments(start: int, count: int, capacity: int) -> list[tuple[int, int]]:
    """Physical ``[lo, hi)`` ranges of ``count`` ring rows from ``start`` (one, or two if wrapping)."""
    end = start + count
    if end <= capacity:
        return [(start, end)]
    return [(start, capacity), (0, end - capacity)]


def initial_priority(column: Any, n: int) -> np.ndarray | None:
    """Priorities given with pushed items (missing ones, None/NaN, get the maximum priority later)."""
    if column is None:
        return None
    values = np.array(
        [np.nan if v is None else v for v in column] if column.dtype == object else column, np.float64
    )
    if values.shape != (n,):
        raise PriorityError(f"A pushed 'priority' must be one number per item, got shape {values.shape}.")
    if np.any(values[~np.isnan(values)] < 0) or np.isinf(values).any():
        raise PriorityError("Pushed priorities must be finite and non-negative.")
    return np.maximum(values, MIN_PRIORITY)


def draw_in_range(
    tree: SumSegmentTree, u: np.ndarray, start: int, positions: np.ndarray, capacity: int
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Rows in ring positions ``positions`` (contiguous, oldest first, the first one at physical
    row ``start``) drawn in proportion to their weight; ``u`` are uniform numbers in ``[0, 1)``."""
    if len(positions) > 1 and np.any(np.diff(positions) != 1):
        raise ShapeError("sample_range of a prioritized buffer must be a contiguous slice (step 1).")
    segments = ring_segments(start, len(positions), capacity)
    offsets = [tree.prefix_sum(lo) for lo, _ in segments]
    masses = [tree.prefix_sum(hi) - off for (_, hi), off in zip(segments, offsets, strict=True)]
    mass = sum(masses)
    if mass <= 0:
        return None, None
    values = u * mass
    (lo1, hi1), (lo2, hi2), first_mass = segments[0], segments[-1], masses[0]
    in_first = values < first_mass
    idx = tree.find_prefixsum_idx(np.where(in_first, values + offsets[0], values - first_mass + offsets[-1]))
    # Rounding at a segment border can pick a neighbour just outside it; pull it back in.
    idx = np.where(in_first, np.clip(idx, lo1, hi1 - 1), np.clip(idx, lo2, hi2 - 1))
    return idx, tree[idx]
