"""``ding_ray.rl_utils`` computes what DI-engine 0.5.3's ``ding.rl_utils`` computes.

``data/di_engine_rl_utils.json`` holds, per case, seeded inputs and DI-engine's outputs
(``data/make_di_engine_rl_utils.py``, run with DI-engine installed): the TD family (1-step, n-step,
cumulative rewards, per-agent, value rescaling, n-step returns, TD(lambda)), C51, QR-DQN, IQN, A2C,
UPGO and ``get_train_sample``, with the gradient of each loss with respect to its main input, and
each function's parameters and defaults and each named tuple's fields. ding_ray's function of the
same name, called the same way on the same inputs, must give the same types, dtypes and shapes and
the same values to 1e-6, and take the same parameters with the same defaults.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ding_ray.rl_utils as rl_utils
from tests.compat.data.make_di_engine_rl_utils import call, decode, encode, signature

REFERENCE = json.loads((Path(__file__).parent / "data" / "di_engine_rl_utils.json").read_text())
SIGNATURES = REFERENCE.pop("signatures")
TOLERANCE = 1e-6


def max_difference(ours, theirs, where: str = "") -> float:
    """The largest absolute difference between two ``encode`` trees; any other mismatch fails."""
    assert type(ours) is type(theirs), f"{where}: {ours!r} vs DI-engine's {theirs!r}"
    if isinstance(ours, dict) and "dtype" in ours:
        assert (ours["dtype"], ours["shape"]) == (theirs["dtype"], theirs["shape"]), where
        pairs = zip(ours["values"], theirs["values"])
        return max((abs(a - b) for a, b in pairs), default=0.0)
    if isinstance(ours, dict):
        assert ours.keys() == theirs.keys(), f"{where}: keys {sorted(ours)} vs DI-engine's {sorted(theirs)}"
        return max((max_difference(ours[k], theirs[k], f"{where}.{k}") for k in ours), default=0.0)
    if isinstance(ours, list):
        assert len(ours) == len(theirs), f"{where}: {len(ours)} items vs DI-engine's {len(theirs)}"
        return max(
            (max_difference(a, b, f"{where}[{i}]") for i, (a, b) in enumerate(zip(ours, theirs))), default=0.0
        )
    assert ours == theirs, f"{where}: {ours!r} vs DI-engine's {theirs!r}"
    return 0.0


def ours(name: str):
    """The case's ding_ray result, encoded as the reference is."""
    stored = REFERENCE[name]
    case = {k: v for k, v in stored.items() if k in ("fn", "data", "grad")}
    case["kwargs"] = decode(stored["kwargs"])
    if stored["fields"] is not None:
        case["fields"] = decode(stored["fields"])
    return encode(call(lambda attribute: getattr(rl_utils, attribute), case))


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_same_outputs_and_gradients_as_di_engine(name):
    assert max_difference(ours(name), REFERENCE[name]["result"], name) <= TOLERANCE


def test_same_parameters_defaults_and_named_tuple_fields_as_di_engine():
    for name, expected in SIGNATURES.items():
        assert signature(getattr(rl_utils, name)) == expected, name
