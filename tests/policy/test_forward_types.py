"""Collect and eval forwards give DI-engine's types at the public interface (per env a dict of CPU
tensors), while ding_ray's collectors and evaluators run the numpy fast path with equal values."""

import numpy as np
import pytest
import torch

from ding_ray.envs import BaseEnvTimestep
from ding_ray.policy import A2CPolicy, DQNPolicy, PPOPolicy, SACPolicy, TD3Policy
from ding_ray.policy.action_mask import RandomLegalPolicy
from ding_ray.policy.common import numpy_forward

OBS = {0: np.zeros(3, np.float32), 4: np.linspace(-1, 1, 3, dtype=np.float32)}
CONTINUOUS = dict(
    action_space="continuous", model=dict(obs_shape=3, action_shape=2, action_space="continuous")
)
POLICIES = {
    "a2c": lambda: A2CPolicy(dict(model=dict(obs_shape=3, action_shape=2))),
    "a2c_continuous": lambda: A2CPolicy(CONTINUOUS),
    "dqn": lambda: DQNPolicy(dict(model=dict(obs_shape=3, action_shape=2))),
    "ppo": lambda: PPOPolicy(dict(model=dict(obs_shape=3, action_shape=2))),
    "ppo_continuous": lambda: PPOPolicy(CONTINUOUS),
    "sac": lambda: SACPolicy(dict(model=dict(obs_shape=3, action_shape=2))),
    "td3": lambda: TD3Policy(dict(model=dict(obs_shape=3, action_shape=2))),
}
# per policy: the keys of DI-engine's collect output, eval output and transition (before the
# collector adds collect_iter)
KEYS = {
    "dqn": ({"action", "logit"}, {"action", "logit"}, {"obs", "next_obs", "action", "reward", "done"}),
    "ppo": (
        {"action", "logit", "value"},
        {"action", "logit"},
        {"obs", "next_obs", "action", "logit", "value", "reward", "done"},
    ),
    "sac": ({"action", "logit"}, {"action", "logit"}, {"obs", "next_obs", "action", "reward", "done"}),
}
KEYS["ppo_continuous"] = KEYS["ppo"]
KEYS["a2c"] = KEYS["a2c_continuous"] = (
    {"action", "logit", "value"},
    {"action", "logit"},
    {"obs", "next_obs", "action", "value", "reward", "done"},
)
KEYS["td3"] = ({"action"}, {"action"}, {"obs", "next_obs", "action", "reward", "done"})


def leaves(value):
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_public_forwards_give_tensors_and_the_fast_path_the_same_numbers(name):
    policy = POLICIES[name]()
    collect_keys, eval_keys, transition_keys = KEYS[name]
    for mode, keys, same in (
        (policy.collect_mode, collect_keys, collect_keys - {"action"}),  # collect samples its action
        (policy.eval_mode, eval_keys, eval_keys),
    ):
        out = mode.forward(OBS)
        assert sorted(out) == [0, 4] and set(out[4]) == keys
        assert all(isinstance(leaf, torch.Tensor) and leaf.device.type == "cpu" for leaf in leaves(out[4]))
        fast = numpy_forward(mode)(OBS)
        for key in same:
            for tensor, array in zip(leaves(out[4][key]), leaves(fast[4][key])):
                assert not isinstance(array, torch.Tensor)
                np.testing.assert_allclose(tensor.numpy(), array, rtol=1e-6)
    action = policy.collect_mode.forward(OBS)[0]["action"]
    if name in ("dqn", "ppo", "a2c"):  # discrete: a 0-d integer tensor, as DI-engine's (so .item() works)
        assert action.shape == () and action.dtype == torch.int64 and action.item() in (0, 1)
        assert type(numpy_forward(policy.collect_mode)(OBS)[0]["action"]) is int
    else:
        assert action.shape == (2,) and action.dtype == torch.float32
    out = policy.collect_mode.forward(OBS)[0]
    transition = policy.collect_mode.process_transition(OBS[0], out, BaseEnvTimestep(OBS[4], 1.0, False, {}))
    assert set(transition) == transition_keys
    assert transition["action"] is out["action"]


def test_dqn_greedy_collect_equals_eval_on_both_paths():
    policy = POLICIES["dqn"]()
    eval_out, collect_out = policy.eval_mode.forward(OBS), policy.collect_mode.forward(OBS, eps=0.0)
    fast = numpy_forward(policy.collect_mode)(OBS, eps=0.0)
    for i in OBS:
        assert eval_out[i]["action"].item() == collect_out[i]["action"].item() == fast[i]["action"]


def test_a_forward_that_is_not_a_ding_ray_policy_is_converted():
    """Any object with a ``forward`` works with the collectors: its tensors become numpy."""

    class TensorPolicy:
        def forward(self, data, **kwargs):
            return {i: {"action": torch.tensor(1), "logit": torch.ones(2)} for i in data}

    out = numpy_forward(TensorPolicy())(OBS)
    assert out[0]["action"] == 1 and type(out[0]["action"]) is int
    assert isinstance(out[4]["logit"], np.ndarray)
    legal = numpy_forward(RandomLegalPolicy())({0: {"observation": OBS[0], "action_mask": [0, 1]}})
    assert legal[0]["action"] == 1
