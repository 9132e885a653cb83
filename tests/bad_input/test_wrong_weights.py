"""Weights of the wrong shape sent to a collector or evaluator: ShapeError naming each parameter
with both shapes; the weights and version it held stay in place and it keeps working."""

import copy

import numpy as np
import pytest
import torch

import tests.bad_input.envs  # noqa: F401 - registers the BadInput* envs
from ding_ray.errors import ShapeError
from ding_ray.policy import DQNPolicy
from ding_ray.policy.weights import load_weights, state_dict_to_numpy
from ding_ray.worker.eval_worker import EvalWorker
from ding_ray.worker.rollout_worker import RolloutWorker
from tests.bad_input.configs import compiled


@pytest.fixture
def cfg(tmp_path):
    return compiled(tmp_path)


def weights_of(cfg, **model_over):
    model = dict(copy.deepcopy(cfg.policy.model), **model_over)
    return state_dict_to_numpy(DQNPolicy(dict(model=model)).learn_mode.state_dict()["model"])


def held(mode) -> dict:
    return {k: v.clone() for k, v in mode.state_dict()["model"].items()}


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("worker_cls, mode", [(RolloutWorker, "collect_mode"), (EvalWorker, "eval_mode")])
def test_wrong_shapes_name_the_parameter_and_leave_the_old_weights(cfg, worker_cls, mode):
    worker = worker_cls(cfg)
    good = weights_of(cfg)
    assert worker.load_weights(1, good)
    before = held(getattr(worker.policy, mode))
    wider = weights_of(cfg, encoder_hidden_size_list=[32])
    with pytest.raises(ShapeError) as err:
        worker.load_weights(2, wider)
    message = str(err.value)
    assert "'encoder.mlp.layers.0.weight': model (16, 4), weights (32, 4)" in message
    assert "Build the learner and the collectors from the same policy.model config" in message
    assert worker.version == 1 and same(held(getattr(worker.policy, mode)), before)


def test_one_bad_parameter_among_good_ones_loads_none_of_them(cfg):
    """The check runs before anything is copied: torch's own load_state_dict would copy every
    parameter that fits before it raises for the one that does not."""
    worker = RolloutWorker(cfg)
    before = held(worker.policy.collect_mode)
    new = {k: v + 1.0 for k, v in weights_of(cfg).items()}
    last = list(new)[-1]
    new[last] = np.zeros((7,) + new[last].shape, dtype=np.float32)
    with pytest.raises(ShapeError, match=rf"shape mismatch '{last}': model \(2,?\), weights \(7, 2\)"):
        worker.load_weights(1, new)
    assert worker.version == -1 and same(held(worker.policy.collect_mode), before)
    batch, info = worker.rollout()  # it goes on collecting with the weights it had
    assert info["n"] == cfg.policy.collect.n_sample and info["policy_version"] == -1


def test_missing_and_unexpected_parameters_are_named(cfg):
    worker = RolloutWorker(cfg)
    weights = weights_of(cfg)
    first = next(iter(weights))
    with pytest.raises(ShapeError, match=rf"missing keys \['{first}'\]"):
        worker.load_weights(1, {k: v for k, v in weights.items() if k != first})
    with pytest.raises(ShapeError, match=r"unexpected keys \['head.extra'\]"):
        worker.load_weights(1, dict(weights, **{"head.extra": np.zeros(2, np.float32)}))
    dueling = weights_of(cfg, dueling=True)  # another head: both missing and unexpected keys
    with pytest.raises(ShapeError, match=r"missing keys .*unexpected keys"):
        worker.load_weights(1, dueling)
    assert worker.version == -1


def test_load_weights_into_a_policy_mode_directly():
    small = DQNPolicy(dict(model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16])))
    before = held(small.collect_mode)
    other = DQNPolicy(dict(model=dict(obs_shape=5, action_shape=3, encoder_hidden_size_list=[16])))
    with pytest.raises(ShapeError, match=r"model \(16, 4\), weights \(16, 5\)"):
        load_weights(small.collect_mode, state_dict_to_numpy(other.learn_mode.state_dict()["model"]))
    assert same(held(small.collect_mode), before)
