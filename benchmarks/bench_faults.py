"""Wall seconds from launching python to CartPole-v1 at 475 on Ray, undisturbed and with a fault.

Each run is the async Ape-X pipeline of ``ding_ray/configs/apex_dqn.py`` (embedded Ray, 2 collector
actors) in a fresh process, with run checkpoints every ``--ckpt-freq`` learner iterations (the same
for every scenario, so checkpoint cost is in the reference too). The faults:

- ``learner``: the learner actor's process is killed (``ray.kill``, Ray restarts it) once the
  driver has seen ``--kill-at`` learner iterations and a checkpoint exists;
- ``buffer``: the same for the replay-buffer actor.

Per run it prints the time to solve, the env steps of the weights that solved, and what
``result.json`` says was lost; then the median per scenario and its ratio to the undisturbed one.

Run:  python benchmarks/bench_faults.py [--seeds 0 1 2] [--scenarios none learner buffer]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile

RUN = """
import copy, json, sys
import ray
from ding_ray import distributed
from ding_ray.configs.apex_dqn import create_config, main_config
from ding_ray.framework import Task

exp, victim = sys.argv[1], sys.argv[3]
seed, kill_at, freq = int(sys.argv[2]), int(sys.argv[4]), int(sys.argv[5])
cfg = copy.deepcopy(main_config)
cfg["exp_name"], cfg["checkpoint"] = exp, dict(freq=freq)
cfg["ray"]["progress_bar"] = False
cfg, plan, started = distributed.start_run((cfg, create_config), seed)
killed = []

def fault(ctx):
    if victim != "none" and not killed and ctx.train_iter >= kill_at and rc.checkpointer.last is not None:
        killed.append(ctx.train_iter)
        ray.kill(getattr(rc.actors, victim), no_restart=False)

with distributed.RayComponents(cfg, plan, 200_000) as rc, Task(rc.context()) as task:
    distributed.async_pipeline(task, cfg, rc, max_env_step=200_000)
    task.use(fault)
    task.run()
ray.shutdown()
print(json.dumps(dict(rc.result, killed_at=killed)))
"""


def run(scenario: str, seed: int, kill_at: int, freq: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench_faults_") as tmp:
        args = [f"{tmp}/run", str(seed), scenario, str(kill_at), str(freq)]
        done = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, cwd=tmp)
    if done.returncode != 0:
        raise RuntimeError(f"{scenario} seed {seed} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--scenarios", nargs="+", default=["none", "learner", "buffer"])
    parser.add_argument("--kill-at", type=int, default=1000, help="learner iterations before the fault")
    parser.add_argument("--ckpt-freq", type=int, default=500, help="checkpoint.freq of every run")
    args = parser.parse_args()
    times: dict[str, list[float]] = {s: [] for s in args.scenarios}
    for seed in args.seeds:
        for scenario in args.scenarios:  # interleaved: the machine's load hits every scenario alike
            r = run(scenario, seed, args.kill_at, args.ckpt_freq)
            times[scenario].append(r["since_launch_s"])
            print(
                f"bench_faults scenario={scenario} seed={seed} stop={r['stop']} "
                f"launch_to_stop_s={r['since_launch_s']:.1f} stop_env_step={r['stop_env_step']} "
                f"train_iter={r['train_iter']} killed_at={r['killed_at']} recoveries={r['recoveries']} "
                f"checkpoints={r['checkpoints_saved']} lost_batches={r['lost_batches']}",
                flush=True,
            )
    base = statistics.median(times["none"]) if times.get("none") else None
    for scenario, values in times.items():
        median = statistics.median(values)
        ratio = f" ratio_to_undisturbed={median / base:.2f}" if base else ""
        print(f"bench_faults_median scenario={scenario} median_launch_to_stop_s={median:.1f}{ratio}")


if __name__ == "__main__":
    main()
