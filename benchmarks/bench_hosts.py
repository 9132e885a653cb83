"""One host against three, side by side in one run: Ape-X CartPole and the Pong sampler on hosts of
``ding_ray.testing.hosts`` (network namespaces on this machine, each its own IP and Ray node).

Layouts, the same logical CPUs and the same actor shares in both:

  one_host     one Ray node of 3 CPUs: everything on it, nothing crosses a network link
  three_hosts  a head of 1 CPU (the driver, the learner and the replay buffer, pinned there) and two
               workers of 1 CPU, one collector each (pinned with a custom resource)

Workloads, each in a fresh driver process inside the head host:

  apex         ``ding_ray.configs.apex_dqn`` (Ape-X DQN on CartPole-v1) for ``--apex-env-steps`` env
               steps (past the warm-up, into training; the stop value is not the point here)
  pong         the Pong sampler of ``bench_pixels.py`` (2 collector actors x 4 envs, random actions,
               frame stack 4), the driver taking each batch as a buffer on the head would

Figures per (layout, workload): env steps/s; bytes on the wire per env step (bytes the hosts'
interfaces sent during the driver's run, divided by its env steps: what a real network would carry;
0 on one host, whose actors talk over loopback); for ``apex`` the driver's CPU milliseconds per actor
call it launched, over the whole run, its start included (the part of a run that does not scale
out). The ratio ``three_hosts/one_host`` of each rate says what the network costs. Needs root and
iproute2 (the hosts harness).

Run:  python benchmarks/bench_hosts.py [--apex-env-steps 20000] [--pong-seconds 20] [--rounds 1]
Prints one ``bench_hosts layout=.. workload=.. ...`` line per run and writes
``benchmarks/results/hosts.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from results_io import write_result

from ding_ray.testing.hosts import Hosts

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# Ray node CPUs and custom resources of each layout: where the core actors and the collectors go
LAYOUTS = {
    "one_host": dict(n=1, cpus=[3], resources=[{"core_node": 2, "collector_node": 2}]),
    "three_hosts": dict(
        n=3, cpus=[1, 1, 1], resources=[{"core_node": 2}, {"collector_node": 1}, {"collector_node": 1}]
    ),
}
PINS = dict(  # the ray section of both layouts' runs
    learner_resources={"core_node": 1},
    buffer_resources={"core_node": 1},
    collector_resources={"collector_node": 1},
    num_collectors=2,
    progress_bar=False,
)
WORKLOADS = ("apex", "pong")


def apex_side(env_steps: int) -> dict:
    """Runs in the head host: Ape-X CartPole for ``env_steps``, counting the driver's actor calls."""
    import copy

    from bench_driver_capacity import count_actor_calls, cpu_s

    from ding_ray.configs.apex_dqn import create_config, main_config
    from ding_ray.entry import ray_pipeline

    calls = count_actor_calls()
    cfg = copy.deepcopy(main_config)
    cfg["exp_name"] = os.path.join(tempfile.mkdtemp(prefix="bench_hosts_"), "apex")
    cfg["ray"].update(PINS)
    start, cpu = time.perf_counter(), cpu_s()
    ray_pipeline((cfg, create_config), seed=0, max_env_step=env_steps)
    wall, cpu = time.perf_counter() - start, cpu_s() - cpu
    with open(os.path.join(cfg["exp_name"], "result.json")) as f:
        result = json.load(f)
    return dict(
        env_steps=result["env_steps"],
        env_steps_per_s=result["env_steps_per_s"],
        train_iter=result["train_iter"],
        driver_calls=calls[0],
        driver_cpu_ms_per_call=round(1000 * cpu / max(calls[0], 1), 3),
        wall_s=round(wall, 1),
    )


def pong_side(seconds: float, warmup: float) -> dict:
    """Runs in the head host: the Pong sampler, the driver taking each batch."""
    from bench_pixels import ding_ray_side

    options = dict(num_cpus=0.5, resources={"collector_node": 1})
    measured = ding_ray_side(
        "random", seconds, warmup, ray_init=dict(log_to_driver=False), collector_options=options, fetch=True
    )
    return dict(
        env_steps=measured["env_steps"],  # those of the timed window, which the rate counts
        env_steps_per_s=round(measured["steps_per_s"], 1),
        all_env_steps=measured["all_env_steps"],  # those of the whole run, which the wire carried
        wall_s=round(measured["seconds"], 1),
    )


def run_side(layout: str, workload: str, args: argparse.Namespace) -> dict:
    """Bring the layout's hosts up, run one workload's driver in the head host, take them down."""
    spec = LAYOUTS[layout]
    side = [sys.executable, os.path.abspath(__file__), "--side", workload]
    side += ["--apex-env-steps", str(args.apex_env_steps), "--pong-seconds", str(args.pong_seconds)]
    with Hosts(spec["n"], cpus=spec["cpus"], resources=spec["resources"]) as hosts:
        sent = [host.bytes_sent for host in hosts]
        done = hosts.head.run(side, env={"PYTHONPATH": REPO}, timeout=900, cwd=REPO)
        wire = sum(host.bytes_sent - before for host, before in zip(hosts, sent))
    if done.returncode != 0:
        raise RuntimeError(f"{layout} {workload} failed:\n{done.stderr[-3000:]}")
    line = next(x for x in reversed(done.stdout.splitlines()) if x.startswith("SIDE "))
    figures = json.loads(line[len("SIDE ") :])
    return dict(
        layout=layout,
        workload=workload,
        **figures,
        wire_bytes=wire,
        wire_bytes_per_env_step=round(wire / max(figures.get("all_env_steps", figures["env_steps"]), 1), 1),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apex-env-steps", type=int, default=20_000, help="env steps of each Ape-X run")
    parser.add_argument("--pong-seconds", type=float, default=20.0, help="timed seconds of each Pong run")
    parser.add_argument("--pong-warmup", type=float, default=5.0, help="untimed seconds before them")
    parser.add_argument("--rounds", type=int, default=1, help="every run this many times (medians)")
    parser.add_argument("--only", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--side", choices=WORKLOADS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:  # one driver, inside the head host
        side = (
            apex_side(args.apex_env_steps)
            if args.side == "apex"
            else pong_side(args.pong_seconds, args.pong_warmup)
        )
        print("SIDE " + json.dumps(side), flush=True)
        return
    if os.geteuid() != 0:
        sys.exit("bench_hosts.py needs root: its hosts are network namespaces (ding_ray.testing.hosts)")

    rows = []
    for round_ in range(args.rounds):
        for workload in args.only:
            # the layouts alternate their order each round, so that drifting load hits both alike
            for layout in list(LAYOUTS) if round_ % 2 == 0 else list(LAYOUTS)[::-1]:
                row = dict(
                    run_side(layout, workload, args), round=round_, load_1m=round(os.getloadavg()[0], 2)
                )
                rows.append(row)
                print("bench_hosts " + " ".join(f"{k}={v}" for k, v in row.items()), flush=True)

    def median(layout: str, workload: str, key: str) -> float:
        return statistics.median(r[key] for r in rows if r["layout"] == layout and r["workload"] == workload)

    summary, ratio = {}, {}
    for workload in args.only:
        keys = ["env_steps_per_s", "wire_bytes_per_env_step"]
        keys += ["driver_cpu_ms_per_call"] if workload == "apex" else []
        summary[workload] = {layout: {k: median(layout, workload, k) for k in keys} for layout in LAYOUTS}
        one, three = summary[workload]["one_host"], summary[workload]["three_hosts"]
        ratio[f"{workload}_env_steps_per_s three_hosts/one_host"] = round(
            three["env_steps_per_s"] / one["env_steps_per_s"], 3
        )
    print("bench_hosts_summary " + json.dumps(summary))
    reference = (
        "the same workload on one host of 3 CPUs, measured in the same run (layouts alternating), "
        "against a head of 1 CPU and two workers of 1 CPU joined by the harness's bridge"
    )
    write_result("hosts", dict(medians=summary, runs=rows), reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
