"""ContinuousQAC: the modes compute the layers written out; twin critics; bad kwargs are refused."""

import pytest
import torch
import torch.nn.functional as F

from ding_ray.errors import ConfigError
from ding_ray.model import ContinuousQAC, create_model


def _relu_mlp(x, params, prefix, n, last_activation):
    for i in range(n):
        x = F.linear(x, params[f"{prefix}.layers.{i}.weight"], params[f"{prefix}.layers.{i}.bias"])
        if i < n - 1 or last_activation:
            x = torch.relu(x)
    return x


def test_actor_and_twin_critics_compute_the_layers_written_out():
    torch.manual_seed(0)
    net = create_model(
        dict(
            type="continuous_qac",
            obs_shape=3,
            action_shape=2,
            action_space="reparameterization",
            twin_critic=True,
            actor_head_hidden_size=16,
            critic_head_hidden_size=8,
        )
    )
    assert isinstance(net, ContinuousQAC)
    p = dict(net.named_parameters())
    obs, action = torch.randn(5, 3), torch.rand(5, 2) * 2 - 1
    feature = _relu_mlp(obs, p, "actor.trunk", 2, True)  # input layer + actor_head_layer_num=1
    mu = F.linear(feature, p["actor.mu.weight"], p["actor.mu.bias"])
    log_sigma = F.linear(feature, p["actor.log_sigma_layer.weight"], p["actor.log_sigma_layer.bias"])
    out_mu, out_sigma = net(obs, mode="compute_actor")["logit"]
    assert out_mu.shape == out_sigma.shape == (5, 2)
    assert torch.allclose(out_mu, mu) and torch.allclose(out_sigma, log_sigma.clamp(-20, 2).exp())
    q = net({"obs": obs, "action": action}, mode="compute_critic")["q_value"]
    assert len(q) == 2 and all(qi.shape == (5,) for qi in q)
    x = torch.cat([obs, action], 1)
    for i in range(2):
        assert torch.allclose(q[i], _relu_mlp(x, p, f"critic.{i}", 3, False).squeeze(-1))
    assert not torch.allclose(q[0], q[1])  # two independently initialised critics


def test_single_critic_returns_one_tensor_and_1d_actions_are_accepted():
    net = ContinuousQAC(obs_shape=[3], action_shape=1, twin_critic=False, critic_head_layer_num=2)
    q = net.compute_critic({"obs": torch.randn(4, 3), "action": torch.randn(4)})["q_value"]
    assert isinstance(q, torch.Tensor) and q.shape == (4,)
    assert len(net.critic) == 1 and len(net.critic[0].layers) == 4
    # the optimizer groups DI-engine's SAC builds: actor and critic parameters, disjoint, covering all
    actor, critic = set(net.actor.parameters()), set(net.critic.parameters())
    assert not actor & critic and actor | critic == set(net.parameters())


def test_the_regression_actor_is_tanh_of_its_layers_and_squeezes_one_action_as_di_engine():
    torch.manual_seed(0)
    net = ContinuousQAC(3, 2, action_space="regression", twin_critic=True, actor_head_hidden_size=8)
    p = dict(net.named_parameters())
    obs = torch.randn(5, 3)
    feature = _relu_mlp(obs, p, "actor.trunk", 2, True)
    want = torch.tanh(F.linear(feature, p["actor.last.weight"], p["actor.last.bias"]))
    assert torch.allclose(net(obs, mode="compute_actor")["action"], want)
    one = ContinuousQAC(3, 1, action_space="regression")
    action = one.compute_actor(obs)["action"]
    assert action.shape == (5,) and bool((action.abs() < 1).all())
    # the critic takes the squeezed action as it is
    assert one.compute_critic({"obs": obs, "action": action})["q_value"].shape == (5,)


def test_sigma_is_bounded_like_di_engine():
    net = ContinuousQAC(3, 1)
    with torch.no_grad():
        net.actor.log_sigma_layer.bias.fill_(50.0)
    _, sigma = net.compute_actor(torch.zeros(2, 3))["logit"]
    assert torch.allclose(sigma, torch.full_like(sigma, torch.tensor(2.0).exp().item()))


def test_bad_kwargs_are_refused_by_name():
    with pytest.raises(ConfigError, match="'regression'.*'reparameterization'"):
        ContinuousQAC(3, 1, action_space="hybrid")
    with pytest.raises(ConfigError, match="obs_shape"):
        ContinuousQAC([3, 84, 84], 1)
    with pytest.raises(ConfigError, match="policy.model.twin_critc"):
        create_model(dict(type="continuous_qac", obs_shape=3, action_shape=1, twin_critc=True))
    with pytest.raises(ValueError, match="compute_actor_critic"):
        ContinuousQAC(3, 1)(torch.zeros(1, 3), mode="compute_actor_critic")
