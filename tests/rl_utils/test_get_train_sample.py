"""``get_train_sample``: a trajectory cut into unrolls of per-step lists, the rest handled per mode."""

import numpy as np
import pytest
import torch

from ding_ray.rl_utils import get_train_sample


def _trajectory(length, tensors=False):
    make = torch.tensor if tensors else np.array
    return [
        {"obs": make([float(i), 1.0]), "action": make(i), "reward": make([1.0]), "done": i == length - 1}
        for i in range(length)
    ]


def _steps(unroll):
    return [int(obs[0]) for obs in unroll["obs"]]


def test_whole_unrolls_and_the_last_one_completed_with_the_steps_before_it():
    unrolls = get_train_sample(_trajectory(5), 2)
    assert [_steps(u) for u in unrolls] == [[0, 1], [2, 3], [3, 4]]
    assert unrolls[2]["done"] == [False, True] and list(unrolls[0]) == ["obs", "action", "reward", "done"]
    assert [_steps(u) for u in get_train_sample(_trajectory(5), 2, "drop")] == [[0, 1], [2, 3]]
    assert [_steps(u) for u in get_train_sample(_trajectory(4), 2, "drop")] == [[0, 1], [2, 3]]


def test_null_padding_marks_zeroed_steps_done():
    for mode in ("null_padding", "last"):  # 'last' pads too when there is no whole unroll
        (unroll,) = get_train_sample(_trajectory(1, tensors=True), 3, mode)
        assert _steps(unroll) == [0, 0, 0] and unroll["done"] == [True, True, True]
        assert "null" not in unroll  # the first step's keys name the columns
    data = [{**step, "value_gamma": 0.9} for step in _trajectory(3)]
    unrolls = get_train_sample(data, 2, "null_padding")
    assert unrolls[1]["value_gamma"] == [0.9, 0.0] and unrolls[1]["reward"][1].tolist() == [0.0]
    assert unrolls[1]["obs"][1].tolist() == [0.0, 0.0] and unrolls[1]["done"] == [True, True]


def test_a_given_null_transition_and_dict_observations():
    null = {"obs": {"image": np.zeros(2)}, "action": -1, "reward": 0.0, "done": True}
    data = [{"obs": {"image": np.full(2, i)}, "action": i, "reward": 1.0, "done": False} for i in range(3)]
    (first, second) = get_train_sample(data, 2, "null_padding", null_transition=null)
    assert second["action"] == [2, -1] and [x.tolist() for x in second["obs"]["image"]] == [[2, 2], [0, 0]]
    assert set(first["obs"]) == {"image"}


def test_unroll_len_one_returns_the_data_and_bad_arguments_are_refused():
    data = _trajectory(3)
    assert get_train_sample(data, 1) is data
    with pytest.raises(ValueError, match="last_fn_type"):
        get_train_sample(data, 2, "pad")
    with pytest.raises(ValueError, match="unroll_len"):
        get_train_sample(data, 0)
