"""Record what DI-engine 0.5.3's ``ding.torch_utils`` computes on fixed inputs, for ding_ray's compat test.

Run with a Python that has DI-engine 0.5.3 installed (not ding_ray's environment)::

    python tests/compat/data/make_di_engine_torch_utils.py     # writes di_engine_torch_utils.json

It records the parameters of each callable in ``SIGNATURES``, and, as ``describe`` writes them
(type, dtype, shape and values of every leaf):

- ``data``: each data helper on the nested inputs of ``data_helper_calls``;
- ``rnn``: each ``get_lstm`` type's weights as seed 0 draws them, and its outputs and next states on
  seeded inputs for each format of ``prev_state``;
- ``optim``: ``Adam`` and ``RMSprop`` with each gradient clip and ignore type: the parameters of a
  small two-layer net after each of ``STEPS`` steps on seeded batches (one batch with large
  gradients, so that the clips and ignores act), or the error DI-engine raised.

ding_ray's test imports ``describe``, ``parameters``, ``data_helper_calls``, ``OPTIM_CASES`` and
``lstm_inputs`` from here, so both sides call the same things on the same inputs.
"""

from __future__ import annotations

import collections
import inspect
import json
import os

import numpy as np
import torch

STEPS = 8
GRAD_SCALES = [1.0, 1.0, 1.0, 1.0, 30.0, 1.0, 1.0, 1.0]  # step 4's gradients are 30x larger
MOMENT = dict(clip_momentum_timestep=3, ignore_momentum_timestep=3)
# name -> (optimizer, constructor arguments besides the parameters)
OPTIM_CASES = {
    "adam": ("Adam", dict(lr=0.05)),
    "adam_clip_value": ("Adam", dict(lr=0.05, grad_clip_type="clip_value", clip_value=0.05)),
    "adam_clip_norm": ("Adam", dict(lr=0.05, grad_clip_type="clip_norm", clip_value=0.3)),
    "adam_clip_norm_inf": (
        "Adam",
        dict(lr=0.05, grad_clip_type="clip_norm", clip_value=0.1, clip_norm_type=np.inf),
    ),
    "adam_clip_momentum": (
        "Adam",
        dict(lr=0.05, grad_clip_type="clip_momentum", clip_value=1.0, clip_coef=1.0, **MOMENT),
    ),
    "adam_clip_momentum_norm": (
        "Adam",
        dict(lr=0.05, grad_clip_type="clip_momentum_norm", clip_value=1.0, clip_coef=0.5, **MOMENT),
    ),
    "adam_ignore_value": ("Adam", dict(lr=0.05, grad_ignore_type="ignore_value", ignore_value=1.0)),
    "adam_ignore_norm": ("Adam", dict(lr=0.05, grad_ignore_type="ignore_norm", ignore_value=2.0)),
    "adam_ignore_momentum": (
        "Adam",
        dict(lr=0.05, grad_ignore_type="ignore_momentum", ignore_value=1.0, **MOMENT),
    ),
    "adam_ignore_momentum_per_element": (
        "Adam",
        dict(lr=0.05, grad_ignore_type="ignore_momentum", ignore_value=1.0, ignore_coef=1.5, **MOMENT),
    ),
    "adam_ignore_momentum_norm": (
        "Adam",
        dict(lr=0.05, grad_ignore_type="ignore_momentum_norm", ignore_value=1.0, ignore_coef=1.0, **MOMENT),
    ),
    "adam_clip_norm_and_ignore_value": (
        "Adam",
        dict(
            lr=0.05,
            grad_clip_type="clip_norm",
            clip_value=3.0,
            grad_ignore_type="ignore_value",
            ignore_value=1.0,
        ),
    ),
    "adam_amsgrad_weight_decay": ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1)),
    "adamw": ("Adam", dict(lr=0.05, optim_type="adamw", weight_decay=0.1)),
    "rmsprop": ("RMSprop", dict(lr=0.01)),
    "rmsprop_clip_value": ("RMSprop", dict(lr=0.01, grad_clip_type="clip_value", clip_value=0.05)),
    "rmsprop_clip_norm": ("RMSprop", dict(lr=0.01, grad_clip_type="clip_norm", clip_value=0.3)),
    "rmsprop_clip_momentum": (
        "RMSprop",
        dict(lr=0.01, grad_clip_type="clip_momentum", clip_value=1.0, clip_coef=1.0, **MOMENT),
    ),
    "rmsprop_clip_momentum_norm": (
        "RMSprop",
        dict(lr=0.01, grad_clip_type="clip_momentum_norm", clip_value=1.0, clip_coef=0.5, **MOMENT),
    ),
    "rmsprop_ignore_norm": ("RMSprop", dict(lr=0.01, grad_ignore_type="ignore_norm", ignore_value=2.0)),
    "rmsprop_ignore_momentum_per_element": (
        "RMSprop",
        dict(lr=0.01, grad_ignore_type="ignore_momentum", ignore_value=1.0, ignore_coef=2.0, **MOMENT),
    ),
    "rmsprop_ignore_momentum_norm": (
        "RMSprop",
        dict(lr=0.01, grad_ignore_type="ignore_momentum_norm", ignore_value=1.0, ignore_coef=1.0, **MOMENT),
    ),
    "rmsprop_centered_momentum_clip_momentum": (
        "RMSprop",
        dict(lr=0.01, momentum=0.9, centered=True, grad_clip_type="clip_momentum", clip_value=1.0, **MOMENT),
    ),
}
# lstm type -> get_lstm's arguments besides the type
LSTM_CASES = {
    "normal": dict(input_size=3, hidden_size=4, num_layers=2, norm_type="LN"),
    "pytorch": dict(input_size=3, hidden_size=4, num_layers=2),
    "gru": dict(input_size=3, hidden_size=4, num_layers=1),
}
Pair = collections.namedtuple("Pair", ["x", "y"])
# the callables whose parameters (names, kinds, defaults) must be DI-engine's
SIGNATURES = [
    "to_device",
    "to_tensor",
    "to_ndarray",
    "to_list",
    "tensor_to_list",
    "to_dtype",
    "to_item",
    "same_shape",
    "get_lstm",
    "Adam.__init__",
    "Adam.step",
    "Adam.get_grad",
    "RMSprop.__init__",
    "RMSprop.step",
    "RMSprop.get_grad",
    "LSTM.__init__",
    "LSTM.forward",
    "PytorchLSTM.forward",
    "GRU.__init__",
    "GRU.forward",
]


def parameters(modules: list, dotted_name: str) -> list:
    """[name, kind, default] of each parameter of the callable ``dotted_name`` of the first of
    ``modules`` that has it."""
    first = dotted_name.split(".")[0]
    target = next(m for m in modules if hasattr(m, first))
    for part in dotted_name.split("."):
        target = getattr(target, part)
    return [
        [p.name, p.kind.name, None if p.default is inspect.Parameter.empty else repr(p.default)]
        for p in inspect.signature(target).parameters.values()
    ]


def describe(item):
    """``item`` as JSON: every leaf with its type, dtype, shape and values (floats to 9 digits)."""

    def values(x):
        if isinstance(x, list):
            return [values(v) for v in x]
        return float(f"{x:.9g}") if isinstance(x, float) else x

    if isinstance(item, torch.Tensor):
        return dict(
            kind="tensor", dtype=str(item.dtype), shape=list(item.shape), values=values(item.tolist())
        )
    if isinstance(item, np.ndarray):
        return dict(
            kind="ndarray", dtype=str(item.dtype), shape=list(item.shape), values=values(item.tolist())
        )
    if isinstance(item, np.generic):
        return dict(kind="numpy", dtype=str(item.dtype), values=values(item.item()))
    if isinstance(item, dict):
        return dict(kind="dict", items={str(k): describe(v) for k, v in item.items()})
    if isinstance(item, tuple) and hasattr(item, "_fields"):
        return dict(kind="namedtuple " + type(item).__name__, items=[describe(v) for v in item])
    if isinstance(item, (list, tuple)):
        return dict(kind=type(item).__name__, items=[describe(v) for v in item])
    return dict(kind=type(item).__name__, values=values(item))


def _nested_arrays():
    return dict(
        f64=np.array([[0.1, -2.5], [3.0, 4.25]]),
        i64=np.arange(4),
        f32=np.array([1.5, 2.5], dtype=np.float32),
        numbers=[1, 2, 3],
        floats=(0.5, 1.5),
        bools=[True, False],
        mixed=(np.array([1, 2], dtype=np.int32), "name"),
        pair=Pair(np.array([0.25]), 4),
        scalar=3.5,
        np_scalar=np.float32(2.0),
        flag=True,
        text="abc",
        none=None,
        empty=[],
        kept=np.array([7, 8]),
    )


def _nested_tensors():
    return dict(
        f32=torch.tensor([[0.1, -2.5], [3.0, 4.25]]),
        i64=torch.arange(3),
        seq=[torch.tensor([1.0, 2.0]), (torch.tensor([3]), torch.tensor(True))],
        numbers=[1.0, 2.0],
        pair=Pair(torch.tensor([0.5]), 2),
        scalar=2,
        text="abc",
        none=None,
        empty=(),
    )


def data_helper_calls():
    """(name, function, args, kwargs) of the data helper calls both sides make."""
    return [
        ("to_tensor", "to_tensor", (_nested_arrays(),), dict(ignore_keys=["kept"])),
        ("to_tensor_float32", "to_tensor", (_nested_arrays(),), dict(dtype=torch.float32)),
        ("to_tensor_no_scalars", "to_tensor", (_nested_arrays(),), dict(transform_scalar=False)),
        ("to_tensor_list_of_dicts", "to_tensor", ([{"a": np.ones(2)}, {"a": np.zeros(2)}],), {}),
        ("to_ndarray", "to_ndarray", (_nested_tensors(),), {}),
        ("to_ndarray_float64", "to_ndarray", (_nested_tensors(),), dict(dtype=np.float64)),
        ("to_list", "to_list", ({**_nested_tensors(), "array": np.ones((2, 2)), "np": np.int64(3)},), {}),
        ("tensor_to_list", "tensor_to_list", (_nested_tensors(),), {}),
        ("tensor_to_list_array", "tensor_to_list", ({"a": np.ones(2)},), {}),
        (
            "to_dtype",
            "to_dtype",
            ({"a": torch.arange(3), "b": (torch.ones(2), [torch.zeros(1)])}, torch.float64),
            {},
        ),
        (
            "to_device",
            "to_device",
            ({**_nested_tensors(), "kept": torch.ones(1)}, "cpu"),
            dict(ignore_keys=["kept"]),
        ),
        (
            "to_item",
            "to_item",
            (
                dict(
                    one=torch.tensor([2.5]),
                    many=torch.ones(3),
                    arr=np.array([4]),
                    seq=(torch.tensor(1), 2),
                    s="x",
                ),
            ),
            {},
        ),
        (
            "to_item_strict",
            "to_item",
            (dict(one=torch.tensor([2.5]), many=torch.ones(3)),),
            dict(ignore_error=False),
        ),
        ("same_shape_true", "same_shape", ([torch.zeros(2, 3), torch.ones(2, 3)],), {}),
        ("same_shape_false", "same_shape", ([torch.zeros(2, 3), torch.ones(3, 2)],), {}),
    ]


def lstm_inputs(lstm_type: str, num_layers: int, hidden_size: int, input_size: int) -> list:
    """(name, inputs, prev_state, list_next_state) per ``prev_state`` format, seeded."""
    gen = torch.Generator().manual_seed(1)
    seq_len, batch = (1 if lstm_type == "gru" else 4), 3

    def randn(*shape):
        return torch.randn(*shape, generator=gen)

    x = randn(seq_len, batch, input_size)
    batched = {"h": randn(num_layers, batch, hidden_size), "c": randn(num_layers, batch, hidden_size)}
    per_sample = [
        None,
        {"h": randn(num_layers, 1, hidden_size), "c": randn(num_layers, 1, hidden_size)},
        (randn(num_layers, 1, hidden_size), randn(num_layers, 1, hidden_size)),
    ]
    return [("zeros", x, None, True), ("batched", x, batched, False), ("per_sample", x, per_sample, True)]


def optim_problem():
    """The initial parameters [w1, b1, w2] and, per step, (x, y) of a regression batch."""
    gen = torch.Generator().manual_seed(2)
    params = [
        0.5 * torch.randn(4, 3, generator=gen),
        0.1 * torch.randn(4, generator=gen),
        torch.randn(2, 4, generator=gen),
    ]
    batches = [(torch.randn(6, 3, generator=gen), torch.randn(6, 2, generator=gen)) for _ in range(STEPS)]
    return params, batches


def run_optimizer(optimizer_cls, kwargs: dict, per_element: bool = False) -> list:
    """The parameters after each step, as lists. ``per_element``: each weight is a parameter of its
    own (DI-engine's ``'ignore_momentum'`` compares a whole tensor as one bool, so it needs that)."""
    initial, batches = optim_problem()
    if per_element:
        params = [v.reshape(1).clone().requires_grad_(True) for p in initial for v in p.flatten()]
    else:
        params = [p.clone().requires_grad_(True) for p in initial]
    optimizer = optimizer_cls(params, **kwargs)
    trace = []
    for (x, y), scale in zip(batches, GRAD_SCALES):
        optimizer.zero_grad()
        if per_element:
            flat = torch.cat(params)
            sizes = [p.numel() for p in initial]
            w1, b1, w2 = (t.reshape(p.shape) for t, p in zip(torch.split(flat, sizes), initial))
        else:
            w1, b1, w2 = params
        loss = scale * ((torch.tanh(x @ w1.T + b1) @ w2.T - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        trace.append([describe(p.detach())["values"] for p in params])
    return trace


def _error(exc: BaseException) -> dict:
    return dict(error=type(exc).__name__, message=str(exc)[:200])


def main() -> None:
    import ding.torch_utils as dtu
    import ding.torch_utils.network.rnn as rnn  # its LSTM classes are not exported

    result = dict(torch=torch.__version__, signatures={n: parameters([dtu, rnn], n) for n in SIGNATURES})
    result.update(data={}, rnn={}, optim={})
    for name, function, args, kwargs in data_helper_calls():
        try:
            result["data"][name] = describe(getattr(dtu, function)(*args, **kwargs))
        except Exception as exc:  # an error is an outcome to compare too
            result["data"][name] = _error(exc)
    for lstm_type, kwargs in LSTM_CASES.items():
        torch.manual_seed(0)
        cell = dtu.get_lstm(lstm_type, **kwargs)
        cell.eval()
        runs = {}
        for name, x, prev_state, list_next_state in lstm_inputs(
            lstm_type, kwargs["num_layers"], kwargs["hidden_size"], kwargs["input_size"]
        ):
            with torch.no_grad():
                output, next_state = cell(x, prev_state, list_next_state=list_next_state)
            runs[name] = describe(dict(output=output, next_state=next_state))
        result["rnn"][lstm_type] = dict(
            kwargs=kwargs, weights={k: describe(v) for k, v in cell.state_dict().items()}, runs=runs
        )
    for name, (optimizer, kwargs) in OPTIM_CASES.items():
        try:
            trace = run_optimizer(getattr(dtu, optimizer), kwargs, per_element=name.endswith("_per_element"))
            result["optim"][name] = dict(params=trace)
        except Exception as exc:
            result["optim"][name] = _error(exc)
        print(name, "error" if "error" in result["optim"][name] else "ok")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "di_engine_torch_utils.json")
    with open(path, "w") as f:
        json.dump(result, f, separators=(",", ":"))
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
