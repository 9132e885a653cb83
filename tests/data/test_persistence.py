import hashlib
import os
import pickle

import msgpack
import numpy as np
import pytest
from easydict import EasyDict

from ding_ray.data import (
    AdvancedReplayBuffer,
    Batch,
    EpisodeReplayBuffer,
    NaiveReplayBuffer,
    SequenceReplayBuffer,
)
from ding_ray.data.file_format import decode_state, encode_state
from ding_ray.errors import DataFormatError
from tests.data.fakes import batch, transition


def filled_advanced(seed=0):
    buf = AdvancedReplayBuffer(EasyDict(replay_buffer_size=50, max_use=5))
    buf.seed(seed)
    buf.push(batch(0, 70))  # wraps around
    for it in range(10):
        out = buf.sample(8, it, columnar=True)
        buf.update(
            {
                "replay_unique_id": out["replay_unique_id"],
                "replay_buffer_idx": out["replay_buffer_idx"],
                "priority": out["reward"] + 1.0,
            }
        )
    return buf


def filled(kind):
    if kind == "advanced":
        return filled_advanced()
    cls = {"naive": NaiveReplayBuffer, "episode": EpisodeReplayBuffer, "sequence": SequenceReplayBuffer}[kind]
    buf = cls(EasyDict(replay_buffer_size=20))
    buf.seed(3)
    if kind == "episode":
        buf.push([batch(0, 3), batch(10, 5)])
    else:
        buf.push([transition(i, done=i % 4 == 3) for i in range(25)])
    return buf


def draw(buf, n=6):
    if isinstance(buf, SequenceReplayBuffer):
        return buf.sample(n, 2, 0, columnar=True, replace=True)
    if isinstance(buf, EpisodeReplayBuffer):
        return buf.sample(2, 0, columnar=True)
    return buf.sample(n, 20, columnar=True)


def assert_same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


KINDS = ["naive", "advanced", "episode", "sequence"]


@pytest.mark.parametrize("kind", KINDS)
def test_state_dict_round_trip_samples_identically(kind):
    buf = filled(kind)
    other = type(buf)(buf.cfg)
    other.load_state_dict(buf.state_dict())
    assert other.count() == buf.count() and other.push_count == buf.push_count
    assert_same(other.state_dict(), buf.state_dict())
    for _ in range(3):
        assert_same(draw(buf), draw(other))


@pytest.mark.parametrize("kind", KINDS)
def test_file_round_trip(kind, tmp_path):
    buf = filled(kind)
    path = str(tmp_path / f"{kind}.buf")
    buf.save_data(path)
    assert os.listdir(tmp_path) == [f"{kind}.buf"]  # no temporary file left behind
    other = type(buf)(buf.cfg)
    other.load_data(path)
    assert_same(other.state_dict(), buf.state_dict())
    assert_same(draw(buf), draw(other))


def test_reloaded_buffer_keeps_priorities_ids_and_counters():
    buf = filled_advanced()
    other = AdvancedReplayBuffer(buf.cfg)
    other.load_state_dict(buf.state_dict())
    assert other.beta == buf.beta and other.stats() == buf.stats()
    state = other.state_dict()
    held = state["unique_id"] >= 0
    assert state["priority"].dtype == np.float64 and state["use_count"][held].max() < 5  # max_use=5


def test_reloaded_uniform_buffer_never_samples_empty_or_removed_rows():
    # alpha = 0 weighs every held row 1; the empty and removed rows must still weigh 0 (0 ** 0 is 1).
    buf = AdvancedReplayBuffer(EasyDict(replay_buffer_size=10, alpha=0.0, max_use=1))
    buf.seed(0)
    buf.push(batch(0, 6))
    removed = set(buf.sample(2, 0, columnar=True)["replay_buffer_idx"].tolist())  # used up
    other = AdvancedReplayBuffer(buf.cfg)
    other.load_state_dict(buf.state_dict())
    assert other.count() == buf.count() == 6 - len(removed)
    drawn = other.sample(other.count(), 1, columnar=True)["replay_buffer_idx"]
    assert set(drawn.tolist()) <= set(range(6)) - removed


def test_state_dict_holds_only_plain_values():
    def check(node):
        if isinstance(node, dict):
            for v in node.values():
                check(v)
        elif isinstance(node, list):
            for v in node:
                check(v)
        else:
            assert isinstance(node, (np.ndarray, int, float, str, bool, type(None), np.generic)), type(node)

    for kind in KINDS:
        check(filled(kind).state_dict())


# ---------------------------------------------------------------------- corrupt files
@pytest.fixture
def saved(tmp_path):
    buf = filled_advanced()
    path = str(tmp_path / "buffer.bin")
    buf.save_data(path)
    with open(path, "rb") as f:
        return path, f.read()


def rewrap(blob, edit_header=None, payload=None):
    """A file like ``blob`` with an edited header or payload and a checksum that matches again."""
    outer = msgpack.unpackb(blob, raw=False)
    header = outer["header"]
    if edit_header:
        edit_header(header)
    payload = outer["payload"] if payload is None else payload
    digest = hashlib.sha256(msgpack.packb(header, use_bin_type=True) + payload).digest()
    return msgpack.packb(
        {"header": header, "payload": payload, "checksum": {"algorithm": "sha256", "digest": digest}},
        use_bin_type=True,
    )


class Trap:
    """Unpickling this would call ``_sprung``."""

    sprung = False

    def __reduce__(self):
        return (_sprung, ())


def _sprung():
    Trap.sprung = True
    return {}


def corruptions(blob):
    yield "empty", b""
    yield "truncated", blob[: len(blob) // 2]
    yield "truncated tail", blob[:-1]
    for pos in (10, len(blob) // 3, len(blob) // 2, len(blob) - 5):
        flipped = bytearray(blob)
        flipped[pos] ^= 0x10
        yield f"bit flip at {pos}", bytes(flipped)
    yield "wrong version", rewrap(blob, lambda h: h.update(version=4))
    yield "wrong format", rewrap(blob, lambda h: h.update(format="something.else"))
    yield "wrong schema", rewrap(blob, lambda h: h["schema"][0].update(dtype="<f8"))
    yield "pickle file", pickle.dumps(Trap())
    yield "pickle payload", rewrap(blob, payload=pickle.dumps(Trap()))
    object_array = msgpack.ExtType(1, msgpack.packb(["|O", [1], b"\x00" * 8], use_bin_type=True))
    evil = msgpack.packb({"buffer_type": "AdvancedReplayBuffer", "storage": object_array}, use_bin_type=True)
    yield "object dtype payload", rewrap(blob, payload=evil)
    yield "not a state", rewrap(blob, payload=msgpack.packb([1, 2, 3]))


def test_corrupt_files_raise_and_leave_the_buffer_intact(saved, tmp_path):
    path, blob = saved
    target = filled_advanced(seed=1)
    target.push(batch(100, 3))
    before = target.state_dict()
    bad_path = str(tmp_path / "bad.bin")
    for name, bad in corruptions(blob):
        with open(bad_path, "wb") as f:
            f.write(bad)
        with pytest.raises(DataFormatError):
            target.load_data(bad_path)
        assert_same(target.state_dict(), before), name
    assert not Trap.sprung
    target.load_data(path)  # the intact file still loads
    assert target.count() == filled_advanced().count()


def test_wrong_buffer_type_and_capacity(saved):
    path, _ = saved
    with pytest.raises(DataFormatError, match="AdvancedReplayBuffer"):
        NaiveReplayBuffer(EasyDict(replay_buffer_size=50)).load_data(path)
    small = AdvancedReplayBuffer(EasyDict(replay_buffer_size=10))
    with pytest.raises(DataFormatError, match="capacity"):
        small.load_data(path)
    assert small.count() == 0


def test_error_messages_say_what_is_wrong(saved):
    _, blob = saved
    with pytest.raises(DataFormatError, match="version 4"):  # a version this ding_ray does not know
        decode_state(rewrap(blob, lambda h: h.update(version=4)))
    with pytest.raises(DataFormatError, match="does not match where its frames are kept"):
        decode_state(rewrap(blob, lambda h: h.update(version=3)))  # 3 keeps frames beside the file
    with pytest.raises(DataFormatError, match="checksum"):
        flipped = bytearray(blob)
        flipped[len(blob) // 2] ^= 1
        decode_state(bytes(flipped))
    with pytest.raises(DataFormatError, match="truncated"):
        decode_state(blob[:100])


def test_unstorable_values_are_reported():
    with pytest.raises(DataFormatError, match="cannot be written"):
        encode_state({"x": object()}, "NaiveReplayBuffer")
    buf = NaiveReplayBuffer(EasyDict(replay_buffer_size=4))
    buf.push(Batch(obs=np.zeros((2, 3)), info=np.array([{"a": 1}, {"a": 2}], dtype=object)))
    other = NaiveReplayBuffer(EasyDict(replay_buffer_size=4))
    other.load_state_dict(decode_state(encode_state(buf.state_dict(), "NaiveReplayBuffer")))
    assert sorted(x["info"]["a"] for x in other.sample(2, 0)) == [1, 2]


def test_nested_fields_round_trip_through_a_file(tmp_path):
    buf = NaiveReplayBuffer(EasyDict(replay_buffer_size=8))
    buf.seed(0)
    items = [
        {"obs": {"image": np.full((2, 2), i, np.uint8), "vec": np.arange(3.0) + i}, "done": i == 4}
        for i in range(6)
    ]
    buf.push(items)
    path = str(tmp_path / "nested.buf")
    buf.save_data(path)
    other = NaiveReplayBuffer(EasyDict(replay_buffer_size=8))
    other.load_data(path)
    assert_same(other.state_dict(), buf.state_dict())
    out = other.sample(6, 0, columnar=True)
    assert out["obs"]["image"].dtype == np.uint8 and out["obs"]["image"].shape == (6, 2, 2)
