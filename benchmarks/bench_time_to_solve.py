"""Wall seconds from launching python to CartPole-v1 at 475: the Ray example against the serial one.

Runs ``examples/apex_dqn.py`` (embedded Ray, 2 collector actors) and ``examples/cartpole_dqn.py``
(serial pipeline, one process) as fresh processes, seed by seed, in one session, and reads each
run's ``result.json``. ``launch_to_stop_s`` is the process's age when the stop value was reached
(Ray start-up included); ``launch_to_exit_s`` also counts the shutdown.

``--baseline REV`` also runs the Ray example of an older commit (exported with ``git archive``
into a temporary folder and imported from there), seeds interleaved with today's, and prints the
ratio of the medians: how a change to the Ray layer moved the time to solve.

Run:  python benchmarks/bench_time_to_solve.py [--seeds 0 1 2] [--repeat K] [--baseline REV] [--only ray]
Prints one ``bench_time_to_solve ...`` line per run and one ``bench_time_to_solve_ratio`` line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = {"apex_dqn": "ray", "cartpole_dqn": "serial"}


def run(example: str, seed: int, workdir: str, repo: str = REPO) -> dict:
    """Run ``repo``'s example (its own ``ding_ray`` first on the path) in ``workdir``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, os.path.join(repo, "examples", f"{example}.py"), "--seed", str(seed)],
        cwd=workdir,
        capture_output=True,
        text=True,
        env=env,
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


def export(rev: str, folder: str) -> str:
    """The tree of commit ``rev`` in ``folder``."""
    archive = subprocess.run(["git", "archive", rev], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    return folder


def report(pipeline: str, seed: int, r: dict) -> None:
    first = r.get("first_batch_s")
    print(
        f"bench_time_to_solve pipeline={pipeline} seed={seed} stop={r['stop']} "
        f"best_eval_return={r['best_eval_return']} env_steps={r['env_steps']} "
        f"train_iter={r['train_iter']} launch_to_stop_s={r['launch_to_stop_s']:.1f} "
        f"launch_to_exit_s={r['launch_to_exit_s']:.1f}"
        + ("" if first is None else f" first_batch_s={first:.1f}"),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--baseline", help="a git revision whose Ray example to compare with")
    parser.add_argument("--only", choices=sorted(set(EXAMPLES.values())), help="run one pipeline only")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per seed: the async pipeline's time to solve varies"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        repos = {"ray": REPO}
        if args.baseline:
            repos["ray-baseline"] = export(args.baseline, tempfile.mkdtemp(dir=workdir))
        times: dict[str, list[float]] = {}
        for example, pipeline in EXAMPLES.items():
            if args.only and pipeline != args.only:
                continue
            for seed in [s for _ in range(args.repeat) for s in args.seeds]:
                for name, repo in repos.items() if pipeline == "ray" else [(pipeline, REPO)]:
                    rundir = tempfile.mkdtemp(dir=workdir)
                    r = run(example, seed, rundir, repo)
                    report(name, seed, r)
                    times.setdefault(name, []).append(r["launch_to_stop_s"])
        if "ray-baseline" in times:
            now, before = statistics.median(times["ray"]), statistics.median(times["ray-baseline"])
            print(
                f"bench_time_to_solve_ratio median_ray={now:.1f} median_baseline={before:.1f} "
                f"ratio={now / before:.2f} baseline={args.baseline}",
                flush=True,
            )


if __name__ == "__main__":
    main()
