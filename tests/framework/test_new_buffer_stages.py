"""The pipeline stages on DI-engine's new buffer (``ding_ray.data.DequeBuffer`` with middleware), as
its framework scripts (``dqn_per.py``) use them: each transition one item, each episode one item,
no training until a batch is held, priorities back to ``PriorityExperienceReplay``."""

from types import SimpleNamespace

import numpy as np
from easydict import EasyDict

from ding_ray.data import DequeBuffer
from ding_ray.data.buffer import PriorityExperienceReplay
from ding_ray.framework.middleware import data_pusher, offpolicy_data_fetcher

CFG = EasyDict(policy=dict(learn=dict(batch_size=4), collect=dict(unroll_len=1)))


def transitions(n: int) -> list[dict]:
    return [{"obs": np.full(2, i, np.float32), "action": np.int64(i % 2), "reward": 1.0} for i in range(n)]


def test_pusher_and_fetcher_on_a_prioritized_deque_buffer():
    buffer_ = DequeBuffer(size=16)
    buffer_.use(PriorityExperienceReplay(buffer_, IS_weight=True))
    push, fetch = data_pusher(CFG, buffer_), offpolicy_data_fetcher(CFG, buffer_)
    ctx = SimpleNamespace(trajectories=transitions(3), env_step=3, train_iter=0, train_output=None)
    push(ctx)
    assert buffer_.count() == 3 and ctx.trajectories is None

    ctx.trajectories = transitions(5)
    push(ctx)
    run = fetch(ctx)
    next(run)
    batch = ctx.train_data
    assert len(batch) == 4 and all("IS" in d and "priority_IS" in d for d in batch)
    ctx.train_output = {"priority": np.arange(1.0, 5.0)}
    list(run)
    updated = {
        d["replay_unique_id"]: buffer_.get_by_index(d["replay_unique_id"]).meta["priority"] for d in batch
    }
    assert set(updated.values()) <= {1.0, 2.0, 3.0, 4.0}


def test_fetcher_skips_training_until_a_batch_is_held_and_episodes_are_one_item_each():
    buffer_ = DequeBuffer(size=16)
    ctx = SimpleNamespace(
        trajectories=None, episodes=[transitions(3), transitions(2)], env_step=5, train_iter=0
    )
    data_pusher(CFG, buffer_)(ctx)
    assert buffer_.count() == 2 and len(buffer_.get(0).data) == 3
    ctx.train_output = None
    run = offpolicy_data_fetcher(CFG, buffer_)(ctx)
    next(run)
    assert ctx.train_data is None
