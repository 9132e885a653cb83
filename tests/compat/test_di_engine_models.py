"""ding_ray's Q and behaviour-cloning models start from DI-engine 0.5.3's weights on the same seed.

``data/di_engine_models.json`` holds what DI-engine's ``DQN``, ``DRQN``, ``C51DQN``, ``QRDQN``,
``IQN``, ``RainbowDQN``, ``DiscreteBC`` and ``ContinuousBC`` built on a fixed seed
(``data/make_di_engine_models.py``, run with DI-engine installed): their constructor signatures,
state dict shapes and sums, and outputs (IQN's with the same seed before the forward; RainbowDQN's
in eval mode, in train mode, and in train mode after ``reset_noise``). ding_ray's models, built by
``create_model`` from DI-engine's ``model.type`` names on the same seed, must give the same output
keys, shapes and values (to 1e-6) and the same tensors; all but DQN and DiscreteBC (ding_ray's conv
options, widths that default by observation kind) take the same arguments with the same defaults.
``ConvEncoder`` alone (its default, and DI-engine's ``layer_norm`` convs) has DI-engine's parameter
count and shapes, and gives DI-engine's output on the same seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import ding_ray.model as model_module
from ding_ray.compat.di_engine_names import from_di_engine, layout
from ding_ray.model import create_model, reset_noise
from ding_ray.utils.registry import MODEL_REGISTRY
from tests.compat.data.make_di_engine_models import CASES, ENCODER_CASES, run_case, run_encoder, signature

REFERENCE = json.loads((Path(__file__).parent / "data" / "di_engine_models.json").read_text())
TOLERANCE = 1e-6


def max_difference(ours: dict, theirs: dict) -> float:
    assert ours.keys() == theirs.keys()
    worst = 0.0
    for key in theirs:
        assert ours[key]["shape"] == theirs[key]["shape"], key
        a, b = torch.tensor(ours[key]["values"]), torch.tensor(theirs[key]["values"])
        worst = max(worst, float((a - b).abs().max()))
    return worst


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_initial_weights_and_outputs(case: str) -> None:
    cls_name, model_type, kwargs = CASES[case]
    model_cls = MODEL_REGISTRY.get(model_type)
    assert model_cls is getattr(model_module, cls_name)
    # create_model builds what the class builds (its kwargs checked against the signature)
    torch.manual_seed(0)
    built = create_model(dict(type=model_type, **kwargs))
    assert isinstance(built, model_cls)

    ours = run_case(model_cls, kwargs, reset_noise if cls_name == "RainbowDQN" else None)
    theirs = REFERENCE["cases"][case]
    assert ours.keys() == theirs.keys()
    for mode in theirs:
        if mode == "state":
            continue
        assert ours[mode].keys() == theirs[mode].keys(), mode
        assert max_difference(ours[mode], theirs[mode]) <= TOLERANCE, mode

    # the same tensors: DI-engine's state dict renames to ding_ray's (shapes checked), and each
    # ding_ray tensor sums to what the DI-engine tensors it is made of sum to
    reference_state = {key: torch.zeros(v["shape"]) for key, v in theirs["state"].items()}
    assert set(from_di_engine(built, reference_state)) == set(ours["state"])
    for ours_key, sources in layout(built).sources.items():
        their_sum = sum(theirs["state"][source]["sum"] for source in sources)
        assert abs(ours["state"][ours_key]["sum"] - their_sum) <= 1e-4, (ours_key, sources)


@pytest.mark.parametrize("cls_name", sorted(REFERENCE["signatures"]))
def test_same_constructor_arguments(cls_name: str) -> None:
    ours = signature(getattr(model_module, cls_name))
    theirs = REFERENCE["signatures"][cls_name]
    # DI-engine's activation default nn.ReLU() is ding_ray's 'relu'
    ours = [[name, "ReLU" if default == "relu" else default] for name, default in ours]
    assert ours == theirs


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_state_in_di_engine_names_loads(case: str) -> None:
    """``load_state_dict`` takes the model's state under DI-engine's names (as DI-engine saves it)."""
    _, model_type, kwargs = CASES[case]
    reference = REFERENCE["cases"][case]["state"]
    torch.manual_seed(0)
    source = create_model(dict(type=model_type, **kwargs))
    state = source.state_dict()
    di_engine_state = {}
    for key, sources in layout(source).sources.items():  # a stacked tensor splits into its sources
        parts = state[key].split([reference[s]["shape"][0] for s in sources])
        di_engine_state.update(zip(sources, parts))
    assert set(di_engine_state) == set(reference)
    torch.manual_seed(1)
    loaded = create_model(dict(type=model_type, **kwargs))
    loaded.load_state_dict(di_engine_state)
    for key, value in loaded.state_dict().items():
        assert torch.equal(value, state[key]), key


@pytest.mark.parametrize("case", sorted(ENCODER_CASES))
def test_conv_encoder_has_di_engines_parameters_and_output(case: str) -> None:
    ours, theirs = run_encoder(model_module.ConvEncoder, ENCODER_CASES[case]), REFERENCE["encoders"][case]
    assert (ours["parameters"], ours["shapes"]) == (theirs["parameters"], theirs["shapes"])
    assert max_difference({"out": ours["output"]}, {"out": theirs["output"]}) <= TOLERANCE
