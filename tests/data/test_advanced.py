import numpy as np
import pytest
from easydict import EasyDict

from ding_ray.data import AdvancedReplayBuffer, Batch, PriorityError
from ding_ray.errors import ConfigError
from tests.data.fakes import batch, check_consistent, transition
from tests.data.stats import chi_square, chi_square_threshold


def make(seed=0, **cfg):
    buf = AdvancedReplayBuffer(EasyDict(cfg))
    buf.seed(seed)
    return buf


def set_priorities(buf, priorities):
    n = len(priorities)
    buf.update(
        {
            "replay_unique_id": np.arange(n),
            "replay_buffer_idx": np.arange(n),
            "priority": np.asarray(priorities),
        }
    )


def frequencies(buf, n_items, calls, size=16):
    counts = np.zeros(n_items)
    for _ in range(calls):
        np.add.at(counts, buf.sample(size, 0, columnar=True)["replay_buffer_idx"], 1)
    return counts


def test_sampling_frequencies_follow_priority_power_alpha():
    n, alpha = 20, 0.6
    buf = make(replay_buffer_size=n, alpha=alpha)
    buf.push(batch(0, n))
    priorities = np.arange(1, n + 1, dtype=float)
    set_priorities(buf, priorities)
    counts = frequencies(buf, n, calls=2000)
    expected = priorities**alpha / (priorities**alpha).sum()
    threshold = chi_square_threshold(n - 1)
    assert chi_square(counts, expected) < threshold
    # The same counts must clearly reject a wrong exponent, so the test can fail.
    wrong = priorities / priorities.sum()
    assert chi_square(counts, wrong) > 3 * threshold


def test_alpha_zero_is_uniform():
    buf = make(replay_buffer_size=10, alpha=0.0)
    buf.push(batch(0, 10))
    set_priorities(buf, np.linspace(0.1, 100, 10))
    counts = frequencies(buf, 10, calls=1000, size=8)
    assert chi_square(counts, np.full(10, 0.1)) < chi_square_threshold(9)


def test_is_weights_formula():
    n, alpha, beta = 8, 0.7, 0.5
    buf = make(replay_buffer_size=16, alpha=alpha, beta=beta, anneal_step=0)
    buf.push(batch(0, n))
    priorities = np.array([0.5, 1, 2, 3, 4, 5, 6, 7.0])
    set_priorities(buf, priorities)
    out = buf.sample(8, 0, columnar=True)
    prob = priorities**alpha / (priorities**alpha).sum()
    weights = (n * prob) ** -beta
    expected = weights[out["replay_buffer_idx"]] / weights.max()
    assert out["IS"].dtype == np.float32
    np.testing.assert_allclose(out["IS"], expected, rtol=1e-6)
    np.testing.assert_array_equal(out["priority"], priorities[out["replay_buffer_idx"]])
    listed = buf.sample(8, 0)
    assert {"IS", "priority", "replay_unique_id", "replay_buffer_idx", "obs"} <= set(listed[0])


def test_beta_anneals_linearly_to_one():
    buf = make(replay_buffer_size=16, beta=0.4, anneal_step=10)
    buf.push(batch(0, 4))
    set_priorities(buf, [1.0, 2.0, 3.0, 4.0])
    seen = []
    for _ in range(12):
        seen.append(buf.beta)
        out = buf.sample(4, 0, columnar=True)
        p = buf.state_dict()["priority"] ** 0.6
        expected = (p[out["replay_buffer_idx"]] / p.min()) ** -seen[-1]
        np.testing.assert_allclose(out["IS"], expected, rtol=1e-6)
    np.testing.assert_allclose(seen[:11], 0.4 + 0.06 * np.arange(11))
    assert seen[11] == 1.0
    assert make(replay_buffer_size=4, beta=0.4, anneal_step=0).beta == 0.4


def test_new_items_get_max_priority_or_their_own():
    buf = make(replay_buffer_size=16)
    buf.push(batch(0, 2))
    set_priorities(buf, [5.0, 0.5])
    buf.push(transition(2))
    item = dict(transition(3), priority=0.25)
    buf.push(item)
    assert buf.state_dict()["priority"].tolist() == [5.0, 0.5, 5.0, 0.25]
    buf.push(Batch(batch(4, 2), priority=np.array([np.nan, 2.0])))
    assert buf.state_dict()["priority"].tolist()[4:] == [5.0, 2.0]


def test_stale_and_foreign_updates_are_ignored():
    buf = make(replay_buffer_size=4)
    buf.push(batch(0, 4))
    old = buf.sample(4, 0, columnar=True)
    buf.push(batch(4, 2))  # overwrites rows 0 and 1
    buf.update(
        {
            "replay_unique_id": old["replay_unique_id"],
            "replay_buffer_idx": old["replay_buffer_idx"],
            "priority": np.full(4, 9.0),
        }
    )
    priority = buf.state_dict()["priority"]
    for uid, idx in zip(old["replay_unique_id"], old["replay_buffer_idx"], strict=True):
        assert priority[idx] == (9.0 if uid >= 2 else 1.0)
    buf.update({"replay_unique_id": [3, 99], "replay_buffer_idx": [-1, 12], "priority": [7.0, 7.0]})
    assert np.all(buf.state_dict()["priority"] != 7.0)


def test_update_rejects_malformed_info():
    buf = make(replay_buffer_size=4)
    buf.push(batch(0, 4))
    with pytest.raises(PriorityError, match="same length"):
        buf.update({"replay_unique_id": [0, 1], "replay_buffer_idx": [0], "priority": [1.0]})
    with pytest.raises(PriorityError, match="finite"):
        buf.update({"replay_unique_id": [0], "replay_buffer_idx": [0], "priority": [np.nan]})
    with pytest.raises(PriorityError, match="finite"):
        buf.update({"replay_unique_id": [0], "replay_buffer_idx": [0], "priority": [-1.0]})
    with pytest.raises(PriorityError, match="replay_unique_id"):
        buf.update({"priority": [1.0]})
    buf.update(
        {"replay_unique_id": [0], "replay_buffer_idx": [0], "priority": [0.0]}
    )  # floored, kept sampleable
    assert buf.state_dict()["priority"][0] > 0


def test_max_use_removes_items():
    buf = make(replay_buffer_size=8, max_use=2)
    buf.push(batch(0, 8))
    uses = np.zeros(8, int)
    while buf.count() >= 2:
        out = buf.sample(2, 0, columnar=True)
        np.add.at(uses, out["replay_buffer_idx"], 1)
    assert uses.max() <= 2 and buf.count() == 8 - int((uses == 2).sum())
    assert buf.stats()["buffer/removed"] == int((uses == 2).sum())


def test_use_counts_count_every_draw_of_a_repeated_row():
    buf = make(replay_buffer_size=8)
    buf.push(batch(0, 8))
    set_priorities(buf, [1000.0] + [1e-3] * 7)  # row 0 takes nearly every stratum
    draws = np.zeros(8, int)
    for _ in range(5):
        np.add.at(draws, buf.sample(8, 0, columnar=True)["replay_buffer_idx"], 1)
    assert draws[0] > 5 and (buf.state_dict()["use_count"] == draws).all()


def test_max_staleness_is_honoured():
    buf = make(replay_buffer_size=16, max_staleness=3)
    buf.push(batch(0, 4))  # collected at learner iteration 0
    assert len(buf.sample(4, 3, columnar=True)["reward"]) == 4
    assert buf.sample(1, 4) is None and buf.count() == 0  # all are 4 iterations old now
    buf.push(batch(10, 4))  # collected at iteration 4 (the latest sample call)
    out = buf.sample(4, 7, columnar=True)
    assert sorted(out["reward"].tolist()) == [10, 11, 12, 13]
    assert buf.sample(1, 8) is None


def test_max_staleness_uses_collect_iter_field():
    buf = make(replay_buffer_size=16, max_staleness=3)
    buf.push(Batch(batch(0, 8), collect_iter=np.array([0, 0, 0, 0, 6, 6, 7, 7])))
    for _ in range(20):
        out = buf.sample(4, 9, columnar=True)
        assert set(out["reward"].tolist()) <= {4, 5, 6, 7}
        np.testing.assert_array_equal(out["collect_iter"], out["reward"].astype(int) // 2 + 4)
    assert buf.count() == 4


def test_samples_carry_use_and_staleness_as_di_engine_does():
    """DI-engine's AdvancedReplayBuffer adds ``use`` (this draw included) and ``staleness``
    (``cur_learner_iter`` minus the item's ``collect_iter``) to every sampled item."""
    buf = make(replay_buffer_size=4)
    buf.push([dict(transition(i), collect_iter=c) for i, c in enumerate([2, 2, 5, 5])])
    seen = np.zeros(4, int)
    for learner_iter in (7, 8):
        for item in buf.sample(4, learner_iter):
            seen[item["replay_buffer_idx"]] += 1
            assert type(item["use"]) is int and item["use"] == seen[item["replay_buffer_idx"]]
            assert item["staleness"] == learner_iter - item["collect_iter"]
    columns = buf.sample(4, 9, columnar=True)
    np.testing.assert_array_equal(columns["staleness"], 9 - columns["collect_iter"])
    buf.push(buf.sample(1, 9))  # pushed back: a new item, whose use count starts afresh
    assert [item["use"] for item in buf.sample(4, 9, sample_range=slice(-1, None))] == [4] * 4


def test_ring_overwrite_order_and_ids():
    buf = make(replay_buffer_size=5)
    for i in range(12):
        buf.push(transition(i))
    out = buf.sample(5, 0, columnar=True)
    ids = out["reward"].astype(int)
    assert set(ids.tolist()) <= {7, 8, 9, 10, 11}
    np.testing.assert_array_equal(out["replay_unique_id"], ids)  # unique id = push index
    np.testing.assert_array_equal(out["replay_buffer_idx"], ids % 5)
    assert buf.count() == 5 and buf.push_count == 12
    newest = buf.sample(3, 0, sample_range=slice(-1, None), columnar=True)
    assert newest["reward"].tolist() == [11, 11, 11]
    oldest_two = buf.sample(5, 0, sample_range=slice(0, 2), columnar=True)
    assert set(oldest_two["reward"].tolist()) == {7, 8}


def test_not_enough_data_and_min_limit_ratio():
    buf = make(replay_buffer_size=16, thruput_controller=dict(sample_min_limit_ratio=2.0))
    assert buf.sample(1, 0) is None
    buf.push(batch(0, 5))
    assert buf.sample(3, 0) is None
    assert len(buf.sample(2, 0)) == 2


def test_push_sample_rate_limit():
    buf = make(replay_buffer_size=100, thruput_controller=dict(push_sample_rate_limit=dict(max=2.0)))
    buf.push(batch(0, 10))  # sampling has not started: pushes are always accepted
    buf.sample(10, 0)
    buf.push(batch(10, 10))  # 20 pushed / 10 sampled = 2: still allowed
    buf.push(batch(20, 1))  # would be 2.1: refused and counted
    assert buf.count() == 20 and buf.stats()["buffer/push_rejected"] == 1


def test_config_is_checked():
    assert AdvancedReplayBuffer.default_config().type == "advanced"
    with pytest.raises(ConfigError, match="alpah|alpha"):
        AdvancedReplayBuffer(EasyDict(alpah=0.5))
    buf = AdvancedReplayBuffer(EasyDict(replay_buffer_size=100, max_use=3))
    assert buf.replay_buffer_size == 100 and buf.cfg.max_use == 3


def test_items_are_intact_with_metadata():
    buf = make(replay_buffer_size=64)
    buf.push([transition(i) for i in range(40)])
    for item in buf.sample(32, 0):
        i = check_consistent(item)
        assert item["replay_unique_id"] == i and item["replay_buffer_idx"] == i


def test_quality_monitor_reports_to_tensorboard():
    class FakeWriter:
        def __init__(self):
            self.scalars = []

        def add_scalar(self, key, value, step):
            self.scalars.append((key, value, step))

    writer = FakeWriter()
    cfg = EasyDict(replay_buffer_size=16, monitor=dict(sampled_data_attr=dict(average_range=2, print_freq=4)))
    buf = AdvancedReplayBuffer(cfg, tb_logger=writer)
    buf.push(batch(0, 16))
    for it in range(8):
        buf.sample(4, it)
    keys = {k for k, _, _ in writer.scalars}
    assert {"buffer/use_count_mean", "buffer/staleness_mean", "buffer/priority_mean"} <= keys
    assert sorted({s for _, _, s in writer.scalars}) == [3, 7]
    staleness = [v for k, v, s in writer.scalars if k == "buffer/staleness_mean" and s == 7]
    assert staleness == [6.5]  # calls at iterations 6 and 7 of data collected at 0


def test_sample_of_zero_items_is_empty_as_in_the_uniform_buffer():
    buf = make(replay_buffer_size=20)
    buf.push(batch(0, 10))
    assert buf.sample(0) == []
    empty = buf.sample(0, columnar=True)
    assert len(empty["replay_buffer_idx"]) == 0 and empty["obs"].shape[0] == 0
    assert buf.count() == 10 and len(buf.sample(4)) == 4  # nothing held was touched


def test_unseeded_prioritized_draws_are_di_engine_s_from_numpy_s_global_stream():
    """Without ``seed``, as DI-engine's AdvancedReplayBuffer: one uniform number per item from
    numpy's global generator, item i's in the i-th of ``size`` equal slices of the total weight."""
    n, size, alpha = 12, 5, 0.6
    buf = AdvancedReplayBuffer(EasyDict(replay_buffer_size=n, alpha=alpha))
    buf.push(batch(0, n))
    priorities = np.arange(1, n + 1, dtype=float)
    set_priorities(buf, priorities)
    np.random.seed(4)
    got = buf.sample(size, 0, columnar=True)["replay_buffer_idx"]
    after = np.random.random()
    np.random.seed(4)
    weights = priorities**alpha
    mass = (np.arange(size) / size + np.random.uniform(size=size) / size) * weights.sum()
    assert got.tolist() == np.searchsorted(np.cumsum(weights), mass, side="right").tolist()
    assert after == np.random.random()  # the sample took exactly its size draws
