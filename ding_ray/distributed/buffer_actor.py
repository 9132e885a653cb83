"""The replay-buffer actor: a buffer plus its dashboard metrics, in a module that imports no torch,
so the buffer actor is up in a fraction of the time the torch-based actors take."""

from __future__ import annotations

import ray
from easydict import EasyDict

from ding_ray.data import Batch, create_buffer
from ding_ray.distributed.metrics import RayMetrics


class BufferWorker:
    """The replay buffer named by ``policy.other.replay_buffer`` plus its dashboard metrics."""

    def __init__(self, buffer_cfg: EasyDict, exp_name: str, seed: int = 0) -> None:
        self.buffer = create_buffer(buffer_cfg, exp_name=exp_name, instance_name="buffer")
        self.buffer.seed(seed)
        self._metrics = RayMetrics("buffer", exp_name, interval_s=1.0)

    def ping(self) -> int:
        return self.buffer.count()

    def push(self, batch: Batch, envstep: int = -1) -> None:
        self.buffer.push(batch, envstep)
        self._metrics.record(self.buffer.stats())

    def sample(self, size: int, train_iter: int) -> Batch | None:
        batch = self.buffer.sample(size, cur_learner_iter=train_iter, columnar=True)
        self._metrics.record(self.buffer.stats())
        return batch

    def update(self, info: dict | None) -> None:
        if info is not None:
            self.buffer.update(info)

    def stats(self) -> dict[str, float]:
        return self.buffer.stats()


ReplayBufferActor = ray.remote(BufferWorker)
