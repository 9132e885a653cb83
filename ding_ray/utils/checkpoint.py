"""Run checkpoints: what a run needs to go on where it stopped, one folder per checkpoint.

Layout under a run's storage root (its ``exp_name`` folder, or ``checkpoint.storage_path`` plus the
run's name: a local folder, or any fsspec URL such as ``s3://bucket/runs`` that every node reaches)::

    checkpoints/
        iter_00012000/
            learner.pth      policy learn state (model, target model, optimizer, normalisation),
                             train_iter, env steps and the learner process's RNG states
            buffer.msgpack   the replay buffer in its own file format (with checkpoint.save_buffer)
            meta.json        written last: format and ding_ray versions, counters, evaluator best,
                             the resolved config, and each file's size and sha256
        frames/              a pixel buffer's frames, in blocks shared by the checkpoints that
            <id>.zblk        hold them (``FrameBlocks``): each block is written once, when its
                             frames changed, so a save writes only what came since the last one

A folder without ``meta.json`` is a checkpoint that was being written when the run died: it is
never picked up. A folder whose files do not match its ``meta.json`` was changed after it was
written: it is an error naming the file, and it is never deleted. Model files load with
``weights_only=True`` and buffer files are msgpack, so loading a checkpoint never runs code.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import random
import re
import shutil
import time
import uuid
import zlib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ding_ray.errors import ConfigError, DataFormatError, StorageError

logger = logging.getLogger(__name__)

FORMAT_NAME = "ding_ray.run_checkpoint"
FORMAT_VERSION = 1
LEARNER_FILE = "learner.pth"
BUFFER_FILE = "buffer.msgpack"
META_FILE = "meta.json"
FRAMES_DIR = "frames"  # under checkpoints/: the frame blocks
_FOLDER = re.compile(r"^iter_(\d+)$")

CHECKPOINT_CONFIG = dict(
    freq=10000,  # learner iterations between run checkpoints (0: only at the end and on Ctrl-C/SIGTERM)
    every_s=300.0,  # also a checkpoint after this many seconds, if freq has not come first (0: freq only)
    save_buffer=True,  # include a replay-buffer snapshot (the buffer's msgpack format)
    # None: $DING_RAY_STORAGE_PATH, else the exp_name folder; or a folder / fsspec URL every node reaches
    storage_path=None,
    keep=2,  # complete checkpoints kept; older ones are deleted
    # seconds between writes of a pixel buffer's new frames (on Ray, by the buffer actor) between
    # checkpoints, so that the last one, which `ray job stop` gives 3 s, has only seconds of frames
    # left to write (0: frames are written at checkpoints only)
    frames_flush_s=10.0,
)


class CheckpointSchedule:
    """When a run checkpoint is due: every ``checkpoint.freq`` learner iterations or every
    ``checkpoint.every_s`` seconds since the last one, whichever comes first (0 turns either off).
    The seconds bound what a crash loses when iterations are slow or the run is short."""

    def __init__(self, ckpt_cfg: Mapping, train_iter: int = 0, clock: Any = time.monotonic) -> None:
        self.freq, self.every_s = int(ckpt_cfg.get("freq", 0)), float(ckpt_cfg.get("every_s", 0))
        self._clock = clock
        self.done(train_iter)

    def due(self, train_iter: int) -> bool:
        by_iter = self._next_iter is not None and train_iter >= self._next_iter
        return by_iter or (self.every_s > 0 and self._clock() - self._since >= self.every_s)

    def done(self, train_iter: int) -> None:
        """A checkpoint was taken (or the run started) at ``train_iter``: the next one counts from here."""
        self._next_iter = (train_iter // self.freq + 1) * self.freq if self.freq > 0 else None
        self._since = self._clock()


@dataclass
class Checkpoint:
    """One complete checkpoint: its folder and the contents of its ``meta.json``."""

    folder: str
    meta: dict

    @property
    def train_iter(self) -> int:
        return int(self.meta["train_iter"])

    @property
    def has_buffer(self) -> bool:
        return BUFFER_FILE in self.meta["files"]


STORAGE_ENV = "DING_RAY_STORAGE_PATH"  # the default storage_path of every run in this environment


def storage_root(cfg: Mapping) -> str:
    """Where the run's checkpoints live: ``exp_name``, or ``storage_path/<exp_name's base name>``
    (``checkpoint.storage_path``, else the environment's ``DING_RAY_STORAGE_PATH``: the cluster
    files set it on every node)."""
    storage = (cfg.get("checkpoint") or {}).get("storage_path") or os.environ.get(STORAGE_ENV)
    exp_name = str(cfg["exp_name"])
    if not storage:
        return os.path.abspath(exp_name)
    name = os.path.basename(os.path.normpath(exp_name))
    return (
        storage.rstrip("/") + "/" + name if "://" in storage else os.path.join(os.path.abspath(storage), name)
    )


class CheckpointStore:
    """The ``checkpoints/`` folder of one run, on a local disk or behind an fsspec URL."""

    def __init__(self, root: str, keep: int = 2) -> None:
        import fsspec

        self.root = root
        try:
            self.fs, path = fsspec.core.url_to_fs(root)
        except (ImportError, ValueError) as err:  # fsspec names the package of a protocol it lacks
            raise ConfigError(
                f"Checkpoint storage '{root}' cannot be opened: {err}. Install the filesystem package "
                "fsspec names (s3fs for s3://, gcsfs for gs://) on every node, or use a local folder."
            ) from err
        self.dir = path.rstrip("/") + "/checkpoints"
        self.keep = max(1, int(keep))
        self._local = "file" in _protocols(self.fs)

    # ----- writing ---------------------------------------------------------------------------------
    def folder(self, train_iter: int) -> str:
        return f"{self.dir}/iter_{int(train_iter):08d}"

    def write(self, folder: str, name: str, data: bytes) -> dict[str, Any]:
        """Write one file of a checkpoint; returns what ``meta.json`` records of it. A checkpoint
        written again at the same iteration (a resumed run that ends at once) is unfinished from
        its first new file on: its old ``meta.json`` goes first, once the new file's data is down."""
        try:
            self.fs.makedirs(folder, exist_ok=True)
        except OSError as err:
            raise self._storage_error(folder, err) from err
        self._put(f"{folder}/{name}", data, before_replace=lambda: self._unfinish(folder))
        return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    def next_incarnation(self, key: str) -> int:
        """Count a start of the actor ``key`` names (its first, or a restart) and return the count:
        an answer of the actor with a count more than one above the one before says that it died
        in between, unseen."""
        path = f"{self.dir}/incarnations/{key}"
        try:
            self.fs.makedirs(os.path.dirname(path), exist_ok=True)
            count = int(self.fs.cat_file(path)) + 1 if self.fs.exists(path) else 1
        except (OSError, ValueError) as err:
            raise self._storage_error(path, err) from err
        self._put(path, str(count).encode())
        return count

    def forget_incarnations(self, run_id: str) -> None:
        """Remove the start counts of the run ``run_id`` (its end)."""
        with contextlib.suppress(OSError):
            for path in self.fs.glob(f"{self.dir}/incarnations/*-{run_id}"):
                self.fs.rm(path)

    def _unfinish(self, folder: str) -> None:
        if self.fs.exists(f"{folder}/{META_FILE}"):
            with contextlib.suppress(FileNotFoundError):  # the learner and the buffer both may
                self.fs.rm(f"{folder}/{META_FILE}")

    def commit(self, folder: str, files: Mapping[str, Mapping], meta: Mapping[str, Any]) -> Checkpoint:
        """Write ``meta.json`` (after every other file): from now on the checkpoint is complete.
        Older checkpoints beyond ``keep`` are deleted."""
        from ding_ray import __version__

        full = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "ding_ray_version": __version__,
            **meta,
            "files": {k: dict(v) for k, v in files.items()},
        }
        meta_json = json.dumps(full, indent=1, default=_json_default).encode()
        if self._local:  # the other files' renames reach the disk before meta.json says they did
            _fsync_dir(folder)
        self._put(f"{folder}/{META_FILE}", meta_json)
        if self._local:
            _fsync_dir(folder)
        self._prune()
        return Checkpoint(folder, full)

    def _put(self, path: str, data: bytes, before_replace: Any = None) -> None:
        """Write ``path`` whole or not at all; ``before_replace()`` runs once the data is written.
        Failing (a full disk) leaves no temp file behind and is a ``StorageError``."""
        try:
            if not self._local:  # object stores write a whole object or none
                if before_replace is not None:
                    before_replace()
                self.fs.pipe_file(path, data)
                return
            # rename is atomic on a local disk: a reader never sees half a file; fsync first, so a
            # power loss cannot leave the new name on a file whose data never reached the disk
            tmp = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
            try:
                with open(tmp, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                if before_replace is not None:
                    before_replace()
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise
        except OSError as err:
            raise self._storage_error(os.path.dirname(path), err) from err

    def _storage_error(self, folder: str, err: OSError) -> StorageError:
        """A failed write (a full disk) as an error naming the folder and the space left there."""
        free = _free_space(folder) if self._local else ""
        return StorageError(
            f"Cannot write the checkpoint {folder}: {err.strerror or err}{free}. The files of this "
            "unfinished checkpoint are removed; the run's earlier complete checkpoints are unchanged. Free "
            "space there (or set checkpoint.storage_path to a larger disk), then resume=<the run's "
            "folder> goes on from the latest complete one."
        )

    # ----- frame blocks (FrameBlocks), shared by the checkpoints that name them --------------------
    def write_block(self, data: bytes) -> dict[str, Any]:
        """Write one frame block under a new name; what ``meta.json`` records of it."""
        name = f"{uuid.uuid4().hex}.zblk"
        folder = f"{self.dir}/{FRAMES_DIR}"
        try:
            self.fs.makedirs(folder, exist_ok=True)
        except OSError as err:
            raise self._storage_error(folder, err) from err
        self._put(f"{folder}/{name}", data)
        return {"file": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    def read_block(self, info: Mapping) -> bytes:
        """The bytes of a frame block, checked against the size and sha256 recorded of it."""
        path = f"{self.dir}/{FRAMES_DIR}/{info['file']}"
        try:
            with self.fs.open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise DataFormatError(
                f"{path}, a frame block of the replay buffer, is missing. Resume from an older checkpoint "
                "(delete the newer ones) or start a new run."
            ) from None
        if len(data) != info["size"] or hashlib.sha256(data).hexdigest() != info["sha256"]:
            raise DataFormatError(
                f"{path} does not match the size and sha256 recorded of it: the frame block was changed "
                "or damaged after it was written. Resume from an older checkpoint or start a new run."
            )
        return data

    def remove_block(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(f"{self.dir}/{FRAMES_DIR}/{name}")

    # ----- a checkpoint on its own (what Ray Tune keeps of a trial) ---------------------------------
    def export(self, ckpt: Checkpoint, dest: str) -> None:
        """Copy ``ckpt`` into the new local folder ``dest`` with all it needs: its files, its
        ``meta.json`` and, under ``frames/``, the frame blocks it names."""
        names = [f"{ckpt.folder}/{name}" for name in ckpt.meta["files"]] + [f"{ckpt.folder}/{META_FILE}"]
        blocks = [f"{self.dir}/{FRAMES_DIR}/{name}" for name in ckpt.meta.get("frame_blocks") or {}]
        os.makedirs(os.path.join(dest, FRAMES_DIR), exist_ok=True)
        for path, into in [(p, dest) for p in names] + [(p, os.path.join(dest, FRAMES_DIR)) for p in blocks]:
            with self.fs.open(path, "rb") as src, open(os.path.join(into, os.path.basename(path)), "wb") as f:
                shutil.copyfileobj(src, f)

    def import_checkpoint(self, src: str) -> Checkpoint:
        """Add the checkpoint ``export`` wrote into the local folder ``src`` to this store (its
        frame blocks first, its ``meta.json`` last: complete only once everything is in)."""
        with open(os.path.join(src, META_FILE), "rb") as f:
            meta = json.loads(f.read())
        folder = self.folder(int(meta["train_iter"]))
        for name in meta.get("frame_blocks") or {}:
            with open(os.path.join(src, FRAMES_DIR, name), "rb") as f:
                self.fs.makedirs(f"{self.dir}/{FRAMES_DIR}", exist_ok=True)
                self._put(f"{self.dir}/{FRAMES_DIR}/{name}", f.read())
        for name in meta["files"]:
            with open(os.path.join(src, name), "rb") as f:
                self.write(folder, name, f.read())
        with open(os.path.join(src, META_FILE), "rb") as f:
            self._put(f"{folder}/{META_FILE}", f.read())
        return Checkpoint(folder, meta)

    def abandon(self, folder: str) -> None:
        """Remove the files of the unfinished checkpoint ``folder`` (a write failed: a full disk), so
        that what is left of the disk goes to ``result.json``; a complete checkpoint is kept."""
        with contextlib.suppress(OSError):
            if not self.fs.exists(f"{folder}/{META_FILE}"):
                self.fs.rm(folder, recursive=True)

    def _prune(self) -> None:
        """Delete complete checkpoints beyond ``keep`` and unfinished ones older than the newest
        complete one. A damaged checkpoint (``_check``) is never deleted: it is evidence."""
        checked = {f: self._check(f, strict=False) for f in self._folders()}
        complete = [f for f, (meta, _) in checked.items() if meta is not None]
        released = set()
        for folder in complete[self.keep :]:
            released |= set(checked[folder][0].get("frame_blocks") or {})
            self.fs.rm(folder, recursive=True)
        # a frame block goes with the last checkpoint that names it (never one no checkpoint named
        # yet: the buffer may be about to name it)
        kept = {name for f in complete[: self.keep] for name in checked[f][0].get("frame_blocks") or {}}
        for name in released - kept:
            self.remove_block(name)
        if complete:  # unfinished folders older than the newest complete checkpoint are dead ends
            newest = _iter_of(complete[0])
            for folder, (meta, damage) in checked.items():
                if meta is None and damage is None and _iter_of(folder) < newest:
                    self.fs.rm(folder, recursive=True)

    # ----- reading ---------------------------------------------------------------------------------
    def latest(self) -> Checkpoint | None:
        """The newest complete checkpoint, or None; unfinished ones (no ``meta.json``: the writer
        died) are passed over. A damaged one is a ``DataFormatError`` naming the file, and so is a
        checkpoint of another format version: this ding_ray cannot continue it."""
        for folder in self._folders():
            meta, damage = self._check(folder, strict=True)
            if damage is not None:
                raise DataFormatError(
                    f"Checkpoint {folder} is damaged: {damage}. Its meta.json is written after every "
                    "other file, so this is not a save cut short: the folder was changed since. Delete it "
                    "to resume from the checkpoint before it, or start a new run."
                )
            if meta is not None:
                return Checkpoint(folder, meta)
        return None

    def read(self, ckpt: Checkpoint, name: str) -> bytes:
        """The bytes of one file of ``ckpt``, checked against the size and sha256 in its meta."""
        info = ckpt.meta["files"].get(name)
        if info is None:
            raise DataFormatError(f"Checkpoint {ckpt.folder} has no {name}.")
        with self.fs.open(f"{ckpt.folder}/{name}", "rb") as f:
            data = f.read()
        if len(data) != info["size"] or hashlib.sha256(data).hexdigest() != info["sha256"]:
            raise DataFormatError(
                f"{ckpt.folder}/{name} does not match the size and sha256 its meta.json records: the file "
                "was changed or damaged after the checkpoint was written. Resume from an older checkpoint "
                "(delete this folder) or start a new run."
            )
        return data

    def _folders(self) -> list[str]:
        """Checkpoint folders, newest first."""
        if not self.fs.exists(self.dir):
            return []
        found = [p for p in self.fs.ls(self.dir, detail=False) if _FOLDER.match(os.path.basename(p))]
        return sorted(found, key=_iter_of, reverse=True)

    def _check(self, folder: str, strict: bool) -> tuple[dict | None, str | None]:
        """``(meta, None)`` for a complete checkpoint, ``(None, None)`` for an unfinished one (or a
        folder of another tool), ``(None, what is wrong)`` for a damaged one: a ``meta.json`` that
        cannot be read, or a file it lists that is missing or of another size."""
        path = f"{folder}/{META_FILE}"
        try:
            with self.fs.open(path, "rb") as f:
                meta = json.loads(f.read())
        except FileNotFoundError:
            return None, None
        except (ValueError, UnicodeDecodeError) as err:
            return None, f"{path} is unreadable ({err})"
        if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
            return None, None
        if strict and meta.get("format_version") != FORMAT_VERSION:
            raise DataFormatError(
                f"Checkpoint {folder} has format version {meta.get('format_version')!r} (written by ding_ray "
                f"{meta.get('ding_ray_version')}); this ding_ray reads version {FORMAT_VERSION}. "
                "Resume it with the ding_ray version that wrote it, or start a new run."
            )
        files = meta.get("files")
        if not isinstance(files, dict):
            return None, f"{path} lists no files"
        blocks = meta.get("frame_blocks") or {}
        listed = [(f"{folder}/{name}", info) for name, info in files.items()]
        listed += [(f"{self.dir}/{FRAMES_DIR}/{name}", info) for name, info in dict(blocks).items()]
        for path, info in listed:
            try:
                size = self.fs.size(path)
            except FileNotFoundError:
                return None, f"{path}, which its meta.json lists, is missing"
            expected = info.get("size") if isinstance(info, dict) else None
            if size != expected:
                return None, f"{path} is {size} bytes and its meta.json records {expected}"
        return meta, None


def restore_latest(store: CheckpointStore, name: str, restore: Any) -> str | None:
    """``restore(bytes, where)`` with file ``name`` of the latest complete checkpoint holding one;
    the checkpoint's folder, or None when there is none (a new run)."""
    ckpt = store.latest()
    if ckpt is None or name not in ckpt.meta["files"]:
        return None
    restore(store.read(ckpt, name), f"{ckpt.folder}/{name}")
    logger.info("restored %s from %s (iteration %d)", name, ckpt.folder, ckpt.train_iter)
    return ckpt.folder


# ----- the learner file --------------------------------------------------------------------------------
def learner_bytes(learner: Any) -> bytes:
    """``learner.pth`` of a ``BaseLearner``: its policy's learn state (model, target model,
    optimizer, normalisation), its counters and this process's RNG states."""
    import torch

    state = {
        "policy": dict(learner.policy.state_dict()),
        "train_iter": int(learner.train_iter),
        "envstep": int(learner.collector_envstep),
        "rng": rng_state(),
    }
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.getvalue()


def restore_learner(learner: Any, state: Mapping[str, Any]) -> None:
    """Put a ``BaseLearner`` (and this process's RNGs) back to a state read by ``load_learner_bytes``."""
    learner.policy.load_state_dict(state["policy"])
    learner.last_iter.update(int(state["train_iter"]))
    learner.collector_envstep = int(state["envstep"])
    set_rng_state(state["rng"])


def load_learner_bytes(data: bytes, where: str) -> dict[str, Any]:
    """Read ``learner.pth`` with ``weights_only=True``: tensors and plain containers, never code."""
    import torch

    try:
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - torch raises several types for bad files
        raise DataFormatError(
            f"{where} cannot be loaded as weights ({type(e).__name__}: {e}). It may be truncated, or hold "
            "pickled objects other than tensors; ding_ray never unpickles code. Resume from an older "
            "checkpoint."
        ) from e
    if not isinstance(state, dict) or not {"policy", "train_iter", "envstep"} <= set(state):
        raise DataFormatError(f"{where} is not a ding_ray learner checkpoint (policy, train_iter, envstep).")
    return state


# ----- the buffer file ----------------------------------------------------------------------------------
def buffer_bytes(buffer: Any, frames: FrameBlocks | None = None) -> bytes:
    """The buffer's snapshot in its own file format (``save_data``), as bytes; with ``frames``,
    its frame stores' frames go to those blocks (what changed since the last save) and the file
    names them: ``frames.referenced()`` is what the checkpoint's ``meta.json`` records."""
    import tempfile

    from ding_ray.data.frame_archive import archived_frames

    with tempfile.TemporaryDirectory(prefix="ding_ray_buffer_") as tmp, archived_frames(frames):
        path = os.path.join(tmp, BUFFER_FILE)
        buffer.save_data(path)
        with open(path, "rb") as f:
            data = f.read()
    if frames is not None:
        frames.hand_out()
    return data


def load_buffer_bytes(buffer: Any, data: bytes, frames: FrameBlocks | None = None) -> None:
    """Replace the buffer's contents with a snapshot from ``buffer_bytes`` (``load_data``'s checks:
    a damaged or foreign snapshot is a ``DataFormatError`` and leaves the buffer as it was); its
    frame blocks are read through ``frames``, which goes on from them."""
    import tempfile

    from ding_ray.data.frame_archive import archived_frames

    with tempfile.TemporaryDirectory(prefix="ding_ray_buffer_") as tmp, archived_frames(frames):
        path = os.path.join(tmp, BUFFER_FILE)
        with open(path, "wb") as f:
            f.write(data)
        buffer.load_data(path)
    if frames is not None:
        frames.hand_out()


class FrameBlocks:
    """A run's frame archive (``ding_ray.data.frame_archive``): each frame store's slots in blocks of
    ``BLOCK_FRAMES`` frames, zlib-compressed, one file each under ``checkpoints/frames/``.

    ``save`` writes only the blocks written since the store's last save and names the others as
    they were, so a checkpoint of a pixel buffer costs what changed since the one before; ``flush``
    does the same between checkpoints (the buffer actor calls it every ``checkpoint.frames_flush_s``
    seconds), so the last save of a run, which ``ray job stop`` gives seconds, has little left.
    A block is removed when the last checkpoint naming it is pruned, or at once when a newer
    version of it replaced it before any checkpoint named it.
    """

    def __init__(self, store: CheckpointStore) -> None:
        self.store = store
        self._blocks: dict[str, list[dict | None]] = {}  # frame store key -> each block's file (or None)
        self._named: set[str] = set()  # block files a checkpoint's buffer file names
        self._touched: set[str] = set()  # the stores saved or loaded since the last hand_out

    def save(self, frame_store: Any) -> dict:
        from ding_ray.data.frames import BLOCK_FRAMES

        self._touched.add(frame_store.key)
        blocks = self._blocks.setdefault(frame_store.key, [])
        blocks.extend([None] * (-(-frame_store.capacity // BLOCK_FRAMES) - len(blocks)))
        written = frame_store.take_written()
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # zlib lets go of the GIL
            packed = pool.map(lambda b: zlib.compress(frame_store.block(b).tobytes(), 1), written)
            for index, data in zip(written, packed, strict=True):
                old, blocks[index] = blocks[index], self.store.write_block(data)
                if old is not None and old["file"] not in self._named:
                    self.store.remove_block(old["file"])
        return {"slots": frame_store.capacity, "block_frames": BLOCK_FRAMES, "blocks": list(blocks)}

    def flush(self, buffer: Any) -> None:
        """Write the blocks of ``buffer``'s frame stores written since their last save."""
        for frame_store in buffer.frame_stores:
            self.save(frame_store)

    def load_into(self, manifest: Mapping, out: np.ndarray) -> None:
        """Read the blocks ``manifest`` names into ``out`` (zeros: a block never written stays so)."""
        try:
            per, blocks = int(manifest["block_frames"]), list(manifest["blocks"])
        except (KeyError, TypeError, ValueError) as err:
            raise DataFormatError(f"A frame archive manifest is malformed: {err!r}") from err
        if len(blocks) != -(-len(out) // per):
            raise DataFormatError("A frame archive manifest does not cover the slots it declares.")
        for index, info in enumerate(blocks):
            if info is None:  # never written: the zeros ``out`` holds
                continue
            view = out[index * per : (index + 1) * per]
            unzip = zlib.decompressobj()
            try:  # never inflates past the block's size
                raw = unzip.decompress(self.store.read_block(info), view.nbytes)
            except zlib.error as err:
                raise DataFormatError(f"Frame block {info['file']} is corrupt: {err}") from err
            if len(raw) != view.nbytes or not unzip.eof or unzip.unconsumed_tail:
                raise DataFormatError(f"Frame block {info['file']} does not hold {len(view)} frames.")
            view[:] = np.frombuffer(raw, out.dtype).reshape(view.shape)

    def adopt(self, frame_store: Any, manifest: Mapping) -> None:
        frame_store.take_written()  # what was loaded is in those blocks already
        self._blocks[frame_store.key] = [None if b is None else dict(b) for b in manifest["blocks"]]
        self._touched.add(frame_store.key)

    def hand_out(self) -> None:
        """The buffer file just written (or read) names the blocks of the stores it saved (or
        loaded): from now on pruning removes them, not ``save``; stores it no longer holds are
        forgotten."""
        self._blocks = {key: blocks for key, blocks in self._blocks.items() if key in self._touched}
        self._touched = set()
        self._named |= set(self.referenced())

    def referenced(self) -> dict[str, dict]:
        """Each block file the stores' latest manifests name: its size and sha256."""
        return {
            b["file"]: {"size": b["size"], "sha256": b["sha256"]}
            for blocks in self._blocks.values()
            for b in blocks
            if b is not None
        }


# ----- RNG states ----------------------------------------------------------------------------------------
def rng_state() -> dict[str, Any]:
    """Python's, numpy's and torch's global RNG states, as plain values."""
    import torch

    name, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": _to_lists(random.getstate()),
        "numpy": [name, keys.tolist(), int(pos), int(has_gauss), float(cached)],
        "torch": torch.get_rng_state(),
    }


def set_rng_state(state: Mapping[str, Any]) -> None:
    import torch

    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])


def _to_lists(value: Any) -> Any:
    return [_to_lists(v) for v in value] if isinstance(value, (tuple, list)) else value


def _fsync_dir(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _free_space(path: str) -> str:
    """``' (N MB free on its disk)'`` for the nearest existing folder of ``path``."""
    import shutil

    while path and not os.path.isdir(path):
        path = os.path.dirname(path)
    try:
        free = shutil.disk_usage(path or ".").free
    except OSError:
        return ""
    return (
        f" ({free / 2**20:.1f} MiB free on its disk)"
        if free >= 2**20
        else f" ({free} bytes free on its disk)"
    )


def _iter_of(folder: str) -> int:
    return int(_FOLDER.match(os.path.basename(folder.rstrip("/"))).group(1))


def _protocols(fs: Any) -> tuple:
    protocol = fs.protocol
    return protocol if isinstance(protocol, tuple) else (protocol,)


def _json_default(value: Any) -> Any:
    """numpy scalars as numbers; anything else (a config's activation class) as its repr, as
    total_config.json writes it."""
    return value.item() if isinstance(value, np.generic) else repr(value)
