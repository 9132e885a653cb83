"""Why actors are not up yet: Ray has no room for them, or it placed them and their constructor
has not returned (a collector's env whose creation or first reset hangs). Ray's actor table tells
the two apart: a placed actor has the address of the worker process running its constructor; one
waiting for resources has none (its pid may still be the dead incarnation's). Every wait for actors
to start (or restart) says which case each one is in, and what to do.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import ray
from easydict import EasyDict

if TYPE_CHECKING:
    from ding_ray.distributed.actors import Actors

PLACED, WAITING, ALIVE, DEAD, UNKNOWN = "placed", "waiting", "alive", "dead", "unknown"

# the ray.* settings that say what each kind of actor needs from a node
NEEDS = {
    "learner": ("learner_num_cpus", "learner_num_gpus", "learner_resources"),
    "buffer": ("buffer_num_cpus", "buffer_resources"),
    "evaluator": ("evaluator_num_cpus",),
    "collector": ("collector_num_cpus", "collector_resources"),
}


def actor_row(handle: Any) -> dict | None:
    """The actor's entry in Ray's actor table (state, pid, restarts); None if Ray does not say."""
    try:  # a developer API: the only one that answers without the dashboard
        from ray._private.state import actors

        return actors(actor_id=handle._actor_id.hex())
    except Exception:  # noqa: BLE001 - without it the messages only lose detail
        return None


def start_state(handle: Any) -> tuple[str, int]:
    """``(state, pid)`` of an actor that has not answered yet: ``PLACED`` (a worker process runs
    its constructor), ``WAITING`` (no node with room for it yet), ``ALIVE`` (constructed; its first
    call has not returned), ``DEAD`` or ``UNKNOWN``."""
    row = actor_row(handle)
    if row is None:
        return UNKNOWN, 0
    pid = int(row.get("Pid") or 0)
    if row.get("State") == "ALIVE":
        return ALIVE, pid
    if row.get("State") == "DEAD":
        return DEAD, 0
    return (PLACED, pid) if (row.get("Address") or {}).get("Port") else (WAITING, 0)


def why_not_started(actors: Actors, names: Iterable[str]) -> str:
    """Sentences on why the actors ``names`` of ``actors`` are not up, grouped by kind and state,
    each saying what to do."""
    handles = dict(actors.named())
    groups: dict[tuple[str, str], list[str]] = {}
    for name in names:
        state, pid = start_state(handles[name])
        groups.setdefault((_kind(name), state), []).append(f"{name} (pid {pid})" if pid else name)
    return " ".join(
        _explain(actors.cfg, kind, state, ", ".join(who)) for (kind, state), who in groups.items()
    )


def _kind(name: str) -> str:
    """'collector-3' -> 'collector', 'learner-1' -> 'learner'."""
    return name.split("-")[0]


def _explain(cfg: EasyDict, kind: str, state: str, who: str) -> str:
    if state == PLACED:
        return (
            f"Placed on a node and still in its constructor: {who}. {_constructor(cfg, kind)}. See where it "
            "waits with `py-spy dump --pid <pid>` on its node (its log is in the Ray dashboard), or raise "
            "ray.actor_start_timeout_s if it only starts slowly."
        )
    if state == ALIVE:
        hint = (
            "an env step that never returns holds it (env.manager.step_timeout bounds one)"
            if kind == "collector"
            else "see its log in the Ray dashboard"
        )
        return f"Constructed, but its first call has not returned: {who}; {hint}."
    if state == DEAD:
        return f"Dead, and Ray restarts it no more: {who}; see its log in the Ray dashboard."
    needs = ", ".join(f"ray.{key}={_value(cfg.ray.get(key))}" for key in NEEDS[kind])
    room = (
        f"free now: {resources_text(ray.available_resources())}; in the cluster: "
        f"{resources_text(ray.cluster_resources())}"
    )
    if state == WAITING:
        return (
            f"Waiting for a node with room: {who}, which needs {needs} ({room}). Lower these settings, add "
            "a node that has them, or raise ray.actor_start_timeout_s while an autoscaler adds one."
        )
    return (
        f"Not up, and Ray's actor table does not say why: {who}. Either no node has room ({needs}; {room}) "
        f"or its constructor has not returned ({_constructor(cfg, kind)}); see its log in the Ray dashboard."
    )


def _constructor(cfg: EasyDict, kind: str) -> str:
    """What the constructor of an actor of ``kind`` does that can take long, and what to check."""
    if kind in ("collector", "evaluator"):
        env = cfg.env.get("env_id") or cfg.env.get("type")
        num = cfg.env.get(f"{kind}_env_num")
        return (
            f"It creates its {num} envs (env '{env}') and resets each once: check that the env's "
            "creation and its reset() return"
        )
    if kind == "learner":
        return "It builds the policy and loads the run's latest checkpoint, if there is one"
    return "It loads the buffer of the run's latest checkpoint, if there is one"


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return str(dict(value))  # an EasyDict prints as a plain dict
    return f"{value:g}" if isinstance(value, float) else str(value)


def resources_text(resources: dict) -> str:
    """``'CPU 2, GPU 1, collector_node 1'``: CPUs, GPUs and custom resources, without memory and node ids."""
    keys = [k for k in ("CPU", "GPU") if k in resources] + sorted(
        k for k in resources if k not in ("CPU", "GPU", "memory", "object_store_memory") and "node:" not in k
    )
    return ", ".join(f"{k} {resources[k]:g}" for k in keys) or "none"
