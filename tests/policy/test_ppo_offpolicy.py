"""PPOOffPolicy (DI-engine's 'ppo_offpolicy'): samples with stored advantages, one step per learn call."""

from functools import partial

import pytest

import tests.fakes  # noqa: F401 - registers the fake envs
from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.errors import ConfigError
from ding_ray.policy import PPOOffPolicy, create_policy
from ding_ray.worker import SampleSerialCollector

MODEL = dict(obs_shape=2, action_shape=2, encoder_hidden_size_list=[16, 16])


def make(**over):
    return create_policy(dict(type="ppo_offpolicy", model=dict(MODEL), **over))


def collect(policy, n_sample=24):
    env_fn, cfgs, _ = get_vec_env_setting(
        dict(env_id="Countdown-v0", collector_env_num=3, evaluator_env_num=1)
    )
    env = create_env_manager(dict(type="base"), [partial(env_fn, cfg=c) for c in cfgs])
    env.seed(0)
    return SampleSerialCollector(dict(n_sample=n_sample), env, policy.collect_mode).collect(train_iter=4)


def test_samples_carry_di_engine_s_keys_and_stored_advantages():
    policy = make()
    assert isinstance(policy, PPOOffPolicy) and not policy.cfg.on_policy
    # DI-engine's value (policy.nstep, read only with nstep_return); the collector cuts chunks
    # without regard to it
    assert policy.collect_mode.get_attribute("nstep") == 3
    samples = collect(policy)
    assert len(samples) == 24
    expected = {"obs", "next_obs", "action", "logit", "value", "reward", "done", "adv", "traj_flag"}
    assert set(samples[0]) == expected | {"collect_iter"} and samples[0]["collect_iter"] == 4
    assert all(isinstance(s["adv"], float) and isinstance(s["action"], int) for s in samples)


def test_one_learn_call_is_one_gradient_step():
    policy = make(learn=dict(batch_size=24))
    samples = collect(policy)
    model = policy.learn_mode.get_attribute("model")
    before = [p.detach().clone() for p in model.parameters()]
    out = policy.learn_mode.forward(samples)
    assert isinstance(out, dict) and {"policy_loss", "value_loss", "entropy_loss", "approx_kl"} <= set(out)
    assert any((p != b).any() for p, b in zip(model.parameters(), before))


def test_on_policy_settings_are_refused_by_name():
    with pytest.raises(ConfigError, match="recompute_adv"):
        make(recompute_adv=True)
    with pytest.raises(ConfigError, match="epoch_per_collect"):
        make(learn=dict(epoch_per_collect=4))
    with pytest.raises(ConfigError, match="nstep_return"):
        make(nstep_return=True)
