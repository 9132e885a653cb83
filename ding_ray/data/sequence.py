"""Sequence replay: contiguous runs of transitions, for recurrent and n-step learners."""

from __future__ import annotations

import numpy as np

from ding_ray.data.columnar import Batch, unstack_batch
from ding_ray.data.monitors import logger
from ding_ray.data.naive import NaiveReplayBuffer
from ding_ray.errors import ShapeError
from ding_ray.utils.registry import BUFFER_REGISTRY


@BUFFER_REGISTRY.register("sequence")
class SequenceReplayBuffer(NaiveReplayBuffer):
    """Stores transitions in push order; ``sample(batch, sequence, ...)`` returns ``batch`` runs of
    ``sequence`` consecutive transitions.

    A run never crosses an episode boundary unless ``cross_episode=True``: an item whose
    ``done`` (or another of ``episode_end_keys``) is true ends an episode, and so does a change of
    the ``episode_id_key`` field between neighbours (use it when several envs push interleaved).
    The last item of a run may be the one that ends its episode.
    """

    config = dict(
        type="sequence",
        episode_end_keys=["done", "truncated"],  # boolean fields (those present) that end an episode
        episode_id_key="",  # optional field whose change between neighbours also ends an episode
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._starts_cache: tuple | None = None

    def _clear(self) -> None:
        super()._clear()
        self._starts_cache = None

    def load_state_dict(self, _state_dict: dict) -> None:
        super().load_state_dict(_state_dict)
        self._starts_cache = None

    def _episode_ends(self) -> np.ndarray:
        """Per held item, oldest first: does an episode end at it?"""
        storage = self._storage
        phys = storage.physical(np.arange(storage.filled))
        ends = np.zeros(storage.filled, dtype=bool)
        for key in self._cfg.episode_end_keys:
            column = storage.column((key,))
            if column is not None:
                flags = column[phys].reshape(storage.filled, -1)
                ends |= flags.any(axis=1) if flags.shape[1] else False
        if self._cfg.episode_id_key:
            ids = storage.column((self._cfg.episode_id_key,))
            if ids is None:
                raise ShapeError(
                    f"episode_id_key '{self._cfg.episode_id_key}' is not a field of the stored items."
                )
            ids = ids[phys].reshape(storage.filled, -1)
            ends[:-1] |= np.any(ids[1:] != ids[:-1], axis=1)
        return ends

    def _valid_starts(self, sequence: int, sample_range: slice | None, cross_episode: bool) -> np.ndarray:
        """Oldest-first positions where a run of ``sequence`` items may start."""
        bounds = None if sample_range is None else (sample_range.start, sample_range.stop, sample_range.step)
        key = (self._push_count, sequence, bounds, cross_episode)
        if self._starts_cache is not None and self._starts_cache[0] == key:
            return self._starts_cache[1]
        filled = self._storage.filled
        lo, hi = 0, filled
        if sample_range is not None:
            window = np.arange(filled)[sample_range]
            if len(window) > 1 and np.any(np.diff(window) != 1):
                raise ShapeError("sample_range of a sequence buffer must be a contiguous slice (step 1).")
            lo, hi = (int(window[0]), int(window[-1]) + 1) if len(window) else (0, 0)
        starts = np.arange(lo, max(lo, hi - sequence + 1))
        if not cross_episode and len(starts):
            ends_before = np.concatenate(([0], np.cumsum(self._episode_ends())))
            # A run [p, p + sequence) is whole when no episode ends at p .. p + sequence - 2.
            starts = starts[ends_before[starts + sequence - 1] == ends_before[starts]]
        self._starts_cache = (key, starts)
        return starts

    def sample(
        self,
        batch: int,
        sequence: int,
        cur_learner_iter: int = 0,
        sample_range: slice | None = None,
        replace: bool = False,
        cross_episode: bool = False,
        columnar: bool = False,
    ) -> list | Batch | None:
        """``batch`` runs of ``sequence`` consecutive items drawn uniformly over the valid starts,
        or None if there are too few. A list (runs) of lists (steps) of dicts, or with
        ``columnar=True`` a ``Batch`` whose arrays have shape ``(batch, sequence, ...)``."""
        if sequence < 1:
            raise ShapeError(f"sequence must be >= 1, got {sequence}.")
        with self._lock:
            starts = self._valid_starts(sequence, sample_range, cross_episode)
            if len(starts) == 0 or (not replace and len(starts) < batch):
                logger.debug("sample(%d, %d) refused: %d valid starts", batch, sequence, len(starts))
                return None
            n = len(starts)
            rng = self._generator
            pick = rng.integers(0, n, batch) if replace else rng.choice(n, batch, replace=False)
            positions = starts[pick][:, None] + np.arange(sequence)
            flat = self._storage.gather(self._storage.physical(positions.ravel()))
            self._after_sample(batch * sequence)
        if columnar:
            return _reshape(flat, batch, sequence)
        items = unstack_batch(flat)
        return [items[i * sequence : (i + 1) * sequence] for i in range(batch)]


def _reshape(node: dict, batch: int, sequence: int) -> dict:
    out = {
        k: _reshape(v, batch, sequence) if isinstance(v, dict) else v.reshape(batch, sequence, *v.shape[1:])
        for k, v in node.items()
    }
    return Batch(out) if isinstance(node, Batch) else out
