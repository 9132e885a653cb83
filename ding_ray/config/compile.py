"""``compile_config``: the user's DI-engine style config, merged over every component's defaults."""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Mapping
from typing import Any

from easydict import EasyDict

from ding_ray.config.merge import merge_config
from ding_ray.errors import ConfigError
from ding_ray.utils.registry import (
    BUFFER_REGISTRY,
    ENV_MANAGER_REGISTRY,
    ENV_REGISTRY,
    LEARNER_REGISTRY,
    POLICY_REGISTRY,
    SERIAL_COLLECTOR_REGISTRY,
    SERIAL_EVALUATOR_REGISTRY,
)

# Components register themselves when their package is imported. The registries sit at the
# bottom of the package, so compile_config imports the packages by name instead of by layer.
_COMPONENT_PACKAGES = ("ding_ray.envs", "ding_ray.policy", "ding_ray.data", "ding_ray.worker")

TOP_LEVEL = dict(
    exp_name="default_experiment",  # output folder: config, checkpoints, TensorBoard logs, result.json
    seed=0,  # base seed of envs, torch and numpy
    env=dict(),
    policy=dict(),
    ray=dict(),  # read by ding_ray.distributed; ignored by serial pipelines
)


def _ensure_registered(import_names: list[str] | None = None) -> None:
    for name in (*_COMPONENT_PACKAGES, *(import_names or [])):
        importlib.import_module(name)


def _type_of(section: Mapping | None, default: str) -> str:
    return (section or {}).get("type", default) or default


def _get(cfg: Mapping, *keys: str) -> Any:
    for key in keys:
        if not isinstance(cfg, Mapping) or key not in cfg:
            return None
        cfg = cfg[key]
    return cfg


def _apply_create_cfg(main: dict, create: Mapping) -> dict:
    """Move the ``type`` fields of DI-engine's create_config into the main config."""
    main = EasyDict(main)
    unknown = set(create) - {"env", "env_manager", "policy", "replay_buffer"}
    if unknown:
        raise ConfigError(
            f"Unknown create_config section(s) {sorted(unknown)}; expected env, env_manager, policy."
        )
    for section, target in (("env", ("env",)), ("policy", ("policy",)), ("env_manager", ("env", "manager"))):
        if section in create and create[section]:
            node = main
            for key in target:
                node = node.setdefault(key, EasyDict())
            for key, value in create[section].items():
                node.setdefault(key, value)
    if create.get("replay_buffer"):
        rb = main.setdefault("policy", EasyDict()).setdefault("other", EasyDict())
        rb.setdefault("replay_buffer", EasyDict()).update(create["replay_buffer"])
    return main


def build_default_tree(main: Mapping, extra_defaults: Mapping | None = None) -> EasyDict:
    """Defaults of every component named by ``main`` (types resolved), arranged as DI-engine does."""
    env_cls = ENV_REGISTRY.get(_type_of(_get(main, "env"), "gymnasium"))
    manager_cls = ENV_MANAGER_REGISTRY.get(_type_of(_get(main, "env", "manager"), "base"))
    policy_cls = POLICY_REGISTRY.get(_type_of(_get(main, "policy"), "dqn"))
    learner_cls = LEARNER_REGISTRY.get(_type_of(_get(main, "policy", "learn", "learner"), "base"))
    collector_cls = SERIAL_COLLECTOR_REGISTRY.get(
        _type_of(_get(main, "policy", "collect", "collector"), policy_cls.default_collector_type)
    )
    evaluator_cls = SERIAL_EVALUATOR_REGISTRY.get(
        _type_of(_get(main, "policy", "eval", "evaluator"), "interaction")
    )
    buffer_cls = BUFFER_REGISTRY.get(_type_of(_get(main, "policy", "other", "replay_buffer"), "naive"))

    tree = EasyDict(TOP_LEVEL)
    tree.env = env_cls.default_config()
    tree.env.manager = manager_cls.default_config()
    tree.policy = policy_cls.default_config()
    tree.policy.learn.learner = learner_cls.default_config()
    tree.policy.collect.collector = collector_cls.default_config()
    tree.policy.eval.evaluator = evaluator_cls.default_config()
    tree.policy.other.replay_buffer = buffer_cls.default_config()
    for key, value in (extra_defaults or {}).items():
        tree[key] = value
    return tree


def compile_config(
    cfg: Mapping,
    seed: int = 0,
    auto: bool = True,
    create_cfg: Mapping | None = None,
    save_cfg: bool = True,
    save_path: str = "total_config.json",
    extra_defaults: Mapping | None = None,
) -> EasyDict:
    """Resolve a DI-engine style ``(main_config, create_config)`` pair into one checked config.

    Every component's ``default_config()`` is merged under the user's keys; an unknown key or a
    value of the wrong type raises ``ConfigError`` with the key's full path. With ``save_cfg``
    the ``exp_name`` folder is created and the resolved config written there as JSON.
    ``extra_defaults`` adds top-level sections (``ray_pipeline`` passes its ``ray`` defaults).
    """
    if not auto and create_cfg is None:
        raise ConfigError("compile_config(auto=False) needs the component types in the config itself.")
    main = _apply_create_cfg(dict(cfg), create_cfg or {})
    # DI-engine's create_config may name modules that register custom envs, policies or models.
    _ensure_registered(
        [m for section in (create_cfg or {}).values() for m in (section or {}).get("import_names", [])]
    )
    tree = build_default_tree(main, extra_defaults)
    merged = merge_config(tree, main)
    merged.seed = int(seed)

    # Values DI-engine copies from the env section into the evaluator and collector sections.
    evaluator = merged.policy.eval.evaluator
    evaluator.stop_value = merged.env.get("stop_value", evaluator.get("stop_value"))
    evaluator.n_episode = merged.env.get("n_evaluator_episode", evaluator.get("n_episode"))
    if "n_sample" in merged.policy.collect and merged.policy.collect.n_sample is not None:
        merged.policy.collect.collector.n_sample = merged.policy.collect.n_sample
    if "n_episode" in merged.policy.collect and merged.policy.collect.n_episode is not None:
        merged.policy.collect.collector.n_episode = merged.policy.collect.n_episode

    if save_cfg:
        save_config(merged, os.path.join(merged.exp_name, save_path))
    return merged


def save_config(cfg: Mapping, path: str) -> None:
    """Write the resolved config as JSON (readable, and loading it never runs code)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True, default=repr)


def read_config(path: str) -> EasyDict:
    """Load a config saved by ``save_config``."""
    with open(path) as f:
        return EasyDict(json.load(f))
