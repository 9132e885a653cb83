"""SACPolicy: output shapes, a learn step, the temperature, state dicts, refused configs."""

import io

import numpy as np
import pytest
import torch

from ding_ray.envs import BaseEnvTimestep
from ding_ray.errors import ConfigError, EnvError
from ding_ray.policy import SACPolicy
from tests.policy.fakes import continuous_batch, continuous_policy

MODEL = dict(obs_shape=3, action_shape=2, actor_head_hidden_size=16, critic_head_hidden_size=16)


def make(**overrides):
    return continuous_policy("sac", MODEL, **overrides)


def batch(n=8, seed=0):
    return continuous_batch(n, seed)


def test_defaults_are_di_engine_s():
    policy = make()
    assert isinstance(policy, SACPolicy) and policy.action_space == "continuous"
    cfg = SACPolicy.default_config()
    assert cfg.learn.learning_rate_q == 3e-4 and cfg.learn.target_theta == 0.005
    assert cfg.learn.auto_alpha and cfg.learn.log_space and cfg.learn.init_w == 3e-3
    assert cfg.random_collect_size == 10000 and cfg.other.replay_buffer.replay_buffer_size == 1000000
    assert cfg.transition_with_policy_data  # the warm-up acts with the untrained policy
    model = policy.learn_mode.get_attribute("model")
    assert model.twin_critic and len(model.critic) == 2  # twin_critic defaults to True
    assert policy.learn_mode.get_attribute("target_entropy") == -2.0  # -action_dim
    # init_w: the actor's output layers start within [-3e-3, 3e-3]
    assert model.actor.mu.weight.abs().max().item() <= 3e-3


def test_collect_samples_in_minus_one_one_and_eval_is_tanh_mu():
    policy = make()
    obs = {0: np.zeros(3, np.float32), 5: np.ones(3, np.float32)}
    out = policy.collect_mode.forward(obs)
    assert sorted(out) == [0, 5]
    for o in out.values():
        assert o["action"].shape == (2,) and o["action"].dtype == torch.float32
        assert bool((o["action"].abs() < 1).all()) and len(o["logit"]) == 2
    samples = np.stack([policy.collect_mode.forward(obs)[0]["action"] for _ in range(50)])
    assert samples.std(0).min() > 0.2  # sigma starts near 1: exploration
    evaluated = policy.eval_mode.forward(obs)
    mu = evaluated[5]["logit"][0]
    assert np.allclose(evaluated[5]["action"], np.tanh(mu), atol=1e-6)
    assert np.array_equal(policy.eval_mode.forward(obs)[5]["action"], evaluated[5]["action"])


def test_a_time_limit_is_terminal_as_in_di_engine_unless_bootstrap_on_truncation():
    obs, out = np.zeros(3, np.float32), {"action": np.zeros(2, np.float32)}
    truncated = BaseEnvTimestep(np.ones(3), -1.0, True, {"truncated": True})
    terminated = BaseEnvTimestep(np.ones(3), -1.0, True, {"truncated": False})
    policy = make()  # DI-engine's SAC: done = timestep.done
    assert policy.collect_mode.process_transition(obs, out, truncated)["done"] is True
    assert policy.collect_mode.process_transition(obs, out, terminated)["done"] is True
    transitions = [policy.collect_mode.process_transition(obs, out, terminated)]
    assert policy.collect_mode.get_train_sample(transitions) == transitions
    bootstrap = make(learn=dict(bootstrap_on_truncation=True))
    assert bootstrap.collect_mode.process_transition(obs, out, truncated)["done"] is False
    assert bootstrap.collect_mode.process_transition(obs, out, terminated)["done"] is True


def test_learn_step_changes_actor_and_critics_and_moves_targets_by_theta():
    policy = make()
    model, target = policy.learn_mode.get_attribute("model"), policy.learn_mode.get_attribute("target_model")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    target_before = {k: v.clone() for k, v in target.state_dict().items()}
    out = policy.learn_mode.forward(batch())
    for key in ("critic_loss", "policy_loss", "alpha_loss", "alpha", "target_q_value", "total_loss"):
        assert np.isfinite(out[key]), key
    after = model.state_dict()
    for name in (
        "actor.mu.weight",
        "actor.trunk.layers.0.weight",
        "critic.0.layers.0.weight",
        "critic.1.layers.2.bias",
    ):
        assert not torch.equal(before[name], after[name]), name
    name = "critic.0.layers.0.weight"
    expected = target_before[name] + 0.005 * (after[name] - target_before[name])
    assert torch.allclose(target.state_dict()[name], expected, atol=1e-7)
    assert set(policy.learn_mode.monitor_vars()) >= {"critic_loss", "policy_loss", "alpha", "cur_lr_q"}


def test_alpha_adapts_toward_the_target_entropy():
    # With a target entropy far above what a near-deterministic policy has, alpha must grow;
    # far below, it must shrink.
    up = make(learn=dict(target_entropy=10.0, learning_rate_alpha=0.01))
    down = make(learn=dict(target_entropy=-10.0, learning_rate_alpha=0.01))
    for _ in range(5):
        up_out = up.learn_mode.forward(batch())
        down_out = down.learn_mode.forward(batch())
    assert up_out["alpha"] > 0.2 > down_out["alpha"]
    fixed = make(learn=dict(auto_alpha=False, alpha=0.3))
    for _ in range(3):
        assert fixed.learn_mode.forward(batch())["alpha"] == pytest.approx(0.3)
    linear = make(learn=dict(log_space=False, target_entropy=-10.0, learning_rate_alpha=0.01))
    assert linear.learn_mode.forward(batch())["alpha"] < 0.2


def test_state_dict_round_trip_with_weights_only():
    trained = make()
    for i in range(3):
        trained.learn_mode.forward(batch(seed=i))
    buffer = io.BytesIO()
    torch.save(trained.learn_mode.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    fresh = make()
    fresh.learn_mode.load_state_dict(state)
    alpha = trained.learn_mode.get_attribute("alpha").item()
    assert fresh.learn_mode.get_attribute("alpha").item() == pytest.approx(alpha)
    obs = {0: np.ones(3, np.float32)}
    assert np.array_equal(
        fresh.eval_mode.forward(obs)[0]["action"], trained.eval_mode.forward(obs)[0]["action"]
    )
    fresh_target, trained_target = (p.learn_mode.get_attribute("target_model") for p in (fresh, trained))
    for a, b in zip(fresh_target.parameters(), trained_target.parameters()):
        assert torch.equal(a, b)
    # the next step is the same in both (same optimizer moments, alpha and targets)
    torch.manual_seed(7)
    out_trained = trained.learn_mode.forward(batch(seed=9))
    torch.manual_seed(7)
    out_fresh = fresh.learn_mode.forward(batch(seed=9))
    assert out_fresh["critic_loss"] == pytest.approx(out_trained["critic_loss"], rel=1e-5)
    assert out_fresh["alpha"] == pytest.approx(out_trained["alpha"], rel=1e-6)


def test_priority_is_reported_when_asked():
    out = make(priority=True).learn_mode.forward(batch())
    assert out["priority"].shape == (8,) and np.all(out["priority"] >= 0)


def test_unsupported_configs_and_spaces_are_refused_by_name():
    with pytest.raises(ConfigError, match="multi_agent=True"):
        make(multi_agent=True)
    with pytest.raises(ConfigError, match="unroll_len=2"):
        make(collect=dict(unroll_len=2))
    with pytest.raises(ConfigError, match="learning_rate_q"):
        make(learn=dict(learning_rate=1e-3))
    policy = make()
    with pytest.raises(EnvError, match="continuous action space.*discrete"):
        policy.check_spaces((3,), "discrete", 2)
    with pytest.raises(EnvError, match="action_shape=1"):
        policy.check_spaces((3,), "continuous", 1)
    policy.check_spaces((3,), "continuous", 2)


@pytest.mark.parametrize("with_policy", [True, False])
def test_the_warm_up_is_the_untrained_policy_unless_told_otherwise(with_policy):
    """DI-engine's SAC sets ``transition_with_policy_data=True``, so its ``random_collect_size``
    steps are the policy's own collect forward (``get_random_policy`` hands back the policy); False
    gives uniform actions. The serial collector and the task-style ``StepCollector`` agree."""
    from functools import partial

    from easydict import EasyDict

    from ding_ray.envs import create_env_manager, get_vec_env_setting
    from ding_ray.framework.context import OnlineRLContext
    from ding_ray.framework.middleware.collect import StepCollector
    from ding_ray.worker import SampleSerialCollector

    policy = make(model=dict(obs_shape=3, action_shape=1), transition_with_policy_data=with_policy)
    assert policy.collect_mode.get_attribute("transition_with_policy_data") is with_policy
    with torch.no_grad():  # an actor that pushes hard and does not explore: tanh(3) = 0.995
        actor = policy.collect_mode.get_attribute("model").actor
        actor.mu.bias.fill_(3.0)
        actor.log_sigma_layer.bias.fill_(-20.0)
    env_fn, cfgs, _ = get_vec_env_setting(
        dict(env_id="Pendulum-v1", act_scale=True, collector_env_num=2, evaluator_env_num=1)
    )

    def manager():
        m = create_env_manager(dict(type="base"), [partial(env_fn, cfg=c) for c in cfgs])
        m.seed(0)
        return m

    serial = SampleSerialCollector(dict(n_sample=200), manager(), policy.collect_mode)
    step = StepCollector(
        EasyDict(seed=0, policy=dict(policy.cfg, collect=dict(n_sample=1))),
        policy,
        manager(),
        random_collect_size=200,
    )
    ctx = OnlineRLContext()
    step(ctx)
    for actions in (
        np.array([float(t["action"][0]) for t in serial.warm_up()]),
        np.array([float(t["action"][0]) for t in ctx.trajectories]),
    ):
        assert len(actions) >= 200
        if with_policy:
            assert (actions > 0.99).all()
        else:  # uniform on the env's Box, [-2, 2], as DI-engine's random policy samples it
            assert 0.3 < (actions < 0).mean() < 0.7 and actions.min() > -2 and actions.max() < 2
