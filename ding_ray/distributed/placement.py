"""Where a run's actors go, reasoned about per node: Ray places an actor on one node, so totals
summed over the cluster say nothing about whether it fits.

- ``check_resources`` (``check_cluster`` against the connected Ray): before any actor starts, every
  actor is packed onto the nodes' totals, the learner, buffer and evaluator first; a resource no node
  has, an actor no single node can hold, or a cluster too small for all of them fails at once with
  the numbers and what to do.
- ``reserve_slots``: a placement group of one bundle for each of the learner, the buffer and the
  evaluator, ready before any actor starts. A slot is theirs alone: a collector never takes it, and
  a restart after the process died lands in it again. When its node is lost, Ray places the bundle
  on another node with room.
- ``free_by_node``: what each live node has free, from Ray's public state (its total less the
  placement groups' bundles) and what the run's own actors outside placement groups hold there.
- ``plan_room`` and ``count_fitting``: the decisions ``CollectorPool`` takes after a node is lost:
  which collectors to stop so that the slots of the learner, buffer and evaluator find room again
  (they come first, and the run goes on with the collectors that fit), and how many stopped
  collectors fit once room is back.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import ray
from easydict import EasyDict

from ding_ray.distributed.config import learner_name
from ding_ray.errors import ClusterError

logger = logging.getLogger(__name__)

Resources = Mapping[str, float]
EPS = 1e-9
# the actors that get a slot of their own and come back before any collector
CORE_KINDS = ("learner", "buffer", "evaluator")
# the ray.* settings behind each actor's demand, named by the messages
SETTINGS = {
    "learner": "ray.learner_num_cpus / learner_num_gpus / learner_resources",
    "buffer": "ray.buffer_num_cpus / buffer_resources",
    "evaluator": "ray.evaluator_num_cpus",
    "collector": "ray.collector_num_cpus / collector_resources",
}


def actor_demands(ray_cfg: EasyDict) -> list[tuple[str, dict[str, float]]]:
    """``(actor name, resources)`` of every actor the pipeline creates, the core ones first."""
    learner = {
        "CPU": ray_cfg.learner_num_cpus,
        "GPU": ray_cfg.learner_num_gpus,
        **ray_cfg.get("learner_resources", {}),
    }
    demands = [(learner_name(rank), learner) for rank in range(ray_cfg.get("num_learners", 1))]
    demands += [
        ("buffer", {"CPU": ray_cfg.buffer_num_cpus, **ray_cfg.buffer_resources}),
        ("evaluator", {"CPU": ray_cfg.evaluator_num_cpus}),
    ]
    for i in range(ray_cfg.num_collectors):
        demands.append((f"collector-{i}", {"CPU": ray_cfg.collector_num_cpus, **ray_cfg.collector_resources}))
    return [(name, {k: float(v) for k, v in res.items() if v}) for name, res in demands]


def kind_of(name: str) -> str:
    """'collector-3' -> 'collector', 'learner-1' -> 'learner'."""
    return name.split("-")[0]


# ----- arithmetic on resource dicts ------------------------------------------------------------------
def fits(demand: Resources, free: Resources) -> bool:
    return all(float(free.get(key, 0.0)) >= value - EPS for key, value in demand.items())


def minus(free: Resources, demand: Resources) -> dict[str, float]:
    return {**free, **{key: float(free.get(key, 0.0)) - value for key, value in demand.items()}}


def plus(free: Resources, demand: Resources) -> dict[str, float]:
    return {**free, **{key: float(free.get(key, 0.0)) + value for key, value in demand.items()}}


def _size(demand: Resources) -> tuple:
    """Sort key, largest first: GPUs, then custom resources, then CPUs."""
    custom = sum(v for k, v in demand.items() if k not in ("CPU", "GPU"))
    return (-demand.get("GPU", 0.0), -custom, -demand.get("CPU", 0.0))


def pack(
    demands: Sequence[tuple[str, Resources]], nodes: Mapping[str, Resources]
) -> tuple[dict[str, str], dict[str, dict[str, float]]]:
    """First-fit of ``demands`` (in their order) onto ``nodes`` (``{node: resources}``):
    ``({actor: node}, what each node has left)``; actors that fit nowhere are left out."""
    left = {node: dict(res) for node, res in nodes.items()}
    placed = {}
    for name, demand in demands:
        node = next((n for n, free in left.items() if fits(demand, free)), None)
        if node is not None:
            placed[name], left[node] = node, minus(left[node], demand)
    return placed, left


# ----- the start-up check ------------------------------------------------------------------------------
def check_resources(demands: Sequence[tuple[str, Resources]], nodes: Sequence[Resources]) -> None:
    """Raise ``ClusterError`` unless the ``nodes`` (each one's total resources) can hold every actor
    of ``demands`` at once: the message names a resource no node has, an actor no single node can
    hold, or how many collectors fit once the learner, buffer and evaluator are placed."""
    by_node = {str(i): dict(res) for i, res in enumerate(nodes)}
    have = sorted({key for res in nodes for key, value in res.items() if value > 0 and _shown(key)})
    problems = []
    for kind in dict.fromkeys(kind_of(name) for name, _ in demands):
        demand = next(res for name, res in demands if kind_of(name) == kind)
        missing = [key for key in demand if not any(float(res.get(key, 0.0)) > 0 for res in nodes)]
        if missing:
            problems.append(
                f"the {kind} asks for {', '.join(missing)}, which no node of the cluster has (the nodes have "
                f"{', '.join(have) or 'nothing'}): start a node with it "
                f"(`ray start --resources='{{\"{missing[0]}\": 1}}'`) or change {SETTINGS[kind]}"
            )
        elif not any(fits(demand, res) for res in nodes):
            best = {key: max(float(res.get(key, 0.0)) for res in nodes) for key in demand}
            problems.append(
                f"the {kind} needs {_text(demand)} on one node, but no single node has that (the most any "
                f"node has: {_text(best)}): lower {SETTINGS[kind]} or add a node that large"
            )
    if not problems:
        core = [(name, res) for name, res in demands if kind_of(name) in CORE_KINDS]
        collectors = [(name, res) for name, res in demands if kind_of(name) == "collector"]
        placed, _ = pack(sorted(core, key=lambda d: _size(d[1])) + collectors, by_node)
        stranded = [name for name, _ in core if name not in placed]
        if stranded:
            problems.append(
                f"no node has room left for {', '.join(stranded)} once the other core actors are placed "
                f"(nodes: {'; '.join(_text(res) for res in nodes)})"
            )
        elif len(collectors) > sum(name in placed for name, _ in collectors):
            fitting = sum(name in placed for name, _ in collectors)
            problems.append(
                f"the nodes hold the learner, buffer and evaluator and {fitting} of the {len(collectors)} "
                f"collectors ({_text(collectors[0][1])} each; nodes: "
                f"{'; '.join(_text(res) for res in nodes)}): lower ray.num_collectors to {fitting} or "
                "ray.collector_num_cpus"
            )
    if problems:
        raise ClusterError(
            "The cluster cannot hold this pipeline's actors: "
            + "; ".join(problems)
            + ". (With an autoscaler that adds nodes on demand, set ray.check_resources=False.)"
        )


def check_local_cpus(ray_cfg: EasyDict, num_cpus: float) -> None:
    """``check_resources`` on CPUs alone against the one node of a Ray about to start on this
    machine with ``num_cpus``: shares that cannot fit fail before Ray starts. GPUs and custom
    resources are Ray's to detect; the check against the started Ray covers them."""
    demands = [(name, {"CPU": res["CPU"]} if "CPU" in res else {}) for name, res in actor_demands(ray_cfg)]
    check_resources(demands, [{"CPU": float(num_cpus)}])


def _shown(key: str) -> bool:
    return key not in ("memory", "object_store_memory") and not key.startswith("node:")


def _text(resources: Resources) -> str:
    return ", ".join(f"{value:g} {key}" for key, value in resources.items() if _shown(key)) or "nothing"


def live_nodes() -> list[dict]:
    """The alive nodes of the connected Ray, as ``ray.nodes()`` lists them."""
    return [node for node in ray.nodes() if node.get("Alive")]


def check_cluster(ray_cfg: EasyDict) -> None:
    """``check_resources`` against the Ray cluster this process is connected to."""
    check_resources(actor_demands(ray_cfg), [node["Resources"] for node in live_nodes()])


# ----- slots -------------------------------------------------------------------------------------------
def reserve_slots(ray_cfg: EasyDict, timeout_s: float, buffer: bool = True) -> dict[str, Any]:
    """A placement group (one bundle, the actor's demand) for each of the learner, the buffer (with
    ``buffer``: a run that has one) and the evaluator, ready: ``{name: placement group}``. None for a
    learner group (its members cannot restart), for an actor that asks for nothing, or inside a
    placement group already (a Tune trial, whose own group holds the run). ``ClusterError`` when they
    are not placed within ``timeout_s``."""
    if inside_placement_group():
        return {}
    kinds = {"learner", "evaluator"} | ({"buffer"} if buffer else set())
    if ray_cfg.get("num_learners", 1) > 1:
        kinds.discard("learner")
    wanted = {name: res for name, res in actor_demands(ray_cfg) if kind_of(name) in kinds and res}
    slots = {name: ray.util.placement_group([res], name="") for name, res in wanted.items()}
    ready, _ = ray.wait([pg.ready() for pg in slots.values()], num_returns=len(slots), timeout=timeout_s)
    if len(ready) < len(slots):
        waiting = [name for name, pg in slots.items() if not placed(pg)]
        release_slots(slots)
        needs = "; ".join(f"{n} {_text(wanted[n])} ({SETTINGS[kind_of(n)]})" for n in waiting)
        free = "; ".join(_text(res) for res in (free_by_node() or {}).values()) or "unknown"
        raise ClusterError(
            f"No node had room for the slot of {', '.join(waiting)} within {timeout_s:g} s "
            f"(ray.actor_start_timeout_s): {needs}; free per node now: {free}. Lower these settings, add a "
            "node that has them, wait for the runs that hold the room, or raise ray.actor_start_timeout_s "
            "while an autoscaler adds a node."
        )
    return slots


def slot_options(slots: Mapping[str, Any], name: str) -> dict:
    """The actor options that put actor ``name`` into its slot (none when it has no slot)."""
    if name not in slots:
        return {}
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    return {
        "scheduling_strategy": PlacementGroupSchedulingStrategy(slots[name], placement_group_bundle_index=0)
    }


def placed(pg: Any) -> bool:
    """Whether the placement group's bundle sits on a live node (not waiting to be placed again)."""
    return ray.util.placement_group_table(pg).get("state") == "CREATED"


def release_slots(slots: Mapping[str, Any]) -> None:
    for pg in slots.values():
        try:
            ray.util.remove_placement_group(pg)
        except Exception:  # noqa: BLE001 - already gone with its job
            pass


def inside_placement_group() -> bool:
    """Whether the actors this process creates go into a placement group already (a Tune trial's,
    whose group holds the whole run)."""
    return ray.util.get_current_placement_group() is not None


def free_resources(
    totals: Mapping[str, Resources],
    bundles: Iterable[tuple[str, Resources]],
    held: Iterable[tuple[str, Resources]],
) -> dict[str, dict[str, float]]:
    """What each node of ``totals`` (``{node: its total resources}``) has free: its total less the
    placement-group ``bundles`` placed on it and what the actors outside placement groups hold
    there (``held``), each ``(node, resources)``. A node not in ``totals`` (lost) is left out."""
    free = {node: {k: float(v) for k, v in res.items() if _shown(k)} for node, res in totals.items()}
    for node, res in [*bundles, *held]:
        if node in free:
            free[node] = minus(free[node], {k: float(v) for k, v in res.items() if _shown(k)})
    return free


def placed_bundles() -> list[tuple[str, dict[str, float]]]:
    """``(node, resources)`` of every placement-group bundle placed on a node, of any job."""
    bundles = []
    for group in ray.util.placement_group_table().values():
        if group.get("state") == "REMOVED":  # the table keeps removed groups, with their last nodes
            continue
        for index, node in (group.get("bundles_to_node_id") or {}).items():
            bundles.append((node, group["bundles"][index]))
    return bundles


def free_by_node(held: Iterable[tuple[str, Resources]] = ()) -> dict[str, dict[str, float]] | None:
    """The resources free now on each live node of the connected Ray, from Ray's public state: the
    node's total (``ray.nodes()``) less the bundles placed there of every placement group
    (``ray.util.placement_group_table()``: this run's slots, other runs' slots, Tune trials) and
    ``held``: ``(node, resources)`` of this run's actors outside placement groups (the collectors,
    on the node each last said it runs on). None where Ray does not say.

    It does not see the tasks and actors of other jobs outside placement groups, nor an actor of
    this run that has not answered yet. On a cluster shared that way the room is overstated: a
    collector started again waits in Ray's queue until there is room, and collectors that should
    have made room for a core actor are not stopped, so that actor is not back within
    ``ray.actor_start_timeout_s`` and the run ends saying so. That is acceptable because a run is
    meant to own its cluster (a ``cluster.yaml`` per run) or to share it through placement groups
    (Tune trials, other runs' slots), which are counted; Ray's own count of what is free on each
    node is a DeveloperAPI that may change in any release."""
    try:
        totals = {node["NodeID"]: node["Resources"] for node in live_nodes()}
        bundles = placed_bundles()
    except Exception:  # noqa: BLE001 - the decisions that need it are skipped
        return None
    return free_resources(totals, bundles, held)


# ----- decisions after a node is lost --------------------------------------------------------------------
def plan_room(
    needs: Sequence[Resources],
    free: Mapping[str, Resources],
    movable: Mapping[str, Sequence[tuple[str, Resources]]],
) -> list[str] | None:
    """Which of the actors ``movable`` (``{node: [(name, demand)]}``, those that may be stopped) to
    stop so that every demand of ``needs`` fits a node, given what each node has ``free``: the
    fewest per need, on the node where that is fewest. ``[]``: they fit as things are; None: not
    even stopping all of them makes room."""
    free = {node: dict(res) for node, res in free.items()}
    movable = {node: list(actors) for node, actors in movable.items()}
    stopped: list[str] = []
    for need in sorted(needs, key=_size):
        best = None
        for node in sorted(set(free) | set(movable)):
            room, names = dict(free.get(node, {})), []
            for name, demand in sorted(movable.get(node, []), key=lambda m: _size(m[1])):
                if fits(need, room):
                    break
                if any(demand.get(key, 0.0) > 0 and room.get(key, 0.0) < need[key] - EPS for key in need):
                    room, names = plus(room, demand), names + [name]  # it holds something the need lacks
            if fits(need, room) and (best is None or len(names) < len(best[1])):
                best = (node, names, room)
        if best is None:
            return None
        node, names, room = best
        free[node] = minus(room, need)
        movable[node] = [m for m in movable.get(node, []) if m[0] not in names]
        stopped += names
    return stopped


def count_fitting(demand: Resources, free: Mapping[str, Resources], limit: int) -> int:
    """How many actors of ``demand`` (at most ``limit``) the nodes' ``free`` resources hold."""
    count = 0
    for res in free.values():
        room = dict(res)
        while count < limit and fits(demand, room):
            room, count = minus(room, demand), count + 1
    return count
