"""The Q-network computes what its layers say, and stays in step with its parameters.

MLP keeps its parameters in a plain list for speed; these tests pin down that loading a state
dict, deep-copying (target networks), optimizer steps and ``.to()`` all reach the forward pass.
"""

import copy

import pytest
import torch
import torch.nn.functional as F

from ding_ray.model import DQN, create_model


def reference_forward(net: DQN, obs: torch.Tensor) -> torch.Tensor:
    """The dueling DQN written out layer by layer from the registered parameters."""
    p = dict(net.named_parameters())
    x = obs
    for i in range(3):
        x = torch.relu(F.linear(x, p[f"encoder.mlp.layers.{i}.weight"], p[f"encoder.mlp.layers.{i}.bias"]))
    h = torch.relu(F.linear(x, p["head.first.layers.0.weight"], p["head.first.layers.0.bias"]))
    hidden = h.shape[1] // 2
    adv = F.linear(h[:, :hidden], p["head.advantage.layers.0.weight"], p["head.advantage.layers.0.bias"])
    value = F.linear(h[:, hidden:], p["head.value.layers.0.weight"], p["head.value.layers.0.bias"])
    return value + adv - adv.mean(dim=-1, keepdim=True)


@pytest.fixture
def net() -> DQN:
    torch.manual_seed(0)
    return DQN(obs_shape=4, action_shape=3, encoder_hidden_size_list=[32, 32, 16], dueling=True)


def test_dueling_forward_matches_layer_by_layer(net):
    obs = torch.randn(5, 4)
    torch.testing.assert_close(net(obs)["logit"], reference_forward(net, obs))


def test_load_state_dict_reaches_forward(net):
    other = DQN(obs_shape=4, action_shape=3, encoder_hidden_size_list=[32, 32, 16], dueling=True)
    obs = torch.randn(5, 4)
    assert not torch.allclose(net(obs)["logit"], other(obs)["logit"])
    net.load_state_dict(other.state_dict())
    torch.testing.assert_close(net(obs)["logit"], other(obs)["logit"])


def test_deepcopy_is_independent(net):
    target = copy.deepcopy(net)
    obs = torch.randn(5, 4)
    before = target(obs)["logit"].detach().clone()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    net(obs)["logit"].sum().backward()
    optimizer.step()
    torch.testing.assert_close(target(obs)["logit"], before)  # the copy did not move
    torch.testing.assert_close(net(obs)["logit"], reference_forward(net, obs))  # the original did
    assert not torch.allclose(net(obs)["logit"], before)


def test_gradients_reach_every_parameter(net):
    q = net(torch.randn(5, 4))["logit"]
    (q * torch.randn_like(q)).sum().backward()  # a plain sum has no gradient wrt the advantage bias
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in net.parameters())


def test_to_dtype_keeps_forward_consistent(net):
    net.to(torch.float64)
    obs = torch.randn(5, 4, dtype=torch.float64)
    torch.testing.assert_close(net(obs)["logit"], reference_forward(net, obs))


def test_plain_head_and_unknown_kwarg():
    model = create_model(dict(type="dqn", obs_shape=[2, 2], action_shape=2, dueling=False))
    assert model(torch.randn(3, 2, 2))["logit"].shape == (3, 2)
    with pytest.raises(Exception, match="hidden_size_lst"):
        create_model(dict(type="dqn", obs_shape=4, action_shape=2, hidden_size_lst=[8]))


def test_an_fc_encoder_refuses_an_image_and_names_the_conv_encoder():
    """DI-engine builds a ConvEncoder for a (C, H, W) obs_shape; a flattening MLP in its place would
    be another model, so the FCEncoder refuses one (DQN and VAC build a conv encoder: test_conv.py)."""
    from ding_ray.errors import ConfigError
    from ding_ray.model import FCEncoder

    with pytest.raises(ConfigError, match=r"obs_shape=\[3, 96, 96\] is an image.*ConvEncoder"):
        FCEncoder([3, 96, 96], [64])
