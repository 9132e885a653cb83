"""Why actors are not up yet: Ray has no room for them, or it placed them and their constructor
has not returned (a collector's env whose creation or first reset hangs). Every wait for actors to
start (or restart) says which case each one is in, and what to do.

Three sources tell the cases apart, the first that knows wins: Ray's state API (it needs the
dashboard, ``ray.include_dashboard=True`` or a cluster's head), which has every actor's state and,
for one Ray placed, the pid of the process running its constructor; the note an actor leaves on
its node when its constructor begins (``note_start``), read by a driver on the same node; and the
cluster's resources, which rule out a node for an actor that needs more than any node has.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import ray
from easydict import EasyDict

from ding_ray.distributed.placement import actor_demands

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
# the kinds whose constructors call note_start (through actors.enter_actor)
NOTED = ("learner", "evaluator", "collector")


def note_start() -> None:
    """Leave this actor's pid on its node, for ``start_state``: called first in the constructor
    of an actor, so that its driver, on the same node, sees that Ray placed it, and which process
    runs it. Nothing happens outside a named actor."""
    if not ray.is_initialized():  # a plain class built without Ray (a test)
        return
    name = ray.get_runtime_context().get_actor_name()
    if not name:
        return
    folder = _notes_folder()
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, name), "w") as f:
            f.write(str(os.getpid()))
    except OSError:  # the messages only lose detail
        pass


def start_state(actors: Actors, name: str) -> tuple[str, int]:
    """``(state, pid)`` of the actor ``name`` of ``actors`` that has not answered yet: ``PLACED``
    (a worker process runs its constructor), ``WAITING`` (no node with room for it yet), ``ALIVE``
    (constructed; its first call has not returned), ``DEAD`` or ``UNKNOWN``."""
    found = _state_api(actors.namespace, name)
    if found is not None:
        return found
    try:
        ray.get_actor(name, namespace=actors.namespace)
    except ValueError:  # Ray keeps the name of an actor until it is dead for good
        return DEAD, 0
    found = _noted_start(name)
    if found is not None:
        return found
    nodes = [node for node in ray.nodes() if node.get("Alive")]
    demand = dict(actor_demands(actors.cfg.ray)).get(name, {})
    if not any(_fits(demand, node.get("Resources", {})) for node in nodes):
        return WAITING, 0  # no node has what it needs, free or not
    here = ray.get_runtime_context().get_node_id()
    noted = os.path.isdir(_notes_folder())  # the actors of this driver note their starts
    if noted and _kind(name) in NOTED and [node["NodeID"] for node in nodes] == [here]:
        return WAITING, 0  # the only node is this one, and no process of it runs the constructor
    return UNKNOWN, 0


def _state_api(namespace: str, name: str) -> tuple[str, int] | None:
    """What Ray's state API says of the actor; None where it does not answer (no dashboard)."""
    try:
        from ray.util.state import list_actors

        rows = list_actors(
            address=ray.get_runtime_context().gcs_address,
            filters=[("name", "=", name), ("ray_namespace", "=", namespace)],
            timeout=5,
            raise_on_missing_output=False,
        )
    except Exception:  # noqa: BLE001 - no dashboard, or a Ray Client driver: other sources tell
        return None
    if not rows:
        return None
    row = next((r for r in rows if r.state != "DEAD"), rows[0])  # a later actor of that name
    pid = int(row.pid or 0)
    if row.state == "ALIVE":
        return ALIVE, pid
    if row.state == "DEAD":
        return DEAD, 0
    return (PLACED, pid) if pid else (WAITING, 0)


def _notes_folder() -> str:
    """Where the actors of this process's job (the driver's) note their starts on a node: in the
    Ray session's temporary folder, which every process of the session on that node shares."""
    context = ray.get_runtime_context()
    session = context.get_session_name()
    return os.path.join(context.get_temp_dir(), "ding_ray_starts", session, context.get_job_id())


def _noted_start(name: str) -> tuple[str, int] | None:
    """``(PLACED or ALIVE, pid)`` from the note the actor ``name`` left on this node; None without
    one, or where its process has ended (an earlier incarnation's, an earlier run's)."""
    try:
        with open(os.path.join(_notes_folder(), name)) as f:
            pid = int(f.read())
        with open(f"/proc/{pid}/cmdline", "rb") as f:  # Linux, as Ray's clusters are
            title = f.read().replace(b"\0", b" ").decode(errors="replace")
    except (OSError, ValueError):  # no note, or its process has ended
        return None
    if not title.startswith("ray::"):  # the pid is another process's by now
        return None
    # Ray titles a worker 'ray::<actor name>:<class>.__init__' while it runs the constructor
    if ".__init__" in title:
        return (PLACED, pid) if title.startswith(f"ray::{name}:") else None
    return ALIVE, pid


def _fits(demand: Mapping[str, float], resources: Mapping[str, float]) -> bool:
    return all(float(resources.get(key, 0.0)) >= value - 1e-9 for key, value in demand.items())


def why_not_started(actors: Actors, names: Iterable[str]) -> str:
    """Sentences on why the actors ``names`` of ``actors`` are not up, grouped by kind and state,
    each saying what to do."""
    groups: dict[tuple[str, str], list[str]] = {}
    for name in names:
        state, pid = start_state(actors, name)
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
        f"Not up, and whether Ray has placed it is not known here: {who}. Either no node has room ({needs}; "
        f"{room}) or its constructor has not returned ({_constructor(cfg, kind)}); the Ray dashboard "
        "(ray.include_dashboard=True) shows which, and the actor's log."
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
