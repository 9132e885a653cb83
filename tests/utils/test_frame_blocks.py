"""A pixel buffer in run checkpoints, saved incrementally (``FrameBlocks``): a save writes only the
frame blocks written since the one before, a resumed buffer holds the stacks that were pushed, a
damaged block is an error that names it, and a block leaves the disk with the last checkpoint
that names it."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from easydict import EasyDict
from numpy.lib.stride_tricks import sliding_window_view

from ding_ray.data import Batch
from ding_ray.data.advanced import AdvancedReplayBuffer
from ding_ray.data.file_format import decode_state, encode_state
from ding_ray.data.frames import BLOCK_FRAMES
from ding_ray.errors import DataFormatError
from ding_ray.utils.checkpoint import (
    BUFFER_FILE,
    CheckpointStore,
    FrameBlocks,
    buffer_bytes,
    load_buffer_bytes,
)

ROWS = 4 * BLOCK_FRAMES


def _buffer() -> AdvancedReplayBuffer:
    return AdvancedReplayBuffer(EasyDict(replay_buffer_size=ROWS))


def _push(buffer: AdvancedReplayBuffer, start: int, n: int) -> None:
    """``n`` transitions of one episode of frame stacks (4, 84, 84): each step adds one new frame."""
    rng = np.random.default_rng(start)
    frames = rng.integers(0, 255, (n + 4, 84, 84), dtype=np.uint8)
    stacks = sliding_window_view(frames, 4, axis=0).transpose(0, 3, 1, 2)
    buffer.push(
        Batch(
            obs=stacks[:n],
            next_obs=stacks[1 : n + 1],
            action=np.arange(n) % 6,
            reward=np.ones(n, np.float32),
            done=np.zeros(n, bool),
        ),  # fmt: skip
        0,
    )


def _blocks_on_disk(root) -> set[str]:
    folder = os.path.join(root, "checkpoints", "frames")
    return set(os.listdir(folder)) if os.path.isdir(folder) else set()


def _save(store: CheckpointStore, frames: FrameBlocks, buffer, train_iter: int):
    folder = store.folder(train_iter)
    files = {BUFFER_FILE: store.write(folder, BUFFER_FILE, buffer_bytes(buffer, frames))}
    return store.commit(folder, files, {"train_iter": train_iter, "frame_blocks": frames.referenced()})


def test_a_save_writes_only_the_blocks_written_since_the_last(tmp_path):
    store, buffer = CheckpointStore(str(tmp_path), keep=10), _buffer()
    frames = FrameBlocks(store)
    _push(buffer, 0, 3 * BLOCK_FRAMES - 4)  # 3 blocks of frames (each step one frame, 4 to start)
    first = _save(store, frames, buffer, 1)
    assert len(_blocks_on_disk(tmp_path)) == 3 == len(first.meta["frame_blocks"])
    _push(buffer, 1, 100)  # 104 new frames: all in the fourth block
    second = _save(store, frames, buffer, 2)
    assert len(set(second.meta["frame_blocks"]) - set(first.meta["frame_blocks"])) == 1
    assert len(_blocks_on_disk(tmp_path)) == 4
    # the buffer file itself holds no frames: some bytes a row
    assert os.path.getsize(os.path.join(second.folder, BUFFER_FILE)) < 200 * buffer.count()


def test_a_buffer_loaded_from_its_blocks_holds_what_was_pushed_and_goes_on_incrementally(tmp_path):
    store, buffer = CheckpointStore(str(tmp_path), keep=10), _buffer()
    _push(buffer, 0, 2 * BLOCK_FRAMES + 10)
    ckpt = _save(store, FrameBlocks(store), buffer, 1)
    resumed, frames = _buffer(), FrameBlocks(store)
    load_buffer_bytes(resumed, store.read(ckpt, BUFFER_FILE), frames)
    # a self-contained snapshot of each (every stack rebuilt from its frames) is byte for byte the same
    assert decode_state(buffer_bytes(resumed)).keys() == decode_state(buffer_bytes(buffer)).keys()
    assert encode_state(decode_state(buffer_bytes(resumed)), "x") == encode_state(
        decode_state(buffer_bytes(buffer)), "x"
    )
    before = _blocks_on_disk(tmp_path)
    _push(resumed, 7, 5)
    _save(store, frames, resumed, 2)
    assert len(_blocks_on_disk(tmp_path) - before) == 1  # only the block the new frames went to


def test_a_damaged_or_missing_block_is_an_error_naming_it(tmp_path):
    store, buffer = CheckpointStore(str(tmp_path)), _buffer()
    _push(buffer, 0, BLOCK_FRAMES + 10)
    ckpt = _save(store, FrameBlocks(store), buffer, 1)
    name = sorted(ckpt.meta["frame_blocks"])[0]
    path = os.path.join(tmp_path, "checkpoints", "frames", name)
    data = open(path, "rb").read()
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 1
    open(path, "wb").write(bytes(flipped))
    with pytest.raises(DataFormatError, match=f"{name} does not match the size and sha256"):
        load_buffer_bytes(_buffer(), store.read(ckpt, BUFFER_FILE), FrameBlocks(store))
    os.unlink(path)
    with pytest.raises(DataFormatError, match=f"{name}.* is missing"):
        store.latest()  # meta.json lists it: the checkpoint is damaged, and says which file


def test_a_checkpoints_buffer_file_alone_is_refused_with_what_to_do(tmp_path):
    store, buffer = CheckpointStore(str(tmp_path)), _buffer()
    _push(buffer, 0, 100)
    ckpt = _save(store, FrameBlocks(store), buffer, 1)
    with pytest.raises(DataFormatError, match="load it through the run"):
        load_buffer_bytes(_buffer(), store.read(ckpt, BUFFER_FILE))


def test_a_block_leaves_the_disk_with_the_last_checkpoint_that_names_it(tmp_path):
    store, buffer = CheckpointStore(str(tmp_path), keep=2), _buffer()
    frames = FrameBlocks(store)
    _push(buffer, 0, BLOCK_FRAMES - 4)  # the first block, full
    first = _save(store, frames, buffer, 1)
    _push(buffer, 1, 10)
    _save(store, frames, buffer, 2)
    for step in (3, 4):  # new frames go to the second block each time: its older versions go
        _push(buffer, step, 10)
        _save(store, frames, buffer, step)
    names = set(first.meta["frame_blocks"])  # the first block, named by every checkpoint since
    latest = store.latest()
    assert names <= set(latest.meta["frame_blocks"]) and names <= _blocks_on_disk(tmp_path)
    # on disk: the blocks of the two checkpoints kept, nothing else
    older = [c for c in os.listdir(os.path.join(tmp_path, "checkpoints")) if c.startswith("iter_")]
    assert sorted(older) == ["iter_00000003", "iter_00000004"]
    named = set()
    for folder in older:
        with open(os.path.join(tmp_path, "checkpoints", folder, "meta.json")) as f:
            named |= set(json.load(f)["frame_blocks"])
    assert _blocks_on_disk(tmp_path) == named


def test_a_checkpoint_exported_on_its_own_carries_its_frame_blocks(tmp_path):
    """What Ray Tune keeps of a trial is one folder: ``export`` puts the blocks in it, and a new
    run's store imports them, so the buffer comes back whole."""
    store, buffer = CheckpointStore(str(tmp_path / "run")), _buffer()
    _push(buffer, 0, BLOCK_FRAMES + 10)
    ckpt = _save(store, FrameBlocks(store), buffer, 3)
    store.export(ckpt, str(tmp_path / "kept"))
    other = CheckpointStore(str(tmp_path / "restored"))
    imported = other.import_checkpoint(str(tmp_path / "kept"))
    assert other.latest().folder == imported.folder and imported.train_iter == 3
    resumed = _buffer()
    load_buffer_bytes(resumed, other.read(imported, BUFFER_FILE), FrameBlocks(other))
    assert encode_state(decode_state(buffer_bytes(resumed)), "x") == encode_state(
        decode_state(buffer_bytes(buffer)), "x"
    )
