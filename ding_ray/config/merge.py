"""Merging user configs over defaults, with unknown keys and wrong types rejected."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from easydict import EasyDict

from ding_ray.errors import ConfigError
from ding_ray.utils.dicts import deep_merge_dicts
from ding_ray.utils.registry import close_matches

# A section whose defaults hold this key takes entries beyond its defaults: every entry the user gives
# there, new keys included, goes to the callable stored under it, ``check(full_key, value) -> value``,
# which validates it (raising ConfigError) and returns it, instead of the usual key and type checks.
# The key itself never reaches a merged config. Example: the learner's ``hook`` section takes
# DI-engine's long-form hook entries under names of the user's choosing.
EXTRA_ENTRIES = "__extra_entries__"

# Keys of DI-engine features ding_ray does not have yet: refused as such, not as unknown keys.
NOT_SUPPORTED_YET = {
    "expert_random_collect_size": "DI-engine's SQIL entry (serial_pipeline_sqil) and its expert data",
    # BC from observation: behaviour cloning with an inverse dynamics model trained on expert rollouts
    "model_path": "DI-engine's BCO entry (serial_pipeline_bco) and its expert model",
    "bco": "DI-engine's BCO entry (serial_pipeline_bco)",
}


def default_config_of(cls: type) -> EasyDict:
    """The ``config`` attributes of ``cls`` and its bases merged, most derived last."""
    cfg: dict = {}
    for klass in reversed(cls.__mro__):
        own = klass.__dict__.get("config")
        if isinstance(own, Mapping):
            cfg = deep_merge_dicts(cfg, own)
    cfg = EasyDict(cfg)
    cfg.cfg_type = cls.__name__ + "Dict"
    return cfg


# Counts a collector or evaluator may take per call instead (DI-engine's ``collect(n_sample=...)``):
# None there means "given to each call", whatever the default.
NONE_MEANS_PER_CALL = ("collector.n_sample", "collector.n_episode", "evaluator.n_episode")


def _check_type(path: str, default: Any, value: Any) -> Any:
    """Return ``value`` (converted where lossless) or raise if it cannot stand for ``default``.
    None stands only for a default of None ("not set"): elsewhere it would fail later, in use."""
    if default is None or (value is None and path.endswith(NONE_MEANS_PER_CALL)):
        return value
    if value is None:
        raise ConfigError(
            f"Config key '{path}' cannot be None (default {default!r}): remove the key to use the "
            f"default, or give a {type(default).__name__}."
        )
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif isinstance(default, str):
        if isinstance(value, str):
            return value
    elif isinstance(default, (list, tuple)):
        if isinstance(value, (list, tuple)):
            return value
    else:
        return value
    raise ConfigError(
        f"Config key '{path}' expects {type(default).__name__} (default {default!r}), "
        f"got {type(value).__name__} {value!r}."
    )


def merge_config(
    defaults: Mapping, user: Mapping | None, path: str = "", root: Mapping | None = None
) -> EasyDict:
    """Merge ``user`` over ``defaults``, raising ``ConfigError`` on unknown keys or wrong types.

    A default that is an empty dict is free-form: any keys are accepted below it (model kwargs,
    env kwargs); so is a policy's ``model`` section, whose defaults (SAC's ``twin_critic``, as
    DI-engine's) are some of its model's kwargs. ``cfg_type`` and ``import_names`` are bookkeeping
    keys and always accepted.
    ``root``: the whole tree of defaults (``defaults`` sits at ``path`` in it), searched for an
    unknown key's name at another level ('policy.batch_size' -> 'policy.learn.batch_size').
    """
    merged = _without_extra_entries(EasyDict(copy.deepcopy(dict(defaults))))
    open_section = (
        len(defaults) == 0
        or (len(defaults) == 1 and "cfg_type" in defaults)
        or path == "model"
        or path.endswith(".model")
    )
    check_extra = defaults.get(EXTRA_ENTRIES)
    for key, value in (user or {}).items():
        full = f"{path}.{key}" if path else str(key)
        if key == EXTRA_ENTRIES:
            continue
        if check_extra is not None:
            merged[key] = check_extra(full, copy.deepcopy(value))
            continue
        if key not in defaults:
            if open_section or key in ("cfg_type", "import_names"):
                merged[key] = copy.deepcopy(value)
                continue
            if key in NOT_SUPPORTED_YET:
                raise ConfigError(
                    f"Config key '{full}' belongs to {NOT_SUPPORTED_YET[key]}, which ding_ray does not "
                    "support yet: remove the key to train without it."
                )
            elsewhere = _paths_of_leaf(key, root) if root is not None else _paths_of_leaf(key, defaults, path)
            close = close_matches(key, [k for k in defaults if k != "cfg_type"])
            hint = elsewhere + [f"{path}.{h}" if path else h for h in close if h not in elsewhere]
            where = f"'{path}'" if path else "the top level"
            did_you_mean = f" Did you mean {' or '.join(repr(h) for h in hint)}?"
            raise ConfigError(
                f"Unknown config key '{full}'.{did_you_mean if hint else ''} "
                f"Valid keys in {where}: {sorted(k for k in defaults if k != 'cfg_type')}."
            )
        default = defaults[key]
        if isinstance(default, Mapping):
            if isinstance(value, Mapping):
                merged[key] = merge_config(default, value, full, root)
            else:
                raise ConfigError(
                    f"Config key '{full}' is a section (dict), got {type(value).__name__} {value!r}: give a "
                    "dict of its keys, or remove it to use its defaults."
                )
        else:
            merged[key] = copy.deepcopy(_check_type(full, default, value))
    return merged


def _paths_of_leaf(key: str, tree: Mapping, prefix: str = "") -> list[str]:
    """The paths in ``tree`` (which sits at ``prefix``) of the keys named ``key``, sections first."""
    found = []
    for name, value in tree.items():
        full = f"{prefix}.{name}" if prefix else str(name)
        if name == key:
            found.append(full)
        if isinstance(value, Mapping):
            found += _paths_of_leaf(key, value, full)
    return found


def _without_extra_entries(cfg: EasyDict) -> EasyDict:
    cfg.pop(EXTRA_ENTRIES, None)
    for value in cfg.values():
        if isinstance(value, EasyDict):
            _without_extra_entries(value)
    return cfg


def checked_config(cls: type, cfg: Mapping | None, path: str) -> EasyDict:
    """``cfg`` as given if ``compile_config`` already resolved it for ``cls``; else merged over
    ``cls.default_config()`` with unknown keys and wrong types rejected (``path`` names the section)."""
    cfg = EasyDict(cfg or {})
    if cfg.get("cfg_type") == cls.__name__ + "Dict":
        return cfg
    return merge_config(cls.default_config(), cfg, path)


def set_dotted(main_cfg: dict, create_cfg: dict, key: str, value: Any) -> None:
    """Set ``key`` (``"policy.learn.learning_rate"``) to ``value`` in the main config, or in the
    create config for keys starting with ``create_config.``; missing sections are made. Unknown
    keys are left for ``compile_config``, which rejects them by name."""
    path = str(key).split(".")
    if not all(path):
        raise ConfigError(f"'{key}' is not a dotted config key like 'policy.learn.learning_rate'.")
    target = main_cfg
    if path[0] in ("create_config", "create") and len(path) > 1:
        target, path = create_cfg, path[1:]
    node = target
    for i, part in enumerate(path[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = EasyDict()
        elif not isinstance(child, dict):
            raise ConfigError(
                f"'{key}': '{'.'.join(path[: i + 1])}' is {child!r}, not a section, so it has no key "
                f"'{path[i + 1]}'."
            )
        node = child
    node[path[-1]] = value
