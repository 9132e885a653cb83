"""Run by test_node_failure.py in a fresh process: the Ape-X pipeline on a ``ray.cluster_utils.Cluster``
of this machine, with the worker node that hosts a collector (``collector``) or the buffer actor
(``buffer``) removed mid-training; ``none-collector`` / ``none-buffer``: the same cluster and config,
undisturbed (the wall time to compare with). Prints one JSON line.

``python -m tests.distributed.node_failure_run ROOT MODE/HOW [MODE/HOW ...]`` (with a fresh
``RAY_TMPDIR``): the runs one after the other on one cluster (its head started once), each in
``ROOT/MODE_HOW`` with a worker node of its own; one JSON line maps each ``MODE/HOW`` to what its
run saw. ``drain``: the node's processes get SIGTERM and its raylet says goodbye to the GCS (a node
drained or preempted with notice); ``crash``: SIGKILL, the GCS finds out from its failed health
checks (a node that lost power or its network).

The worker node offers no CPU to Ray, only a custom resource, so exactly the actors that ask for
it land there (a collector, or the buffer) and the learner and evaluator stay on the head:

- ``collector``: collectors ask for ``collector_slot`` (and no CPU); the head has 2 slots, the
  worker 1, and ``SPREAD`` puts one of the two collectors on the worker. The head's spare slot is
  where Ray restarts the collector that died with the worker (a cluster with spare capacity).
- ``buffer``: the buffer asks for ``buffer_node``, which only the worker has. Once it is removed a
  replacement node with ``buffer_node`` joins (what an autoscaler does for a pending actor), and
  Ray restarts the buffer there; it reloads the latest run checkpoint (the storage is this
  machine's disk, which every node of this cluster shares).
- ``stranded``: both collectors on the worker (only it has ``stranded_slot``), nowhere to go once
  it is removed: the run must end with a ``ClusterError`` after ``ray.actor_start_timeout_s``
  (here 20 s) instead of waiting forever.

The removal happens in a stage of the driver's Task (the ``Cluster`` object lives in this process),
once the learner passed ``remove_at`` iterations and a run checkpoint is committed.
"""

from __future__ import annotations

import json
import os
import sys
import time

import ray
from ray.cluster_utils import Cluster

from ding_ray.distributed import RayRun, make_plan
from ding_ray.entry import compile_ray_config
from ding_ray.framework import pipelines
from tests.distributed.configs import small_config
from tests.distributed.conftest import free_port

# learner iterations of the run at most: after a crash the GCS needs a few seconds more to find out
BUDGET = {"drain": 2400, "crash": 2400}
REMOVE_AT = 150  # learner iterations before the worker node goes (checkpoint.freq is 100)
AFTER_BACK = 300  # a disturbed run ends this many learner iterations after the removed actor is back
STRANDED_TIMEOUT_S = 20.0  # ray.actor_start_timeout_s of the stranded run

# the head's resources, for every run: the collector run's two slots (the runs that put their
# collectors elsewhere ask for CPU or for stranded_slot)
HEAD_RESOURCES = {"collector_slot": 2}
LAYOUTS = {  # victim -> (worker resources, ray config overrides)
    "collector": (
        {"collector_slot": 1},
        dict(collector_num_cpus=0, collector_resources={"collector_slot": 1}, collector_scheduling="SPREAD"),
    ),
    "buffer": (
        {"buffer_node": 1},
        dict(buffer_num_cpus=0, buffer_resources={"buffer_node": 1}, collector_scheduling="DEFAULT"),
    ),
    "learner": (
        {"learner_node": 1},
        dict(learner_num_cpus=0, learner_resources={"learner_node": 1}, collector_scheduling="DEFAULT"),
    ),
    "stranded": (
        {"stranded_slot": 2},
        dict(
            collector_num_cpus=0,
            collector_resources={"stranded_slot": 1},
            actor_start_timeout_s=STRANDED_TIMEOUT_S,
        ),
    ),
}


def _node_of(handle) -> str:
    # retried while Ray restarts the actor: a restarting actor answers once it is back
    call = handle.__ray_call__.options(max_task_retries=-1)
    return ray.get(call.remote(lambda _: ray.get_runtime_context().get_node_id()), timeout=60)


def main(root: str, *specs: str) -> None:
    start = time.perf_counter()
    head = {
        "num_cpus": 2,
        "resources": HEAD_RESOURCES,
        "include_dashboard": False,
        "dashboard_agent_listen_port": free_port(),
        # a node that crashed (no goodbye to the GCS) is declared dead after 3 failed health checks
        # 0.5 s apart (Ray's default: 5, 3 s apart); a check fails at once when the node's raylet is
        # gone, but only after health_check_timeout_ms (10 s) when it is alive but busy
        "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 3},
    }
    cluster = Cluster(initialize_head=True, head_node_args=head)
    ray.init(address=cluster.address)
    outs = {}
    try:
        for spec in specs:
            mode, how = spec.split("/")
            outs[spec] = run(cluster, os.path.join(root, f"{mode}_{how}"), mode, how)
    finally:
        ray.shutdown()
        cluster.shutdown()
    outs["total_s"] = round(time.perf_counter() - start, 2)
    print(json.dumps(outs))


def run(cluster: Cluster, exp_name: str, mode: str, how: str) -> dict:
    """One run on ``cluster`` with a worker node of its own, which is gone when it returns."""
    victim = mode.removeprefix("none-")
    disturb = victim == mode
    worker_res, ray_over = LAYOUTS[victim]
    start = time.perf_counter()
    worker = cluster.add_node(num_cpus=0, resources=worker_res)
    out: dict = {"worker_node": worker.node_id, "head_node": cluster.head_node.node_id}
    try:
        cfg = compile_ray_config(small_config(exp_name, num_collectors=2, **ray_over), seed=0)
        cfg.checkpoint.freq = 100
        cfg.checkpoint.keep = 100  # every checkpoint stays, so the test can read the one restored from

        def remove_node(ctx) -> None:
            """Remove the worker node once, after a checkpoint; for ``buffer`` and ``learner``, add a
            replacement."""
            if "removed_at" in out or ctx.train_iter < REMOVE_AT or rc.checkpointer.last is None:
                return
            out.update(removed_at=ctx.train_iter, env_step_at_removal=ctx.env_step)
            out["checkpoint_before"] = rc.checkpointer.last.folder
            t0 = time.perf_counter()
            out["removed_s"] = round(t0 - t_run, 2)
            cluster.remove_node(worker, allow_graceful=how == "drain")
            out["remove_s"] = round(time.perf_counter() - t0, 2)
            if victim in ("buffer", "learner"):
                out["replacement_node"] = cluster.add_node(num_cpus=0, resources=worker_res).node_id
            out["removal_blocked_s"] = round(time.perf_counter() - t0, 2)

        # (seconds into the run, train_iter, env_step, collector restarts, buffer/learner recoveries)
        timeline: list = []

        def record(ctx) -> None:
            now = round(time.perf_counter() - t_run, 2)
            restarts, recoveries = rc.collector.pool.restarts, len(rc.supervisor.events)
            if "removed_s" in out and "back_s" not in out and restarts + recoveries > 0:
                out["back_s"] = round(now - out["removed_s"], 2)  # seconds the actor was away
                out["back_at"] = ctx.train_iter
            if "back_at" in out and ctx.train_iter >= out["back_at"] + AFTER_BACK:
                task.finish = True  # it went on with the actor back: the rest of the budget adds nothing
            if not timeline or now - timeline[-1][0] >= 0.5:
                timeline.append((now, ctx.train_iter, ctx.env_step, restarts, recoveries))

        rc = RayRun(cfg, make_plan(cfg))
        t_run = time.perf_counter()  # the start of task.run(), below
        try:
            with rc, rc.task() as task:
                rc.actors.start_collectors()  # the pipeline would after the learner's first weights
                out["collector_nodes"] = [_node_of(c) for c in rc.actors.collectors]
                out["buffer_node"] = _node_of(rc.actors.buffer)
                out["learner_node"] = _node_of(rc.actors.learner)
                pipelines.off_policy(task, cfg, rc, max_train_iter=BUDGET[how])
                if disturb:
                    task.use(remove_node)
                task.use(record)
                t_run = time.perf_counter()
                task.run()
                out["run_s"] = round(time.perf_counter() - t_run, 2)
                # where they are now: the collector restarted on the head, the buffer on the new node
                out["collector_nodes_after"] = [_node_of(c) for c in rc.actors.collectors]
                out["buffer_node_after"] = _node_of(rc.actors.buffer)
                out["learner_node_after"] = _node_of(rc.actors.learner)
                out["buffer_instance"] = ray.get(rc.actors.buffer.instance.remote(), timeout=60)
        except Exception as err:  # noqa: BLE001 - reported for the test to judge
            out["error"] = f"{type(err).__name__}: {err}"
            out["error_after_removal_s"] = round(time.perf_counter() - t_run - out.get("removed_s", 0), 2)
        out["result"] = rc.result
        out["timeline"] = timeline
    finally:
        for node in list(cluster.worker_nodes):  # the next run starts with the head alone
            cluster.remove_node(node)
    out["total_s"] = round(time.perf_counter() - start, 2)
    return out


if __name__ == "__main__":
    main(*sys.argv[1:])
