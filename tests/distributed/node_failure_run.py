"""Run by test_node_failure.py in a fresh process: the Ape-X pipeline on a ``ray.cluster_utils.Cluster``
of this machine, with the worker node that hosts a collector (``collector``) or the buffer actor
(``buffer``) removed mid-training; ``none-collector`` / ``none-buffer``: the same cluster and config,
undisturbed (the wall time to compare with). Prints one JSON line.

The worker node offers no CPU to Ray, only a custom resource, so exactly the actors that ask for
it land there (a collector, or the buffer) and the learner and evaluator stay on the head:

- ``collector``: collectors ask for ``collector_slot`` (and no CPU); the head has 2 slots, the
  worker 1, and ``SPREAD`` puts one of the two collectors on the worker. The head's spare slot is
  where Ray restarts the collector that died with the worker (a cluster with spare capacity).
- ``buffer``: the buffer asks for ``buffer_node``, which only the worker has. Once it is removed a
  replacement node with ``buffer_node`` joins (what an autoscaler does for a pending actor), and
  Ray restarts the buffer there; it reloads the latest run checkpoint (the storage is this
  machine's disk, which every node of this cluster shares).

The removal happens in a stage of the driver's Task (the ``Cluster`` object lives in this process),
once the learner passed ``remove_at`` iterations and a run checkpoint is committed.
"""

from __future__ import annotations

import json
import sys
import time

import ray
from ray.cluster_utils import Cluster

from ding_ray.distributed import RayComponents, async_pipeline, make_plan
from ding_ray.entry import compile_ray_config
from ding_ray.framework import Task
from tests.distributed.configs import small_config
from tests.distributed.conftest import free_port

MAX_TRAIN_ITER = 1200
REMOVE_AT = 300  # learner iterations before the worker node goes (checkpoint.freq is 100)

LAYOUTS = {  # victim -> (head resources, worker resources, ray config overrides)
    "collector": (
        {"collector_slot": 2},
        {"collector_slot": 1},
        dict(collector_num_cpus=0, collector_resources={"collector_slot": 1}, collector_scheduling="SPREAD"),
    ),
    "buffer": (
        {},
        {"buffer_node": 1},
        dict(buffer_num_cpus=0, buffer_resources={"buffer_node": 1}, collector_scheduling="DEFAULT"),
    ),
}


def _node_of(handle) -> str:
    # retried while Ray restarts the actor: a restarting actor answers once it is back
    call = handle.__ray_call__.options(max_task_retries=-1)
    return ray.get(call.remote(lambda _: ray.get_runtime_context().get_node_id()), timeout=60)


def main(exp_name: str, mode: str) -> None:
    victim = mode.removeprefix("none-")
    disturb = victim == mode
    head_res, worker_res, ray_over = LAYOUTS[victim]
    start = time.perf_counter()
    head = {
        "num_cpus": 2,
        "resources": head_res,
        "include_dashboard": False,
        "dashboard_agent_listen_port": free_port(),
    }
    cluster = Cluster(initialize_head=True, head_node_args=head)
    worker = cluster.add_node(num_cpus=0, resources=worker_res)
    ray.init(address=cluster.address)
    out: dict = {"worker_node": worker.node_id, "head_node": cluster.head_node.node_id}
    try:
        cfg = compile_ray_config(small_config(exp_name, **ray_over), seed=0)
        cfg.checkpoint.freq = 100
        cfg.checkpoint.keep = 100  # every checkpoint stays, so the test can read the one restored from

        def remove_node(ctx) -> None:
            """Remove the worker node once, after a checkpoint; for ``buffer``, add a replacement."""
            if "removed_at" in out or ctx.train_iter < REMOVE_AT or rc.checkpointer.last is None:
                return
            out.update(removed_at=ctx.train_iter, env_step_at_removal=ctx.env_step)
            out["checkpoint_before"] = rc.checkpointer.last.folder
            t0 = time.perf_counter()
            cluster.remove_node(worker)
            out["remove_s"] = round(time.perf_counter() - t0, 2)
            if victim == "buffer":
                out["replacement_node"] = cluster.add_node(num_cpus=0, resources=worker_res).node_id
            out["removal_blocked_s"] = round(time.perf_counter() - t0, 2)

        with RayComponents(cfg, make_plan(cfg)) as rc, Task(rc.context()) as task:
            rc.actors.start_collectors()  # the pipeline would after the learner's first weights
            out["collector_nodes"] = [_node_of(c) for c in rc.actors.collectors]
            out["buffer_node"] = _node_of(rc.actors.buffer)
            out["learner_node"] = _node_of(rc.actors.learner)
            async_pipeline(task, cfg, rc, max_train_iter=MAX_TRAIN_ITER)
            if disturb:
                task.use(remove_node)
            t_run = time.perf_counter()
            task.run()
            out["run_s"] = round(time.perf_counter() - t_run, 2)
            # where the actors are now: the collector restarted on the head, the buffer on the new node
            out["collector_nodes_after"] = [_node_of(c) for c in rc.actors.collectors]
            out["buffer_node_after"] = _node_of(rc.actors.buffer)
            out["buffer_instance"] = ray.get(rc.actors.buffer.instance.remote(), timeout=60)
        out["result"] = rc.result
    finally:
        ray.shutdown()
        cluster.shutdown()
    out["total_s"] = round(time.perf_counter() - start, 2)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
