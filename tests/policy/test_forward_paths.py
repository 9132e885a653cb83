"""Which forward ding_ray's collectors and evaluators run for a policy: the batched columns of a
policy that declares them (``columnar_collect`` / ``columnar_eval``), else the policy's own
``_forward_collect`` / ``_forward_eval`` (DI-engine's hooks), its tensors converted to numpy. Also
the other explicit hooks of ``Policy``: ``enable_field`` fields, ``get_attribute``."""

import numpy as np
import pytest
import torch

from ding_ray.policy import CommandModePolicy, DQNPolicy, Policy, PPOPolicy
from ding_ray.policy.common import numpy_forward

OBS = {0: np.zeros(3, np.float32), 4: np.full(3, 2.0, np.float32)}


class BatchedPolicy(Policy):
    """Collect: action = env id, for all envs at once. Eval: action = sum of the observation."""

    config = dict(type="test_batched")
    columnar_collect = True
    columnar_eval = True

    def _init_collect(self) -> None:
        pass

    def _collect_columns(self, data, **kwargs):
        env_ids = list(data)
        return env_ids, {"action": torch.tensor(env_ids), "logit": torch.ones(len(env_ids), 2)}

    def _eval_tensors(self, obs):
        return {"action": obs.sum(-1)}


class PerEnvPolicy(Policy):
    """DI-engine's hooks alone: its own per-env forwards (action = -env id), nothing declared."""

    config = dict(type="test_per_env")

    def _init_collect(self) -> None:
        pass

    def _forward_collect(self, data, **kwargs):
        return {i: {"action": torch.tensor(-i), "logit": torch.zeros(2)} for i in data}

    def _forward_eval(self, data, **kwargs):
        return {i: {"action": torch.tensor(-float(i))} for i in data}


def make(cls):
    return cls({}, model=torch.nn.Linear(3, 2), enable_field=["collect", "eval"])


def test_a_policy_that_declares_columns_runs_them_on_the_numpy_path():
    policy = make(BatchedPolicy)
    fast = numpy_forward(policy.collect_mode)(OBS)
    assert {i: out["action"] for i, out in fast.items()} == {0: 0, 4: 4}
    assert type(fast[4]["action"]) is int and isinstance(fast[4]["logit"], np.ndarray)
    public = policy.collect_mode.forward(OBS)  # the same columns, per env as tensors
    assert public[4]["action"].item() == 4 and isinstance(public[4]["logit"], torch.Tensor)
    assert numpy_forward(policy.eval_mode)(OBS) == {0: {"action": 0.0}, 4: {"action": 6.0}}


def test_a_policy_with_its_own_forwards_runs_them_on_the_numpy_path():
    policy = make(PerEnvPolicy)
    fast = numpy_forward(policy.collect_mode)(OBS)
    assert {i: out["action"] for i, out in fast.items()} == {0: 0, 4: -4}
    assert type(fast[4]["action"]) is int and isinstance(fast[4]["logit"], np.ndarray)
    assert numpy_forward(policy.eval_mode)(OBS) == {0: {"action": 0.0}, 4: {"action": -4.0}}


def test_a_mode_with_another_forward_is_converted():
    """A collect mode rebuilt around a wrapper runs the wrapper, not the policy's fast path."""
    policy = make(BatchedPolicy)
    mode = policy.collect_mode._replace(
        forward=lambda data, **kwargs: {i: {"action": torch.tensor(9)} for i in data}
    )
    assert numpy_forward(mode)(OBS) == {0: {"action": 9}, 4: {"action": 9}}


class CommandedPolicy(CommandModePolicy):
    """A command mode whose collect setting needs what ``_init_command`` set up."""

    config = dict(type="test_commanded")

    def _init_command(self) -> None:
        self.eps_at = lambda step: 1.0 / (1 + step)

    def _get_setting_collect(self, command_info):
        return {"eps": self.eps_at(command_info["envstep"])}


def test_enable_field_sets_up_exactly_the_fields_it_names():
    policy = CommandedPolicy({}, enable_field=["command"])
    assert policy.command_mode.get_setting_collect({"envstep": 3}) == {"eps": 0.25}
    with pytest.raises(NotImplementedError):  # no learn, collect or eval field: no model was built
        policy.learn_mode.get_attribute("model")
    both = CommandedPolicy({}, model=torch.nn.Linear(3, 2), enable_field=["command", "eval"])
    assert isinstance(both.eval_mode.get_attribute("model"), torch.nn.Linear)
    assert both.command_mode.get_setting_collect({"envstep": 0}) == {"eps": 1.0}


def test_get_attribute_computes_reads_and_refuses():
    ppo = PPOPolicy(dict(model=dict(obs_shape=3, action_shape=2)))
    value, adv, return_ = ppo.collect_mode.get_attribute("compute_advantages")(
        {
            "obs": torch.zeros(2, 3),
            "next_obs": torch.zeros(2, 3),
            "reward": torch.tensor([1.0, 0.0]),
            "done": torch.tensor([0.0, 1.0]),
        }
    )
    assert value.shape == adv.shape == return_.shape == (2,)
    dqn = DQNPolicy(dict(model=dict(obs_shape=3, action_shape=2)))
    with pytest.raises(NotImplementedError):  # DQN computes no advantages
        dqn.collect_mode.get_attribute("compute_advantages")
    assert dqn.collect_mode.get_attribute("nstep") == 1  # computed from the config
    model = torch.nn.Linear(3, 2)
    dqn.learn_mode.set_attribute("model", model)
    assert dqn.eval_mode.get_attribute("model") is model
