"""What is ding_ray's own around A2C: the collector's advantages per chunk, the learn call's shape, a
resumed learn state and run, and the refused options (the learn step itself is DI-engine's:
tests/compat/test_di_engine_learn_steps.py)."""

import json

import numpy as np
import pytest
import torch

from ding_ray.entry import serial_pipeline_onpolicy
from ding_ray.errors import ConfigError
from ding_ray.policy import A2CPolicy, create_policy
from tests.compat.dizoo import read_dizoo_config
from tests.policy.fakes import StubActorCritic, continuous_batch

MODEL = dict(
    obs_shape=4,
    action_shape=2,
    encoder_hidden_size_list=[32, 32],
    actor_head_hidden_size=32,
    critic_head_hidden_size=32,
)


def transition(v, reward=1.0, done=False):
    # next_obs holds a value no advantage may read: A2C bootstraps from the values collected
    return dict(
        obs=np.array([v, 0, 0, 0], np.float32),
        next_obs=np.full(4, 100.0, np.float32),
        action=0,
        value=float(v),
        reward=reward,
        done=done,
    )


def collect_policy():
    cfg = dict(model=MODEL, collect=dict(discount_factor=0.5, gae_lambda=0.5))
    return A2CPolicy(cfg, model=StubActorCritic(), enable_field=["collect"])


def test_a_chunk_that_ends_its_episode_bootstraps_from_zero():
    # gamma = lambda = .5, V = [1, 2, 3], r = 1, terminal at the end:
    # deltas 1 + .5*2 - 1 = 1, 1 + .5*3 - 2 = .5, 1 + 0 - 3 = -2; A2 = -2, A1 = .5 - .5 = 0, A0 = 1
    chunk = [transition(1), transition(2), transition(3, done=True)]
    samples = collect_policy().collect_mode.get_train_sample(chunk)
    assert [s["adv"] for s in samples] == pytest.approx([1.0, 0.0, -2.0])
    assert [s["value"] for s in samples] == [1.0, 2.0, 3.0]


def test_a_cut_chunk_gives_up_its_last_step_whose_value_is_the_bootstrap():
    # the same chunk cut before its episode ended: samples V = [1, 2], bootstrap V = 3
    # deltas 1 + .5*2 - 1 = 1, 1 + .5*3 - 2 = .5; A1 = .5, A0 = 1 + .25 * .5 = 1.125
    policy = collect_policy()
    chunk = [transition(1), transition(2), transition(3)]
    samples = policy.collect_mode.get_train_sample(chunk)
    assert [s["adv"] for s in samples] == pytest.approx([1.125, 0.5])
    assert policy.collect_mode.get_train_sample([transition(1)]) == []  # nothing left to train on


def test_collect_samples_from_the_categorical_and_eval_takes_argmax():
    torch.manual_seed(0)
    policy = A2CPolicy(dict(model=MODEL), model=StubActorCritic(), enable_field=["collect", "eval"])
    obs = {i: np.full(4, 2.0, np.float32) for i in range(2000)}
    out = policy.collect_mode.forward(obs)
    assert set(out[0]) == {"action", "logit", "value"} and out[0]["value"] == pytest.approx(2.0)
    assert abs(np.mean([o["action"] for o in out.values()]) - 0.75) < 0.04  # p(action 1) = .75
    assert all(o["action"] == 1 for o in policy.eval_mode.forward(obs).values())


def samples(n=80, seed=0):
    rng = np.random.default_rng(seed)
    return [
        dict(
            obs=rng.normal(size=4).astype(np.float32),
            action=int(rng.integers(2)),
            value=float(rng.normal()),
            adv=float(rng.normal()),
            reward=1.0,
            done=False,
        )
        for _ in range(n)
    ]


def learn(policy, data, seed=0):
    np.random.seed(seed)  # the minibatch shuffle
    return policy.learn_mode.forward(data)


def test_a_learn_call_is_one_pass_of_minibatches_with_one_log():
    torch.manual_seed(0)
    policy = create_policy(dict(type="a2c", model=MODEL, learn=dict(batch_size=40, adv_norm=True)))
    before = [p.detach().clone() for p in policy.learn_mode.get_attribute("model").parameters()]
    log = learn(policy, samples())
    # one dict (the learner counts one iteration), the last minibatch's, every monitor var in it
    assert isinstance(log, dict) and set(policy.learn_mode.monitor_vars()) == set(log)
    assert all(np.isfinite(v) for v in log.values()) and log["grad_norm"] > 0
    after = list(policy.learn_mode.get_attribute("model").parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after))
    # two Adam steps: each parameter's step count
    assert all(int(s["step"]) == 2 for s in policy.learn_mode.state_dict()["optimizer"]["state"].values())


def test_continuous_learn_takes_gaussian_actions():
    torch.manual_seed(0)
    model = dict(obs_shape=3, action_shape=2, action_space="continuous")
    policy = create_policy(dict(type="a2c", action_space="continuous", model=model, learn=dict(batch_size=8)))
    batch = continuous_batch(16)
    batch["value"], batch["adv"] = np.zeros(16, np.float32), np.linspace(-1, 1, 16, dtype=np.float32)
    log = learn(policy, batch)
    assert np.isfinite(log["total_loss"]) and log["adv_abs_max"] == pytest.approx(1.0)
    action = policy.collect_mode.forward({0: np.zeros(3, np.float32)})[0]["action"]
    assert action.shape == (2,) and action.dtype == torch.float32


def test_a_resumed_learn_state_takes_the_same_next_step():
    torch.manual_seed(0)
    cfg = dict(type="a2c", model=MODEL, learn=dict(batch_size=40))
    policy = create_policy(cfg)
    learn(policy, samples(seed=1))
    resumed = create_policy(cfg)
    resumed.learn_mode.load_state_dict(policy.learn_mode.state_dict())
    assert learn(resumed, samples(seed=2), seed=3) == learn(policy, samples(seed=2), seed=3)


@pytest.mark.parametrize(
    "change,match",
    [
        (dict(learn=dict(ignore_done=True)), "ignore_done=True.*would change nothing"),
        (dict(learn=dict(update_per_collect=4)), "update_per_collect must be 1"),
        (dict(collect=dict(unroll_len=4)), "unroll_len must be 1"),
        (dict(priority=True), "priority=True"),
        (dict(action_space="hybrid"), "'hybrid' is not supported"),
    ],
)
def test_options_a2c_cannot_honour_are_refused_by_name(change, match):
    with pytest.raises(ConfigError, match=match):
        create_policy(dict(type="a2c", model=MODEL, **change))


def test_dizoo_keys_di_engine_s_a2c_does_not_read_are_accepted():
    """dizoo's pendulum_a2c_config sets learn.epoch_per_collect and bipedalwalker_a2c_config
    learn.discount_factor; DI-engine's A2C reads neither."""
    cfg = dict(type="a2c", model=MODEL, learn=dict(epoch_per_collect=10, discount_factor=0.99))
    assert create_policy(cfg).cfg.learn.epoch_per_collect == 10


def test_a_dizoo_run_resumes_from_its_checkpoint(tmp_path):
    """dizoo's cartpole_a2c_config, 1,000 env steps and a checkpoint at the end; resumed to 2,000, the
    run goes on from that checkpoint's iteration and env steps."""
    main, create = read_dizoo_config("classic_control/cartpole/config/cartpole_a2c_config.py")
    main.exp_name = str(tmp_path / "a2c")
    serial_pipeline_onpolicy((main, create), seed=0, max_env_step=1000)
    first = json.loads((tmp_path / "a2c" / "result.json").read_text())
    serial_pipeline_onpolicy((main, create), seed=0, max_env_step=2000, resume=main.exp_name)
    resumed = json.loads((tmp_path / "a2c" / "result.json").read_text())
    assert resumed["resumed_from"] == first["last_checkpoint"]
    assert resumed["train_iter"] > first["train_iter"] > 0
    assert resumed["env_steps"] >= 2000 > first["env_steps"]
