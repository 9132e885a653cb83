"""TD3Policy and DDPGPolicy: delayed actor steps, clipped target smoothing over twin critics, noise in
collect, checkpoints, refused configs."""

import io

import numpy as np
import pytest
import torch

from ding_ray.errors import ConfigError, EnvError
from ding_ray.policy import DDPGPolicy, TD3Policy
from tests.policy.fakes import continuous_batch, continuous_policy

MODEL = dict(obs_shape=3, action_shape=2, actor_head_hidden_size=16, critic_head_hidden_size=16)


def make(policy_type="td3", **overrides):
    return continuous_policy(policy_type, MODEL, **overrides)


def batch(n=8, seed=0):
    return continuous_batch(n, seed, done_every=4)


def test_td3_is_ddpg_with_twin_critics_smoothing_and_delayed_actor():
    td3, ddpg = TD3Policy.default_config(), DDPGPolicy.default_config()
    assert issubclass(TD3Policy, DDPGPolicy)
    assert (td3.model.twin_critic, td3.learn.noise, td3.learn.actor_update_freq) == (True, True, 2)
    assert (ddpg.model.twin_critic, ddpg.learn.noise, ddpg.learn.actor_update_freq) == (False, False, 1)
    assert td3.random_collect_size == ddpg.random_collect_size == 25000
    assert not td3.transition_with_policy_data  # the warm-up acts uniformly at random
    assert len(make().learn_mode.get_attribute("model").critic) == 2
    assert len(make("ddpg").learn_mode.get_attribute("model").critic) == 1


def test_the_actor_steps_every_actor_update_freq_learn_steps_the_critics_every_step():
    policy = make(learn=dict(actor_update_freq=3))
    model = policy.learn_mode.get_attribute("model")
    for step in range(1, 7):
        actor = [p.clone() for p in model.actor.parameters()]
        critic = [p.clone() for p in model.critic.parameters()]
        out = policy.learn_mode.forward(batch(seed=step))
        actor_moved = any(not torch.equal(a, b) for a, b in zip(actor, model.actor.parameters()))
        assert actor_moved == (step % 3 == 0) == ("actor_loss" in out), step
        assert all(not torch.equal(a, b) for a, b in zip(critic, model.critic.parameters()))
        losses = out["critic_loss"] + out["critic_twin_loss"] + out.get("actor_loss", 0.0)
        assert out["total_loss"] == pytest.approx(losses)


def test_the_target_is_the_smaller_twin_q_of_the_clipped_smoothed_target_action():
    """noise_sigma=100 with noise_range [-0.2, 0.2]: every smoothing noise is clipped to +-0.2, and
    the noised action to [-1, 1]; the target is r + gamma (1 - done) min(Q1', Q2') there."""
    policy = make(learn=dict(noise_sigma=100.0, noise_range=dict(min=-0.2, max=0.2), discount_factor=0.9))
    target = policy.learn_mode.get_attribute("target_model")
    data = batch()
    next_obs = torch.from_numpy(data["next_obs"])
    with torch.no_grad():
        mu = target.compute_actor(next_obs)["action"]
        torch.manual_seed(5)
        noise = torch.randn(mu.shape) * 100.0
        assert noise.abs().min() > 0.2  # every draw is clipped
        smoothed = (mu + noise.clamp(-0.2, 0.2)).clamp(-1, 1)
        assert torch.allclose((smoothed - mu).abs()[smoothed.abs() < 1], torch.tensor(0.2))
        q1, q2 = target.compute_critic({"obs": next_obs, "action": smoothed})["q_value"]
        target.critic[1].layers[-1].bias += (q1 - q2).median()  # so that each critic is lower somewhere
        q1, q2 = target.compute_critic({"obs": next_obs, "action": smoothed})["q_value"]
        next_value = torch.min(q1, q2)
        assert not torch.equal(next_value, q1) and not torch.equal(next_value, q2)
        model = policy.learn_mode.get_attribute("model")
        obs, action = torch.from_numpy(data["obs"]), torch.from_numpy(data["action"])
        q_before = model.compute_critic({"obs": obs, "action": action})["q_value"]
    torch.manual_seed(5)
    out = policy.learn_mode.forward(data)
    assert out["target q_value"] == pytest.approx(next_value.mean().item(), rel=1e-5)
    reward, done = torch.from_numpy(data["reward"]), torch.from_numpy(data["done"]).float()
    td_target = reward + 0.9 * (1 - done) * next_value
    # each critic's loss: the squared error to that target, of the critic before its step
    assert out["critic_loss"] == pytest.approx((q_before[0] - td_target).pow(2).mean().item(), rel=1e-5)
    assert out["critic_twin_loss"] == pytest.approx((q_before[1] - td_target).pow(2).mean().item(), rel=1e-5)


def test_ddpg_targets_are_the_unnoised_target_actor_and_ignore_done_bootstraps_everywhere():
    policy = make("ddpg", learn=dict(ignore_done=True, discount_factor=0.5))
    target = policy.learn_mode.get_attribute("target_model")
    data = batch()
    next_obs = torch.from_numpy(data["next_obs"])
    with torch.no_grad():
        action = target.compute_actor(next_obs)["action"]
        q = target.compute_critic({"obs": next_obs, "action": action})["q_value"]
    out = policy.learn_mode.forward(data)
    assert out["target q_value"] == pytest.approx(q.mean().item(), rel=1e-6)
    assert "actor_loss" in out and "critic_twin_loss" not in out


def test_targets_move_by_target_theta():
    policy = make(learn=dict(target_theta=0.25))
    model, target = policy.learn_mode.get_attribute("model"), policy.learn_mode.get_attribute("target_model")
    target_before = {k: v.clone() for k, v in target.state_dict().items()}
    policy.learn_mode.forward(batch())
    name = "critic.1.layers.0.weight"
    expected = target_before[name] + 0.25 * (model.state_dict()[name] - target_before[name])
    assert torch.allclose(target.state_dict()[name], expected, atol=1e-7)


def test_collect_adds_clipped_gaussian_noise_and_eval_is_the_actor():
    policy = make(collect=dict(noise_sigma=0.5))
    obs = {0: np.zeros(3, np.float32), 4: np.ones(3, np.float32)}
    evaluated = policy.eval_mode.forward(obs)
    samples = np.stack([policy.collect_mode.forward(obs)[4]["action"] for _ in range(400)])
    assert samples.shape == (400, 2) and samples.dtype == np.float32
    assert np.all(np.abs(samples) <= 1.0)
    assert np.allclose(samples.mean(0), evaluated[4]["action"], atol=0.1)
    assert 0.35 < samples.std(0).min() < 0.55
    quiet = make(collect=dict(noise_sigma=0.0))
    assert np.allclose(quiet.collect_mode.forward(obs)[0]["action"], evaluated[0]["action"])
    one = make(model=dict(action_shape=1))  # DI-engine's model squeezes A=1; the env still gets [1]
    assert one.collect_mode.forward(obs)[0]["action"].shape == (1,)
    assert one.eval_mode.forward(obs)[0]["action"].shape == (1,)


def test_a_resumed_policy_keeps_weights_optimizers_targets_and_the_actor_s_phase():
    trained = make()
    trained.learn_mode.forward(batch(seed=1))  # one step: the actor steps on the next
    buffer = io.BytesIO()
    torch.save(trained.learn_mode.state_dict(), buffer)
    buffer.seek(0)
    fresh = make()
    fresh.learn_mode.load_state_dict(torch.load(buffer, weights_only=True))
    torch.manual_seed(3)
    want = trained.learn_mode.forward(batch(seed=2))
    torch.manual_seed(3)
    got = fresh.learn_mode.forward(batch(seed=2))
    assert "actor_loss" in got and got == pytest.approx(want, rel=1e-6)
    obs = {0: np.ones(3, np.float32)}
    assert np.array_equal(
        fresh.eval_mode.forward(obs)[0]["action"], trained.eval_mode.forward(obs)[0]["action"]
    )


def test_unsupported_configs_and_spaces_are_refused_by_name():
    with pytest.raises(ConfigError, match="multi_agent=True"):
        make(multi_agent=True)
    with pytest.raises(ConfigError, match="'hybrid'"):
        make("ddpg", action_space="hybrid")
    with pytest.raises(ConfigError, match="action_space='regression'"):
        make(model=dict(action_space="reparameterization"))
    with pytest.raises(ConfigError, match="actor_update_freq=0"):
        make(learn=dict(actor_update_freq=0))
    with pytest.raises(ConfigError, match="unroll_len=2"):
        make(collect=dict(unroll_len=2))
    with pytest.raises(EnvError, match="continuous action space.*discrete"):
        make().check_spaces((3,), "discrete", 2)
