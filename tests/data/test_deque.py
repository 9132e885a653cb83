"""``deque``: DI-engine's DequeBufferWrapper semantics, and buffers built from a sibling's config."""

import random

import numpy as np
import pytest
from easydict import EasyDict

from ding_ray.config import ConfigError, compile_config
from ding_ray.data import AdvancedReplayBuffer, DequeBufferWrapper, NaiveReplayBuffer, create_buffer
from tests.data.fakes import check_consistent, transition
from tests.data.stats import chi_square, chi_square_threshold


def test_uniform_waits_for_a_full_batch_prioritized_repeats_what_it_holds():
    """DI-engine's wrapper: uniform sample(n) is None until n items are held (the learner trains
    nothing before), prioritized sample(n) draws n items with repeats from any held."""
    buf = create_buffer(EasyDict(type="deque", replay_buffer_size=100))
    assert isinstance(buf, DequeBufferWrapper) and buf.sample(64, 0) is None
    buf.push([transition(i) for i in range(63)], 0)
    assert buf.sample(64, 0) is None
    buf.push([transition(63)], 0)
    got = buf.sample(64, 0)
    assert len(got) == 64 and "IS" not in got[0]  # only with priority_IS_weight

    prio = create_buffer(EasyDict(type="deque", replay_buffer_size=100, priority=True))
    assert prio.sample(64, 0) is None
    prio.push([transition(i) for i in range(8)], 0)
    got = prio.sample(64, 0)
    assert len(got) == 64 and set(check_consistent(x) for x in got) <= set(range(8))


def test_uniform_by_default_prioritized_with_priority():
    rng_pushes = [transition(i) for i in range(4)]
    uniform = DequeBufferWrapper(EasyDict(replay_buffer_size=10))
    uniform.push(rng_pushes, 0)
    uniform.update(
        {"priority": [100.0] * 4, "replay_unique_id": [0, 1, 2, 3], "replay_buffer_idx": [0, 1, 2, 3]}
    )
    counts = np.zeros(4)
    for _ in range(2000):
        counts[check_consistent(uniform.sample(1, 0)[0])] += 1
    assert chi_square(counts, np.full(4, 0.25)) < chi_square_threshold(3)

    prio = DequeBufferWrapper(
        EasyDict(replay_buffer_size=10, priority=True, priority_IS_weight=True, priority_power_factor=1.0)
    )
    prio.push(rng_pushes, 0)
    first = prio.sample(4, 0)
    assert all("IS" in x for x in first)
    prio.update(
        {
            "priority": [1.0, 1.0, 2.0, 5000.0],  # the last is capped at priority_max_limit=1000
            "replay_unique_id": [x["replay_unique_id"] for x in sorted(first, key=check_consistent)],
            "replay_buffer_idx": [x["replay_buffer_idx"] for x in sorted(first, key=check_consistent)],
        }
    )
    counts = np.zeros(4)
    for _ in range(3000):
        counts[check_consistent(prio.sample(1, 0)[0])] += 1
    expected = np.array([1.0, 1.0, 2.0, 1000.0]) / 1004.0
    assert chi_square(counts, expected) < chi_square_threshold(3)


def test_each_buffer_class_takes_the_section_compiled_for_another(tmp_path):
    main = dict(
        exp_name=str(tmp_path / "x"),
        env=dict(env_id="CartPole-v1"),
        policy=dict(other=dict(replay_buffer=dict(replay_buffer_size=123))),
    )
    for compiled_type in ("naive", "advanced", "deque"):
        create = dict(
            env=dict(type="gymnasium"), policy=dict(type="dqn"), replay_buffer=dict(type=compiled_type)
        )
        section = compile_config(
            main, auto=True, create_cfg=create, save_cfg=False
        ).policy.other.replay_buffer
        for cls in (NaiveReplayBuffer, AdvancedReplayBuffer, DequeBufferWrapper):
            buf = cls(section)
            assert buf.cfg.replay_buffer_size == 123, (compiled_type, cls)
    # A hand-written config is still checked key by key.
    with pytest.raises(ConfigError, match="alpha"):
        NaiveReplayBuffer(EasyDict(replay_buffer_size=10, alpha=0.6))


def test_seeded_sampling_repeats_and_columnar_batches_push():
    from tests.data.fakes import batch

    draws = []
    for _ in range(2):
        buf = DequeBufferWrapper(EasyDict(replay_buffer_size=50))
        buf.seed(7)
        buf.push(batch(0, 40), 0)  # the form the buffer actor receives
        draws.append([check_consistent(x) for x in buf.sample(16, 0)])
    assert draws[0] == draws[1] and len(set(draws[0])) == 16


def test_uniform_draws_are_di_engine_s_random_sample_of_the_held_items():
    """DI-engine's wrapper samples its DequeBuffer with random.sample: distinct items, and the same
    items for the same state of Python's generator (set_pkg_seed seeds it)."""
    buf = DequeBufferWrapper(EasyDict(replay_buffer_size=8))
    buf.push([transition(i) for i in range(12)], 0)  # holds 4..11
    random.seed(3)
    got = [check_consistent(x) for x in buf.sample(5, 0)]
    random.seed(3)
    assert got == [4 + p for p in random.sample(range(8), 5)]
    buf.seed(7)  # its own generator from now on
    first = [check_consistent(x) for x in buf.sample(8, 0)]
    assert sorted(first) == list(range(4, 12))


def test_uniform_buffer_leaves_numpy_s_global_stream_alone():
    """DI-engine's deque buffer draws nothing from numpy's global generator (env resets and
    exploration do): creating, filling and sampling ding_ray's must not move it either."""
    np.random.seed(5)
    expected = np.random.random(3)
    np.random.seed(5)
    buf = DequeBufferWrapper(EasyDict(replay_buffer_size=8))
    buf.push([transition(i) for i in range(8)], 0)
    assert len(buf.sample(4, 0)) == 4
    assert np.random.random(3).tolist() == expected.tolist()
