"""Run by test_host_loss.py in a fresh process: Ape-X CartPole to its stop value (475) on a
``ray.cluster_utils.Cluster`` of a driver-only head and two workers of 1 CPU each, with the learner's
worker killed (``kill``: SIGKILL, found by failed health checks) once a run checkpoint is committed,
or undisturbed (``none``: the wall time to compare with); ``return``: killed, and a new worker of
1 CPU joins once the learner is back (the stopped collectors start again on it). Prints one JSON line.

``python -m tests.distributed.host_loss_run EXP_DIR kill|return|none`` (with a fresh ``RAY_TMPDIR``).

The shares: learner 0.4 CPU, buffer and evaluator 0.1 each, four collectors of 0.2 (1.4 of the 2
CPUs). Once the learner's worker is gone, the other one (1 CPU) holds the learner, buffer and
evaluator (0.6) and two collectors: the run must go on with those two.
"""

from __future__ import annotations

import json
import sys
import time

import ray
from ray.cluster_utils import Cluster

from ding_ray.configs.apex_dqn import create_config, main_config
from ding_ray.distributed import RayRun, make_plan
from ding_ray.entry import compile_ray_config
from ding_ray.framework import pipelines
from tests.distributed.conftest import free_port

SHARES = dict(
    learner_num_cpus=0.4,
    buffer_num_cpus=0.1,
    evaluator_num_cpus=0.1,
    num_collectors=4,
    collector_num_cpus=0.2,
)
KILL_AT = 600  # learner iterations before the learner's worker goes (checkpoint.freq is 500)
MAX_ENV_STEP = 300_000  # a cap: the run ends at the stop value long before


def _node_of(handle) -> str:
    call = handle.__ray_call__.options(max_task_retries=-1)  # answered once a restarting actor is back
    return ray.get(call.remote(lambda _: ray.get_runtime_context().get_node_id()), timeout=120)


def main(exp_name: str, mode: str) -> None:
    head = {
        "num_cpus": 0,  # the driver's node: no actor goes there
        "include_dashboard": False,
        "dashboard_agent_listen_port": free_port(),
        "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 3},
    }
    cluster = Cluster(initialize_head=True, head_node_args=head)
    workers = [cluster.add_node(num_cpus=1) for _ in range(2)]
    ray.init(address=cluster.address)
    out: dict = {"mode": mode}
    try:
        config = {**main_config, "exp_name": exp_name, "ray": {**main_config["ray"], **SHARES}}
        cfg = compile_ray_config((config, create_config), seed=0)
        cfg.ray.progress_bar = False
        cfg.checkpoint.freq = 500

        def kill_learner_host(ctx) -> None:
            if "killed_s" in out and "delivered_when_back" not in out and rc.supervisor.restarts("learner"):
                # from here on: calls that finished on the lost node before it went are behind
                out["delivered_when_back"] = [slot.delivered for slot in rc.collector.pool.slots]
            if (
                mode == "return"
                and "killed_s" in out
                and "added_s" not in out
                and rc.supervisor.restarts("learner")
            ):
                out["added_s"] = round(time.perf_counter() - t_run, 2)
                cluster.add_node(num_cpus=1)
            if (
                mode == "none"
                or "killed_s" in out
                or ctx.train_iter < KILL_AT
                or rc.checkpointer.last is None
            ):
                return
            victim = next(w for w in workers if w.node_id == out["learner_node"])
            out.update(killed_at=ctx.train_iter, killed_s=round(time.perf_counter() - t_run, 2))
            out["collectors_running_before"] = len(rc.collector.pool.running())
            cluster.remove_node(victim, allow_graceful=False)

        rc = RayRun(cfg, make_plan(cfg), max_env_step=MAX_ENV_STEP)
        t_run = time.perf_counter()
        try:
            with rc, rc.task() as task:
                out["learner_node"] = _node_of(rc.actors.learner)
                pipelines.off_policy(task, cfg, rc, max_env_step=MAX_ENV_STEP)
                task.use(kill_learner_host)
                t_run = time.perf_counter()
                task.run()
                out["run_s"] = round(time.perf_counter() - t_run, 2)
                out["learner_node_after"] = _node_of(rc.actors.learner)
                out["collectors_running_after"] = len(rc.collector.pool.running())
                delivered = [slot.delivered for slot in rc.collector.pool.slots]
                # the collectors that finished calls once the learner was back
                out["collectors_after"] = sum(
                    a > b for a, b in zip(delivered, out.get("delivered_when_back", []))
                )
        except Exception as err:  # noqa: BLE001 - reported for the test to judge
            out["error"] = f"{type(err).__name__}: {err}"
            out["error_s"] = round(time.perf_counter() - t_run, 2)
        out["result"] = rc.result
    finally:
        ray.shutdown()
        cluster.shutdown()
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:])
