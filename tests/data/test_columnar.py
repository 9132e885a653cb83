import numpy as np
import pytest

from ding_ray.data import Batch, stack_items, unstack_batch
from ding_ray.data.columnar import as_batch, batch_size, take_rows
from ding_ray.errors import ShapeError
from tests.data.fakes import transition


def test_stack_and_unstack_round_trip():
    items = [transition(i) for i in range(5)]
    batch = stack_items(items)
    assert isinstance(batch, Batch) and batch_size(batch) == 5
    assert batch["obs"].shape == (5, 4) and batch["obs"].dtype == np.float32
    assert batch["action"].dtype == np.int64 and batch["done"].dtype == bool
    back = unstack_batch(batch)
    for a, b in zip(items, back, strict=True):
        assert set(a) == set(b)
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])


def test_nested_items_and_python_scalars():
    items = [{"obs": {"a": np.ones(2), "b": i}, "reward": 0.5 * i, "done": i == 2} for i in range(3)]
    batch = stack_items(items)
    assert batch["obs"]["a"].shape == (3, 2) and batch["obs"]["b"].dtype == np.int64
    assert batch["reward"].dtype == np.float32  # python floats become torch's default dtype
    assert batch["done"].tolist() == [False, False, True]
    assert unstack_batch(batch)[2]["obs"]["b"] == 2


def test_torch_tensors_become_numpy():
    torch = pytest.importorskip("torch")
    batch = stack_items([{"obs": torch.zeros(3), "action": torch.tensor(i)} for i in range(4)])
    assert isinstance(batch["obs"], np.ndarray) and batch["obs"].shape == (4, 3)
    assert batch["action"].tolist() == [0, 1, 2, 3]
    columnar = as_batch(Batch(obs=torch.ones(2, 3)))
    assert isinstance(columnar["obs"], np.ndarray)


def test_strings_become_object_columns():
    batch = stack_items([{"tag": "a", "x": 1}, {"tag": "bc", "x": 2}])
    assert batch["tag"].dtype == object and list(batch["tag"]) == ["a", "bc"]


def test_errors():
    with pytest.raises(ShapeError, match="same fields"):
        stack_items([{"a": 1}, {"b": 1}])
    with pytest.raises(ShapeError, match="same fields"):  # nested in item 1, a leaf in item 0
        stack_items([{"a": 1.0, "b": 2.0}, {"a": 1.0, "b": {"c": 2.0}}])
    with pytest.raises(ShapeError, match="same fields"):
        stack_items([{"a": 1.0}, {"a": 1.0, "b": 2.0}])
    with pytest.raises(ShapeError, match="different shapes"):
        stack_items([{"a": np.zeros(2)}, {"a": np.zeros(3)}])
    with pytest.raises(ShapeError, match="rows"):
        batch_size(Batch(a=np.zeros(2), b=np.zeros(3)))
    with pytest.raises(ShapeError):
        stack_items([])


def test_take_rows():
    batch = stack_items([transition(i) for i in range(6)])
    part = take_rows(batch, np.array([5, 0]))
    assert part["reward"].tolist() == [5.0, 0.0]
