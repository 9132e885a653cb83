"""Run by test_multinode.py in a fresh process: a 2-node ``ray.cluster_utils.Cluster`` on this
machine, the Ape-X pipeline on it, and a JSON line saying where the collectors ran."""

from __future__ import annotations

import json
import sys

import ray
from ray.cluster_utils import Cluster

from ding_ray.distributed import RayRun, make_plan
from ding_ray.entry import compile_ray_config
from ding_ray.framework import pipelines
from tests.distributed.configs import small_config
from tests.distributed.conftest import free_port


def main(exp_name: str) -> None:
    head = {"num_cpus": 2, "include_dashboard": False, "dashboard_agent_listen_port": free_port()}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    worker = cluster.add_node(num_cpus=2)
    ray.init(address=cluster.address)
    try:
        cfg = compile_ray_config(small_config(exp_name, num_collectors=2), seed=0)
        with RayRun(cfg, make_plan(cfg)) as rc, rc.task() as task:  # checks the cluster
            rc.actors.start_collectors()  # the pipeline would after the learner's first weights
            nodes = ray.get([c.node_id.remote() for c in rc.actors.collectors])
            pipelines.off_policy(task, cfg, rc, max_env_step=2000)
            task.run()
        print(
            json.dumps(
                {
                    "collector_nodes": nodes,
                    "cluster_nodes": [n["NodeID"] for n in ray.nodes() if n["Alive"]],
                    "worker_node": worker.node_id,
                    "env_steps": task.ctx.env_step,
                    "train_iter": task.ctx.train_iter,
                }
            )
        )
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
