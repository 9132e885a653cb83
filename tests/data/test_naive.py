import numpy as np
import pytest
from easydict import EasyDict

from ding_ray.data import Batch, NaiveReplayBuffer, create_buffer, get_buffer_cls
from ding_ray.errors import ConfigError, RegistryError, ShapeError
from tests.data.fakes import batch, check_consistent, transition


def make(size=10, seed=0):
    buf = NaiveReplayBuffer(EasyDict(replay_buffer_size=size))
    buf.seed(seed)
    return buf


def test_push_forms_and_count():
    buf = make(100)
    buf.push(transition(0), 0)
    buf.push([transition(1), transition(2)], 0)
    buf.push(batch(3, 5), 0)
    buf.push([], 0)
    assert buf.count() == 8 and buf.push_count == 8
    ids = sorted(check_consistent(x) for x in buf.sample(8, 0))
    assert ids == list(range(8))


def test_ring_overwrite_keeps_newest():
    buf = make(5)
    for i in range(12):
        buf.push(transition(i), 0)
    assert buf.count() == 5 and buf.push_count == 12
    ids = sorted(check_consistent(x) for x in buf.sample(5, 0))
    assert ids == [7, 8, 9, 10, 11]
    # logical order: sample_range counts from the oldest item
    newest = buf.sample(2, 0, sample_range=slice(-2, None))
    assert sorted(check_consistent(x) for x in newest) == [10, 11]
    oldest = buf.sample(1, 0, sample_range=slice(0, 1))
    assert check_consistent(oldest[0]) == 7


def test_batch_larger_than_capacity_keeps_last_rows():
    buf = make(4)
    buf.push(batch(0, 10), 0)
    assert sorted(check_consistent(x) for x in buf.sample(4, 0)) == [6, 7, 8, 9]


def test_sample_not_enough_and_replace():
    buf = make(10)
    assert buf.sample(1, 0) is None
    buf.push(batch(0, 3), 0)
    assert buf.sample(4, 0) is None
    out = buf.sample(4, 0, replace=True)
    assert len(out) == 4


def test_columnar_sample():
    buf = make(10)
    buf.push(batch(0, 10), 0)
    out = buf.sample(6, 0, columnar=True)
    assert isinstance(out, Batch)
    assert out["obs"].shape == (6, 4) and out["obs"].dtype == np.float32
    assert out["action"].dtype == np.int64 and out["done"].dtype == bool
    assert np.all(out["obs"][:, 0] == out["reward"])


def test_nested_and_torch_items():
    torch = pytest.importorskip("torch")
    buf = make(10)
    item = {"obs": {"a": torch.ones(3), "b": np.zeros(2, np.int32)}, "action": torch.tensor(1), "done": True}
    buf.push([item, item], 0)
    out = buf.sample(2, 0, columnar=True)
    assert out["obs"]["a"].shape == (2, 3) and out["obs"]["b"].dtype == np.int32
    listed = buf.sample(1, 0)[0]
    assert set(listed) == {"obs", "action", "done"} and set(listed["obs"]) == {"a", "b"}


def test_structure_mismatch_is_an_error():
    buf = make(10)
    buf.push(transition(0), 0)
    bad = transition(1)
    del bad["done"]
    with pytest.raises(ShapeError, match="done"):
        buf.push(bad, 0)
    wrong_shape = transition(2)
    wrong_shape["obs"] = np.zeros(5, np.float32)
    with pytest.raises(ShapeError, match="obs"):
        buf.push(wrong_shape, 0)
    with pytest.raises(ShapeError):
        buf.push([transition(3), {"x": 1}], 0)
    assert buf.count() == 1


def test_config_and_factory():
    assert NaiveReplayBuffer.default_config().type == "naive"
    with pytest.raises(ConfigError, match="replay_buffer_size"):
        NaiveReplayBuffer(EasyDict(replay_bufer_size=3))
    buf = create_buffer(EasyDict(type="naive", replay_buffer_size=7))
    assert isinstance(buf, NaiveReplayBuffer) and buf.replay_buffer_size == 7
    assert get_buffer_cls(EasyDict(type="naive")) is NaiveReplayBuffer
    with pytest.raises(RegistryError, match="naive"):
        create_buffer(EasyDict(type="naiv"))


def test_clear():
    buf = make(10)
    buf.push(batch(0, 4), 0)
    buf.clear()
    assert buf.count() == 0 and buf.push_count == 0 and buf.sample(1, 0) is None
    buf.push({"x": np.zeros(2)}, 0)  # a cleared buffer accepts a new structure
    assert buf.count() == 1
