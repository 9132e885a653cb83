"""Uniform replay: a thread-safe ring of transitions sampled uniformly at random."""

from __future__ import annotations

from ding_ray.data.columnar import Batch
from ding_ray.data.monitors import logger
from ding_ray.data.ring_buffer import RingBuffer
from ding_ray.utils.registry import BUFFER_REGISTRY


@BUFFER_REGISTRY.register("naive")
class NaiveReplayBuffer(RingBuffer):
    """A ring of ``replay_buffer_size`` transitions, stored column by column, sampled uniformly.

    Thread-safe: push, sample, clear and the state methods exclude each other.
    """

    config = dict(
        type="naive",
        replay_buffer_size=10000,  # capacity in items; when full the oldest item is overwritten
        deepcopy=False,  # DI-engine compatibility only: storage copies on push, sample returns copies
        frame_dedup=True,  # store uint8 (stack, H, W) image stacks (Atari obs) with each frame held once
        # DI-engine's DequeBuffer key (slice grouped samples by unroll_len), which its naive buffer
        # ignores as this one does: IMPALA's train samples are whole unrolls already (dizoo's
        # lunarlander_impala_config sets it)
        sliced=False,
        enable_track_used_data=False,  # DI-engine's removal of file-backed data; unsupported, keep False
        periodic_thruput_seconds=60.0,  # seconds between pushed/sampled/removed/valid reports
    )

    def sample(
        self,
        size: int,
        cur_learner_iter: int = 0,
        sample_range: slice | None = None,
        replace: bool = False,
        columnar: bool = False,
    ) -> list | Batch | None:
        """``size`` items drawn uniformly, or None if fewer than ``size`` are held (and not ``replace``).

        ``sample_range`` restricts the draw to a slice of the items ordered oldest first, e.g.
        ``slice(-10, None)`` for the newest ten. With ``columnar=True`` the result is a ``Batch``.
        ``cur_learner_iter`` is not used by a uniform buffer.
        """
        with self._lock:
            idx = self._uniform(size, sample_range, replace)
            if idx is None:
                logger.debug("sample(%d) refused: %d items held, replace=%s", size, self._count(), replace)
                return None
            batch = self._storage.gather(idx)
            self._after_sample(size)
        return self._present(batch, columnar)

    def update(self, info: dict) -> None:
        """Nothing to update in a uniform buffer; kept so every buffer has the same interface."""
