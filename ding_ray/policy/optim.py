"""``make_adam``: torch's Adam, fused where the build has the kernel, without torch.compile's import.

torch wraps the optimizer's methods so that ``torch.compile`` leaves them alone, and the first
call of each wrapper imports ``torch._dynamo``: about 2 s of CPU, in every learner process and
at the start of every serial run, for a compiler ding_ray does not use. When nothing in the
process has loaded ``torch._dynamo`` yet, ``make_adam`` marks those wrappers as already resolved
to the plain methods (the cache attribute the wrappers themselves fill on first use) and
returns an Adam whose ``step`` runs torch's own update under ``no_grad`` without the compiler's
graph-break call. The update is torch's, bit for bit. If ``torch._dynamo`` is already loaded
(someone uses ``torch.compile``), or this torch lays its wrappers out differently, nothing is
changed and torch's Adam is used as it is.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import torch

_prepared: bool | None = None  # None: not tried yet; True: the wrappers are skipped


def make_adam(
    params: Any,
    lr: float,
    weight_decay: float = 0.0,
    fused: bool = True,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> torch.optim.Optimizer:
    """Adam with the fused kernel where this torch build has one for the device (CPU since torch 2.4):
    for the small networks of classic-control tasks the optimizer step is a large share of a
    training iteration, and the fused kernel does it in one pass instead of a dozen tensor ops.

    ``fused=False``: the multi-tensor (``foreach``) kernel, whose arithmetic is that of torch's
    for-loop Adam, which DI-engine's optimizer steps with, so weights update as DI-engine's do, to
    the bit (the fused kernel rounds differently). PPO asks for it: its seeded runs on dizoo's
    configs reproduce DI-engine's. ``betas`` and ``eps``: torch's (DI-engine's A2C sets them in its config).
    """
    params = list(params)
    cls = _EagerAdam if _skip_compiler_wrappers() else torch.optim.Adam
    if fused:
        try:
            return cls(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, fused=True)
        except (RuntimeError, TypeError):
            pass
    return cls(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=True)


class _EagerAdam(torch.optim.Adam):
    """``torch.optim.Adam`` whose ``step`` skips the wrapper that imports ``torch._dynamo``."""

    def step(self, closure: Any = None) -> Any:
        with torch.no_grad():  # what the skipped wrapper does for a non-differentiable optimizer
            return _ADAM_STEP(self, closure)


_ADAM_STEP = getattr(torch.optim.Adam.step, "__wrapped__", None)


def _skip_compiler_wrappers() -> bool:
    global _prepared
    if _prepared is None:
        _prepared = False
        if "torch._dynamo" not in sys.modules and _ADAM_STEP is not None:
            _prepared = _mark_resolved() > 0
    return _prepared and "torch._dynamo" not in sys.modules


def _mark_resolved() -> int:
    """Point each compiler wrapper of Optimizer and Adam at its plain function; return how many."""
    compile_file = importlib.import_module("torch._compile").__file__
    functional_adam = importlib.import_module("torch.optim.adam").adam
    marked = 0
    methods = [*vars(torch.optim.Optimizer).values(), *vars(torch.optim.Adam).values()]
    for wrapper in [*methods, functional_adam]:
        plain, code = getattr(wrapper, "__wrapped__", None), getattr(wrapper, "__code__", None)
        if plain is None or code is None:
            continue
        if code.co_filename == compile_file or code.co_name == "maybe_fallback":
            plain.__dynamo_disable = plain  # the cache a wrapper fills on its first call
            marked += 1
    return marked
