"""Learner hooks: callables run at ``before_run``, ``after_run``, ``before_iter`` or ``after_iter``."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

import torch

from ding_ray.errors import ConfigError, DataFormatError
from ding_ray.utils.registry import close_matches
from ding_ray.worker import metrics

logger = logging.getLogger(__name__)

POSITIONS = ("before_run", "after_run", "before_iter", "after_iter")


class LearnerHook:
    """Something the learner calls at ``position``; lower ``priority`` runs first.

    Subclasses implement ``__call__(self, engine)`` where ``engine`` is the ``BaseLearner``.
    """

    def __init__(self, *args: Any, position: str, name: str | None = None, priority: int = 50, **kwargs: Any):
        if position not in POSITIONS:
            raise ConfigError(f"Hook position '{position}' unknown; choose from {list(POSITIONS)}.")
        self.position = position
        self.name = name or type(self).__name__
        self.priority = priority

    def __call__(self, engine: Any) -> None:
        raise NotImplementedError


class LoadCkptHook(LearnerHook):
    """Load a checkpoint (policy state and iteration count) before training starts."""

    def __init__(self, *args: Any, path: str = "", **kwargs: Any) -> None:
        kwargs.setdefault("priority", 20)
        super().__init__(*args, **kwargs)
        self._path = path

    def __call__(self, engine: Any) -> None:
        if not self._path:
            return
        state = load_checkpoint(self._path)
        engine.policy.load_state_dict(state)
        engine.last_iter.update(int(state.get("last_iter", 0)))
        logger.info("loaded checkpoint %s (iteration %d)", self._path, engine.last_iter.val)


class SaveCkptHook(LearnerHook):
    """Save a checkpoint every ``freq`` iterations (after_iter) or once at the end (after_run)."""

    def __init__(self, *args: Any, freq: int = 1, **kwargs: Any) -> None:
        kwargs.setdefault("priority", 20)
        super().__init__(*args, **kwargs)
        self._freq = freq

    def __call__(self, engine: Any) -> None:
        if self.position == "after_run":
            engine.save_checkpoint("ckpt_final.pth.tar")
        elif engine.last_iter.val % self._freq == 0:
            engine.save_checkpoint()


class LogShowHook(LearnerHook):
    """Every ``freq`` iterations: mean of the policy's reported values to the log and TensorBoard."""

    def __init__(self, *args: Any, freq: int = 100, **kwargs: Any) -> None:
        kwargs.setdefault("priority", 20)
        super().__init__(*args, **kwargs)
        self._freq = freq

    def __call__(self, engine: Any) -> None:
        iteration = engine.last_iter.val
        if iteration % self._freq != 0:
            return
        means = engine.log_buffer.means_and_clear()
        if not means:
            return
        scalars = {metrics.learner_key(k): v for k, v in means.items()}
        metrics.log_scalars(engine.tb_logger, scalars, iteration)
        logger.info(
            "[%s] iter %d %s",
            engine.instance_name,
            iteration,
            " ".join(f"{k}={v:.4g}" for k, v in means.items()),
        )


class LogBuffer:
    """Values the policy reports each iteration, kept until the next log line."""

    def __init__(self) -> None:
        self._sums: dict[str, float] = {}
        self._counts: dict[str, int] = {}

    def update(self, values: Mapping[str, Any]) -> None:
        for key, value in values.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self._sums[key] = self._sums.get(key, 0.0) + float(value)
                self._counts[key] = self._counts.get(key, 0) + 1

    def means_and_clear(self) -> dict[str, float]:
        means = {k: self._sums[k] / self._counts[k] for k in self._sums}
        self._sums, self._counts = {}, {}
        return means


def load_checkpoint(path: str) -> dict[str, Any]:
    """``torch.load`` with ``weights_only=True``: tensors and plain containers only, never code."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Checkpoint '{path}' does not exist.")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - torch raises several types for bad files
        raise DataFormatError(
            f"Checkpoint '{path}' cannot be loaded as weights ({type(e).__name__}: {e}). It may be "
            "truncated, or hold pickled objects other than tensors; ding_ray never unpickles code."
        ) from e


HOOK_TYPES: dict[str, type] = {
    "load_ckpt": LoadCkptHook,
    "save_ckpt": SaveCkptHook,
    "log_show": LogShowHook,
}


def register_learner_hook(name: str, hook_type: type) -> None:
    """Make ``hook_type`` buildable by ``build_learner_hook_by_cfg`` under ``name``."""
    if not (isinstance(hook_type, type) and issubclass(hook_type, LearnerHook)):
        raise TypeError(f"{hook_type} is not a LearnerHook subclass.")
    HOOK_TYPES[name] = hook_type


def build_learner_hook_by_cfg(cfg: Mapping[str, Any]) -> dict[str, list[LearnerHook]]:
    """Hooks from a learner's ``hook`` section.

    Short form (DI-engine's): ``load_ckpt_before_run='path'``, ``log_show_after_iter=100``,
    ``save_ckpt_after_iter=1000``, ``save_ckpt_after_run=True``. Long form: a key mapping to
    ``dict(type='<registered name>', position=..., priority=..., ext_args=dict(...))``.
    """
    hooks: dict[str, list[LearnerHook]] = {p: [] for p in POSITIONS}
    for key, value in cfg.items():
        if key == "cfg_type" or value is None or value is False or value == "":
            continue
        if isinstance(value, Mapping):
            type_name = value.get("type")
            if type_name not in HOOK_TYPES:
                raise ConfigError(
                    f"Unknown learner hook type '{type_name}'; registered: {sorted(HOOK_TYPES)}."
                )
            hook = HOOK_TYPES[type_name](
                name=key,
                position=value["position"],
                priority=value.get("priority", 50),
                **dict(value.get("ext_args", {})),
            )
        else:
            hook = _short_form_hook(key, value)
        add_learner_hook(hooks, hook)
    return hooks


def _short_form_hook(key: str, value: Any) -> LearnerHook:
    for position in POSITIONS:
        suffix = "_" + position
        if key.endswith(suffix):
            kind = key[: -len(suffix)]
            if kind == "load_ckpt":
                return LoadCkptHook(name=key, position=position, path=str(value))
            if kind == "save_ckpt":
                freq = 1 if value is True else int(value)
                return SaveCkptHook(name=key, position=position, freq=freq)
            if kind == "log_show":
                return LogShowHook(name=key, position=position, freq=int(value))
            if kind in HOOK_TYPES:
                return HOOK_TYPES[kind](name=key, position=position)
    known = ["load_ckpt_before_run", "save_ckpt_after_iter", "save_ckpt_after_run", "log_show_after_iter"]
    hint = close_matches(key, known)
    raise ConfigError(
        f"Unknown learner hook 'policy.learn.learner.hook.{key}'."
        + (f" Did you mean '{hint[0]}'?" if hint else "")
        + f" Short forms: {known}; or give dict(type=..., position=...)."
    )


def add_learner_hook(hooks: dict[str, list[LearnerHook]], hook: LearnerHook) -> None:
    """Insert ``hook`` at its position, keeping each list ordered by priority (stable)."""
    position_hooks = hooks.setdefault(hook.position, [])
    position_hooks.append(hook)
    position_hooks.sort(key=lambda h: h.priority)


def merge_hooks(
    hooks1: dict[str, list[LearnerHook]], hooks2: dict[str, list[LearnerHook]]
) -> dict[str, list[LearnerHook]]:
    """Union of two hook dicts, each position ordered by priority (stable: hooks1 first on ties)."""
    return {p: sorted([*hooks1.get(p, []), *hooks2.get(p, [])], key=lambda h: h.priority) for p in POSITIONS}
