"""The user's code in the actors: what the config's ``import_names`` name (and where its env,
policy and model types come from), imported by each actor before it builds anything, and what the
driver's script defines for the config, registered in each actor.

A user module that registers an env works in one process because the driver imports it; an actor
is another process, and may be on another node. Each actor imports the modules the driver found,
from where the driver found them when its own ``sys.path`` lacks them (a local Ray, or nodes that
share the file system: a module beside the driver's script just works); a module an actor cannot
import ends the run before any actor is created, with a ``ConfigError`` naming it and what to do.

No actor runs the driver's script (``__main__``), so what it registers travels instead: the
gymnasium registration of the config's env id when its entry point is the script's (or any object
rather than a ``'module:name'`` string), and the env, policy and model types the config names that
the script defines. Ray pickles the script's classes and functions by value, as RLlib's
``register_env`` relies on, so they need no module on the actors' nodes.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import sys
from typing import Any

import ray
from easydict import EasyDict
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ding_ray.distributed.errors import get
from ding_ray.errors import ConfigError

# Modules the actors import by themselves: ding_ray's own, DI-engine's (ding_ray stands in for them);
# and the driver's script, which is not theirs to import
_OWN_PACKAGES = ("ding_ray", "ding", "dizoo", "__main__")


def user_modules(cfg: EasyDict) -> dict[str, str | None]:
    """The user's modules a worker needs before it builds anything from ``cfg``, each with the
    ``sys.path`` folder the driver finds it in (None: the driver cannot find it either); installed
    packages are left out.

    They are every ``import_names`` entry of the config and the modules that define the env (its
    gymnasium id's entry point, its registered type) and the policy and model types it names: what
    the driver imported through a create_config's ``import_names`` is no longer in the compiled
    config, but the registries remember where it came from.
    """
    names: list[str | None] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            listed = node.get("import_names") or []
            names.extend([listed] if isinstance(listed, str) else listed)
            for value in node.values():
                walk(value)

    walk(cfg)
    entry = getattr(_gym_spec(cfg), "entry_point", None)
    names.append(entry.split(":")[0] if isinstance(entry, str) else getattr(entry, "__module__", None))
    names.extend(getattr(cls, "__module__", None) for _, _, cls in _named_types(cfg))
    found = {n: _path_entry(n) for n in dict.fromkeys(names) if n and n.split(".")[0] not in _OWN_PACKAGES}
    return {name: folder for name, folder in found.items() if not _installed(folder)}


def _gym_spec(cfg: EasyDict) -> Any:
    """The gymnasium registration of the config's env id, or None."""
    env_id = cfg.env.get("env_id")
    if not isinstance(env_id, str):
        return None
    import gymnasium

    return gymnasium.envs.registry.get(env_id)


def _registries() -> dict[str, Any]:
    from ding_ray.utils.registry import ENV_REGISTRY, MODEL_REGISTRY, POLICY_REGISTRY

    return {"env": ENV_REGISTRY, "policy": POLICY_REGISTRY, "model": MODEL_REGISTRY}


def _named_types(cfg: EasyDict) -> list[tuple[str, str, Any]]:
    """``(registry, type name, class)`` of the env, policy and model types ``cfg`` names."""
    registries = _registries()
    sections = {"env": cfg.env, "policy": cfg.policy, "model": cfg.policy.get("model")}
    named = []
    for kind, node in sections.items():
        name = (node or {}).get("type")
        if isinstance(name, str) and name in registries[kind]:
            named.append((kind, name, registries[kind].get(name)))
    return named


def _path_entry(module: str) -> str | None:
    """The folder on the driver's ``sys.path`` that ``module``'s top-level package is imported from."""
    try:
        spec = importlib.util.find_spec(module.split(".")[0])
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin in (None, "built-in", "frozen", "namespace"):  # a namespace package: its folders
        where = list(spec.submodule_search_locations or [])
        return os.path.dirname(os.path.abspath(where[0])) if where else None
    origin = os.path.abspath(spec.origin)  # <folder>/<module>.py or <folder>/<package>/__init__.py
    return os.path.dirname(os.path.dirname(origin) if spec.submodule_search_locations else origin)


def _installed(folder: str | None) -> bool:
    """Whether ``folder`` holds installed packages (which every node is expected to have)."""
    return folder is not None and os.path.basename(folder) in ("site-packages", "dist-packages")


def import_user_modules(modules: dict[str, str | None] | None, role: str) -> None:
    """Import ``modules`` (``user_modules``) in this process, so that the envs, policies and models
    they register exist here as in the driver; ``role`` names this process in errors.

    A module this process cannot find is looked for where the driver found it (that folder is
    appended to ``sys.path``): on a local Ray, or a cluster whose nodes share the file system, a
    module beside the driver's script works as it does in one process. A module still missing is
    a ``ConfigError`` that names it and what to do.
    """
    for name, folder in (modules or {}).items():
        if folder and importlib.util.find_spec(name.split(".")[0]) is None and os.path.isdir(folder):
            sys.path.append(folder)
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name is None or not (name == err.name or name.startswith(err.name + ".")):
                raise ConfigError(f"The {role} could not import '{name}': {err}") from err  # a dependency
            where = (
                f"the driver found it in {folder}, which this node lacks" if folder else "nor can the driver"
            )
            raise ConfigError(
                f"The {role} cannot import module '{name}' (config import_names, or where its env, policy "
                f"or model is registered): {where}. Install it as a package on every node, put its folder "
                "on PYTHONPATH where Ray starts, or ship it with ray.init(runtime_env={'working_dir': "
                "<folder>}) or runtime_env={'py_modules': [<module>]}."
            ) from None
        except Exception as err:  # noqa: BLE001 - the module's own error, named in one line
            raise ConfigError(f"The {role} could not import '{name}': {type(err).__name__}: {err}") from err


@dataclasses.dataclass(frozen=True)
class UserCode:
    """What an actor needs of the user's code before it builds anything from the config
    (``user_code``); ``load_user_code`` brings it into the actor's process."""

    modules: dict[str, str | None] = dataclasses.field(default_factory=dict)  # as ``user_modules``
    gym_specs: tuple[Any, ...] = ()  # gymnasium registrations made by the driver's script
    types: tuple[tuple[str, str, Any], ...] = ()  # (registry, type name, class) of the script's


def user_code(cfg: EasyDict) -> UserCode:
    """The user's code an actor needs for ``cfg``: the modules of ``user_modules``; and, from the
    driver's script, the gymnasium registration of ``cfg.env.env_id`` and the env, policy and model
    types ``cfg`` names (see the module docstring)."""
    spec = _gym_spec(cfg)
    entry = getattr(spec, "entry_point", None)
    if isinstance(entry, str):  # 'module:name': an actor imports the module, unless it is the script
        from gymnasium.envs.registration import load_env_creator

        script = entry.startswith("__main__:")
        spec = dataclasses.replace(spec, entry_point=load_env_creator(entry)) if script else None
    types = tuple(named for named in _named_types(cfg) if getattr(named[2], "__module__", None) == "__main__")
    return UserCode(user_modules(cfg), (spec,) if spec is not None else (), types)


def load_user_code(code: UserCode | None, role: str) -> None:
    """Import ``code``'s modules in this process (``import_user_modules``), then register what the
    driver's script registered: after this the config builds here as in the driver."""
    if code is None:
        return
    import_user_modules(code.modules, role)
    if code.gym_specs:
        import gymnasium

        for spec in code.gym_specs:
            gymnasium.envs.registry[spec.id] = spec
    registries = _registries()
    for kind, name, cls in code.types:
        registries[kind].register(name)(cls)  # the same class again (a reused process) is no change


def check_nodes_import_ding_ray(timeout_s: float) -> None:
    """Import ding_ray on every other node of the cluster before any actor is created: a node
    without it (a machine the cluster yaml's setup did not reach) is named at once, not found out
    by each actor placed there dying in turn."""
    here = ray.util.get_node_ip_address()
    nodes = [n for n in ray.nodes() if n["Alive"] and n["NodeManagerAddress"] != here]
    if not nodes:
        return

    def import_ding_ray() -> str | None:  # defined in here, so Ray sends it by value: no ding_ray needed
        try:
            importlib.import_module("ding_ray")
        except Exception as err:  # noqa: BLE001 - reported with the node's address
            return f"{type(err).__name__}: {err}"
        return None

    probe = ray.remote(num_cpus=0)(import_ding_ray)
    refs = {
        node["NodeManagerAddress"]: probe.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        ).remote()
        for node in nodes
    }
    ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout_s)
    failed = {ip: ray.get(ref) for ip, ref in refs.items() if ref in ready and ray.get(ref) is not None}
    if failed:
        listed = "; ".join(f"{ip}: {why}" for ip, why in sorted(failed.items()))
        raise ConfigError(
            f"Node(s) of this Ray cluster cannot import ding_ray ({listed}). Install it on every node "
            "(the cluster yaml's setup_commands: pip install -e ~/ding-ray, run by `ray up`), or submit "
            "the driver with `ray job submit --working-dir .`, which ships the working copy to every node."
        )


def check_user_code(code: UserCode, timeout_s: float) -> None:
    """Load ``code`` in a Ray worker before any actor is created: a module the actors cannot
    import ends the run at once with ``import_user_modules``'s error, not with dead actors. First
    every node must import ding_ray itself (``check_nodes_import_ding_ray``)."""
    check_nodes_import_ding_ray(timeout_s)
    if not (code.modules or code.gym_specs or code.types):
        return
    ref = ray.remote(num_cpus=0)(load_user_code).remote(code, "Ray actors")
    try:
        get(ref, timeout=timeout_s)  # a module that fails to import: the ConfigError saying which
    except ray.exceptions.GetTimeoutError:  # no worker started: the actors' start timeout says why
        ray.cancel(ref)
