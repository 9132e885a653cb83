"""The conv encoder: DI-engine's meaning of ``encoder_hidden_size_list`` for a 3-D ``obs_shape``, uint8
frames scaled inside the model, clear refusals, and DQN / PPO policies training on uint8 frames."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ding_ray.errors import ConfigError, NotSupportedError, ShapeError
from ding_ray.model import DQN, VAC, ConvEncoder, create_model
from ding_ray.policy import create_policy
from ding_ray.policy.common import obs_batch, to_tensor_batch

SMALL = (4, 36, 36)  # 36 -> 8 -> 3 -> 1 through DI-engine's 8x8/4, 4x4/2, 3x3/1: fast, same layers


def frames(n: int, shape=SMALL, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(n, *shape), dtype=np.uint8)


def layers(encoder: ConvEncoder) -> list[tuple]:
    convs = [(c.out_channels, c.kernel_size[0], c.stride[0]) for c in encoder.convs]
    return convs + [(encoder.fc.in_features, encoder.fc.out_features)]


def test_a_3d_obs_shape_gets_the_nature_cnn_by_default():
    model = create_model(dict(type="dqn", obs_shape=[4, 84, 84], action_shape=6))
    assert isinstance(model.encoder, ConvEncoder)
    assert layers(model.encoder) == [(32, 8, 4), (64, 4, 2), (64, 3, 1), (64 * 7 * 7, 512)]
    assert model(torch.zeros(2, 4, 84, 84, dtype=torch.uint8))["logit"].shape == (2, 6)
    # a vector obs_shape keeps the MLP default
    assert [layer.out_features for layer in DQN(4, 2).encoder.mlp.layers] == [128, 128, 64]


def test_encoder_hidden_size_list_means_conv_channels_then_the_linear_width():
    """DI-engine's ConvEncoder: the first K entries are the K convs' channels, the last the linear
    layer's width; with K entries the last one is both (dizoo's pong DQN [128, 128, 512])."""
    pong = DQN([4, 84, 84], 6, encoder_hidden_size_list=[128, 128, 512])
    assert layers(pong.encoder) == [(128, 8, 4), (128, 4, 2), (512, 3, 1), (512 * 7 * 7, 512)]
    nature = DQN([4, 84, 84], 6, encoder_hidden_size_list=[32, 64, 64, 512])
    assert layers(nature.encoder)[-1] == (64 * 7 * 7, 512)
    with pytest.raises(ConfigError, match=r"too short for 3 conv layers"):
        DQN([4, 84, 84], 6, encoder_hidden_size_list=[64, 64])
    with pytest.raises(NotSupportedError, match=r"residual blocks"):
        DQN([4, 84, 84], 6, encoder_hidden_size_list=[32, 64, 64, 64, 512])


def test_the_linear_layer_has_no_activation_after_it():
    encoder = ConvEncoder(SMALL, [8, 8, 8, 16])
    torch.nn.init.constant_(encoder.fc.bias, -100.0)  # a ReLU after it would give zeros
    assert (encoder(torch.zeros(1, *SMALL)) < 0).all()


def test_uint8_frames_are_scaled_by_255_in_the_model_and_float_ones_pass_as_they_are():
    model = DQN(SMALL, 3, encoder_hidden_size_list=[8, 8, 8, 16])
    obs = torch.from_numpy(frames(5))
    scaled = obs.to(torch.float32) / 255.0
    torch.testing.assert_close(model(obs)["logit"], model(scaled)["logit"], rtol=0, atol=0)
    conv = model.encoder.convs[0]
    first = F.relu(F.conv2d(scaled, conv.weight, conv.bias, conv.stride))
    seen = {}
    conv.register_forward_hook(lambda m, inputs, out: seen.update(x=inputs[0], out=out))
    model(scaled)
    assert seen["x"].dtype == torch.float32 and torch.equal(seen["x"], scaled)  # no second scaling
    model(obs)
    torch.testing.assert_close(F.relu(seen["out"]), first)


def test_channels_last_and_too_small_frames_are_refused_with_the_fix():
    with pytest.raises(ConfigError, match=r"\[84, 84, 4\] looks channels-last.*give \[4, 84, 84\]"):
        create_model(dict(type="dqn", obs_shape=[84, 84, 4], action_shape=6))
    with pytest.raises(ConfigError, match=r"too small.*encoder_kernel_size / encoder_stride"):
        DQN([4, 10, 10], 3, encoder_hidden_size_list=[32, 64, 64, 512])  # the Nature CNN asked for
    # MinAtar-sized frames get MinAtar's network by default: conv 16 3x3/1, linear 128
    assert layers(DQN([4, 10, 10], 3).encoder) == [(16, 3, 1), (16 * 8 * 8, 128)]
    # ... or what a config gives (ding_ray's encoder_kernel_size / encoder_stride)
    minatar = DQN(
        [4, 10, 10], 3, encoder_hidden_size_list=[8, 64], encoder_kernel_size=[2], encoder_stride=[2]
    )
    assert layers(minatar.encoder) == [(8, 2, 2), (8 * 5 * 5, 64)]
    model = DQN(SMALL, 3, encoder_hidden_size_list=[8, 8, 8, 16])
    with pytest.raises(ShapeError, match=r"channels first"):
        model(torch.zeros(2, 36, 36, 4, dtype=torch.uint8))


def test_mlp_only_options_and_models_refuse_an_image():
    with pytest.raises(ConfigError, match=r"dropout is not supported with a conv encoder"):
        DQN(SMALL, 3, dropout=0.1)
    with pytest.raises(ConfigError, match=r"encoder_kernel_size / encoder_stride are for image"):
        DQN(4, 2, encoder_kernel_size=[3])
    for model in ("discrete_qac", "continuous_qac"):
        with pytest.raises(ConfigError, match=r"vector obs_shapes.*use the 'dqn' or 'vac' model"):
            create_model(dict(type=model, obs_shape=list(SMALL), action_shape=3))


def test_vac_forward_on_frames_shared_and_own_encoders():
    obs = torch.from_numpy(frames(3))
    for share in (True, False):
        vac = VAC(
            SMALL, 5, share_encoder=share, encoder_hidden_size_list=[8, 8, 16], actor_head_hidden_size=16
        )
        out = vac(obs, "compute_actor_critic")
        assert out["logit"].shape == (3, 5) and out["value"].shape == (3,)
        torch.testing.assert_close(vac(obs, "compute_actor")["logit"], out["logit"])
        torch.testing.assert_close(vac(obs.float() / 255, "compute_critic")["value"], out["value"])
    assert isinstance(VAC([3, 64, 64], 2).encoder, ConvEncoder)


def test_policy_helpers_keep_uint8_observations_uint8():
    obs = frames(2)
    _, batch = obs_batch({0: obs[0], 1: obs[1]})
    assert batch.dtype == np.uint8
    _, vectors = obs_batch({0: np.zeros(3), 1: np.ones(3)})
    assert vectors.dtype == np.float32
    columns = to_tensor_batch(dict(obs=obs, next_obs=obs, action=np.array([1, 2], np.uint8)))
    assert columns["obs"].dtype == columns["next_obs"].dtype == torch.uint8
    assert columns["action"].dtype == torch.int64  # only observation columns stay bytes


def record_input_dtypes(model: torch.nn.Module) -> list[torch.dtype]:
    dtypes = []
    model.register_forward_pre_hook(lambda m, args: dtypes.append(args[0].dtype))
    return dtypes


def test_a_dqn_policy_learns_and_acts_on_uint8_frames():
    torch.manual_seed(0)
    model = dict(obs_shape=list(SMALL), action_shape=3, encoder_hidden_size_list=[8, 8, 8, 32])
    policy = create_policy(dict(type="dqn", model=model, learn=dict(batch_size=8)))
    model = policy.learn_mode.get_attribute("model")  # the one model of every mode
    dtypes = record_input_dtypes(model)
    obs, next_obs = frames(8, seed=1), frames(8, seed=2)
    data = [
        dict(obs=obs[i], next_obs=next_obs[i], action=np.int64(i % 3), reward=np.float32(1.0), done=False)
        for i in range(8)
    ]
    before = [p.detach().clone() for p in model.parameters()]
    info = policy.learn_mode.forward(data)
    assert np.isfinite(info["total_loss"])
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    out = policy.collect_mode.forward({0: obs[0], 1: obs[1]}, eps=0.0)
    assert set(out) == {0, 1} and 0 <= int(out[0]["action"]) < 3
    assert dtypes and set(dtypes) == {torch.uint8}


def test_a_ppo_policy_learns_on_uint8_frames():
    torch.manual_seed(0)
    model = dict(obs_shape=list(SMALL), action_shape=3, encoder_hidden_size_list=[8, 8, 16])
    policy = create_policy(dict(type="ppo", model=model, learn=dict(epoch_per_collect=1, batch_size=8)))
    dtypes = record_input_dtypes(policy.learn_mode.get_attribute("model"))
    obs = frames(9, seed=3)
    out = policy.collect_mode.forward({i: obs[i] for i in range(8)})
    transitions = [
        policy.collect_mode.process_transition(
            obs[i], out[i], type("T", (), dict(obs=obs[i + 1], reward=1.0, done=False, info={}))()
        )
        for i in range(8)
    ]
    samples = policy.collect_mode.get_train_sample(transitions)
    logs = policy.learn_mode.forward(samples)
    assert len(logs) == 1 and all(np.isfinite(v) for v in logs[0].values())
    assert set(dtypes) == {torch.uint8}


def test_load_policy_act_takes_uint8_frames_as_bytes():
    from easydict import EasyDict

    from ding_ray.entry.trained_policy import TrainedPolicy

    model = dict(obs_shape=list(SMALL), action_shape=3, encoder_hidden_size_list=[8, 8, 8, 32])
    policy = create_policy(dict(type="dqn", model=model), enable_field=["eval"])
    trained = TrainedPolicy(policy, EasyDict(policy=dict(type="dqn", model=model)), "test")
    obs = frames(6, seed=4)
    expected = [int(a) for a in trained.act(obs.astype(np.float32) / 255.0)]
    assert [int(a) for a in trained.act(obs)] == expected
    assert trained.act(obs[0]) == expected[0]
