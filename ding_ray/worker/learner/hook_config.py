"""Learner hooks from the ``policy.learn.learner.hook`` config section, in DI-engine's two forms.

Short form: ``load_ckpt_before_run='path'``, ``log_show_after_iter=100``, ``save_ckpt_after_iter=1000``,
``save_ckpt_after_run=True``, ``log_reduce_after_iter=True`` (False, None or '' turn one off).
Long form: any key mapping to ``dict(name=..., type=<registered>, priority=..., position=...,
ext_args=dict(...))``; ``type`` and ``position`` are required, ``name`` defaults to the key and
``priority`` to 100.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ding_ray.config.merge import EXTRA_ENTRIES
from ding_ray.errors import ConfigError
from ding_ray.utils.registry import close_matches
from ding_ray.worker.learner.hooks import (
    POSITIONS,
    LearnerHook,
    LoadCkptHook,
    LogReduceHook,
    LogShowHook,
    SaveCkptHook,
)

HOOK_TYPES: dict[str, type] = {
    "load_ckpt": LoadCkptHook,
    "save_ckpt": SaveCkptHook,
    "log_show": LogShowHook,
    "log_reduce": LogReduceHook,
}

# key: (hook type, name, priority, position, ext_args key the value goes to) as DI-engine builds them
SHORT_FORMS: dict[str, tuple[str, str, int, str, str | None]] = {
    "load_ckpt_before_run": ("load_ckpt", "load_ckpt", 20, "before_run", "load_path"),
    "log_show_after_iter": ("log_show", "log_show", 20, "after_iter", "freq"),
    "save_ckpt_after_iter": ("save_ckpt", "save_ckpt_after_iter", 20, "after_iter", "freq"),
    "save_ckpt_after_run": ("save_ckpt", "save_ckpt_after_run", 20, "after_run", None),
    "log_reduce_after_iter": ("log_reduce", "log_reduce_after_iter", 10, "after_iter", None),
}
LONG_FORM_KEYS = ("name", "type", "priority", "position", "ext_args")
_SECTION = "policy.learn.learner.hook"


def register_learner_hook(name: str, hook_type: type) -> None:
    """Make ``hook_type`` buildable by ``build_learner_hook_by_cfg`` as ``type=name``."""
    if not (isinstance(hook_type, type) and issubclass(hook_type, LearnerHook)):
        raise TypeError(f"{hook_type} is not a LearnerHook subclass.")
    HOOK_TYPES[name] = hook_type


def build_learner_hook_by_cfg(cfg: Mapping[str, Any] | None) -> dict[str, list[LearnerHook]]:
    """Hooks of a learner's ``hook`` section by position, each list ordered by priority (stable)."""
    hooks: dict[str, list[LearnerHook]] = {p: [] for p in POSITIONS}
    for key, value in (cfg or {}).items():
        if key in ("cfg_type", EXTRA_ENTRIES):
            continue
        hook = build_hook(f"{_SECTION}.{key}", value)
        if hook is not None:
            add_learner_hook(hooks, hook)
    return hooks


def build_hook(full_key: str, value: Any) -> LearnerHook | None:
    """One hook from one entry of the section (None for a short form turned off)."""
    key = full_key.rsplit(".", 1)[-1]
    if isinstance(value, Mapping):
        return _long_form(full_key, key, value)
    if key not in SHORT_FORMS:
        hint = close_matches(key, SHORT_FORMS)
        raise ConfigError(
            f"Unknown learner hook '{full_key}'."
            + (f" Did you mean '{hint[0]}'?" if hint else "")
            + f" Short forms: {list(SHORT_FORMS)}; any other key needs the long form "
            "dict(name=..., type=..., priority=..., position=..., ext_args=dict(...))."
        )
    if value is None or value is False or value == "":
        return None
    type_name, name, priority, position, arg = SHORT_FORMS[key]
    ext_args = {} if arg is None else {arg: value}
    return _construct(full_key, type_name, name, priority, position, ext_args)


def check_hook_entry(full_key: str, value: Any) -> Any:
    """The ``hook`` section's check of entries beyond its defaults (see merge.EXTRA_ENTRIES)."""
    build_hook(full_key, value)
    return value


def _long_form(full_key: str, key: str, value: Mapping[str, Any]) -> LearnerHook:
    for field in value:
        if field not in LONG_FORM_KEYS:
            hint = close_matches(field, LONG_FORM_KEYS)
            raise ConfigError(
                f"Learner hook '{full_key}': unknown field '{field}'."
                + (f" Did you mean '{hint[0]}'?" if hint else "")
                + f" A long-form hook has {list(LONG_FORM_KEYS)}."
            )
    for field in ("type", "position"):
        if field not in value:
            raise ConfigError(
                f"Learner hook '{full_key}' needs '{field}': dict(type=<one of {sorted(HOOK_TYPES)}>, "
                f"position=<one of {list(POSITIONS)}>, priority=..., ext_args=dict(...))."
            )
    type_name = value["type"]
    if type_name not in HOOK_TYPES:
        hint = close_matches(type_name, HOOK_TYPES)
        raise ConfigError(
            f"Learner hook '{full_key}': type '{type_name}' is not registered."
            + (f" Did you mean '{hint[0]}'?" if hint else "")
            + f" Registered: {sorted(HOOK_TYPES)}; add your own with register_learner_hook(name, cls)."
        )
    ext_args = value.get("ext_args") or {}
    if not isinstance(ext_args, Mapping):
        raise ConfigError(f"Learner hook '{full_key}': ext_args must be a dict, got {ext_args!r}.")
    return _construct(
        full_key, type_name, value.get("name", key), value.get("priority", 100), value["position"], ext_args
    )


def _construct(
    full_key: str, type_name: str, name: str, priority: Any, position: str, ext_args: Any
) -> LearnerHook:
    try:
        return HOOK_TYPES[type_name](name, priority, position=position, ext_args=ext_args)
    except ConfigError as e:
        raise ConfigError(f"In '{full_key}': {e}") from None


def add_learner_hook(hooks: dict[str, list[LearnerHook]], hook: LearnerHook) -> None:
    """Insert ``hook`` after every hook of its position with a priority <= its own."""
    if not isinstance(hook, LearnerHook):
        raise TypeError(f"{hook!r} is not a LearnerHook.")
    position_hooks = hooks.setdefault(hook.position, [])
    position_hooks.append(hook)
    position_hooks.sort(key=lambda h: h.priority)


def merge_hooks(
    hooks1: dict[str, list[LearnerHook]], hooks2: dict[str, list[LearnerHook]]
) -> dict[str, list[LearnerHook]]:
    """Union of two hook dicts, each position ordered by priority (stable: hooks1 first on ties)."""
    return {p: sorted([*hooks1.get(p, []), *hooks2.get(p, [])], key=lambda h: h.priority) for p in POSITIONS}
