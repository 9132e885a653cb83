"""``ding_ray.torch_utils`` computes what DI-engine 0.5.3's ``ding.torch_utils`` computes.

``data/di_engine_torch_utils.json`` holds DI-engine's results (``data/make_di_engine_torch_utils.py``,
run with DI-engine installed): the parameters of its functions and methods, the data helpers on
nested inputs, each ``get_lstm`` type's seeded
weights and its outputs and next states for each ``prev_state`` format, and the parameters after each
step of ``Adam`` and ``RMSprop`` under every gradient clip and ignore type. ding_ray makes the same
calls on the same inputs (imported from that script) and must give the same types, dtypes, shapes
and values (to 1e-6), or raise the same kind of error.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import ding_ray.torch_utils as torch_utils
from tests.compat.data.make_di_engine_torch_utils import (
    LSTM_CASES,
    OPTIM_CASES,
    SIGNATURES,
    STEPS,
    data_helper_calls,
    describe,
    lstm_inputs,
    parameters,
    run_optimizer,
)

REFERENCE = json.loads((Path(__file__).parent / "data" / "di_engine_torch_utils.json").read_text())
TOLERANCE = 1e-6
# DI-engine's 'ignore_momentum' asks one bool of a whole tensor's comparison, which torch refuses for
# more than one element; ding_ray's zeroes the step when any element is beyond its bound
DI_ENGINE_FAILS = {"adam_ignore_momentum": "RuntimeError"}


def max_difference(ours, theirs, where: str = "") -> float:
    """The largest absolute difference between two ``describe`` trees; any other mismatch fails."""
    assert type(ours) is type(theirs), f"{where}: {ours!r} vs DI-engine's {theirs!r}"
    if isinstance(ours, dict):
        assert ours.keys() == theirs.keys(), f"{where}: keys {sorted(ours)} vs DI-engine's {sorted(theirs)}"
        return max([max_difference(ours[k], theirs[k], f"{where}.{k}") for k in ours], default=0.0)
    if isinstance(ours, list):
        assert len(ours) == len(theirs), f"{where}: length {len(ours)} vs DI-engine's {len(theirs)}"
        return max(
            [max_difference(a, b, f"{where}[{i}]") for i, (a, b) in enumerate(zip(ours, theirs))], default=0.0
        )
    if isinstance(ours, float) and not isinstance(theirs, bool):
        return abs(ours - theirs) if np.isfinite(ours) or ours != theirs else 0.0
    assert ours == theirs, f"{where}: {ours!r} vs DI-engine's {theirs!r}"
    return 0.0


def outcome(call) -> dict:
    try:
        return describe(call())
    except Exception as exc:
        return dict(error=type(exc).__name__)


def test_reference_was_made_with_ding_rays_torch_version():
    assert REFERENCE["torch"].split("+")[0] == torch.__version__.split("+")[0]


@pytest.mark.parametrize("name", SIGNATURES)
def test_signatures_are_di_engines(name):
    assert parameters([torch_utils], name) == REFERENCE["signatures"][name]


@pytest.mark.parametrize(
    "name,function,args,kwargs", data_helper_calls(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_data_helpers_give_di_engines_results(name, function, args, kwargs):
    theirs = REFERENCE["data"][name]
    if "error" in theirs:
        theirs = dict(error=theirs["error"])
    ours = outcome(lambda: getattr(torch_utils, function)(*args, **kwargs))
    assert max_difference(ours, theirs, name) <= TOLERANCE


@pytest.mark.parametrize("lstm_type", list(LSTM_CASES))
def test_get_lstm_draws_di_engines_weights_and_computes_its_outputs(lstm_type):
    kwargs, reference = LSTM_CASES[lstm_type], REFERENCE["rnn"][lstm_type]
    torch.manual_seed(0)
    cell = torch_utils.get_lstm(lstm_type, **kwargs)
    cell.eval()
    weights = {k: describe(v) for k, v in cell.state_dict().items()}
    assert max_difference(weights, reference["weights"], "weights") == 0.0
    for name, x, prev_state, list_next_state in lstm_inputs(
        lstm_type, kwargs["num_layers"], kwargs["hidden_size"], kwargs["input_size"]
    ):
        with torch.no_grad():
            output, next_state = cell(x, prev_state, list_next_state=list_next_state)
        ours = describe(dict(output=output, next_state=next_state))
        assert max_difference(ours, reference["runs"][name], f"{lstm_type}.{name}") <= TOLERANCE


@pytest.mark.parametrize("case", list(OPTIM_CASES))
def test_optimizers_step_as_di_engines(case):
    optimizer, kwargs = OPTIM_CASES[case]
    theirs = REFERENCE["optim"][case]
    trace = run_optimizer(getattr(torch_utils, optimizer), kwargs, per_element=case.endswith("_per_element"))
    if case in DI_ENGINE_FAILS:
        assert theirs["error"] == DI_ENGINE_FAILS[case], theirs
        assert len(trace) == STEPS
        return
    assert max_difference(trace, theirs["params"], case) <= TOLERANCE
