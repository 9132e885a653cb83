"""The distributional Q models (C51DQN, QRDQN, IQN, RainbowDQN) and noisy layers behave as specified:
output shapes, distributions that sum to 1, expected returns that match them, quantile fractions,
noise that acts in train mode only, and clear errors for bad arguments."""

import copy

import pytest
import torch

from ding_ray.errors import ConfigError
from ding_ray.model import (
    C51DQN,
    IQN,
    QRDQN,
    NoiseLinearLayer,
    RainbowDQN,
    create_model,
    reset_noise,
)

B, OBS, ACTIONS = 5, 4, 3


@pytest.fixture
def obs() -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randn(B, OBS)


@pytest.mark.parametrize("model_cls", [C51DQN, RainbowDQN])
def test_categorical_models_give_distributions_and_their_means(model_cls, obs) -> None:
    model = model_cls(OBS, ACTIONS, encoder_hidden_size_list=[32, 16], v_min=-2, v_max=6, n_atom=9).eval()
    out = model(obs)
    assert set(out) == {"logit", "distribution"}
    assert out["logit"].shape == (B, ACTIONS)
    assert out["distribution"].shape == (B, ACTIONS, 9)
    assert (out["distribution"] > 0).all()
    # softmax + 1e-6 per atom, as DI-engine
    torch.testing.assert_close(out["distribution"].sum(-1), torch.full((B, ACTIONS), 1 + 9e-6))
    atoms = torch.linspace(-2, 6, 9)
    torch.testing.assert_close(out["logit"], (out["distribution"] * atoms).sum(-1))


def test_qrdqn_quantiles_and_fractions(obs) -> None:
    model = QRDQN(OBS, [ACTIONS], encoder_hidden_size_list=[32, 16], num_quantiles=4)
    out = model(obs)
    assert set(out) == {"logit", "q", "tau"}
    assert out["q"].shape == (B, ACTIONS, 4)
    torch.testing.assert_close(out["logit"], out["q"].mean(-1))
    assert out["tau"].shape == (B, 4, 1)
    torch.testing.assert_close(out["tau"][0, :, 0], torch.tensor([0.125, 0.375, 0.625, 0.875]))


def test_iqn_draws_fractions_per_forward(obs) -> None:
    model = IQN(OBS, ACTIONS, encoder_hidden_size_list=[32, 16], num_quantiles=6, quantile_embedding_size=8)
    out = model(obs)
    assert set(out) == {"logit", "q", "quantiles"}
    assert out["q"].shape == (6, B, ACTIONS)
    assert out["logit"].shape == (B, ACTIONS)
    assert out["quantiles"].shape == (6 * B, 1)
    assert ((out["quantiles"] >= 0) & (out["quantiles"] < 1)).all()
    again = model(obs)
    assert not torch.equal(again["quantiles"], out["quantiles"])
    torch.manual_seed(7)
    first = model(obs)
    torch.manual_seed(7)
    torch.testing.assert_close(model(obs)["q"], first["q"])
    assert model.head(model.encoder(obs), num_quantiles=2)["q"].shape == (2, B, ACTIONS)


def test_noisy_layer_noise_only_in_train_mode() -> None:
    layer = NoiseLinearLayer(6, 4)
    x = torch.randn(3, 6)
    train_out = layer(x)
    torch.testing.assert_close(
        train_out,
        x @ (layer.weight_mu + layer.weight_sigma * layer.weight_eps).T
        + layer.bias_mu
        + layer.bias_sigma * layer.bias_eps,
    )
    layer.eval()
    torch.testing.assert_close(layer(x), x @ layer.weight_mu.T + layer.bias_mu)
    # factorised noise: the weight noise is the outer product of the output and input noise
    assert torch.linalg.matrix_rank(layer.weight_eps) == 1
    torch.testing.assert_close(
        layer.weight_eps[:, 0] / layer.weight_eps[0, 0], layer.bias_eps / layer.bias_eps[0]
    )


def test_rainbow_noise_changes_train_outputs_not_eval_outputs(obs) -> None:
    model = RainbowDQN(OBS, ACTIONS, encoder_hidden_size_list=[32, 16])
    assert any(isinstance(m, NoiseLinearLayer) for m in model.head.modules())
    assert not any(isinstance(m, NoiseLinearLayer) for m in model.encoder.modules())
    model.train()
    before = model(obs)["logit"]
    torch.testing.assert_close(model(obs)["logit"], before)  # the noise holds until reset
    model.eval()
    eval_before = model(obs)["logit"]
    reset_noise(model)
    torch.testing.assert_close(model(obs)["logit"], eval_before)
    model.train()
    assert not torch.allclose(model(obs)["logit"], before)


def test_models_train_and_survive_deepcopy_and_state_dict(obs) -> None:
    for model in (
        C51DQN(OBS, ACTIONS, [16, 8]),
        QRDQN(OBS, ACTIONS, [16, 8]),
        IQN(OBS, ACTIONS, [16, 8]),
        RainbowDQN(OBS, ACTIONS, [16, 8]),
    ):
        target = copy.deepcopy(model).eval()
        model.eval()
        torch.manual_seed(1)
        expected = model(obs)["logit"]
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model.train()
        model(obs)["logit"].sum().backward()
        assert all(p.grad is not None for p in model.parameters()), type(model).__name__
        optimizer.step()
        model.eval()
        torch.manual_seed(1)
        assert not torch.allclose(model(obs)["logit"], expected)
        target.load_state_dict(model.state_dict())
        torch.manual_seed(1)
        moved = model(obs)["logit"]
        torch.manual_seed(1)
        torch.testing.assert_close(target(obs)["logit"], moved)


@pytest.mark.parametrize(
    "model_type, keys",
    [
        ("c51dqn", {"logit", "distribution"}),
        ("qrdqn", {"logit", "q", "tau"}),
        ("iqn", {"logit", "q", "quantiles"}),
        ("rainbowdqn", {"logit", "distribution"}),
    ],
)
def test_create_model_by_di_engine_type(model_type, keys, obs) -> None:
    model = create_model(dict(type=model_type, obs_shape=OBS, action_shape=ACTIONS))
    assert set(model(obs)) == keys


def test_bad_arguments_are_refused_early() -> None:
    with pytest.raises(ConfigError, match="n_atom >= 2"):
        C51DQN(OBS, ACTIONS, n_atom=1)
    with pytest.raises(ConfigError, match="v_min=5 must be below v_max=5"):
        RainbowDQN(OBS, ACTIONS, v_min=5, v_max=5)
    with pytest.raises(ConfigError, match="num_quantiles=0"):
        QRDQN(OBS, ACTIONS, num_quantiles=0)
    with pytest.raises(ConfigError, match="head_hidden_size=32 differs.*output width 64"):
        IQN(OBS, ACTIONS, head_hidden_size=32)
    with pytest.raises(ConfigError, match=r"action_shape.*\[2, 3\]"):
        C51DQN(OBS, [2, 3])
    with pytest.raises(ConfigError, match="Unknown config key 'policy.model.dueling'"):
        create_model(dict(type="qrdqn", obs_shape=OBS, action_shape=ACTIONS, dueling=True))
