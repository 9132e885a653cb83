"""``ding_ray.model.model_wrap`` does what DI-engine 0.5.3's does.

``data/di_engine_model_wrap.json`` holds what DI-engine's wrappers gave on the cases of
``data/make_di_engine_model_wrap.py`` (run with DI-engine installed): the sampling wrappers over
several seeded calls (numpy's and torch's global generators, as a policy calls them), the recurrent
state wrapper through resets and partial env ids, the target wrapper's assign and momentum updates,
action noise, and ``info``. ding_ray's ``model_wrap`` on the same cases must give the same outputs
(to 1e-6) and the same draws.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from ding_ray.errors import ConfigError, NotSupportedError
from ding_ray.model import IModelWrapper, model_wrap, register_wrapper
from tests.compat.data.make_di_engine_model_wrap import CASES, ToyModel, run_case

REFERENCE = json.loads((Path(__file__).parent / "data" / "di_engine_model_wrap.json").read_text())


def assert_close(ours, theirs, where=""):
    assert type(ours) is type(theirs), where
    if isinstance(ours, dict) and "values" in ours:
        assert ours["shape"] == theirs["shape"], where
        assert torch.allclose(torch.tensor(ours["values"]), torch.tensor(theirs["values"]), atol=1e-6), where
    elif isinstance(ours, dict):
        assert ours.keys() == theirs.keys(), where
        for key in ours:
            assert_close(ours[key], theirs[key], f"{where}.{key}")
    elif isinstance(ours, list):
        assert len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_close(a, b, f"{where}[{i}]")
    else:
        assert ours == theirs, where


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_outputs_and_draws_as_di_engine(name):
    assert_close(run_case(name, model_wrap), REFERENCE[name], name)


def test_unknown_and_missing_wrappers_are_refused_by_name():
    with pytest.raises(TypeError, match="Unknown model wrapper 'argmax'"):
        model_wrap(ToyModel(), "argmax")
    with pytest.raises(NotSupportedError, match="hybrid"):
        model_wrap(ToyModel(), "hybrid_argmax_sample")
    with pytest.raises(ConfigError, match="update_kwargs\\['freq'\\]"):
        model_wrap(ToyModel(), "target", update_type="assign", update_kwargs={})


def test_a_registered_wrapper_stacks_on_the_others():
    class Doubled(IModelWrapper):
        def forward(self, *args, **kwargs):
            output = self._model.forward(*args, **kwargs)
            output["action"] = output["action"] * 2
            return output

    register_wrapper("doubled", Doubled)
    wrapped = model_wrap(model_wrap(ToyModel(), "argmax_sample"), "doubled")
    obs = torch.randn(3, 3)
    assert torch.equal(wrapped.forward(obs)["action"], ToyModel()(obs)["logit"].argmax(-1) * 2)
    assert isinstance(wrapped.fc, torch.nn.Linear)  # attributes of the model through every layer


def test_action_noise_takes_a_new_sigma():
    wrapped = model_wrap(ToyModel(gaussian=True, act=True), "action_noise", noise_kwargs={"sigma": 0.3})
    obs = torch.randn(3, 3)
    assert torch.equal(
        wrapped.forward(obs, sigma=0.0)["action"], ToyModel(gaussian=True, act=True)(obs)["action"]
    )
    assert not torch.equal(
        wrapped.forward(obs, sigma=1.0)["action"], wrapped.forward(obs, sigma=0.0)["action"]
    )
