"""The replay-buffer actor: a buffer plus its dashboard metrics, in a module that imports no torch,
so the buffer actor is up in a fraction of the time the torch-based actors take."""

from __future__ import annotations

import time

from easydict import EasyDict

from ding_ray.data import Batch, create_buffer
from ding_ray.distributed.metrics import RayMetrics
from ding_ray.distributed.ray_port import Incarnation
from ding_ray.distributed.startup import note_start
from ding_ray.utils.checkpoint import (
    BUFFER_FILE,
    CheckpointStore,
    FrameBlocks,
    buffer_bytes,
    load_buffer_bytes,
    restore_latest,
)


class BufferActor:
    """The replay buffer named by ``policy.other.replay_buffer`` plus its dashboard metrics."""

    def __init__(
        self,
        buffer_cfg: EasyDict,
        exp_name: str,
        seed: int = 0,
        checkpoints: str | None = None,
        frames_flush_s: float = 0.0,
        run_id: str | None = None,
    ) -> None:
        """``checkpoints``: the run's checkpoint storage root; when it holds a buffer snapshot (a
        resumed run, or Ray restarting this actor after it died) the buffer starts from the latest.
        ``frames_flush_s``: seconds between writes of new frames there (``FrameBlocks.flush``).
        ``run_id``: the run's start, whose starts of this actor are counted there (``Incarnation``)."""
        note_start()  # first: a driver waiting for this actor sees that Ray placed it (``start_state``)
        self.buffer = create_buffer(buffer_cfg, exp_name=exp_name, instance_name="buffer")
        self.buffer.seed(seed)
        self._metrics = RayMetrics("buffer", exp_name, interval_s=1.0)
        self._store = None if checkpoints is None else CheckpointStore(checkpoints)
        self._frames = None if self._store is None else FrameBlocks(self._store)
        self._flush_s = float(frames_flush_s)
        self._next_flush = time.monotonic() + self._flush_s
        self.restored_from = None
        if self._store is not None:
            self.restored_from = restore_latest(
                self._store,
                BUFFER_FILE,
                lambda data, where: load_buffer_bytes(self.buffer, data, self._frames),
            )
        self._incarnation = Incarnation(
            "buffer", self._store, run_id, restored_from=self.restored_from, count=self.buffer.count()
        )

    def _load(self, data: bytes, where: str) -> None:
        load_buffer_bytes(self.buffer, data, self._frames)

    def ping(self) -> int:
        return self.buffer.count()

    def instance(self) -> dict:
        """Which process this is (a restart is another), where it started from and what it held then."""
        return self._incarnation.answer()

    def save_checkpoint_file(self, folder: str) -> dict:
        """Write ``buffer.msgpack`` of a run checkpoint into ``folder``; what ``meta.json`` records."""
        info = self._store.write(folder, BUFFER_FILE, buffer_bytes(self.buffer, self._frames))
        return {"file": info, "count": self.buffer.count(), "frame_blocks": self._frames.referenced()}

    def push(self, batch: Batch, envstep: int = -1) -> None:
        self.buffer.push(batch, envstep)
        self._metrics.record(self.buffer.stats())
        if self._flush_s > 0 and self._frames is not None and time.monotonic() >= self._next_flush:
            self._frames.flush(self.buffer)  # the frames since the last flush: the last save has few left
            self._next_flush = time.monotonic() + self._flush_s

    def sample(self, size: int, train_iter: int) -> Batch | None:
        batch = self.buffer.sample(size, cur_learner_iter=train_iter, columnar=True)
        self._metrics.record(self.buffer.stats())
        return batch

    def update(self, info: dict | None) -> None:
        if info is not None:
            self.buffer.update(info)

    def stats(self) -> dict[str, float]:
        return self.buffer.stats()
