"""``ding_ray.data.buffer`` beyond what the DI-engine comparison covers: storage, files, views, errors,
and the form the pipeline stages use (``PipelineBuffer``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ding_ray.data import DequeBuffer
from ding_ray.data.buffer import BufferedData, PriorityExperienceReplay, use_time_check
from ding_ray.data.buffer.pipeline import PipelineBuffer, pipeline_buffer
from ding_ray.errors import DataFormatError, ShapeError


def transition(i: int) -> dict:
    return {
        "obs": torch.full((3,), float(i)),
        "action": torch.tensor([i % 2]),
        "reward": float(i),
        "done": False,
    }


def test_dict_data_is_stored_as_numpy_columns_and_sampled_as_copies():
    buffer_ = DequeBuffer(size=4)
    pushed = buffer_.push(transition(1), meta={"env": 0})
    assert isinstance(pushed, BufferedData) and pushed.meta == {"env": 0} and len(pushed.index) == 32
    item = buffer_.get(0)
    assert isinstance(item.data["obs"], np.ndarray) and item.data["obs"].tolist() == [1.0, 1.0, 1.0]
    item.data["obs"][:] = 7.0
    assert buffer_.get(0).data["obs"].tolist() == [1.0, 1.0, 1.0]
    assert buffer_.get(0).meta is buffer_.sample(1)[0].meta  # meta is the buffer's own dict
    for i in range(2, 7):
        buffer_.push(transition(i))
    assert [float(d.data["reward"]) for d in buffer_] == [3.0, 4.0, 5.0, 6.0]
    with pytest.raises(IndexError, match="holds 4 items"):
        buffer_.get(4)


def test_any_object_is_one_item_and_data_kinds_do_not_mix():
    buffer_ = DequeBuffer(size=3)
    buffer_.push("a")
    buffer_.push(("b", 2))
    assert [d.data for d in buffer_] == ["a", ("b", 2)]
    with pytest.raises(ShapeError, match="non-dict items"):
        buffer_.push({"x": 1})


def test_update_data_keeps_the_fields_and_delete_keeps_push_order():
    buffer_ = DequeBuffer(size=5)
    ids = [buffer_.push({"x": np.array([i, i])}).index for i in range(5)]
    with pytest.raises(ShapeError, match="fields the buffer stores"):
        buffer_.update(ids[0], data={"y": 1})
    buffer_.delete(ids[1:3])
    assert [d.data["x"].tolist() for d in buffer_] == [[0, 0], [3, 3], [4, 4]]
    assert buffer_.update(ids[4], data={"x": np.array([9, 9])}) and buffer_.get(-1).data["x"].tolist() == [
        9,
        9,
    ]
    buffer_.push({"x": np.array([5, 5])})
    assert buffer_.get_by_index(ids[3]).data["x"].tolist() == [3, 3] and buffer_.count() == 4
    with pytest.raises(KeyError, match="deleted"):
        buffer_.sample(indices=[ids[1]])


def test_save_and_load_data_round_trip(tmp_path):
    buffer_ = DequeBuffer(size=4)
    for i in range(6):
        buffer_.push(transition(i), meta={"env": i % 2, "score": np.float32(i)})
    path = str(tmp_path / "buffer.msgpack")
    buffer_.save_data(path)
    loaded = DequeBuffer(size=4)
    loaded.load_data(path)
    assert [(d.index, d.meta, float(d.data["reward"])) for d in loaded] == [
        (d.index, d.meta, float(d.data["reward"])) for d in buffer_
    ]
    assert loaded.get(0).meta["score"] == 2.0 and isinstance(loaded.get(0).meta["score"], float)
    with pytest.raises(DataFormatError, match="size that saved it"):
        DequeBuffer(size=8).load_data(path)


def test_view_shares_items_but_not_middleware():
    buffer_ = DequeBuffer(size=4)
    buffer_.use(use_time_check(buffer_, max_use=1))
    view = buffer_.view()
    view.push({"x": 1})
    assert buffer_.count() == 1 and view.middleware == ()
    view.sample(1)
    assert buffer_.count() == 1  # the view has no use_time_check
    buffer_.sample(1)
    assert view.count() == 0


def test_bad_calls_say_what_to_do():
    buffer_ = DequeBuffer(size=4)
    with pytest.raises(TypeError, match="takes no env step"):
        buffer_.push({"x": 1}, 100)
    with pytest.raises(TypeError, match="middleware callable"):
        buffer_.use("priority")
    with pytest.raises(ValueError, match="size .* or indices"):
        buffer_.sample()
    with pytest.raises(ValueError, match="needs groupby"):
        buffer_.sample(1, unroll_len=2)
    with pytest.raises(ValueError, match="at least 1"):
        DequeBuffer(size=0)


def test_pipeline_buffer_waits_for_a_batch_and_sends_priorities_back():
    plain = DequeBuffer(size=10)
    assert pipeline_buffer(plain).sample(4) is None  # ValueError: the learner skips this round
    prioritized = DequeBuffer(size=10)
    prioritized.use(PriorityExperienceReplay(prioritized, IS_weight=True))
    stages = pipeline_buffer(prioritized)
    assert isinstance(stages, PipelineBuffer) and pipeline_buffer(stages) is stages
    stages.push([transition(i) for i in range(3)], 0)
    stages.push(transition(3), 0)
    batch = stages.sample(4, 0)
    assert len(batch) == 4 and {"replay_unique_id", "IS", "priority_IS"} <= set(batch[0])
    assert batch[0]["IS"] == pytest.approx(float(batch[0]["priority_IS"][0]))
    stages.update({"replay_unique_id": [d["replay_unique_id"] for d in batch], "priority": [5.0] * 4})
    assert all(prioritized.get_by_index(d["replay_unique_id"]).meta["priority"] == 5.0 for d in batch)
