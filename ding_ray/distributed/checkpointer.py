"""Run checkpoints of a Ray run: the actors that hold the state write their files, the driver
writes ``meta.json`` once they are in.

Every ``checkpoint.freq`` learner iterations (or ``checkpoint.every_s`` seconds, whichever comes
first) the driver names a folder and asks the learner actor
for ``learner.pth`` and the buffer actor for ``buffer.msgpack`` (both write straight to the
storage, on whichever node they run); training goes on meanwhile. When both files are written the
driver adds the counters it keeps (env steps, episodes, evaluator best, rate limiter) and commits
the checkpoint. A restarted learner or buffer, and ``ray_pipeline(..., resume=...)``, start from
the latest committed one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import ray
from easydict import EasyDict

from ding_ray.distributed.actors import Actors
from ding_ray.distributed.recovery import Recovered, Recovery
from ding_ray.errors import StorageError
from ding_ray.utils.checkpoint import (
    BUFFER_FILE,
    LEARNER_FILE,
    Checkpoint,
    CheckpointSchedule,
    CheckpointStore,
)

logger = logging.getLogger(__name__)


class RayCheckpointer:
    """``step(train_iter, counters)`` each driver iteration; ``save_now`` at the end of a run.
    ``counters()`` returns the driver's part of ``meta.json``."""

    def __init__(
        self,
        cfg: EasyDict,
        actors: Actors,
        recovery: Recovery,
        store: CheckpointStore,
        resumed: Checkpoint | None = None,
    ) -> None:
        self.actors, self.recovery, self.store = actors, recovery, store
        self.save_buffer = bool(cfg.checkpoint.save_buffer) and actors.buffer is not None
        self.last = resumed
        self.saved = 0
        # folder -> meta.json of the checkpoints of this run: what a restarted actor went back to
        self._metas: dict[str, dict] = {} if resumed is None else {resumed.folder: resumed.meta}
        self._pending: tuple[str, list, dict] | None = None  # (folder, refs, driver counters)
        self.schedule = CheckpointSchedule(cfg.checkpoint, 0 if resumed is None else resumed.train_iter)

    def step(self, train_iter: int, counters: Callable[[], dict]) -> None:
        """Commit the checkpoint being written once its files are in; start one when due."""
        if self._pending is not None:
            refs = self._pending[1]
            if len(ray.wait(refs, num_returns=len(refs), timeout=0)[0]) == len(refs):
                self._commit()
            return
        if self.schedule.due(train_iter):
            self._launch(train_iter, counters())
            self.schedule.done(train_iter)

    def save_now(self, train_iter: int, counters: Callable[[], dict]) -> Checkpoint | None:
        """A checkpoint of the state now (the end of a run, Ctrl-C, SIGTERM), waited for."""
        if self._pending is not None:
            self._commit()
        self._launch(train_iter, counters())
        return self._commit()

    def meta_of(self, folder: str | None) -> dict:
        """``meta.json`` of a checkpoint committed in this run or resumed from ({} for None)."""
        return self._metas.get(folder, {}) if folder is not None else {}

    def _launch(self, train_iter: int, meta: dict) -> None:
        folder = self.store.folder(max(train_iter, 0))
        refs = [self.actors.learner.save_checkpoint_file.remote(folder)]
        if self.save_buffer:
            refs.append(self.actors.buffer.save_checkpoint_file.remote(folder))
        self._pending = (folder, refs, meta)

    def _commit(self) -> Checkpoint | None:
        folder, refs, meta = self._pending
        self._pending = None
        try:
            outs = [self.recovery.get(ref) for ref in refs]
        except Recovered:  # an actor died while writing: this one is left unfinished, never read
            logger.warning("checkpoint %s abandoned: an actor died while writing it", folder)
            return None
        except ray.exceptions.RayTaskError as err:  # a full disk: its own message says it all
            if isinstance(err.cause, StorageError):
                ray.wait(refs, num_returns=len(refs), timeout=30)  # the other actor's write, then none
                self.store.abandon(folder)
                raise err.cause from None
            raise
        files = {LEARNER_FILE: outs[0]["file"]}
        meta = dict(meta, train_iter=outs[0]["train_iter"])
        if self.save_buffer:
            files[BUFFER_FILE] = outs[1]["file"]
            meta["buffer_count"] = outs[1]["count"]
        self.last = self.store.commit(folder, files, meta)
        self._metas[folder] = self.last.meta
        self.saved += 1
        logger.info("checkpoint %s (iteration %d)", folder, meta["train_iter"])
        return self.last

    def summary(self) -> dict[str, Any]:
        last = None if self.last is None else self.last.folder
        return {"checkpoints_saved": self.saved, "last_checkpoint": last}
