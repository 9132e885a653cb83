"""Damaged replay-buffer files: truncated, bit-flipped, of another version, pickles. Each load raises
DataFormatError naming the file and saying what to do; the buffer keeps its contents; no code from
the file ever runs."""

import io
import os
import pickle

import numpy as np
import pytest
import torch
from easydict import EasyDict

from ding_ray.data import AdvancedReplayBuffer, EpisodeReplayBuffer, NaiveReplayBuffer
from ding_ray.data.file_format import encode_state
from ding_ray.errors import DataFormatError
from tests.bad_input.traps import MarkerTrap, assert_trap_is_live, bit_flip, pickle_trap, truncations
from tests.data.fakes import transition
from tests.data.test_persistence import assert_same, rewrap

WHAT_TO_DO = "Nothing was loaded from it; use an intact copy"


def filled(cls, start: int = 0, n: int = 12):
    buf = cls(EasyDict(replay_buffer_size=16))
    buf.seed(0)
    buf.push([transition(start + i, done=i % 4 == 3) for i in range(n)])
    return buf


@pytest.fixture(params=[NaiveReplayBuffer, AdvancedReplayBuffer], ids=["naive", "advanced"])
def saved(request, tmp_path):
    """``(buffer class, path of a good file, its bytes)``."""
    path = str(tmp_path / "buffer.msgpack")
    filled(request.param).save_data(path)
    with open(path, "rb") as f:
        return request.param, path, f.read()


def refused(cls, blob: bytes, tmp_path) -> str:
    """Load ``blob`` into a full buffer of ``cls``: it must raise DataFormatError and keep its
    contents. Returns the error message."""
    target = filled(cls, start=100, n=10)
    before = target.state_dict()
    bad = str(tmp_path / "bad.msgpack")
    with open(bad, "wb") as f:
        f.write(blob)
    with pytest.raises(DataFormatError) as err:
        target.load_data(bad)
    assert_same(target.state_dict(), before)
    assert target.count() == 10 and len(target.sample(4, 0)) == 4
    text = str(err.value)
    assert f"File '{bad}' cannot be loaded" in text and WHAT_TO_DO in text
    return text


def test_truncated_files(saved, tmp_path):
    cls, _, blob = saved
    for name, cut in truncations(blob):
        assert "truncated or not msgpack" in refused(cls, cut, tmp_path), name


def test_every_single_bit_flip_is_detected(saved, tmp_path):
    """The sha256 over header and payload catches a flip anywhere; one in the framing breaks the parse."""
    cls, _, blob = saved
    target = filled(cls, start=100, n=10)
    before = target.state_dict()
    bad = str(tmp_path / "bad.msgpack")
    for pos in range(len(blob)):
        with open(bad, "wb") as f:
            f.write(bit_flip(blob, pos))
        with pytest.raises(DataFormatError):
            target.load_data(bad)
    assert_same(target.state_dict(), before)
    assert "checksum mismatch: the file is corrupted" in refused(
        cls, bit_flip(blob, len(blob) // 2), tmp_path
    )


def test_another_format_version_says_which_version_reads_it(saved, tmp_path):
    cls, _, blob = saved
    text = refused(cls, rewrap(blob, lambda h: h.update(version=4)), tmp_path)
    assert "format version 4 is not supported; this ding_ray reads versions [1, 2, 3]" in text
    assert "Load it with the ding_ray version that wrote it" in text


def test_a_file_of_another_buffer_type_names_both(saved, tmp_path):
    cls, _, blob = saved
    other = AdvancedReplayBuffer if cls is NaiveReplayBuffer else NaiveReplayBuffer
    text = refused(other, blob, tmp_path)
    assert f"holds a '{cls.__name__}'; it cannot be loaded into a {other.__name__}" in text


def test_pickles_never_run(saved, tmp_path):
    """A pickle as the whole file, as the payload of a well-formed file (valid checksum), and a
    torch.save file: none is unpickled, so the marker the pickle would create never appears."""
    cls, _, blob = saved
    assert_trap_is_live(str(tmp_path))
    marker = str(tmp_path / "marker")
    torch_file = io.BytesIO()
    torch.save({"x": MarkerTrap(marker)}, torch_file)
    for name, evil in (
        ("pickle file", pickle_trap(marker)),
        ("pickle payload", rewrap(blob, payload=pickle_trap(marker))),
        ("pickle protocol 2", pickle.dumps(MarkerTrap(marker), protocol=2)),
        ("torch.save file", torch_file.getvalue()),
    ):
        refused(cls, evil, tmp_path)
        assert not os.path.exists(marker), name


def test_the_intact_file_still_loads_after_the_refusals(saved, tmp_path):
    cls, path, blob = saved
    refused(cls, blob[:-1], tmp_path)
    target = filled(cls, start=100, n=10)
    target.load_data(path)
    assert_same(target.state_dict(), filled(cls).state_dict())


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.msgpack"):
        filled(NaiveReplayBuffer).load_data(str(tmp_path / "nowhere.msgpack"))


def declaring_capacity(cls, capacity: int) -> bytes:
    """A well-formed file (valid checksum) of a small ``cls`` buffer that declares ``capacity``."""
    state = filled(cls).state_dict()
    state["storage"]["capacity"] = capacity
    return encode_state(state, cls.__name__)


HUGE = "holds a buffer of capacity 1000000000000, this buffer has replay_buffer_size=16"


@pytest.mark.parametrize("cls", [NaiveReplayBuffer, AdvancedReplayBuffer])
def test_a_small_file_declaring_a_huge_capacity_is_refused_before_allocating(cls, tmp_path):
    """A 1 KB file declaring 10**12 rows used to allocate the declared capacity before comparing it
    with the buffer's (a raw MemoryError; 2e8 rows took 1.6 GB and 14 s): the capacity is checked first."""
    blob = declaring_capacity(cls, 10**12)
    assert len(blob) < 10_000
    text = refused(cls, blob, tmp_path)
    assert HUGE in text and "create it with the same size to load it" in text


def test_an_episode_file_declaring_a_huge_capacity_is_refused_before_allocating(tmp_path):
    target = EpisodeReplayBuffer(EasyDict(replay_buffer_size=16))
    target.push([transition(i, done=i == 3) for i in range(4)])
    before = target.state_dict()
    source = EpisodeReplayBuffer(EasyDict(replay_buffer_size=16))
    source.push([transition(i) for i in range(3)])
    state = source.state_dict()
    state["storage"]["capacity"] = 10**12
    bad = str(tmp_path / "bad.msgpack")
    with open(bad, "wb") as f:
        f.write(encode_state(state, "EpisodeReplayBuffer"))
    with pytest.raises(DataFormatError, match=HUGE):
        target.load_data(bad)
    assert_same(target.state_dict(), before)


@pytest.mark.parametrize("cls", [NaiveReplayBuffer, AdvancedReplayBuffer])
def test_zero_row_columns_of_a_huge_shape_are_refused(cls, tmp_path):
    """An empty ring whose columns declare 10**12 floats per row: nothing in the file proves a row
    size, so it is refused instead of allocating 16 such rows (a raw MemoryError before)."""
    state = filled(cls).state_dict()
    state["storage"].update(head=0, filled=0, columns=[[["obs"], np.zeros((0, 10**12), np.float32)]])
    state["storage"]["schema"] = [{"path": ["obs"], "dtype": "<f4", "shape": [10**12]}]
    for name in ("unique_id", "priority", "use_count", "collect_iter"):
        if name in state:
            state[name] = state[name][:0]
    assert "has columns but no rows" in refused(cls, encode_state(state, cls.__name__), tmp_path)
