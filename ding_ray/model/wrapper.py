"""DI-engine's model wrappers: ``model_wrap(model, wrapper_name, **kwargs)`` puts a layer around a
model's ``forward`` that picks actions from its output, keeps recurrent state per env, or makes it
a target network, under DI-engine's names (``argmax_sample``, ``eps_greedy_sample``, ``target``, ...).

ding_ray's own policies pick actions in their collect and eval forwards and keep their targets
themselves; these wrappers are for code written against DI-engine's: a policy of your own, a
script that wraps a model. A wrapper hands every attribute it does not have to the model it wraps,
and wrappers stack (``model_wrap(model_wrap(m, 'hidden_state', state_num=4), 'argmax_sample')``).
Like DI-engine's, the sampling wrappers draw from numpy's and torch's global generators, so a seeded
run draws what DI-engine draws, and a wrapper is not an ``nn.Module`` (call ``wrapped.forward``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from ding_ray.errors import ConfigError, NotSupportedError


class IModelWrapper:
    """The base of every wrapper: ``forward`` and ``reset`` pass through, other attributes are the
    wrapped model's."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def __getattr__(self, key: str) -> Any:
        if key == "_model":  # not set yet (a copy being built): no recursion
            raise AttributeError(key)
        return getattr(self._model, key)

    def info(self, attr_name: str) -> str:
        """Which wrappers (outermost first) and which model define ``attr_name``."""
        inner = self._model.info(attr_name) if isinstance(self._model, IModelWrapper) else None
        if attr_name not in dir(self):
            return inner if inner is not None else type(self._model).__name__
        if inner is not None:
            return f"{type(self).__name__} {inner}"
        if attr_name in dir(self._model):
            return f"{type(self).__name__} {type(self._model).__name__}"
        return type(self).__name__

    def reset(self, data_id: list[int] | None = None, **kwargs: Any) -> None:
        if hasattr(self._model, "reset"):
            return self._model.reset(data_id=data_id, **kwargs)
        return None

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._model.forward(*args, **kwargs)


class BaseModelWrapper(IModelWrapper):
    """The innermost layer ``model_wrap`` puts around a plain model."""


def sample_action(logit: torch.Tensor | None = None, prob: torch.Tensor | None = None) -> torch.Tensor:
    """One action per row drawn from ``prob`` (or the softmax of ``logit``), over its last axis."""
    if prob is None:
        prob = torch.softmax(logit, dim=-1)
    shape = prob.shape
    flat = (prob + 1e-8).reshape(-1, shape[-1])
    return torch.multinomial(flat, 1).squeeze(-1).reshape(shape[:-1])


def _model_output(model: Any, args: tuple, kwargs: dict) -> dict:
    output = model.forward(*args, **kwargs)
    if not isinstance(output, dict):
        raise TypeError(
            f"A sampling wrapper needs a model whose forward returns a dict, got {type(output).__name__}."
        )
    return output


def _masked_logits(output: dict) -> tuple[list[torch.Tensor], list[torch.Tensor] | None, bool]:
    """``output['logit']`` as a list (and whether it was one tensor), illegal actions pushed down by
    1e8 where the output has an ``action_mask``; the output holds the masked logits too."""
    logit = output["logit"]
    single = isinstance(logit, torch.Tensor)
    logits = [logit] if single else list(logit)
    masks = None
    if "action_mask" in output:
        mask = output["action_mask"]
        masks = [mask] if isinstance(mask, torch.Tensor) else list(mask)
        logits = [lg - 1e8 * (1 - m) for lg, m in zip(logits, masks)]
        output["logit"] = logits[0] if single else logits
    return logits, masks, single


def _one_or_list(actions: list, single: bool) -> Any:
    return actions[0] if single and len(actions) == 1 else actions


def _random_action(logit: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """A uniform action: over the legal ones where there is a mask."""
    if mask is not None:
        return sample_action(prob=mask.float())
    return torch.randint(0, logit.shape[-1], size=logit.shape[:-1])


class ArgmaxSampleWrapper(IModelWrapper):
    """``output['action']``: the argmax of ``output['logit']`` (legal actions only, with a mask)."""

    def forward(self, *args: Any, **kwargs: Any) -> dict:
        output = _model_output(self._model, args, kwargs)
        logits, _, single = _masked_logits(output)
        output["action"] = _one_or_list([lg.argmax(dim=-1) for lg in logits], single)
        return output


class MultinomialSampleWrapper(IModelWrapper):
    """``output['action']`` drawn from the softmax of the logits (divided by ``alpha`` if given)."""

    def forward(self, *args: Any, **kwargs: Any) -> dict:
        alpha = kwargs.pop("alpha", None)
        output = _model_output(self._model, args, kwargs)
        logits, _, single = _masked_logits(output)
        scaled = logits if alpha is None else [lg / alpha for lg in logits]
        output["action"] = _one_or_list([sample_action(logit=lg) for lg in scaled], single)
        return output


class EpsGreedySampleWrapper(IModelWrapper):
    """Epsilon-greedy on the logits, ``forward(..., eps=...)``: with probability ``eps`` a uniform
    (legal) action, else the argmax. A float ``eps`` draws once per logit tensor (the whole batch
    explores or not, as in DI-engine); a dict ``{row: eps}`` draws once per row."""

    def forward(self, *args: Any, **kwargs: Any) -> dict:
        eps = kwargs.pop("eps")
        output = _model_output(self._model, args, kwargs)
        logits, masks, single = _masked_logits(output)
        if isinstance(eps, dict):
            rows = []
            for i, row in enumerate(logits[0]):
                if np.random.random() > eps[i]:
                    rows.append(row.argmax(dim=-1))
                elif masks is not None:
                    rows.append(sample_action(prob=masks[0][i].float().unsqueeze(0)).squeeze(0))
                else:
                    rows.append(torch.randint(0, row.shape[-1], size=row.shape[:-1]))
            output["action"] = torch.stack(rows, dim=-1).to(logits[0].device)
            return output
        actions = [
            lg.argmax(dim=-1)
            if np.random.random() > eps
            else _random_action(lg, None if masks is None else masks[i])
            for i, lg in enumerate(logits)
        ]
        output["action"] = _one_or_list(actions, single)
        return output


class EpsGreedyMultinomialSampleWrapper(IModelWrapper):
    """Like ``eps_greedy_sample``, but the greedy branch draws from the softmax (over ``alpha``)."""

    def forward(self, *args: Any, **kwargs: Any) -> dict:
        eps = kwargs.pop("eps")
        alpha = kwargs.pop("alpha", None)
        output = _model_output(self._model, args, kwargs)
        logits, masks, single = _masked_logits(output)
        actions = []
        for i, lg in enumerate(logits):
            if np.random.random() > eps:
                actions.append(sample_action(logit=lg if alpha is None else lg / alpha))
            else:
                actions.append(_random_action(lg, None if masks is None else masks[i]))
        output["action"] = _one_or_list(actions, single)
        return output


class DeterministicSampleWrapper(IModelWrapper):
    """``output['action']``: the Gaussian's mean, ``output['logit']['mu']``."""

    def forward(self, *args: Any, **kwargs: Any) -> dict:
        output = _model_output(self._model, args, kwargs)
        output["action"] = output["logit"]["mu"]
        return output


class ReparamSampleWrapper(IModelWrapper):
    """``output['action']`` drawn from the diagonal Gaussian ``output['logit']`` (``mu``, ``sigma``)."""

    def forward(self, *args: Any, **kwargs: Any) -> dict:
        output = _model_output(self._model, args, kwargs)
        logit = output["logit"]
        normal = torch.distributions.Independent(torch.distributions.Normal(logit["mu"], logit["sigma"]), 1)
        output["action"] = normal.sample()
        return output


def _combination(draw: Callable[[torch.Tensor], torch.Tensor]):
    """A wrapper class that picks ``shot_number`` distinct actions per row with ``draw(logits)``,
    each pick masked out of the next ones."""

    def forward(self: IModelWrapper, shot_number: int, *args: Any, **kwargs: Any) -> dict:
        output = self._model.forward(*args, **kwargs)
        logit = output["logit"]
        mask = torch.zeros_like(logit)
        picks = []
        for _ in range(shot_number):
            action = draw(logit + mask)
            picks.append(action)
            mask[torch.arange(len(action)), action] = -1e8
        output["action"] = torch.stack(picks, dim=1)
        return output

    return forward


class CombinationArgmaxSampleWrapper(IModelWrapper):
    """``forward(shot_number, ...)``: the ``shot_number`` best distinct actions per row, in order."""

    forward = _combination(lambda logit: logit.argmax(dim=-1))


class CombinationMultinomialSampleWrapper(IModelWrapper):
    """``forward(shot_number, ...)``: ``shot_number`` distinct actions per row, each drawn from the
    softmax of the logits of those not drawn yet."""

    forward = _combination(lambda logit: torch.distributions.Categorical(logits=logit).sample())


def _zeros_like(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return torch.zeros_like(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_zeros_like(v) for v in value)
    if isinstance(value, dict):
        return {k: _zeros_like(v) for k, v in value.items()}
    raise TypeError(f"Cannot make zeros like a {type(value).__name__}.")


def _detached(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, (list, tuple)):
        return type(value)(_detached(v) for v in value)
    if isinstance(value, dict):
        return {k: _detached(v) for k, v in value.items()}
    return value


class HiddenStateWrapper(IModelWrapper):
    """Keeps one recurrent state per env (``state_num`` of them, each ``init_fn()`` at first): a
    forward with ``data_id=[...]`` (all envs without) hands the model their states as
    ``data['prev_state']`` and stores its ``next_state`` back; ``save_prev_state`` puts the states
    it started from into the output (``prev_state``, zeros for a fresh env). ``reset(data_id=...,
    state=...)`` sets those envs' states (to ``init_fn()`` without ``state``)."""

    def __init__(
        self, model: Any, state_num: int, save_prev_state: bool = False, init_fn: Callable = lambda: None
    ) -> None:
        super().__init__(model)
        self._state_num = state_num
        self._init_fn = init_fn
        self._save_prev_state = save_prev_state
        self._state = {i: init_fn() for i in range(state_num)}

    def forward(self, data: dict, **kwargs: Any) -> dict:
        state_id = kwargs.pop("data_id", None)
        valid_id = kwargs.pop("valid_id", None)
        data, state_info = self.before_forward(data, state_id)
        output = self._model.forward(data, **kwargs)
        next_state = output.pop("next_state", None)
        if next_state is not None:
            self.after_forward(next_state, state_info, valid_id)
        if self._save_prev_state:
            prev_state = _detached(data["prev_state"])
            output["prev_state"] = [_zeros_like(next_state[0]) if s is None else s for s in prev_state]
        return output

    def reset(self, *args: Any, **kwargs: Any) -> None:
        state = kwargs.pop("state", None)
        self.reset_state(state, kwargs.get("data_id", None))
        if hasattr(self._model, "reset"):
            return self._model.reset(*args, **kwargs)
        return None

    def reset_state(self, state: list | None = None, state_id: list | None = None) -> None:
        if state_id is None:
            state_id = list(range(self._state_num))
        if state is None:
            state = [self._init_fn() for _ in state_id]
        if len(state) != len(state_id):
            raise ValueError(f"reset got {len(state)} states for {len(state_id)} env ids.")
        for idx, s in zip(state_id, state):
            self._state[idx] = s

    def before_forward(self, data: dict, state_id: list | None) -> tuple[dict, dict]:
        if state_id is None:
            state_id = list(range(self._state_num))
        state_info = {idx: self._state[idx] for idx in state_id}
        data["prev_state"] = list(state_info.values())
        return data, state_info

    def after_forward(self, h: Any, state_info: dict, valid_id: list | None = None) -> None:
        if len(h) != len(state_info):
            raise ValueError(f"The model gave {len(h)} next states for {len(state_info)} envs.")
        for i, idx in enumerate(state_info):
            if valid_id is None or idx in valid_id:
                self._state[idx] = h[i]


class TargetNetworkWrapper(IModelWrapper):
    """A target network: ``update(state_dict)`` copies the online weights every ``freq`` calls
    (``update_type='assign'``, ``update_kwargs={'freq': N}``) or moves each parameter towards them,
    ``(1 - theta) * p + theta * p_online`` (``'momentum'``, ``{'theta': t}``); ``direct=True``
    copies now. ``reset(target_update_count=n)`` sets the call count."""

    def __init__(self, model: Any, update_type: str, update_kwargs: dict) -> None:
        super().__init__(model)
        if update_type not in ("momentum", "assign"):
            raise ConfigError(
                f"The target wrapper's update_type is 'momentum' or 'assign', got {update_type!r}."
            )
        needed = "theta" if update_type == "momentum" else "freq"
        if needed not in update_kwargs:
            raise ConfigError(
                f"The target wrapper with update_type={update_type!r} needs update_kwargs['{needed}']."
            )
        self._update_type = update_type
        self._update_kwargs = update_kwargs
        self._update_count = 0

    def reset(self, *args: Any, **kwargs: Any) -> None:
        self.reset_state(kwargs.pop("target_update_count", None))
        if hasattr(self._model, "reset"):
            return self._model.reset(*args, **kwargs)
        return None

    def update(self, state_dict: dict, direct: bool = False) -> None:
        if direct:
            self._model.load_state_dict(state_dict, strict=True)
            self._update_count = 0
        elif self._update_type == "assign":
            if (self._update_count + 1) % self._update_kwargs["freq"] == 0:
                self._model.load_state_dict(state_dict, strict=True)
            self._update_count += 1
        else:
            theta = self._update_kwargs["theta"]
            with torch.no_grad():
                for name, p in self._model.named_parameters():
                    p.copy_((1 - theta) * p + theta * state_dict[name])

    def reset_state(self, target_update_count: int | None = None) -> None:
        if target_update_count is not None:
            self._update_count = target_update_count


class _GaussianNoise:
    def __init__(self, mu: float = 0.0, sigma: float = 1.0) -> None:
        self.mu, self.sigma = mu, sigma

    def __call__(self, shape: tuple, device: Any) -> torch.Tensor:
        return torch.randn(shape, device=device) * self.sigma + self.mu


class _OUNoise:
    """Ornstein-Uhlenbeck noise: each call moves the state ``x`` by ``theta dt (mu - x) + sigma
    sqrt(dt) N(0, 1)`` and returns that step."""

    def __init__(
        self, mu: float = 0.0, sigma: float = 0.3, theta: float = 0.15, dt: float = 1e-2, x0: Any = 0.0
    ):
        self.mu, self.x0 = mu, x0
        self._alpha, self._beta = theta * dt, sigma * math.sqrt(dt)
        self._x = copy.deepcopy(x0)

    def __call__(self, shape: tuple, device: Any) -> torch.Tensor:
        if self._x is None or (isinstance(self._x, torch.Tensor) and self._x.shape != shape):
            self._x = torch.zeros(shape)
        step = self._alpha * (self.mu - self._x) + self._beta * torch.randn(shape)
        self._x = self._x + step
        return step.to(device)


_NOISES = {"gauss": _GaussianNoise, "ou": _OUNoise}


class ActionNoiseWrapper(IModelWrapper):
    """Adds exploration noise to ``output['action']``: ``noise_type`` 'gauss' (``noise_kwargs``:
    ``mu``, ``sigma``) or 'ou' (``mu``, ``sigma``, ``theta``, ``dt``, ``x0``), the noise clipped to
    ``noise_range`` and the sum to ``action_range`` (``{'min', 'max'}`` each, None: no clip).
    ``forward(..., sigma=s)`` changes the Gaussian's sigma from then on (DI-engine's takes the
    argument and keeps drawing with the old sigma)."""

    def __init__(
        self,
        model: Any,
        noise_type: str = "gauss",
        noise_kwargs: dict | None = None,
        noise_range: dict | None = None,
        action_range: dict | None = {"min": -1, "max": 1},  # noqa: B006 - DI-engine's default, only read
    ) -> None:
        super().__init__(model)
        if noise_type not in _NOISES:
            raise ConfigError(f"action_noise's noise_type is one of {sorted(_NOISES)}, got {noise_type!r}.")
        self.noise_generator = _NOISES[noise_type](**(noise_kwargs or {}))
        self.noise_range = noise_range
        self.action_range = action_range

    def forward(self, *args: Any, **kwargs: Any) -> dict:
        sigma = kwargs.pop("sigma", None)
        if sigma is not None:
            self.noise_generator.sigma = sigma
        output = _model_output(self._model, args, kwargs)
        if "action" in output:
            output["action"] = self.add_noise(output["action"])
        return output

    def add_noise(self, action: torch.Tensor) -> torch.Tensor:
        noise = self.noise_generator(action.shape, action.device)
        if self.noise_range is not None:
            noise = noise.clamp(self.noise_range["min"], self.noise_range["max"])
        action = action + noise
        if self.action_range is not None:
            action = action.clamp(self.action_range["min"], self.action_range["max"])
        return action


wrapper_name_map: dict[str, type] = {
    "base": BaseModelWrapper,
    "hidden_state": HiddenStateWrapper,
    "argmax_sample": ArgmaxSampleWrapper,
    "eps_greedy_sample": EpsGreedySampleWrapper,
    "eps_greedy_multinomial_sample": EpsGreedyMultinomialSampleWrapper,
    "deterministic_sample": DeterministicSampleWrapper,
    "reparam_sample": ReparamSampleWrapper,
    "multinomial_sample": MultinomialSampleWrapper,
    "action_noise": ActionNoiseWrapper,
    "target": TargetNetworkWrapper,
    "combination_argmax_sample": CombinationArgmaxSampleWrapper,
    "combination_multinomial_sample": CombinationMultinomialSampleWrapper,
}

# DI-engine's wrappers for models ding_ray does not have (hybrid action spaces, GTrXL's memory) and
# its teacher wrapper (which DI-engine itself leaves unimplemented)
_NOT_HERE = {
    "hybrid_argmax_sample": "hybrid (discrete + continuous) action models",
    "hybrid_eps_greedy_sample": "hybrid (discrete + continuous) action models",
    "hybrid_eps_greedy_multinomial_sample": "hybrid (discrete + continuous) action models",
    "hybrid_reparam_multinomial_sample": "hybrid (discrete + continuous) action models",
    "hybrid_deterministic_argmax_sample": "hybrid (discrete + continuous) action models",
    "transformer_input": "transformer (GTrXL) models",
    "transformer_segment": "transformer (GTrXL) models",
    "transformer_memory": "transformer (GTrXL) models",
    "teacher": "distillation (DI-engine's own TeacherNetworkWrapper is not implemented)",
}


def model_wrap(
    model: nn.Module | IModelWrapper, wrapper_name: str | None = None, **kwargs: Any
) -> IModelWrapper:
    """``model`` inside the wrapper ``wrapper_name`` (built with ``kwargs``); a plain model gets a
    ``base`` wrapper first, as in DI-engine."""
    if wrapper_name not in wrapper_name_map:
        if wrapper_name in _NOT_HERE:
            raise NotSupportedError(
                f"model_wrap(..., '{wrapper_name}'): ding_ray has no {_NOT_HERE[wrapper_name]}, so it has no "
                f"such wrapper. Wrappers here: {sorted(wrapper_name_map)}."
            )
        raise TypeError(f"Unknown model wrapper {wrapper_name!r}; the wrappers: {sorted(wrapper_name_map)}.")
    if not isinstance(model, IModelWrapper):
        model = BaseModelWrapper(model)
    return wrapper_name_map[wrapper_name](model, **kwargs)


def register_wrapper(name: str, wrapper_type: type) -> None:
    """Make ``wrapper_type`` (an ``IModelWrapper`` subclass) available to ``model_wrap`` as ``name``."""
    if not isinstance(name, str) or not (
        isinstance(wrapper_type, type) and issubclass(wrapper_type, IModelWrapper)
    ):
        raise TypeError(
            f"register_wrapper takes a name and an IModelWrapper subclass, got {name!r}, {wrapper_type!r}."
        )
    wrapper_name_map[name] = wrapper_type
