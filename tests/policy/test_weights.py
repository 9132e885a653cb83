import numpy as np
import pytest
import torch

from ding_ray.errors import ShapeError
from ding_ray.policy import DQNPolicy
from ding_ray.policy.weights import load_weights, num_parameters, numpy_to_state_dict, state_dict_to_numpy

MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16, 16], dueling=True)


def test_round_trip_through_read_only_arrays():
    source, target = DQNPolicy(dict(model=MODEL)), DQNPolicy(dict(model=MODEL))
    weights = state_dict_to_numpy(source.learn_mode.state_dict()["model"])
    assert all(isinstance(v, np.ndarray) for v in weights.values())
    for value in weights.values():
        value.flags.writeable = False  # as they come out of Ray's object store
    load_weights(target.collect_mode, weights)
    obs = torch.randn(5, 4)
    source_model = source.learn_mode.get_attribute("model")
    loaded = target.collect_mode.get_attribute("model")
    assert torch.equal(source_model(obs)["logit"], loaded(obs)["logit"])
    assert num_parameters(weights) == sum(p.numel() for p in source_model.parameters())


def test_published_copy_does_not_follow_training():
    policy = DQNPolicy(dict(model=MODEL))
    weights = state_dict_to_numpy(policy.learn_mode.state_dict()["model"])
    key = next(iter(weights))
    before = weights[key].copy()
    with torch.no_grad():
        for p in policy.learn_mode.get_attribute("model").parameters():
            p.add_(1.0)
    assert np.array_equal(weights[key], before)


def test_mismatch_names_keys_and_shapes():
    small = DQNPolicy(dict(model=MODEL))
    big = DQNPolicy(dict(model=dict(MODEL, encoder_hidden_size_list=[32, 16])))
    weights = state_dict_to_numpy(big.learn_mode.state_dict()["model"])
    with pytest.raises(ShapeError, match=r"shape mismatch .*\(16, 4\).*\(32, 4\)"):
        load_weights(small.collect_mode, weights)
    weights = state_dict_to_numpy(small.learn_mode.state_dict()["model"])
    extra = dict(weights, bogus=np.zeros(3))
    missing = {k: v for k, v in list(weights.items())[1:]}
    with pytest.raises(ShapeError, match="unexpected keys \\['bogus'\\]"):
        numpy_to_state_dict(extra, small.collect_mode.state_dict()["model"])
    with pytest.raises(ShapeError, match="missing keys"):
        numpy_to_state_dict(missing, small.collect_mode.state_dict()["model"])
