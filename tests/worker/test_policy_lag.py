"""``PolicyLag``: quantiles of the lag between the data's policy version and the learner."""

import numpy as np

from ding_ray.worker.policy_lag import PolicyLag


def test_quantiles_count_rows_by_their_lag():
    lag = PolicyLag(max_lag=10)
    assert lag.summary() == {"median": None, "p95": None, "max": None, "rows": 0}
    assert lag.record(5, np.array([5, 5, 4, 3])) == 0.5  # lags 0, 0, 1, 2
    lag.record(7, np.array([-1]))  # the initial weights count from iteration 0: lag 7
    assert lag.counts[:8].tolist() == [2, 1, 1, 0, 0, 0, 0, 1]
    assert lag.quantile(0.4) == 0 and lag.quantile(0.5) == 1 and lag.quantile(0.8) == 2
    assert lag.summary() == {"median": 1, "p95": 7, "max": 7, "rows": 5}


def test_lags_past_the_last_bin_are_kept_in_it():
    lag = PolicyLag(max_lag=10)
    lag.record(1000, np.zeros(3, dtype=np.int64))
    assert lag.summary()["max"] == 10 and lag.rows == 3
