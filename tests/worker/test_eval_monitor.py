import pytest

from ding_ray.worker import VectorEvalMonitor


@pytest.mark.parametrize(
    "env_num,n_episode,quota", [(5, 5, [1] * 5), (5, 12, [3, 3, 2, 2, 2]), (4, 2, [1, 1, 0, 0])]
)
def test_allocation_is_even(env_num, n_episode, quota):
    monitor = VectorEvalMonitor(env_num, n_episode)
    assert monitor.quota == quota and sum(quota) == n_episode


def test_short_episodes_do_not_dominate():
    # env 0 finishes episodes fast (return 1), env 1 slowly (return 100): 4 episodes -> 2 each
    monitor = VectorEvalMonitor(2, 4)
    for _ in range(5):
        monitor.update_reward(0, 1.0)
    assert not monitor.is_finished() and not monitor.needs_episode(0)
    monitor.update_reward(1, 100.0)
    monitor.update_reward(1, 100.0)
    assert monitor.is_finished()
    assert sorted(monitor.get_episode_return()) == [1.0, 1.0, 100.0, 100.0]
    assert monitor.get_current_episode() == 4 and monitor.get_latest_reward(1) == 100.0
