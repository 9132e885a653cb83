import math

import numpy as np
import pytest
import torch

from ding_ray.envs import BaseEnvTimestep
from ding_ray.errors import ConfigError, DataFormatError
from ding_ray.policy import PPOPolicy, create_policy
from tests.policy.fakes import StubActorCritic

MODEL = dict(
    obs_shape=4,
    action_shape=2,
    encoder_hidden_size_list=[32, 32],
    actor_head_hidden_size=32,
    critic_head_hidden_size=32,
)


def transition(v, reward=1.0, done=False, next_v=0.0):
    return dict(
        obs=np.array([v, 0, 0, 0], np.float32),
        next_obs=np.array([next_v, 0, 0, 0], np.float32),
        action=0,
        logit=np.zeros(2, np.float32),
        value=float(v),
        reward=reward,
        done=done,
    )


def collect_policy(**collect):
    cfg = dict(model=MODEL, collect=dict(discount_factor=0.5, gae_lambda=0.5, **collect))
    return PPOPolicy(cfg, model=StubActorCritic(), enable_field=["collect"])


def test_gae_per_chunk_termination_does_not_bootstrap():
    # gamma = lambda = .5, V = [1, 2, 3], r = 1, terminal at the end:
    # deltas 1 + .5*2 - 1 = 1, 1 + .5*3 - 2 = .5, 1 + 0 - 3 = -2; A2 = -2, A1 = .5 - .5 = 0, A0 = 1
    policy = collect_policy()
    chunk = [transition(1), transition(2), transition(3, done=True, next_v=100)]
    samples = policy.collect_mode.get_train_sample(chunk)
    assert [s["adv"] for s in samples] == pytest.approx([1.0, 0.0, -2.0])
    assert [s["traj_flag"] for s in samples] == [False, False, True]


def test_gae_per_chunk_truncation_or_cut_bootstraps_from_next_obs():
    # the same chunk cut (or truncated) with V(next_obs) = 4: last delta 1 + .5*4 - 3 = 0
    # A2 = 0, A1 = .5, A0 = 1 + .25 * .5 = 1.125
    policy = collect_policy()
    chunk = [transition(1), transition(2), transition(3, next_v=4)]
    assert [s["adv"] for s in policy.collect_mode.get_train_sample(chunk)] == pytest.approx([1.125, 0.5, 0.0])


def test_a_time_limit_is_terminal_as_in_di_engine_unless_bootstrap_on_truncation():
    out = {"action": 1, "logit": np.zeros(2), "value": 0.5}
    obs = np.zeros(4, np.float32)
    truncated = BaseEnvTimestep(obs, 1.0, True, {"truncated": True})
    terminated = BaseEnvTimestep(obs, 1.0, True, {})
    policy = collect_policy()  # DI-engine's transition: done = timestep.done
    assert policy.collect_mode.process_transition(obs, out, truncated)["done"] is True
    t = policy.collect_mode.process_transition(obs, out, terminated)
    assert t["done"] is True and t["value"] == 0.5 and t["action"] == 1
    cfg = dict(model=MODEL, learn=dict(bootstrap_on_truncation=True))
    bootstrap = PPOPolicy(cfg, model=StubActorCritic(), enable_field=["collect"])
    assert bootstrap.collect_mode.process_transition(obs, out, truncated)["done"] is False
    assert bootstrap.collect_mode.process_transition(obs, out, terminated)["done"] is True


def test_collect_samples_from_the_categorical_and_eval_takes_argmax():
    torch.manual_seed(0)
    policy = PPOPolicy(dict(model=MODEL), model=StubActorCritic(), enable_field=["collect", "eval"])
    obs = {i: np.full(4, 2.0, np.float32) for i in range(2000)}
    out = policy.collect_mode.forward(obs)
    assert set(out[0]) == {"action", "logit", "value"} and out[0]["value"] == pytest.approx(2.0)
    share = np.mean([o["action"] for o in out.values()])
    assert abs(share - 0.75) < 0.04  # p(action 1) = .75
    assert all(o["action"] == 1 for o in policy.eval_mode.forward(obs).values())


def rollout(n=64, seed=0):
    rng = np.random.default_rng(seed)
    return [
        dict(
            obs=rng.normal(size=4).astype(np.float32),
            next_obs=rng.normal(size=4).astype(np.float32),
            action=int(rng.integers(2)),
            logit=np.zeros(2, np.float32),
            value=0.0,
            adv=float(rng.normal()),
            reward=float(rng.normal()),
            done=bool(rng.random() < 0.1),
            traj_flag=bool(i % 16 == 15),
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("recompute_adv", [True, False])
def test_learn_trains_and_reports(recompute_adv):
    torch.manual_seed(0)
    policy = create_policy(
        dict(
            type="ppo",
            model=MODEL,
            recompute_adv=recompute_adv,
            learn=dict(epoch_per_collect=3, batch_size=16, lr_scheduler=dict(epoch_num=4, min_lr_lambda=0.5)),
        )
    )
    model = policy.learn_mode.get_attribute("model")
    before = [p.detach().clone() for p in model.parameters()]
    steps = policy.learn_mode.forward(rollout())
    assert len(steps) == 3 * 64 // 16  # one log dict per gradient step: epochs x minibatches, as DI-engine
    for info in steps:
        assert set(policy.learn_mode.monitor_vars()) <= set(info)
        assert all(math.isfinite(v) for v in info.values())
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    # lr: linear from 3e-4 towards .5 * 3e-4 over 4 learn calls, one step per call
    assert policy.learn_mode.get_attribute("optimizer").param_groups[0]["lr"] == pytest.approx(
        3e-4 * (1 - 0.5 / 4)
    )
    # value_norm (DI-engine's default) learns from the 64 returns at each of the 3 epochs, with or
    # without recomputed advantages, as DI-engine's PPO
    value_stats = policy.learn_mode.get_attribute("running_mean_std")
    assert value_stats.count == pytest.approx(3 * 64, abs=1e-3)
    state = policy.learn_mode.state_dict()
    other = create_policy(dict(type="ppo", model=MODEL), enable_field=["learn"])
    other.learn_mode.load_state_dict(state)
    assert other.learn_mode.get_attribute("running_mean_std").std == pytest.approx(value_stats.std)


def test_ppo_param_init_is_orthogonal_with_zero_bias():
    policy = PPOPolicy(dict(model=MODEL), enable_field=["learn"])
    model = policy.learn_mode.get_attribute("model")
    linear = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))
    w = linear.weight.detach()
    assert w.shape == (32, 4)  # a tall orthogonal matrix: orthonormal columns
    assert torch.allclose(w.T @ w, torch.eye(4), atol=1e-5) and not linear.bias.any()


def test_defaults_and_unsupported_options():
    policy = PPOPolicy(dict(model=MODEL), enable_field=["eval"])
    assert policy.cfg.on_policy is True and policy.default_collector_type == "sample"
    assert policy.default_model()[0] == "vac"
    with pytest.raises(ConfigError, match="hybrid"):
        PPOPolicy(dict(model=MODEL, action_space="hybrid"))
    with pytest.raises(ConfigError, match="set both"):
        PPOPolicy(dict(model=dict(MODEL, action_space="discrete"), action_space="continuous"))
    with pytest.raises(ConfigError, match="set both"):
        PPOPolicy(dict(model=dict(MODEL, type="vac", action_space="continuous")))
    named = PPOPolicy(dict(model=dict(MODEL, type="vac", action_shape=1), action_space="continuous"))
    assert named.learn_mode.get_attribute("model").action_space == "continuous"
    with pytest.raises(ConfigError, match="unroll_len"):
        PPOPolicy(dict(model=MODEL, collect=dict(unroll_len=4)))
    with pytest.raises(ConfigError, match="grad_clip_type"):
        PPOPolicy(dict(model=MODEL, learn=dict(grad_clip_type="clip_momentum")))
    with pytest.raises(ConfigError, match="learnig_rate"):
        PPOPolicy(dict(model=MODEL, learn=dict(learnig_rate=1e-3)))


def test_a_box_action_space_is_refused_by_name():
    from ding_ray.errors import EnvError

    policy = PPOPolicy(dict(model=MODEL), enable_field=["eval"])
    with pytest.raises(EnvError, match="discrete action space, but the env's is continuous"):
        policy.check_spaces((4,), "continuous", 1)
    with pytest.raises(EnvError, match="action_shape=3"):
        policy.check_spaces((4,), "discrete", 3)


class GaussianStub(torch.nn.Module):
    """Actor: mu = obs[0], sigma = 0.5. Critic: V(obs) = obs[1]."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(()))

    def forward(self, obs, mode):
        mu = obs[:, :1] * self.scale
        return {"logit": {"mu": mu, "sigma": torch.full_like(mu, 0.5)}, "value": obs[:, 1] * self.scale}


def test_continuous_collect_samples_the_gaussian_unclipped_and_eval_takes_the_mean():
    torch.manual_seed(0)
    cfg = dict(action_space="continuous", model=dict(MODEL, action_shape=1))
    policy = PPOPolicy(cfg, model=GaussianStub(), enable_field=["collect", "eval"])
    obs = {i: np.array([3.0, 7.0, 0, 0], np.float32) for i in range(4000)}
    out = policy.collect_mode.forward(obs)
    actions = np.stack([o["action"] for o in out.values()])
    assert actions.shape == (4000, 1) and actions.dtype == np.float32
    assert abs(actions.mean() - 3.0) < 0.03 and abs(actions.std() - 0.5) < 0.03
    assert actions.max() > 4.0  # nothing clipped: an env bounded at 2 would clip, not the policy
    assert out[0]["logit"]["mu"] == pytest.approx([3.0]) and out[0]["logit"]["sigma"] == pytest.approx([0.5])
    assert out[0]["value"] == pytest.approx(7.0)
    t = policy.collect_mode.process_transition(obs[0], out[0], BaseEnvTimestep(obs[0], -1.0, False, {}))
    assert t["action"] is out[0]["action"] and set(t["logit"]) == {"mu", "sigma"}
    assert policy.eval_mode.forward({0: obs[0]})[0]["action"] == pytest.approx([3.0])


def continuous_rollout(n=64, seed=0):
    rng = np.random.default_rng(seed)
    data = rollout(n, seed)
    for d in data:
        d["action"] = rng.normal(size=1).astype(np.float32)
        d["logit"] = dict(mu=np.zeros(1, np.float32), sigma=np.ones(1, np.float32))
    return data


def test_continuous_learn_trains_and_default_model_follows_the_action_space():
    torch.manual_seed(0)
    policy = create_policy(
        dict(
            type="ppo",
            action_space="continuous",
            model=dict(MODEL, action_shape=1),
            learn=dict(epoch_per_collect=2, batch_size=16),
        )
    )
    assert policy.cfg.model.action_space == "continuous" and policy.action_space == "continuous"
    model = policy.learn_mode.get_attribute("model")
    head = model.actor_head
    # DI-engine's continuous ppo_param_init: log std -0.5, actor layers scaled down by 0.01
    assert torch.allclose(head.log_sigma_param, torch.full((1, 1), -0.5))
    assert head.mu.weight.abs().max() < 0.05
    before = [p.detach().clone() for p in model.parameters()]
    steps = policy.learn_mode.forward(continuous_rollout())
    assert all(math.isfinite(v) for info in steps for v in info.values())
    info = steps[-1]
    assert set(policy.learn_mode.monitor_vars()) <= set(info) and 0.5 < info["sigma_mean"] < 0.7
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    policy.check_spaces((4,), "continuous", 1)  # a Box env fits
    from ding_ray.errors import EnvError

    with pytest.raises(EnvError, match="continuous action space, but the env's is discrete"):
        policy.check_spaces((4,), "discrete", 2)


def test_an_optimizer_state_in_the_old_head_order_is_refused_with_what_to_do():
    """Before VAC listed the critic head first (DI-engine's order), a checkpoint's Adam moments came
    actor head first: loaded as they are they would not fit; the error says how to go on."""
    policy = create_policy(dict(type="ppo", model=MODEL), enable_field=["learn"])
    policy.learn_mode.forward(rollout())
    state = policy.learn_mode.state_dict()
    model = policy.learn_mode.get_attribute("model")
    names = [n for n, _ in model.named_parameters()]
    heads = [i for i, n in enumerate(names) if n.startswith(("critic_head", "actor_head"))]
    critic = [i for i in heads if names[i].startswith("critic_head")]
    encoder = [i for i in range(len(names)) if i not in heads]
    old_order = encoder + [i for i in heads if i not in critic] + critic
    moments = state["optimizer"]["state"]
    state["optimizer"]["state"] = {new: moments[old] for new, old in enumerate(old_order)}
    other = create_policy(dict(type="ppo", model=MODEL), enable_field=["learn"])
    with pytest.raises(DataFormatError, match="without its 'optimizer' entry"):
        other.learn_mode.load_state_dict(state)
    del state["optimizer"]
    other.learn_mode.load_state_dict(state)  # the weights alone load by name
    other_model = other.learn_mode.get_attribute("model")
    assert all(torch.equal(a, b) for a, b in zip(other_model.parameters(), model.parameters()))
