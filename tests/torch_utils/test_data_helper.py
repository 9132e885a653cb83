"""The nested data conversions on real arrays and tensors."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest
import torch

from ding_ray.torch_utils import (
    same_shape,
    tensor_to_list,
    to_device,
    to_dtype,
    to_item,
    to_list,
    to_ndarray,
    to_tensor,
)

Step = namedtuple("Step", ["obs", "reward"])


def test_to_tensor_makes_float64_arrays_float32_and_shares_other_arrays():
    ints = np.arange(3)
    out = to_tensor({"f": np.ones(2), "i": ints, "scalar": 1.5, "flag": True, "name": "x"})
    assert out["f"].dtype == torch.float32
    assert out["scalar"].dtype == torch.float32 and out["scalar"].item() == 1.5
    assert out["flag"] is True and out["name"] == "x"
    ints[0] = 9  # from_numpy: the tensor is a view of the array
    assert out["i"][0].item() == 9


def test_to_tensor_keeps_named_tuples_ignored_keys_and_untransformed_scalars():
    raw = np.zeros(2)
    out = to_tensor(
        {"step": Step(np.ones(3), 2), "raw": raw, "n": 3}, torch.float32, ["raw"], transform_scalar=False
    )
    assert isinstance(out["step"], Step) and out["step"].reward.dtype == torch.float32
    assert out["raw"] is raw and out["n"] == 3
    assert torch.equal(to_tensor([1, 2, 3]), torch.tensor([1, 2, 3]))
    assert to_tensor([]) == []


def test_to_ndarray_and_back():
    out = to_ndarray(
        {"t": torch.tensor([1.0, 2.0]), "seq": [1, 2], "empty": [], "step": Step(torch.ones(1), 4)}
    )
    assert out["t"].dtype == np.float32 and out["seq"].tolist() == [1, 2]
    assert out["empty"] is None
    assert isinstance(out["step"], Step) and out["step"].reward == np.array(4)
    assert to_ndarray(torch.arange(3), np.float64).dtype == np.float64


def test_to_list_and_tensor_to_list():
    data = {"t": torch.tensor([[1, 2]]), "pair": (torch.tensor(0.5), 3), "none": None}
    assert tensor_to_list(data) == {"t": [[1, 2]], "pair": [0.5, 3], "none": None}
    assert to_list({"a": np.ones(2), "t": torch.zeros(1)}) == {"a": [1.0, 1.0], "t": [0.0]}
    with pytest.raises(TypeError, match="tensor_to_list cannot convert a ndarray"):
        tensor_to_list(np.ones(2))


def test_to_item_drops_what_has_several_elements_unless_told_not_to():
    data = {"loss": torch.tensor([0.25]), "q": torch.ones(3), "n": np.array([2]), "seq": (torch.tensor(1), 2)}
    assert to_item(data) == {"loss": 0.25, "n": 2, "seq": [1, 2]}
    with pytest.raises(RuntimeError):
        to_item(data, ignore_error=False)


def test_to_dtype_and_to_device_turn_tuples_into_lists():
    out = to_dtype({"a": (torch.arange(2), [torch.zeros(1, dtype=torch.int32)])}, torch.float64)
    assert out["a"][0].dtype == torch.float64 and out["a"][1][0].dtype == torch.float64
    module = torch.nn.Linear(2, 2)
    moved = to_device(
        {"m": module, "step": Step(torch.ones(1), 1.0), "kept": [1]}, "cpu", ignore_keys=["kept"]
    )
    assert moved["m"] is module and moved["kept"] == [1]
    assert isinstance(moved["step"], list) and moved["step"][1] == 1.0
    with pytest.raises(TypeError, match="to_device cannot convert a object"):
        to_device(object(), "cpu")


def test_same_shape():
    assert same_shape([torch.zeros(2, 3), np.zeros((2, 3))])
    assert not same_shape([torch.zeros(2, 3), torch.zeros(3, 2)])
    with pytest.raises(TypeError, match="takes a list"):
        same_shape((torch.zeros(1),))
