import numpy as np
import pytest
from easydict import EasyDict

from ding_ray.data import Batch, EpisodeReplayBuffer, SequenceReplayBuffer, create_buffer
from ding_ray.errors import ShapeError
from tests.data.fakes import batch, check_consistent, transition


def episode(start, length):
    return [transition(start + t, done=t == length - 1) for t in range(length)]


def test_episode_buffer_push_forms_and_sample():
    buf = create_buffer(EasyDict(type="episode", replay_buffer_size=3))
    buf.seed(0)
    buf.push(episode(0, 5))  # one episode as a list of transitions
    buf.push([batch(10, 3), episode(20, 2)])  # several episodes
    buf.push(batch(30, 7))  # one episode as a Batch
    assert buf.count() == 3 and buf.push_count == 4  # the first episode was overwritten
    lengths = sorted(len(ep) for ep in buf.sample(3, 0))
    assert lengths == [2, 3, 7]
    for ep in buf.sample(3, 0):
        ids = [check_consistent(item) for item in ep]
        assert ids == list(range(ids[0], ids[0] + len(ids)))
    columnar = buf.sample(2, 0, columnar=True)
    assert all(isinstance(ep, Batch) for ep in columnar)
    assert buf.sample(4, 0) is None and len(buf.sample(4, 0, replace=True)) == 4


def test_episode_buffer_copies_out():
    buf = EpisodeReplayBuffer(EasyDict(replay_buffer_size=2))
    buf.push(batch(0, 3))
    first = buf.sample(1, 0, columnar=True)[0]
    first["obs"][:] = -1
    assert buf.sample(1, 0, columnar=True)[0]["obs"].min() == 0


def test_episode_buffer_rejects_single_transition_and_mismatch():
    buf = EpisodeReplayBuffer(EasyDict(replay_buffer_size=2))
    with pytest.raises(ShapeError):
        buf.push(transition(0))
    buf.push(episode(0, 2))
    with pytest.raises(ShapeError):
        buf.push([{"other": np.zeros(2)}])


def make_sequence_buffer(size=100, **cfg):
    buf = SequenceReplayBuffer(EasyDict(replay_buffer_size=size, **cfg))
    buf.seed(0)
    return buf


def test_sequences_never_cross_episode_boundaries():
    buf = make_sequence_buffer(64)
    rng = np.random.default_rng(0)
    start = 0
    while start < 150:  # episodes of random length, ring wraps around
        length = int(rng.integers(1, 9))
        buf.push(episode(start, length))
        start += length
    for _ in range(50):
        runs = buf.sample(8, 4, 0, columnar=True)
        if runs is None:
            continue
        rewards, done = runs["reward"], runs["done"]
        assert rewards.shape == (8, 4)
        np.testing.assert_array_equal(np.diff(rewards, axis=1), 1)  # contiguous
        assert not done[:, :-1].any()  # only the last step may end an episode


def test_sequences_cross_when_asked_and_list_form():
    buf = make_sequence_buffer(20)
    for start in range(0, 20, 2):
        buf.push(episode(start, 2))
    assert buf.sample(1, 3, 0) is None
    runs = buf.sample(3, 3, 0, cross_episode=True)
    assert len(runs) == 3 and all(len(run) == 3 for run in runs)
    for run in runs:
        ids = [check_consistent(item) for item in run]
        assert ids[2] - ids[0] == 2


def test_sequence_boundaries_from_an_episode_id_field():
    buf = make_sequence_buffer(40, episode_id_key="env_id")
    # Two envs pushing interleaved: consecutive items of one env are never neighbours.
    items = [dict(transition(i), env_id=np.int64(i % 2)) for i in range(20)]
    buf.push(items)
    assert buf.sample(1, 2, 0) is None
    blocks = [dict(transition(i), env_id=np.int64(1 if i >= 25 else 0)) for i in range(20, 30)]
    buf.push(blocks)
    runs = buf.sample(5, 4, 0, columnar=True, replace=True)
    assert np.all(np.diff(runs["env_id"], axis=1) == 0)


def test_sequence_sample_range():
    buf = make_sequence_buffer(30)
    buf.push(episode(0, 30))
    runs = buf.sample(4, 3, 0, sample_range=slice(-5, None), replace=True, columnar=True)
    assert runs["reward"].min() >= 25
