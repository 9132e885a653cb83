"""DiscreteSACPolicy (DI-engine's 'discrete_sac'): its forwards, transitions, learning step and state."""

import numpy as np
import pytest
import torch

from ding_ray.envs import BaseEnvTimestep
from ding_ray.errors import ConfigError
from ding_ray.policy import DiscreteSACPolicy, create_policy

OBS = {0: np.zeros(4, np.float32), 3: np.ones(4, np.float32)}


def make(**over):
    return create_policy(dict(type="discrete_sac", model=dict(obs_shape=4, action_shape=2), **over))


def transitions(policy, n=32):
    out = policy.collect_mode.forward(OBS)
    step = BaseEnvTimestep(OBS[3], 1.0, False, {})
    return [policy.collect_mode.process_transition(OBS[0], out[0], step) for _ in range(n)]


def test_forwards_and_transitions_have_di_engine_s_keys():
    policy = make()
    assert isinstance(policy, DiscreteSACPolicy) and policy.learn_mode.get_attribute("model").twin_critic
    out = policy.collect_mode.forward(OBS, eps=0.0)
    assert set(out[3]) == {"logit", "action"} and out[3]["logit"].shape == (2,)
    assert out[3]["action"].shape == () and out[3]["action"].item() in (0, 1)
    greedy = policy.eval_mode.forward(OBS)
    assert all(o["action"].item() == int(o["logit"].argmax()) for o in greedy.values())
    transition = transitions(policy, 1)[0]
    assert set(transition) == {"obs", "next_obs", "action", "logit", "reward", "done"}


def test_eps_draws_once_per_step_for_all_envs():
    """DI-engine's eps_greedy_multinomial_sample: one draw decides for the whole batch."""
    torch.manual_seed(0)  # the same draws whatever ran before in this process
    np.random.seed(0)
    policy = make()
    with torch.no_grad():  # the actor prefers action 0 by far: its samples are all 0
        policy.collect_mode.get_attribute("model").actor.layers[-1].bias.copy_(torch.tensor([30.0, -30.0]))
    batch = {i: np.zeros(4, np.float32) for i in range(64)}
    assert {o["action"].item() for o in policy.collect_mode.forward(batch, eps=0.0).values()} == {0}
    kinds = set()
    for _ in range(40):
        actions = [o["action"].item() for o in policy.collect_mode.forward(batch, eps=0.5).values()]
        kinds.add("sampled" if set(actions) == {0} else "uniform")
        # 64 uniform envs: far from all 0 or all 1, never a mixture of a few uniform ones
        assert set(actions) == {0} or 8 < sum(actions) < 56
    assert kinds == {"sampled", "uniform"}


def test_learning_step_moves_q_toward_the_soft_target_and_state_round_trips():
    policy = make(learn=dict(batch_size=32, learning_rate_q=0.01, auto_alpha=True))
    data = transitions(policy)
    first = policy.learn_mode.forward(data)
    for _ in range(30):
        last = policy.learn_mode.forward(data)
    assert last["critic_loss"] < first["critic_loss"]
    assert {"policy_loss", "alpha_loss", "alpha", "entropy", "q_value_1", "q_value_2"} <= set(last)
    assert last["alpha"] != pytest.approx(0.2)  # learned
    fresh = make(learn=dict(batch_size=32, learning_rate_q=0.01, auto_alpha=True))
    fresh.learn_mode.load_state_dict(policy.learn_mode.state_dict())
    alpha = policy.learn_mode.get_attribute("alpha").item()
    assert fresh.learn_mode.get_attribute("alpha").item() == pytest.approx(alpha)
    a = policy.eval_mode.forward(OBS)[3]["logit"]
    assert torch.equal(fresh.eval_mode.forward(OBS)[3]["logit"], a)


def test_unsupported_settings_are_refused_by_name():
    with pytest.raises(ConfigError, match="multi_agent"):
        make(multi_agent=True)
    with pytest.raises(ConfigError, match="unroll_len"):
        make(collect=dict(unroll_len=2))
