"""Wall seconds from launching python to CartPole-v1 at 475 on Ray, undisturbed and with a fault.

Each run is the async Ape-X pipeline of ``ding_ray/configs/apex_dqn.py`` (embedded Ray, 2 collector
actors) in a fresh process, with run checkpoints every ``--ckpt-freq`` learner iterations (the same
for every scenario, so checkpoint cost is in the reference too). The faults:

- ``learner``: the learner actor's process is killed (``ray.kill``, Ray restarts it) once the
  driver has seen ``--kill-at`` learner iterations and a checkpoint exists;
- ``buffer``: the same for the replay-buffer actor;
- ``collector-node``: on a 2-node ``ray.cluster_utils.Cluster`` of this machine (the worker node
  offers no CPU, only a slot that one collector takes; the head has a spare slot), the worker node
  is removed; ``none-cluster`` is the same cluster undisturbed, the reference for it;
- ``learner-host``: on three hosts of ``ding_ray.testing.hosts`` (network namespaces, root only:
  the driver and the other actors on the head's 2 CPUs, the learner on host 1 or 2, which offer
  only a ``learner_node`` slot), the learner's host is killed (SIGKILL to all of it, its link
  down); the learner comes back on the other one from the latest checkpoint; ``none-hosts`` is the
  same hosts undisturbed, the reference for it.

Per run it prints the time to solve, the env steps of the weights that solved, and what
``result.json`` says was lost; then the median per scenario and its ratio to the undisturbed one.

Run:  python benchmarks/bench_faults.py [--seeds 0 1 2] [--max-env-step 200000]
        [--scenarios none learner buffer none-cluster collector-node none-hosts learner-host]
(the default: all but the two on hosts, which need root)
Writes the runs and medians to ``benchmarks/results/faults.json``. ``--max-env-step`` bounds every
run (a run that ends there unsolved is no time to solve: a small one only checks that the script
runs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from results_io import write_result

RUN = """
import copy, json, sys
import ray
from ding_ray.framework import pipelines
from ding_ray import distributed
from ding_ray.configs.apex_dqn import create_config, main_config
from ding_ray.framework import Task

exp, victim = sys.argv[1], sys.argv[3]
seed, kill_at, freq, budget = (int(a) for a in (sys.argv[2], sys.argv[4], sys.argv[5], sys.argv[6]))
cfg = copy.deepcopy(main_config)
cfg["exp_name"], cfg["checkpoint"] = exp, dict(freq=freq)
cfg["ray"]["progress_bar"] = False
cluster = None
if victim in ("collector-node", "none-cluster"):
    from ray.cluster_utils import Cluster

    head = dict(num_cpus=2, resources={"collector_slot": 2}, include_dashboard=False)
    cluster = Cluster(initialize_head=True, head_node_args=head)
    worker = cluster.add_node(num_cpus=0, resources={"collector_slot": 1})
    ray.init(address=cluster.address)
    cfg["ray"].update(collector_num_cpus=0, collector_resources={"collector_slot": 1})
    cfg["ray"]["collector_scheduling"] = "SPREAD"  # one collector on the worker node
if victim in ("learner-host", "none-hosts"):  # the harness's hosts; this driver runs in the head
    cfg["ray"].update(learner_num_cpus=0, learner_resources={"learner_node": 1})
cfg, plan, started = distributed.start_run((cfg, create_config), seed)
killed = []

def fault(ctx):
    if victim.startswith("none") or killed or ctx.train_iter < kill_at or rc.checkpointer.last is None:
        return
    killed.append(ctx.train_iter)
    if victim == "collector-node":
        cluster.remove_node(worker)
    elif victim == "learner-host":  # the process that started the hosts kills it
        ips = {node["NodeID"]: node["NodeManagerAddress"] for node in ray.nodes()}
        print("KILL " + ips[rc.supervisor.node_of("learner")], flush=True)
    else:
        ray.kill(getattr(rc.actors, victim), no_restart=False)

with distributed.RayRun(cfg, plan, budget) as rc, rc.task() as task:
    pipelines.off_policy(task, cfg, rc, max_env_step=budget)
    task.use(fault)
    task.run()
ray.shutdown()
if cluster is not None:
    cluster.shutdown()
print(json.dumps(dict(rc.result, killed_at=killed)))
"""


def run(scenario: str, seed: int, kill_at: int, freq: int, max_env_step: int) -> dict:
    if scenario in ("learner-host", "none-hosts"):
        return run_on_hosts(scenario, seed, kill_at, freq, max_env_step)
    with tempfile.TemporaryDirectory(prefix="bench_faults_") as tmp:
        args = [f"{tmp}/run", str(seed), scenario, str(kill_at), str(freq), str(max_env_step)]
        env = {**os.environ, "RAY_TMPDIR": tmp}  # its own Ray (or cluster): nobody else's joins it
        done = subprocess.run(
            [sys.executable, "-c", RUN, *args], capture_output=True, text=True, cwd=tmp, env=env
        )
    if done.returncode != 0:
        raise RuntimeError(f"{scenario} seed {seed} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_on_hosts(scenario: str, seed: int, kill_at: int, freq: int, max_env_step: int) -> dict:
    """The run's driver in the head of three fresh hosts; the host it names in a ``KILL`` line is
    killed from here."""
    from ding_ray.testing.hosts import Hosts

    layout = dict(cpus=[2, 0, 0], resources=[{}, {"learner_node": 1}, {"learner_node": 1}])
    with tempfile.TemporaryDirectory(prefix="bench_faults_") as tmp, Hosts(3, **layout) as hosts:
        args = [f"{tmp}/run", str(seed), scenario, str(kill_at), str(freq), str(max_env_step)]
        argv = [sys.executable, "-c", RUN, *args]
        env = {"PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
        with hosts.head.popen(argv, env, cwd=tmp, stdout=subprocess.PIPE, text=True) as driver:
            lines = []
            for line in driver.stdout:
                lines.append(line)
                if line.startswith("KILL "):
                    next(host for host in hosts if host.ip == line.split()[1]).kill()
        if driver.returncode != 0:
            raise RuntimeError(f"{scenario} seed {seed} failed (exit {driver.returncode}): {lines[-5:]}")
    return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    default = ["none", "learner", "buffer", "none-cluster", "collector-node"]
    parser.add_argument("--scenarios", nargs="+", default=default)
    parser.add_argument("--kill-at", type=int, default=1000, help="learner iterations before the fault")
    parser.add_argument("--ckpt-freq", type=int, default=500, help="checkpoint.freq of every run")
    parser.add_argument("--max-env-step", type=int, default=200_000, help="the budget of every run")
    args = parser.parse_args()
    times: dict[str, list[float]] = {s: [] for s in args.scenarios}
    rows, ratio = [], {}
    for seed in args.seeds:
        for scenario in args.scenarios:  # interleaved: the machine's load hits every scenario alike
            r = run(scenario, seed, args.kill_at, args.ckpt_freq, args.max_env_step)
            times[scenario].append(r["since_launch_s"])
            keys = ("stop", "stop_env_step", "train_iter", "killed_at", "recoveries", "lost_batches")
            row = dict(scenario=scenario, seed=seed, launch_to_stop_s=round(r["since_launch_s"], 1))
            rows.append(dict(row, checkpoints=r["checkpoints_saved"], **{k: r[k] for k in keys}))
            print(
                f"bench_faults scenario={scenario} seed={seed} stop={r['stop']} "
                f"launch_to_stop_s={r['since_launch_s']:.1f} stop_env_step={r['stop_env_step']} "
                f"train_iter={r['train_iter']} killed_at={r['killed_at']} recoveries={r['recoveries']} "
                f"checkpoints={r['checkpoints_saved']} lost_batches={r['lost_batches']}",
                flush=True,
            )
    medians = {}
    for scenario, values in times.items():
        undisturbed = {"collector-node": "none-cluster", "learner-host": "none-hosts"}
        reference = times.get(undisturbed.get(scenario, "none"))
        medians[scenario] = median = round(statistics.median(values), 1)
        text = ""
        if reference and not scenario.startswith("none"):
            ratio[f"{scenario}/undisturbed"] = round(median / statistics.median(reference), 2)
            text = f" ratio_to_undisturbed={ratio[f'{scenario}/undisturbed']:.2f}"
        print(f"bench_faults_median scenario={scenario} median_launch_to_stop_s={median:.1f}{text}")
    reference = (
        "measured in the same run, seed by seed interleaved: the undisturbed run ('none'; 'none-cluster' "
        "for collector-node, 'none-hosts' for learner-host), the same pipeline and checkpoints without "
        "the fault"
    )
    figures = dict(median_launch_to_stop_s=medians, runs=rows)
    write_result("faults", figures, reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
