import numpy as np
import pytest

from ding_ray.data.rate_limiter import RateLimiter
from ding_ray.errors import ConfigError


def test_warmup_then_ratio():
    limiter = RateLimiter(samples_per_insert=4, min_size_to_sample=100, tolerance=64)
    assert not limiter.can_sample(32)  # nothing inserted yet
    assert limiter.can_insert(100)
    limiter.reserve_insert(100)
    assert not limiter.can_sample(32)  # reserved is not inserted
    limiter.commit_insert(100)
    assert limiter.can_sample(64) and not limiter.can_sample(65)  # at the target, plus tolerance
    limiter.sample(64)
    assert not limiter.can_sample(1)
    assert limiter.can_insert(32)  # 4 * 32 = 128 samples allowed after it: 64 ahead of the sampled
    assert not limiter.can_insert(33)  # 4 * 33 - 64 = 68 > tolerance
    limiter.reserve_insert(32)
    assert not limiter.can_insert(1)  # the reservation counts
    limiter.commit_insert(32)
    assert limiter.can_sample(128) and not limiter.can_sample(129)


def test_cancel_restores_room():
    limiter = RateLimiter(2, 10, 20)
    limiter.reserve_insert(10)
    limiter.commit_insert(10)
    limiter.reserve_insert(10)
    assert not limiter.can_insert(10)
    limiter.cancel_insert(10)  # the collector died
    assert limiter.can_insert(10) and limiter.pending == 0
    limiter.sample(20)
    limiter.cancel_sample(20)  # the buffer served nothing
    assert limiter.sampled == 0


@pytest.mark.parametrize("collector_share", [0.05, 0.5, 0.95])
def test_ratio_holds_whatever_the_speeds(collector_share):
    """Random interleavings of inserts and samples: the error never leaves [-tolerance, tolerance]."""
    rng = np.random.default_rng(0)
    limiter = RateLimiter(samples_per_insert=8, min_size_to_sample=256, tolerance=1024)
    limiter.check_chunks(64, 256)
    for _ in range(20000):
        if rng.random() < collector_share:
            if limiter.can_insert(64):
                limiter.reserve_insert(64)
                limiter.commit_insert(64)
        elif limiter.can_sample(256):
            limiter.sample(256)
        if limiter.inserted >= limiter.min_size_to_sample:
            assert -limiter.tolerance - 8 * 64 <= limiter.error <= limiter.tolerance
    assert limiter.inserted > 256 and limiter.sampled > 0  # neither side starved: no deadlock
    assert limiter.samples_per_insert_now() == pytest.approx(8, rel=0.2)


def test_deadlock_prone_settings_are_rejected():
    with pytest.raises(ConfigError, match="deadlock"):
        RateLimiter(8, 100, 100).check_chunks(insert_size=64, sample_size=256)
    with pytest.raises(ConfigError):
        RateLimiter(0, 100, 100)


def test_block_lets_the_learner_run_ahead_and_holds_the_collectors_at_the_tolerance():
    limiter = RateLimiter(samples_per_insert=2, min_size_to_sample=10, tolerance=20, backpressure="block")
    assert not limiter.can_sample(4)  # nothing before the minimum size
    limiter.reserve_insert(10)
    limiter.commit_insert(10)
    for _ in range(100):  # the learner never waits once the buffer has its minimum, whatever it sampled
        assert limiter.can_sample(4)
        limiter.sample(4)
    limiter = RateLimiter(samples_per_insert=2, min_size_to_sample=10, tolerance=20, backpressure="block")
    inserted = 0
    while limiter.can_insert(5):  # nothing sampled: the collectors stop 20 / 2 = 10 items past the minimum
        limiter.reserve_insert(5)
        limiter.commit_insert(5)
        inserted += 5
    assert inserted == 20
    limiter.sample(10)  # the learner took 10 items: 5 more may come
    assert limiter.can_insert(5) and not limiter.can_insert(10)


def test_drop_holds_nobody_back():
    limiter = RateLimiter(samples_per_insert=2, min_size_to_sample=10, tolerance=20, backpressure="drop")
    for _ in range(50):
        assert limiter.can_insert(5)
        limiter.reserve_insert(5)
        limiter.commit_insert(5)
    assert limiter.can_sample(1000)
    with pytest.raises(ConfigError, match="ray.backpressure must be one of 'ratio', 'block', 'drop'"):
        RateLimiter(2, 10, 20, backpressure="queue")


def test_samples_waiting_on_the_learner_are_bounded_and_a_dry_learner_is_counted():
    limiter = RateLimiter(samples_per_insert=1.0, min_size_to_sample=10, tolerance=100, max_in_flight=2)
    assert not limiter.start_sample(4) and limiter.learner_waits == 0  # not filled yet: no wait counted
    limiter.reserve_insert(10)
    limiter.commit_insert(10)
    assert limiter.start_sample(4) and limiter.start_sample(4)
    assert not limiter.wants_sample(4) and not limiter.start_sample(4)  # two wait on the learner
    limiter.sample_done(4, trained=True)
    limiter.sample_done(4, trained=False)  # an empty sample does not count
    assert limiter.in_flight == 0 and limiter.sampled == 4
    limiter.reserve_insert(100)  # the inserts are behind: nothing committed yet
    assert limiter.start_sample(100) is False and limiter.learner_waits == 1
    limiter.restore({"inserted": 50, "sampled": 30})
    assert (limiter.inserted, limiter.sampled) == (50, 30)
