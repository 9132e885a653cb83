"""Run by test_chaos.py inside a host of the harness (``Host.popen``): a ding_ray Ape-X run that joins
the hosts' Ray (``RAY_ADDRESS``), with one stage that tells the test when to strike. Prints JSON
lines on stdout:

- ``{"event": "strike", ...}`` once, when the learner passed ``--strike-at`` iterations, every actor
  has answered and, with ``--after-checkpoint``, a run checkpoint is committed: the counters then
  and each actor's host;
- ``{"event": "end", ...}``: result.json's record, each actor's host after, the seconds of
  ``task.run()`` and the error that ended the run, if one did.

``--until FILE``: the run ends at the first iteration after FILE exists (the test decides when it
has seen enough), or at its budget, whichever comes first.

``python -m tests.hosts.chaos_run EXP_DIR --config apex|small [--strike-at N] [--after-checkpoint]
[--until FILE] [--max-env-step N] [--max-train-iter N] [--set KEY=VALUE ...]``
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time

import ray

from ding_ray import distributed
from ding_ray.configs import apex_dqn
from ding_ray.entry.cli_commands import apply_overrides
from ding_ray.framework import pipelines
from ding_ray.utils.runtime import setup_logging
from tests.distributed.configs import small_config


def configs(name: str, exp_name: str) -> tuple[dict, dict]:
    """``apex``: the Ape-X CartPole config (to 475); ``small``: the distributed tests' tiny DQN."""
    if name == "apex":
        main = copy.deepcopy(apex_dqn.main_config)
        return {**main, "exp_name": exp_name}, copy.deepcopy(apex_dqn.create_config)
    return small_config(exp_name, num_collectors=2)


def nodes_of(rc: distributed.RayRun) -> dict[str, str | None]:
    """The Ray node each actor's last answer came from (None before it answered), by actor name."""
    names = ["learner", "buffer", *(slot.name for slot in rc.collector.pool.slots)]
    return {name: rc.supervisor.node_of(name) for name in names}


def hosts_of(rc: distributed.RayRun) -> dict[str, str | None]:
    """The IP of the host each actor's last answer came from, by actor name."""
    ips = {node["NodeID"]: node["NodeManagerAddress"] for node in ray.nodes()}
    return {name: ips.get(node) for name, node in nodes_of(rc).items()}


def say(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("exp_name")
    parser.add_argument("--config", choices=("apex", "small"), required=True)
    parser.add_argument("--strike-at", type=int, default=None)
    parser.add_argument("--after-checkpoint", action="store_true")
    parser.add_argument("--until", default=None)
    parser.add_argument("--max-env-step", type=int, default=None)
    parser.add_argument("--max-train-iter", type=int, default=None)
    parser.add_argument("--set", nargs="+", action="extend", default=[])
    args = parser.parse_args(argv)
    setup_logging()
    main_cfg, create_cfg = configs(args.config, args.exp_name)
    apply_overrides(main_cfg, create_cfg, args.set)
    cfg, plan, _ = distributed.start_run((main_cfg, create_cfg), seed=0)
    out: dict = {"event": "end"}
    budget = dict(max_env_step=args.max_env_step, max_train_iter=args.max_train_iter)
    rc = distributed.RayRun(cfg, plan, **budget)
    try:
        with rc, rc.task() as task:

            def strike(ctx) -> None:
                if "struck" in out or args.strike_at is None or ctx.train_iter < args.strike_at:
                    return
                if args.after_checkpoint and rc.checkpointer.last is None:
                    return
                if None in nodes_of(rc).values():  # an actor that has not answered yet
                    return
                out["struck"] = True
                checkpoint = rc.checkpointer.last
                say(
                    "strike",
                    train_iter=ctx.train_iter,
                    env_step=ctx.env_step,
                    checkpoint=None if checkpoint is None else checkpoint.folder,
                    hosts=hosts_of(rc),
                )

            def until(ctx) -> None:
                if args.until is not None and os.path.exists(args.until):
                    task.finish = True

            pipelines.off_policy(task, cfg, rc, **budget)
            task.use(strike)
            task.use(until)
            start = time.perf_counter()
            task.run()
            out["run_s"] = round(time.perf_counter() - start, 2)
            out["hosts_after"] = hosts_of(rc)
    except Exception as err:  # noqa: BLE001 - reported for the test to judge
        out["error"] = f"{type(err).__name__}: {err}"
    out["result"] = rc.result
    print(json.dumps(out), flush=True)
    ray.shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
