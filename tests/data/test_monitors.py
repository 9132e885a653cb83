import numpy as np
from easydict import EasyDict

from ding_ray.data import AdvancedReplayBuffer, NaiveReplayBuffer, SequenceReplayBuffer
from ding_ray.data.monitors import PeriodicThruputMonitor, ThruputController
from tests.data.fakes import batch, transition


class FakeWriter:
    def __init__(self):
        self.scalars = []

    def add_scalar(self, key, value, step):
        self.scalars.append((key, value, step))


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_periodic_thruput_reports_each_period():
    clock, writer = FakeClock(), FakeWriter()
    monitor = PeriodicThruputMonitor(10.0, writer, clock=clock)
    monitor.push_data_count += 5
    monitor.maybe_report(5)
    assert writer.scalars == []  # the period has not elapsed
    clock.now = 10.0
    monitor.sample_data_count += 3
    monitor.maybe_report(5)
    assert sorted(writer.scalars) == sorted(
        [("buffer/pushed", 5, 0), ("buffer/sampled", 3, 0), ("buffer/removed", 0, 0), ("buffer/size", 5, 0)]
    )
    clock.now = 20.0
    monitor.maybe_report(7)
    assert ("buffer/pushed", 0, 1) in writer.scalars and ("buffer/size", 7, 1) in writer.scalars


def test_buffers_feed_the_thruput_monitor():
    writer = FakeWriter()
    buf = AdvancedReplayBuffer(EasyDict(replay_buffer_size=8, max_use=1), tb_logger=writer)
    buf.push(batch(0, 8))
    used = len(set(buf.sample(4, 0, columnar=True)["replay_buffer_idx"].tolist()))
    buf.close()  # reports the period so far, then drops the data
    report = {k: v for k, v, _ in writer.scalars}
    assert report["buffer/pushed"] == 8 and report["buffer/sampled"] == 4
    assert report["buffer/removed"] == used and report["buffer/size"] == 8 - used
    assert buf.count() == 0


def test_min_push_sample_ratio_refuses_samples():
    clock = FakeClock()
    cfg = EasyDict(
        push_sample_rate_limit=dict(max=float("inf"), min=1.0),
        window_seconds=10.0,
        sample_min_limit_ratio=1.0,
    )
    controller = ThruputController(cfg, clock=clock)
    controller.record_push(10)
    assert controller.sample_refusal(10, 10) is None
    controller.record_sample(10)
    controller.record_sample(10)  # ratio 10 / 20 < 1
    assert "below the minimum" in controller.sample_refusal(1, 10)
    clock.now = 20.0  # the window forgets
    controller.record_push(1)
    assert controller.sample_refusal(1, 10) is None


def test_stats_keys():
    buf = NaiveReplayBuffer(EasyDict(replay_buffer_size=4))
    buf.push(transition(0))
    buf.sample(1, 0)
    stats = buf.stats()
    assert stats.pop("buffer/storage_bytes") > 0
    assert stats == {"buffer/size": 1, "buffer/pushed": 1, "buffer/sampled": 1}
    adv = AdvancedReplayBuffer(EasyDict(replay_buffer_size=4))
    assert {"buffer/removed", "buffer/push_rejected", "buffer/beta"} <= set(adv.stats())


def test_sequence_cache_is_dropped_on_clear():
    buf = SequenceReplayBuffer(EasyDict(replay_buffer_size=10))
    buf.seed(0)
    buf.push([transition(i) for i in range(4)])
    assert buf.sample(1, 4, 0) is not None
    buf.clear()
    buf.push([transition(i, done=i == 1) for i in range(4)])
    assert buf.sample(1, 4, 0) is None  # same push count, different content
    assert np.all(buf.sample(2, 2, 0, columnar=True, replace=True)["done"][:, 0] == False)  # noqa: E712
