"""ObsNormalizer: running moments by hand, identity before data, state dict; PPO carries it in its
weights, so a collector that loads the learner's published weights normalises as the learner."""

import numpy as np
import pytest
import torch

from ding_ray.errors import ConfigError
from ding_ray.policy import PPOPolicy
from ding_ray.policy.obs_norm import ObsNormalizer, split_state
from ding_ray.policy.running_stats import RunningMeanStd
from ding_ray.policy.weights import load_weights, state_dict_to_numpy


def test_running_moments_by_hand():
    # feature 0: batches [0, 2] and [4] -> mean 2, var ((0-2)^2 + 0 + (4-2)^2) / 3 = 8/3
    # feature 1: 10, 10, 10 -> mean 10, var 0
    norm = ObsNormalizer(2)
    norm.update(np.array([[0.0, 10.0], [2.0, 10.0]]))
    norm.update(torch.tensor([[4.0, 10.0]]))
    assert norm.mean == pytest.approx([2.0, 10.0]) and norm.var == pytest.approx([8 / 3, 0.0])
    assert norm.count == 3
    out = norm.normalize(torch.tensor([[2.0 + np.sqrt(8 / 3), 10.0]]))
    assert out[0, 0].item() == pytest.approx(1.0, rel=1e-5) and out[0, 1].item() == 0.0


def test_value_norm_statistics_are_di_engine_s_to_the_bit():
    """PPO's value_norm statistics after three float32 batches of returns: the figures DI-engine
    0.5.3's ``RunningMeanStd(epsilon=1e-4)`` gave for the same batches (its batch moments in float32,
    the merge in float64, std ``sqrt(var + 1e-8)``), so a seeded PPO run scales as DI-engine's."""
    rng = np.random.RandomState(0)
    stats = RunningMeanStd(epsilon=1e-4)
    di_engine = [
        (-100.44178571089084, 873.7999890025504, 29.56010806835033),
        (-100.55301184237027, 877.7412536540107, 29.626698325395807),
        (-100.31453129331328, 880.5451912348608, 29.67398172212251),
    ]
    for mean, var, std in di_engine:
        stats.update(rng.randn(5000).astype(np.float32) * 30 - 100)
        assert (float(stats.mean), float(stats.var), float(stats.std)) == (mean, var, std)


def test_identity_before_data_and_clipping():
    norm = ObsNormalizer([3])
    x = torch.tensor([[0.5, -2.0, 30.0]])
    assert torch.allclose(norm.normalize(x), torch.tensor([[0.5, -2.0, 10.0]]))  # clipped at +-10


def test_state_dict_round_trip_and_split():
    norm = ObsNormalizer(2)
    norm.update(np.random.default_rng(0).normal(3.0, 2.0, size=(100, 2)))
    state = norm.state_dict()
    assert set(state) == {"obs_norm.mean", "obs_norm.var", "obs_norm.count"}
    other = ObsNormalizer(2)
    other.load_state_dict(state_dict_to_numpy(state))  # numpy, as published weights arrive
    x = torch.randn(4, 2)
    assert torch.equal(other.normalize(x), norm.normalize(x)) and other.count == 100
    model, stats = split_state({"encoder.w": 1, **state})
    assert model == {"encoder.w": 1} and set(stats) == set(state)


MODEL = dict(obs_shape=3, action_shape=1, encoder_hidden_size_list=[16], critic_head_hidden_size=16)


def _policy(obs_norm=True, fields=("learn", "collect", "eval")):
    cfg = dict(action_space="continuous", obs_norm=obs_norm, model=MODEL, learn=dict(epoch_per_collect=1))
    return PPOPolicy(cfg, enable_field=list(fields))


def _rollout(n=32, seed=0):
    rng = np.random.default_rng(seed)
    return [
        dict(
            obs=rng.normal(5.0, 3.0, size=3).astype(np.float32),
            next_obs=rng.normal(5.0, 3.0, size=3).astype(np.float32),
            action=rng.normal(size=1).astype(np.float32),
            logit=dict(mu=np.zeros(1, np.float32), sigma=np.ones(1, np.float32)),
            value=0.0,
            adv=float(rng.normal()),
            reward=float(rng.normal()),
            done=False,
            traj_flag=i == n - 1,
        )
        for i in range(n)
    ]


def test_learner_updates_statistics_and_published_weights_carry_them():
    torch.manual_seed(0)
    learner = _policy(fields=("learn",))
    data = _rollout()
    learner.learn_mode.forward(data)
    stats = learner.learn_mode.get_attribute("obs_norm")
    assert stats.count == 32
    assert stats.mean == pytest.approx(np.mean([d["obs"] for d in data], axis=0), rel=1e-5)
    weights = state_dict_to_numpy(learner.learn_mode.state_dict()["model"])  # what the learner publishes
    assert "obs_norm.mean" in weights
    collector = _policy(fields=("collect", "eval"))
    load_weights(collector.collect_mode, weights)
    assert collector.collect_mode.get_attribute("obs_norm").count == 32
    obs = {0: data[0]["obs"]}
    assert collector.eval_mode.forward(obs)[0]["action"] == pytest.approx(
        learner.learn_mode.get_attribute("model")(
            stats.normalize(torch.from_numpy(data[0]["obs"])[None]), "compute_actor"
        )["logit"]["mu"]
        .detach()
        .numpy()[0]
    )
    # a checkpoint (learn state dict) restores the statistics too
    restored = _policy(fields=("learn",))
    restored.learn_mode.load_state_dict(learner.learn_mode.state_dict())
    assert restored.learn_mode.get_attribute("obs_norm").mean == pytest.approx(stats.mean)


def test_obs_norm_mismatch_is_an_error():
    with_norm, without = _policy(True, ("eval",)), _policy(False, ("eval",))
    with pytest.raises(ConfigError, match="obs_norm=True"):
        without.eval_mode.load_state_dict(with_norm.eval_mode.state_dict())
    with pytest.raises(ConfigError, match="no obs_norm statistics"):
        with_norm.eval_mode.load_state_dict(without.eval_mode.state_dict())
    with pytest.raises(ConfigError, match="obs_shape"):
        PPOPolicy(dict(obs_norm=True, model=dict(action_shape=2)), model=torch.nn.Linear(2, 2))
