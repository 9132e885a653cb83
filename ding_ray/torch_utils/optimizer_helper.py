"""DI-engine's ``Adam`` and ``RMSprop``: torch's optimizers that clip or ignore the gradients at the
start of each ``step``, with DI-engine 0.5.3's constructor arguments.

``grad_clip_type``: ``'clip_value'`` and ``'clip_norm'`` bound the gradients by ``clip_value``
(``clip_norm_type`` names the norm); ``'clip_momentum'`` bounds each element by ``clip_coef`` times
the square root of a running second moment of the gradients (OpenAI's rule) once
``clip_momentum_timestep`` steps are done, and ``'clip_momentum_norm'`` scales a parameter group's
gradients down to that bound's norm. An element beyond the ``'clip_momentum'`` bound becomes the
bound itself, with a positive sign whatever its own, as in DI-engine. ``grad_ignore_type`` and the
``ignore_*`` arguments are the same rules, but an out-of-bound step zeroes every gradient instead.

The running second moment is kept per parameter as ``thre_exp_avg_sq`` (Adam, bias-corrected, decay
``betas[1]``) or ``thre_square_avg`` (RMSprop, decay ``alpha``) in the optimizer's state, DI-engine's
keys, so a state dict loads on either side.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch

from ding_ray.torch_utils.grad_clip import (
    GRAD_CLIP_TYPES,
    GRAD_IGNORE_TYPES,
    check_choice,
    clip_grads,
    ignore_grads,
    sum_of_powered_norms,
)

OPTIM_TYPES = ("adam", "adamw")


class _GradGuard:
    """The clip and ignore stages of ``step`` shared by Adam and RMSprop; a subclass says where its
    running second moment lives (``_MOMENT_KEY``) and how it is updated and read (``_moment_bound``)."""

    _MOMENT_KEY = ""

    def _set_guard(
        self,
        grad_clip_type,
        clip_value,
        clip_coef,
        clip_norm_type,
        clip_momentum_timestep,
        grad_norm_type,
        grad_ignore_type,
        ignore_value,
        ignore_coef,
        ignore_norm_type,
        ignore_momentum_timestep,
    ) -> None:
        check_choice("grad_clip_type", grad_clip_type, GRAD_CLIP_TYPES)
        check_choice("grad_norm_type", grad_norm_type, (None,))
        check_choice("grad_ignore_type", grad_ignore_type, GRAD_IGNORE_TYPES)
        if grad_clip_type is not None and clip_value is None:
            raise ValueError(f"grad_clip_type={grad_clip_type!r} needs clip_value (the bound); got None.")
        if grad_ignore_type is not None and ignore_value is None:
            raise ValueError(
                f"grad_ignore_type={grad_ignore_type!r} needs ignore_value (the bound); got None."
            )
        self._clip = (grad_clip_type, clip_value, clip_coef, clip_norm_type, clip_momentum_timestep)
        self._ignore = (
            grad_ignore_type,
            ignore_value,
            ignore_coef,
            ignore_norm_type,
            ignore_momentum_timestep,
        )
        self._clip_norm_type = clip_norm_type

    def _params_with_grad(self) -> list[torch.Tensor]:
        return [
            p
            for group in self.param_groups
            for p in group["params"]
            if p.requires_grad and p.grad is not None
        ]

    def _guard_grads(self) -> None:
        params = self._params_with_grad()
        clip_type, clip_value, clip_coef, clip_norm_type, clip_after = self._clip
        if clip_type in ("clip_value", "clip_norm"):
            clip_grads(params, clip_type, clip_value, clip_norm_type)
        elif clip_type == "clip_momentum":
            self._clip_to_moment(clip_coef, clip_after)
        elif clip_type == "clip_momentum_norm":
            self._scale_to_moment_norm(clip_coef, clip_norm_type, clip_after, zero=False)
        ignore_type, ignore_value, ignore_coef, ignore_norm_type, ignore_after = self._ignore
        if ignore_type in ("ignore_value", "ignore_norm"):
            ignore_grads(params, ignore_type, ignore_value, ignore_norm_type)
        elif ignore_type == "ignore_momentum":
            self._ignore_beyond_moment(ignore_coef, ignore_after)
        elif ignore_type == "ignore_momentum_norm":
            self._scale_to_moment_norm(ignore_coef, ignore_norm_type, ignore_after, zero=True)

    def _moment_bounds(self, groups: list[dict]):
        """Yield (gradient, its bound per element before the coefficient, steps done) per parameter of
        ``groups`` with a gradient, updating its running second moment with the gradient on the way."""
        for group in groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    self._init_state(p, group)
                yield p.grad, self._moment_bound(state, p.grad, group), state["step"]

    def _clip_to_moment(self, coef: float, after: int) -> None:
        for grad, bound, step in self._moment_bounds(self.param_groups):
            if step >= after:  # before that the running estimate is too young to trust
                beyond = grad.abs() > bound * coef
                grad.mul_(~beyond).add_((bound * coef).mul_(beyond))

    def _ignore_beyond_moment(self, coef: float, after: int) -> None:
        for grad, bound, step in self._moment_bounds(self.param_groups):
            if step >= after and bool((grad.abs() > bound * coef).any()):
                for p in self._params_with_grad():
                    p.grad.zero_()
                return  # the later parameters' moments skip this step, as in DI-engine

    def _scale_to_moment_norm(self, coef: float, norm_type: float, after: int, zero: bool) -> None:
        """Per parameter group: when every parameter has done more than ``after`` steps and the
        gradients' norm exceeds the norm of their bounds, scale them down to it (or zero them)."""
        for group in self.param_groups:
            grads, bounds, fewest_steps = [], [], math.inf
            for grad, bound, step in self._moment_bounds([group]):
                grads.append(grad)
                bounds.append(bound * coef)
                fewest_steps = min(fewest_steps, step)
            if not grads or not fewest_steps > after:
                continue
            grad_norm = sum_of_powered_norms(grads, norm_type) ** (1.0 / norm_type)
            bound_norm = sum_of_powered_norms(bounds, norm_type) ** (1.0 / norm_type)
            scale = bound_norm / (grad_norm + 1e-6)
            if scale < 1:
                for grad in grads:
                    if zero:
                        grad.zero_()
                    else:
                        grad.mul_(scale)

    def get_grad(self) -> float:
        """The sum over parameters of ``norm(grad) ** clip_norm_type`` (DI-engine's: no root taken)."""
        return float(sum_of_powered_norms([p.grad for p in self._params_with_grad()], self._clip_norm_type))


def _scalar_step(group: dict, p: torch.Tensor) -> torch.Tensor:
    """The step counter torch itself would create for ``p`` (on ``p``'s device when captured or fused)."""
    on_device = group.get("capturable") or group.get("fused")
    return torch.zeros((), dtype=torch.float32, device=p.device if on_device else "cpu")


class Adam(_GradGuard, torch.optim.Adam):
    """torch's Adam with DI-engine's gradient clipping and ignoring; ``optim_type='adamw'`` decays the
    weights by ``lr * weight_decay`` before the step instead of adding the decay to the gradient."""

    _MOMENT_KEY = "thre_exp_avg_sq"

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        optim_type: str = "adam",
        grad_clip_type: str | None = None,
        clip_value: float | None = None,
        clip_coef: float = 5,
        clip_norm_type: float = 2.0,
        clip_momentum_timestep: int = 100,
        grad_norm_type: str | None = None,
        grad_ignore_type: str | None = None,
        ignore_value: float | None = None,
        ignore_coef: float = 5,
        ignore_norm_type: float = 2.0,
        ignore_momentum_timestep: int = 100,
    ) -> None:
        check_choice("optim_type", optim_type, OPTIM_TYPES)
        self._set_guard(
            grad_clip_type, clip_value, clip_coef, clip_norm_type, clip_momentum_timestep, grad_norm_type,
            grad_ignore_type, ignore_value, ignore_coef, ignore_norm_type, ignore_momentum_timestep,
        )  # fmt: skip
        self._decoupled_weight_decay = weight_decay if optim_type == "adamw" else 0.0
        torch_weight_decay = 0 if optim_type == "adamw" else weight_decay
        super().__init__(
            params, lr=lr, betas=betas, eps=eps, weight_decay=torch_weight_decay, amsgrad=amsgrad
        )

    def _init_state(self, p: torch.Tensor, group: dict) -> None:
        state = self.state[p]
        state["step"] = _scalar_step(group, p)
        for key in ("exp_avg", "exp_avg_sq", self._MOMENT_KEY) + (
            ("max_exp_avg_sq",) if group["amsgrad"] else ()
        ):
            state[key] = torch.zeros_like(p, memory_format=torch.preserve_format)

    def _moment_bound(self, state: dict, grad: torch.Tensor, group: dict) -> torch.Tensor:
        beta2 = group["betas"][1]
        bias_correction = 1 - beta2 ** state["step"]
        state[self._MOMENT_KEY].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        return state[self._MOMENT_KEY].sqrt() / math.sqrt(bias_correction)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        self._guard_grads()
        if self._decoupled_weight_decay:
            with torch.no_grad():
                for group in self.param_groups:
                    for p in group["params"]:
                        if p.grad is not None:
                            p.add_(p, alpha=-self._decoupled_weight_decay * group["lr"])
        return super().step(closure=closure)


class RMSprop(_GradGuard, torch.optim.RMSprop):
    """torch's RMSprop with DI-engine's gradient clipping and ignoring."""

    _MOMENT_KEY = "thre_square_avg"

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        grad_clip_type: str | None = None,
        clip_value: float | None = None,
        clip_coef: float = 5,
        clip_norm_type: float = 2.0,
        clip_momentum_timestep: int = 100,
        grad_norm_type: str | None = None,
        grad_ignore_type: str | None = None,
        ignore_value: float | None = None,
        ignore_coef: float = 5,
        ignore_norm_type: float = 2.0,
        ignore_momentum_timestep: int = 100,
    ) -> None:
        self._set_guard(
            grad_clip_type, clip_value, clip_coef, clip_norm_type, clip_momentum_timestep, grad_norm_type,
            grad_ignore_type, ignore_value, ignore_coef, ignore_norm_type, ignore_momentum_timestep,
        )  # fmt: skip
        super().__init__(
            params,
            lr=lr,
            alpha=alpha,
            eps=eps,
            weight_decay=weight_decay,
            momentum=momentum,
            centered=centered,
        )

    def _init_state(self, p: torch.Tensor, group: dict) -> None:
        state = self.state[p]
        state["step"] = _scalar_step(group, p)
        keys = ("square_avg", self._MOMENT_KEY)
        keys += ("momentum_buffer",) if group["momentum"] > 0 else ()
        keys += ("grad_avg",) if group["centered"] else ()
        for key in keys:
            state[key] = torch.zeros_like(p, memory_format=torch.preserve_format)

    def _moment_bound(self, state: dict, grad: torch.Tensor, group: dict) -> torch.Tensor:
        alpha = group["alpha"]
        state[self._MOMENT_KEY].mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        return state[self._MOMENT_KEY].sqrt()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        self._guard_grads()
        return super().step(closure=closure)
