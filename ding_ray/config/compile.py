"""``compile_config``: the user's DI-engine style config, merged over every component's defaults."""

from __future__ import annotations

import copy
import importlib
import importlib.util
import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from easydict import EasyDict

from ding_ray.config.as_data import config_as_data
from ding_ray.config.merge import deep_merge_dicts, merge_config
from ding_ray.config.ranges import check_ranges
from ding_ray.errors import ConfigError
from ding_ray.utils.checkpoint import CHECKPOINT_CONFIG
from ding_ray.utils.registry import (
    BUFFER_REGISTRY,
    ENV_MANAGER_REGISTRY,
    ENV_REGISTRY,
    LEARNER_REGISTRY,
    POLICY_REGISTRY,
    SERIAL_COLLECTOR_REGISTRY,
    SERIAL_EVALUATOR_REGISTRY,
    Registry,
)
from ding_ray.utils.run_dir import make_run_dir, save_config

logger = logging.getLogger(__name__)

# Components register themselves when their package is imported. The registries sit at the
# bottom of the package, so compile_config imports the packages by name instead of by layer.
_COMPONENT_PACKAGES = ("ding_ray.envs", "ding_ray.policy", "ding_ray.data", "ding_ray.worker")
# Modules of DI-engine itself that its configs name in ``import_names``: ding_ray registers its own
# counterparts of their components, so a DI-engine config runs without DI-engine installed.
_DI_ENGINE_PACKAGES = ("ding", "dizoo")

TOP_LEVEL = dict(
    exp_name="default_experiment",  # output folder: config, checkpoints, TensorBoard logs, result.json
    seed=0,  # base seed of envs, torch and numpy
    env=dict(),
    policy=dict(),
    ray=dict(),  # read by ding_ray.distributed; ignored by serial pipelines
    checkpoint=CHECKPOINT_CONFIG,  # run checkpoints: what resume= continues from
)

# Each component: (registry, where its section sits in the config, its type when nothing names one).
# The collector's default depends on the policy (``Policy.default_collector_type``).
_COMPONENTS: dict[str, tuple[Registry, tuple[str, ...], str | None]] = {
    "env": (ENV_REGISTRY, ("env",), "gymnasium"),
    "env_manager": (ENV_MANAGER_REGISTRY, ("env", "manager"), "base"),
    "policy": (POLICY_REGISTRY, ("policy",), "dqn"),
    "learner": (LEARNER_REGISTRY, ("policy", "learn", "learner"), "base"),
    "collector": (SERIAL_COLLECTOR_REGISTRY, ("policy", "collect", "collector"), None),
    "evaluator": (SERIAL_EVALUATOR_REGISTRY, ("policy", "eval", "evaluator"), "interaction"),
    "buffer": (BUFFER_REGISTRY, ("policy", "other", "replay_buffer"), "advanced"),  # DI-engine's default
}
# policy.other.commander, BaseSerialCommander's section: its defaults sit here, below the workers,
# and ding_ray.worker.commander takes them from here (no registry has commanders).
COMMANDER_CONFIG = dict(type="base")  # the commander's kind: 'base', the only one
# create_config section -> component; DI-engine calls the buffer's section 'replay_buffer'.
_CREATE_SECTIONS = {
    "env": "env",
    "env_manager": "env_manager",
    "policy": "policy",
    "collector": "collector",
    "evaluator": "evaluator",
    "replay_buffer": "buffer",
    "learner": "learner",
}
_UNSUPPORTED = ("reward_model", "world_model")
# create_config sections of DI-engine's parallel mode (parallel_pipeline: coordinator, Flask comm)
_PARALLEL_MODE = ("commander", "comm_learner", "comm_collector")


def _ensure_registered(import_names: list[str] | None = None) -> None:
    for name in _COMPONENT_PACKAGES:
        importlib.import_module(name)
    for name in import_names or []:
        if name.split(".")[0] in _DI_ENGINE_PACKAGES:
            logger.debug("skipping import_names entry %s: a DI-engine module", name)
            continue
        importlib.import_module(name)


def _get(cfg: Mapping, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(cfg, Mapping) or key not in cfg:
            return None
        cfg = cfg[key]
    return cfg


def _section(cfg: EasyDict, path: tuple[str, ...]) -> EasyDict:
    """The dict at ``path`` in ``cfg``, created empty where missing."""
    for i, key in enumerate(path):
        if key not in cfg:
            cfg[key] = EasyDict()
        elif not isinstance(cfg[key], Mapping):
            raise ConfigError(
                f"Config key '{'.'.join(path[: i + 1])}' is a section (dict), got "
                f"{type(cfg[key]).__name__} {cfg[key]!r}: give a dict of its keys, or remove it to use its "
                "defaults."
            )
        cfg = cfg[key]
    return cfg


def _apply_create_cfg(main: EasyDict, create: Mapping) -> None:
    """Move DI-engine's create_config sections (component types) into the main config."""
    unknown = set(create) - set(_CREATE_SECTIONS) - set(_UNSUPPORTED)
    parallel = sorted(unknown & set(_PARALLEL_MODE))
    if parallel:
        raise ConfigError(
            f"create_config section(s) {parallel} belong to DI-engine's parallel mode (parallel_pipeline), "
            "which ding_ray replaces with Ray: run the config with ding_ray.entry.ray_pipeline (or "
            "serial_pipeline) after removing those sections; docs/parallel_mode.md says what maps to what."
        )
    if unknown:
        raise ConfigError(
            f"Unknown create_config section(s) {sorted(unknown)}; expected {sorted(_CREATE_SECTIONS)}."
        )
    for section, component in _CREATE_SECTIONS.items():
        if create.get(section):
            node = _section(main, _COMPONENTS[component][1])
            for key, value in create[section].items():
                if key != "import_names":
                    node.setdefault(key, copy.deepcopy(value))


def _check_unsupported(create: Mapping, main: Mapping, classes: Mapping[str, Any]) -> None:
    for name in _UNSUPPORTED:
        if create.get(name) or main.get(name) or classes.get(name) is not None:
            raise ConfigError(
                f"'{name}' is not supported by ding_ray yet; remove it from the config (and from "
                "create_config) to train without it."
            )


def _resolve(component: str, explicit: Any, main: EasyDict, default: str | None) -> type:
    """The class of ``component``: the argument given to compile_config (a class or a registered
    name) first, then the config's ``type``, then the default. Writes the chosen type into ``main``."""
    registry, path, _ = _COMPONENTS[component]
    if explicit is not None and not isinstance(explicit, str):
        name = registry.name_of(explicit)
        if name is not None:
            _section(main, path)["type"] = name
        return explicit  # a user's own class need not be registered
    section = _section(main, path)  # a non-dict where a section belongs is a ConfigError here
    name = explicit or section.get("type") or default
    if component == "policy" and name not in registry and str(name).endswith("_command"):
        name = name[: -len("_command")]  # DI-engine's serial pipeline asks for '<type>_command'
    cls = registry.get(name)
    _section(main, path)["type"] = name
    return cls


def build_default_tree(
    main: EasyDict, classes: Mapping[str, Any] | None = None, extra_defaults: Mapping | None = None
) -> EasyDict:
    """Defaults of every component ``main`` names (types resolved, written into ``main``), arranged
    as DI-engine arranges them. ``classes`` are compile_config's class (or name) arguments."""
    classes = classes or {}
    resolved = {}
    for component in ("env", "env_manager", "policy", "learner", "evaluator", "buffer"):
        default = _COMPONENTS[component][2]
        resolved[component] = _resolve(component, classes.get(component), main, default)
    resolved["collector"] = _resolve(
        "collector", classes.get("collector"), main, resolved["policy"].default_collector_type
    )

    tree = EasyDict(copy.deepcopy(TOP_LEVEL))
    env_cls = resolved["env"]
    # An env class of the user's own without default_config() takes any keys, as in DI-engine.
    tree.env = env_cls.default_config() if hasattr(env_cls, "default_config") else EasyDict()
    tree.env.manager = resolved["env_manager"].default_config()
    tree.policy = resolved["policy"].default_config()
    tree.policy.learn.learner = resolved["learner"].default_config()
    tree.policy.collect.collector = resolved["collector"].default_config()
    tree.policy.eval.evaluator = resolved["evaluator"].default_config()
    tree.policy.other.replay_buffer = resolved["buffer"].default_config()
    tree.policy.other.commander = EasyDict(
        copy.deepcopy(COMMANDER_CONFIG), cfg_type="BaseSerialCommanderDict"
    )
    for key, value in (extra_defaults or {}).items():
        tree[key] = value
    return tree


def _merge_env(tree: EasyDict, main: EasyDict) -> EasyDict:
    """The env section: checked against the env's defaults, or taken as given when the env class
    declares none (a user's own env); the manager section is always checked."""
    user_env = EasyDict(main.get("env") or {})
    if len(tree.env) > 1:  # more than the manager: the env declares its keys
        return merge_config(tree.env, user_env, "env", root=tree)
    env = deep_merge_dicts({k: v for k, v in user_env.items() if k != "manager"}, {})
    env.manager = merge_config(tree.env.manager, user_env.get("manager"), "env.manager", root=tree)
    env.setdefault("collector_env_num", 8)
    env.setdefault("evaluator_env_num", 5)
    env.setdefault("n_evaluator_episode", 4)  # DI-engine's env template
    env.setdefault("stop_value", None)
    return env


def compile_config(
    cfg: Mapping,
    env_manager: Any = None,
    policy: Any = None,
    learner: Any = None,
    collector: Any = None,
    evaluator: Any = None,
    buffer: Any = None,
    env: Any = None,
    reward_model: Any = None,
    world_model: Any = None,
    seed: int = 0,
    auto: bool = False,
    create_cfg: Mapping | None = None,
    save_cfg: bool = True,
    save_path: str = "total_config.json",
    renew_dir: bool = True,
    extra_defaults: Mapping | None = None,
) -> EasyDict:
    """Resolve a DI-engine style config into one checked config, in either of DI-engine's forms.

    ``compile_config(main_config, seed=0, auto=True, create_cfg=create_config)`` takes the component
    types from ``create_config``; ``compile_config(cfg, BaseEnvManager, DQNPolicy, BaseLearner,
    SampleSerialCollector, InteractionSerialEvaluator, AdvancedReplayBuffer)`` (dizoo's ``*_main.py``
    form) takes them from the arguments, classes or registered names. A component named nowhere
    gets DI-engine's default (buffer: ``advanced``). Every component's ``default_config()`` is
    merged under the user's keys; an unknown key or a value of the wrong type raises
    ``ConfigError`` with the key's full path.

    With ``save_cfg`` the ``exp_name`` folder is created and the resolved config written there as
    JSON; with ``renew_dir`` (DI-engine's default) an ``exp_name`` folder that already exists is
    left alone and the run gets ``<exp_name>_<yymmdd_HHMMSS>`` instead. ``extra_defaults`` adds
    top-level sections (``ray_pipeline`` passes its ``ray`` defaults). ``auto`` is accepted for
    DI-engine's signature: create_config is read whenever it is given.
    """
    create_cfg = create_cfg or {}
    classes = dict(
        env=env,
        env_manager=env_manager,
        policy=policy,
        learner=learner,
        collector=collector,
        evaluator=evaluator,
        buffer=buffer,
        reward_model=reward_model,
        world_model=world_model,
    )
    main = EasyDict(copy.deepcopy(dict(cfg)))
    _check_unsupported(create_cfg, main, classes)
    _apply_create_cfg(main, create_cfg)
    # DI-engine's create_config may name modules that register custom envs, policies or models.
    _ensure_registered(
        [m for section in create_cfg.values() for m in (section or {}).get("import_names", [])]
    )
    tree = build_default_tree(main, classes, extra_defaults)
    env_section = _merge_env(tree, main)
    merged = merge_config(
        {k: v for k, v in tree.items() if k != "env"},
        {k: v for k, v in main.items() if k != "env"},
        root=tree,
    )
    merged.env = env_section
    merged.seed = int(seed)
    _copy_shared_values(merged)
    _check_env_values(merged.env, env, merged.policy.get("model", {}).get("obs_shape"))
    _check_consistency(merged)
    _check_policy_values(merged, policy)
    if save_cfg:
        merged.exp_name = make_run_dir(merged.exp_name, renew=renew_dir)
        save_config(merged, os.path.join(merged.exp_name, save_path))
    return merged


def _check_env_values(env_cfg: EasyDict, explicit: Any, obs_shape: Any = None) -> None:
    """The env class's own check of values (``check_config``, where it has one): dizoo's env keys
    that ding_ray's env cannot act on are refused here, before any env is built; and of the model's
    ``obs_shape`` (``check_obs_shape``: the atari env names the fix of a channel-last shape or of a
    ``frame_stack`` that differs from ``obs_shape[0]``)."""
    env_cls = explicit if explicit is not None and not isinstance(explicit, str) else None
    if env_cls is None and env_cfg.get("type") in ENV_REGISTRY:
        env_cls = ENV_REGISTRY.get(env_cfg.type)
    check = getattr(env_cls, "check_config", None)
    if check is not None:
        check(env_cfg)
    check_shape = getattr(env_cls, "check_obs_shape", None)
    if check_shape is not None:
        check_shape(env_cfg, obs_shape)


def _check_policy_values(merged: EasyDict, explicit: Any) -> None:
    """The policy class's own check of the compiled config (``check_config``, where it has one):
    what it cannot run with (a replay buffer or IMPALA's unrolls too large for this machine's
    memory) is refused before anything is built."""
    policy_cls = explicit if explicit is not None and not isinstance(explicit, str) else None
    if policy_cls is None:
        policy_cls = POLICY_REGISTRY.get(merged.policy.type)
    check = getattr(policy_cls, "check_config", None)
    if check is not None:
        check(merged)


def _copy_shared_values(merged: EasyDict) -> None:
    """Values DI-engine copies from one section into another."""
    evaluator = merged.policy.eval.evaluator
    evaluator.stop_value = merged.env.get("stop_value", evaluator.get("stop_value"))
    evaluator.n_episode = merged.env.get("n_evaluator_episode", evaluator.get("n_episode"))
    collect = merged.policy.collect
    for key in ("n_sample", "n_episode"):
        if collect.get(key) is not None and key in collect.collector:
            collect.collector[key] = collect[key]
    if merged.policy.get("unroll_len") is not None and "unroll_len" in collect:
        collect.unroll_len = merged.policy.unroll_len


def _check_sizes(merged: EasyDict) -> None:
    """Values in their ranges (``ding_ray.config.ranges``), and a replay buffer that can hold one
    training batch."""
    check_ranges(merged)
    policy, buffer = merged.policy, merged.policy.other.replay_buffer
    batch_size, capacity = policy.learn.get("batch_size"), buffer.get("replay_buffer_size")
    # An episode buffer counts episodes, not transitions; on-policy entries use no replay buffer.
    if policy.get("on_policy") or buffer.get("type") == "episode" or None in (batch_size, capacity):
        return
    if batch_size > capacity:
        raise ConfigError(
            f"policy.learn.batch_size={batch_size} is larger than policy.other.replay_buffer."
            f"replay_buffer_size={capacity}: the buffer can never hold one batch, so the learner would "
            f"never train. Set replay_buffer_size >= {batch_size} or batch_size <= {capacity}."
        )


# Longest folder name of an exp_name: the file system's 255 less a renewed run's '_yymmdd_HHMMSS_NNN'.
_MAX_NAME = 230


def _check_exp_name(exp_name: str) -> None:
    """A folder name the run can create: found out at compile time, not after training."""
    if not exp_name.strip():
        raise ConfigError(
            "Config key 'exp_name' is empty: name the run's output folder, e.g. 'cartpole_dqn'."
        )
    longest = max(os.path.normpath(exp_name).split(os.sep), key=len)
    size = len(longest.encode())
    if size > _MAX_NAME:
        raise ConfigError(
            f"Config key 'exp_name' has a folder name of {size} bytes ('{longest[:40]}...'); file systems "
            f"allow 255 and a renewed run adds a time stamp: keep each name to {_MAX_NAME} bytes."
        )


def _check_consistency(merged: EasyDict) -> None:
    """Settings that each pass the key check but cannot work together."""
    _check_exp_name(merged.exp_name)
    _check_sizes(merged)
    _check_n_sample(merged)
    ckpt = merged.checkpoint
    if ckpt.freq < 0 or ckpt.keep < 1:
        raise ConfigError(
            f"checkpoint.freq must be >= 0 learner iterations (0: checkpoints only at the end and on "
            f"Ctrl-C/SIGTERM) and checkpoint.keep >= 1; got freq={ckpt.freq}, keep={ckpt.keep}."
        )


def check_priority_buffer(cfg: Mapping) -> None:
    """A run that builds its replay buffer from ``policy.other.replay_buffer`` (the serial and Ray
    entries) refuses ``policy.priority=True`` with a buffer that does not prioritize. Not part of
    ``compile_config``: a framework script (DI-engine's ``dqn_per.py``) builds its own buffer and
    leaves that section as it is."""
    policy, buffer = cfg["policy"], cfg["policy"]["other"]["replay_buffer"]
    if policy.get("priority") and not _buffer_prioritizes(buffer):
        raise ConfigError(
            f"policy.priority=True needs a prioritized replay buffer, but policy.other.replay_buffer is "
            f"'{buffer.type}'{' with priority=False' if buffer.type == 'deque' else ''}: priorities would "
            "be computed and then ignored. Use replay_buffer type 'advanced' (create_config "
            "replay_buffer=dict(type='advanced')), or 'deque' with priority=True, or set "
            "policy.priority=False."
        )


def _check_n_sample(merged: EasyDict) -> None:
    """A collector that collects transitions (not episodes) needs how many per call: DI-engine's
    PPO, IMPALA and others have no default, and a run without one fails at its first collect. An
    offline config (``policy.collect.data_path`` or ``learn.train_epoch`` set) builds no collector."""
    collector = merged.policy.collect.collector
    if "n_sample" not in collector or collector.n_sample or (merged.get("ray") or {}).get("n_sample"):
        return
    if merged.policy.collect.get("data_path") or merged.policy.learn.get("train_epoch"):
        return  # an offline config (a dataset, passes over it): it trains on a file, collects nothing
    raise ConfigError(
        f"Config key 'policy.collect.n_sample' is not set: the '{collector.type}' collector needs the "
        f"transitions to collect per call, and policy '{merged.policy.type}' has no default. Set it (e.g. "
        f"policy.collect.n_sample={16 * merged.env.get('collector_env_num', 8)}: "
        "16 steps of each collector env), or ray.n_sample on Ray."
    )


def _buffer_prioritizes(buffer_cfg: Mapping) -> bool:
    if buffer_cfg.get("type") == "deque":
        return bool(buffer_cfg.get("priority"))
    return "alpha" in buffer_cfg  # the prioritized family carries the priority exponent


def read_config(path: str) -> Any:
    """A config from a file: a Python config file (``*.py``, DI-engine's form) gives its
    ``(main_config, create_config)``; a JSON file written by ``save_config`` gives the config, read
    as data (``config_as_data``: it imports no module and picks no cluster)."""
    if not os.path.isfile(path):
        raise ConfigError(f"Config file '{path}' does not exist.")
    if path.endswith(".py"):
        return read_python_config(path)
    with open(path) as f:
        try:
            loaded = json.load(f)
        except json.JSONDecodeError as e:
            raise ConfigError(
                f"Config file '{path}' is not valid JSON ({e}); pass a .py or .json file."
            ) from e
    if not isinstance(loaded, dict):
        raise ConfigError(
            f"Config file '{path}' holds a JSON {type(loaded).__name__}, not a config (an object)."
        )
    return config_as_data(loaded, path)


def read_python_config(path: str) -> tuple[EasyDict, EasyDict]:
    """``(main_config, create_config)`` of a DI-engine style Python config file (its code runs: the
    file is the user's own config, like any script they run)."""
    spec = importlib.util.spec_from_file_location("_ding_ray_user_config", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, "main_config"):
        raise ConfigError(
            f"Config file '{path}' defines no 'main_config'; a DI-engine config file sets main_config "
            "(and create_config) at the top level."
        )
    return EasyDict(module.main_config), EasyDict(getattr(module, "create_config", {}) or {})


def split_input_cfg(input_cfg: Any) -> tuple[EasyDict, EasyDict]:
    """DI-engine's ``input_cfg`` of the entry functions: a config file path, a
    ``(main_config, create_config)`` pair, or a main config alone."""
    if isinstance(input_cfg, (str, os.PathLike)):
        return (
            read_config(os.fspath(input_cfg))
            if str(input_cfg).endswith(".py")
            else (read_config(os.fspath(input_cfg)), EasyDict())
        )
    if isinstance(input_cfg, (tuple, list)):
        if len(input_cfg) != 2:
            raise ConfigError(f"input_cfg must be (main_config, create_config), got {len(input_cfg)} items.")
        main, create = input_cfg
        return EasyDict(copy.deepcopy(dict(main))), EasyDict(copy.deepcopy(dict(create or {})))
    if isinstance(input_cfg, Mapping):
        return EasyDict(copy.deepcopy(dict(input_cfg))), EasyDict()
    raise ConfigError(
        "input_cfg must be a config file path or (main_config, create_config), "
        f"got {type(input_cfg).__name__}."
    )
