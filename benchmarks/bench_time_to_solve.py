"""Wall seconds from launching python to CartPole-v1 at 475: the Ray example against the serial one.

Runs ``examples/apex_dqn.py`` (embedded Ray, 2 collector actors) and ``examples/cartpole_dqn.py``
(serial pipeline, one process) as fresh processes, seed by seed, in one session, and reads each
run's ``result.json``. ``launch_to_stop_s`` is the process's age when the stop value was reached
(Ray start-up included); ``launch_to_exit_s`` also counts the shutdown.

Run:  python benchmarks/bench_time_to_solve.py [--seeds 0 1 2]
Prints one ``bench_time_to_solve ...`` line per run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = {"apex_dqn": "ray", "cartpole_dqn": "serial"}


def run(example: str, seed: int, workdir: str) -> dict:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, os.path.join(REPO, "examples", f"{example}.py"), "--seed", str(seed)],
        cwd=workdir,
        capture_output=True,
        text=True,
    )
    exit_s = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{example} seed {seed} failed:\n{done.stderr[-3000:]}")
    with open(os.path.join(workdir, f"{example}_seed{seed}", "result.json")) as f:
        result = json.load(f)
    # The Ray pipeline records its process's age when it stopped; the serial example exits
    # right after its run, so its exit time stands for both.
    result["launch_to_stop_s"] = result.get("since_launch_s", exit_s)
    result["launch_to_exit_s"] = exit_s
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        for example, pipeline in EXAMPLES.items():
            for seed in args.seeds:
                r = run(example, seed, workdir)
                first = r.get("first_batch_s")
                print(
                    f"bench_time_to_solve pipeline={pipeline} seed={seed} stop={r['stop']} "
                    f"best_eval_return={r['best_eval_return']} env_steps={r['env_steps']} "
                    f"train_iter={r['train_iter']} launch_to_stop_s={r['launch_to_stop_s']:.1f} "
                    f"launch_to_exit_s={r['launch_to_exit_s']:.1f}"
                    + ("" if first is None else f" first_batch_s={first:.1f}"),
                    flush=True,
                )


if __name__ == "__main__":
    main()
