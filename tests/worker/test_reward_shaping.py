"""EpisodeSerialCollector(reward_shaping=True): each finished episode goes through its env's
``reward_shaping(transitions)``, in this process (base manager) or in the env's worker."""

from functools import partial

import pytest

import tests.fakes  # noqa: F401 - registers the fake envs
from ding_ray.envs import GymnasiumEnv, create_env_manager
from ding_ray.errors import EnvError
from ding_ray.policy import DQNPolicy
from ding_ray.worker import EpisodeSerialCollector

MODEL = dict(obs_shape=2, action_shape=2, encoder_hidden_size_list=[16], dueling=False)


class SparseRewardEnv(GymnasiumEnv):
    """Countdown whose reward is paid at the episode's end: reward_shaping moves it to the last step."""

    def reward_shaping(self, transitions):
        total = sum(t["reward"] for t in transitions)
        for t in transitions:
            t["reward"] = 0.0
        transitions[-1]["reward"] = total
        return transitions


@pytest.mark.parametrize("manager", ["base", "subprocess"])
def test_reward_shaping_runs_the_envs_own_method(manager):
    env = create_env_manager(
        dict(type=manager), [partial(SparseRewardEnv, cfg=dict(env_id="Countdown-v0")) for _ in range(2)]
    )
    env.seed(0)
    policy = DQNPolicy(dict(model=MODEL)).collect_mode
    collector = EpisodeSerialCollector(dict(n_episode=3, reward_shaping=True), env, policy)
    try:
        episodes = collector.collect()
    finally:
        collector.close()
    assert len(episodes) == 3
    for episode in episodes:  # Countdown: 5 steps of reward 1
        assert [t["reward"] for t in episode] == [0.0, 0.0, 0.0, 0.0, 5.0]


def test_reward_shaping_without_the_method_is_a_clear_error():
    env = create_env_manager(dict(type="base"), [partial(GymnasiumEnv, cfg=dict(env_id="Countdown-v0"))])
    env.seed(0)
    collector = EpisodeSerialCollector(
        dict(n_episode=1, reward_shaping=True), env, DQNPolicy(dict(model=MODEL)).collect_mode
    )
    with pytest.raises(EnvError, match="reward_shaping=False"):
        collector.collect()
