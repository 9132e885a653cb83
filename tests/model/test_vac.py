"""VAC: the modes return what their layers compute; shared and separate encoders; bad kwargs."""

import math

import pytest
import torch
import torch.nn.functional as F

from ding_ray.errors import ConfigError
from ding_ray.model import VAC, create_model


def _mlp(x, params, prefix, n, last_activation):
    for i in range(n):
        x = F.linear(x, params[f"{prefix}.layers.{i}.weight"], params[f"{prefix}.layers.{i}.bias"])
        if i < n - 1 or last_activation:
            x = torch.relu(x)
    return x


def test_modes_compute_the_layers_written_out():
    torch.manual_seed(0)
    net = create_model(
        dict(
            type="vac",
            obs_shape=4,
            action_shape=3,
            encoder_hidden_size_list=[16, 8],
            actor_head_hidden_size=8,
        )
    )
    assert isinstance(net, VAC)
    p = dict(net.named_parameters())
    obs = torch.randn(5, 4)
    feature = _mlp(obs, p, "encoder.mlp", 2, True)
    logit = _mlp(feature, p, "actor_head", 2, False)
    value = _mlp(feature, p, "critic_head", 2, False).squeeze(-1)
    both = net(obs, mode="compute_actor_critic")
    assert both["logit"].shape == (5, 3) and both["value"].shape == (5,)
    assert torch.allclose(both["logit"], logit) and torch.allclose(both["value"], value)
    assert torch.allclose(net(obs, "compute_actor")["logit"], logit)
    assert torch.allclose(net(obs, "compute_critic")["value"], value)
    # the shared encoder's weights appear once in the state dict
    assert not any(k.startswith(("actor_encoder", "critic_encoder")) for k in net.state_dict())


def test_separate_encoders_and_head_layers():
    net = VAC(
        obs_shape=[2, 3],
        action_shape=2,
        share_encoder=False,
        encoder_hidden_size_list=[32, 16],
        actor_head_hidden_size=8,
        actor_head_layer_num=2,
        critic_head_hidden_size=4,
        critic_head_layer_num=0,
        activation=torch.nn.Tanh(),
    )
    keys = net.state_dict().keys()
    assert any(k.startswith("actor_encoder.") for k in keys) and any(
        k.startswith("critic_encoder.") for k in keys
    )
    assert len(net.actor_head.layers) == 3 and len(net.critic_head.layers) == 1
    out = net(torch.randn(7, 2, 3), "compute_actor_critic")
    assert out["logit"].shape == (7, 2) and out["value"].shape == (7,)
    # actor and critic do not share parameters
    actor_ids = {id(q) for q in net.actor.parameters()}
    assert not actor_ids & {id(q) for q in net.critic.parameters()}


def test_bad_mode_action_space_and_kwarg():
    net = VAC(4, 2)
    with pytest.raises(ValueError, match="compute_actor_critic"):
        net(torch.zeros(1, 4), "compute_q")
    with pytest.raises(ConfigError, match="continuous"):
        VAC(4, 2, action_space="hybrid")
    with pytest.raises(ConfigError, match="sigma_type"):
        VAC(4, 2, action_space="continuous", sigma_type="happo")
    with pytest.raises(ConfigError, match="bound_type"):
        VAC(4, 2, action_space="continuous", bound_type="sigmoid")
    with pytest.raises(ConfigError, match="critic_head_hidden_size"):
        create_model(dict(type="vac", obs_shape=4, action_shape=2, critic_head_hiden_size=3))


def test_continuous_gaussian_head_written_out():
    torch.manual_seed(0)
    net = VAC(
        3,
        2,
        action_space="continuous",
        encoder_hidden_size_list=[16, 8],
        actor_head_layer_num=0,
        critic_head_layer_num=0,
        bound_type="tanh",
    )
    p = dict(net.named_parameters())
    with torch.no_grad():
        p["actor_head.log_sigma_param"].copy_(torch.tensor([[0.0, -1.0]]))
    obs = torch.randn(5, 3)
    feature = _mlp(obs, p, "encoder.mlp", 2, True)
    mu = torch.tanh(F.linear(feature, p["actor_head.mu.weight"], p["actor_head.mu.bias"]))
    out = net(obs, "compute_actor_critic")
    assert torch.allclose(out["logit"]["mu"], mu)
    # 'independent' sigma: the same exp(log_sigma_param) for every state
    assert torch.allclose(out["logit"]["sigma"], torch.tensor([[1.0, math.exp(-1.0)]]).expand(5, 2))
    assert out["value"].shape == (5,)
    assert torch.allclose(net(obs, "compute_actor")["logit"]["mu"], mu)


def test_continuous_conditioned_and_fixed_sigma():
    net = VAC(3, 2, action_space="continuous", sigma_type="conditioned", actor_head_hidden_size=16)
    out = net(torch.randn(4, 3), "compute_actor")["logit"]
    assert out["sigma"].shape == (4, 2) and (out["sigma"] > 0).all()
    assert "actor_head.log_sigma_layer.weight" in net.state_dict()
    assert len(net.actor_head.main.layers) == 1  # actor_head_layer_num=1 hidden layer, then mu
    fixed = VAC(3, 2, action_space="continuous", sigma_type="fixed", fixed_sigma_value=0.3)
    assert torch.allclose(
        fixed(torch.randn(4, 3), "compute_actor")["logit"]["sigma"], torch.full((4, 2), 0.3)
    )
    assert not any("sigma" in k for k in fixed.state_dict())  # nothing learned, nothing saved
