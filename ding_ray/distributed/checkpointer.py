"""Run checkpoints of a Ray run: the actors that hold the state write their files, the driver
writes ``meta.json`` once they are in.

Every ``checkpoint.freq`` learner iterations (or ``checkpoint.every_s`` seconds, whichever comes
first) the driver asks the learner actor for ``learner.pth``, which it writes into the folder named
after its own iteration, then the buffer actor for ``buffer.msgpack`` beside it (both write straight
to the storage, on whichever node they run); training goes on meanwhile. When both files are written the
driver adds the counters it keeps (env steps, episodes, evaluator best, rate limiter) and commits
the checkpoint. A restarted learner or buffer, and ``ray_pipeline(..., resume=...)``, start from
the latest committed one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ray
from easydict import EasyDict

from ding_ray.distributed.actors import CORE_ACTORS, Actors
from ding_ray.distributed.supervisor import ActorSupervisor, Recovered
from ding_ray.errors import StorageError
from ding_ray.utils.checkpoint import (
    BUFFER_FILE,
    LEARNER_FILE,
    Checkpoint,
    CheckpointSchedule,
    CheckpointStore,
)

logger = logging.getLogger(__name__)


@dataclass
class _Pending:
    """A checkpoint being written: the driver's counters, the call whose file is awaited, and the
    folder and files once the learner's is in."""

    meta: dict
    waiting: Any  # the ObjectRef of the actor call writing the next file
    folder: str | None = None
    files: dict = field(default_factory=dict)


class RayCheckpointer:
    """``step(train_iter, counters)`` each driver iteration; ``save_now`` at the end of a run.
    ``counters()`` returns the driver's part of ``meta.json``."""

    def __init__(
        self,
        cfg: EasyDict,
        actors: Actors,
        supervisor: ActorSupervisor,
        store: CheckpointStore,
        resumed: Checkpoint | None = None,
    ) -> None:
        self.actors, self.supervisor, self.store = actors, supervisor, store
        self.save_buffer = bool(cfg.checkpoint.save_buffer) and actors.buffer is not None
        self.last = resumed
        self.saved = 0
        # folder -> meta.json of the checkpoints of this run: what a restarted actor went back to
        self._metas: dict[str, dict] = {} if resumed is None else {resumed.folder: resumed.meta}
        self._pending: _Pending | None = None
        self.schedule = CheckpointSchedule(cfg.checkpoint, 0 if resumed is None else resumed.train_iter)

    def step(self, train_iter: int, counters: Callable[[], dict]) -> None:
        """Move the checkpoint being written on once its files are in; start one when due."""
        if self._pending is not None:
            if ray.wait([self._pending.waiting], timeout=0)[0]:
                self._advance()
            return
        if self.schedule.due(train_iter):
            self._launch(counters())
            self.schedule.done(train_iter)

    def save_now(self, train_iter: int, counters: Callable[[], dict]) -> Checkpoint | None:
        """A checkpoint of the state now (the end of a run, Ctrl-C, SIGTERM), waited for."""
        while self._pending is not None:
            self._advance()
        self._launch(counters())
        ckpt = None
        while self._pending is not None:
            ckpt = self._advance()
        return ckpt

    def meta_of(self, folder: str | None) -> dict:
        """``meta.json`` of a checkpoint committed in this run or resumed from ({} for None)."""
        return self._metas.get(folder, {}) if folder is not None else {}

    def _launch(self, meta: dict) -> None:
        """The learner writes first: the folder is named after the iteration of what it writes (it
        may be some train calls ahead of the driver's count); the buffer then writes beside it."""
        self._pending = _Pending(meta, self.actors.learner.save_checkpoint_file.remote())

    def _advance(self) -> Checkpoint | None:
        """Wait for the file being written; then ask for the buffer's, or commit. The checkpoint
        committed, or None while it is unfinished (or abandoned: an actor died while writing)."""
        pending = self._pending
        try:
            out = self.supervisor.get(pending.waiting, CORE_ACTORS)
        except Recovered:  # an actor died while writing: this one is left unfinished, never read
            logger.warning("checkpoint %s abandoned: an actor died while writing it", pending.folder)
            self._pending = None
            return None
        except Exception as err:  # the write failed (a full disk: the StorageError says it all)
            self._pending = None
            if isinstance(err, StorageError) and pending.folder is not None:
                self.store.abandon(pending.folder)
            raise
        if pending.folder is None:  # the learner's file is in
            pending.folder = out["folder"]
            pending.files[LEARNER_FILE] = out["file"]
            pending.meta["train_iter"] = out["train_iter"]
            if self.save_buffer:
                pending.waiting = self.actors.buffer.save_checkpoint_file.remote(pending.folder)
                return None
        else:
            pending.files[BUFFER_FILE] = out["file"]
            pending.meta["buffer_count"] = out["count"]
            pending.meta["frame_blocks"] = out["frame_blocks"]
        self._pending = None
        self.last = self.store.commit(pending.folder, pending.files, pending.meta)
        self._metas[pending.folder] = self.last.meta
        self.saved += 1
        logger.info("checkpoint %s (iteration %d)", pending.folder, pending.meta["train_iter"])
        return self.last

    def summary(self) -> dict[str, Any]:
        last = None if self.last is None else self.last.folder
        return {"checkpoints_saved": self.saved, "last_checkpoint": last}
