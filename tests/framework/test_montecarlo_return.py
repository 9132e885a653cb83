"""``montecarlo_return_estimator`` on episodes with returns worked out by hand."""

import numpy as np
import pytest

from ding_ray.config import compile_config
from ding_ray.errors import ConfigError, DataFormatError
from ding_ray.framework import OnlineRLContext, Task
from ding_ray.framework.middleware import montecarlo_return_estimator
from ding_ray.policy import create_policy


def ppo_policy():
    main = dict(
        env=dict(env_id="CartPole-v1", collector_env_num=1, evaluator_env_num=1),
        policy=dict(model=dict(obs_shape=4, action_shape=2), collect=dict(n_sample=16, discount_factor=0.5)),
    )
    cfg = compile_config(main, seed=0, create_cfg=dict(policy=dict(type="ppo")), save_cfg=False)
    return create_policy(cfg.policy, enable_field=["learn", "collect"])


def episode(rewards):
    return [
        dict(obs=np.zeros(4, np.float32), action=0, reward=r, done=i == len(rewards) - 1)
        for i, r in enumerate(rewards)
    ]


def estimate(policy, episodes):
    with Task(OnlineRLContext(episodes=episodes)) as task:
        task.use(montecarlo_return_estimator(policy))
        task.run(max_step=1)
        return task.ctx.train_data


def test_each_step_gets_its_discounted_return_from_its_episode_alone():
    # gamma 0.5: [1, 2, 4] -> [1 + 0.5 * (2 + 0.5 * 4), 2 + 0.5 * 4, 4] = [3, 4, 4]; [np.array([8])] -> [8]
    data = estimate(ppo_policy(), [episode([1.0, 2.0, 4.0]), episode([np.array([8.0], np.float32)])])
    assert [t["return"] for t in data] == [3.0, 4.0, 4.0, 8.0]
    assert [t["reward"] for t in data[:3]] == [1.0, 2.0, 4.0] and data[3]["done"]


def test_unfinished_episodes_and_other_arguments_are_refused():
    policy = ppo_policy()
    with pytest.raises(Exception, match="whole episodes") as info:
        estimate(policy, [episode([1.0, 2.0])[:1]])
    assert isinstance(info.value.__cause__, DataFormatError)
    with pytest.raises(ConfigError, match="takes the Policy"):
        montecarlo_return_estimator(policy.learn_mode)
