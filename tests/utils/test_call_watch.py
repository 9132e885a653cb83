"""CallWatch: the verdict on a call in flight from its elapsed time and the recent durations."""

import pytest

from ding_ray.utils.call_watch import OK, SLOW, TIMED_OUT, CallWatch


def test_slow_is_relative_to_the_recent_median_and_timed_out_is_absolute():
    watch = CallWatch(timeout_s=60, slow_factor=10, min_slow_s=2, window=3)
    assert watch.median is None and watch.verdict(59) == OK  # no median yet: only the timeout counts
    assert watch.verdict(61) == TIMED_OUT
    for seconds in (0.5, 0.4, 9.0):
        watch.done(seconds)
    assert watch.median == 0.5
    assert watch.verdict(4.9) == OK and watch.verdict(5.1) == SLOW  # 10x the median
    for seconds in (0.1, 0.1, 0.1):  # the window forgets the older calls
        watch.done(seconds)
    assert watch.median == 0.1 and watch.verdict(1.5) == OK and watch.verdict(2.1) == SLOW  # min_slow_s
    assert watch.verdict(60.5) == TIMED_OUT


def test_a_timeout_must_be_positive():
    with pytest.raises(ValueError, match="must be positive"):
        CallWatch(timeout_s=0)
