"""Wall seconds from launching python to CartPole-v1 at 475: the Ray example and the serial ones.

Runs ``examples/apex_dqn.py`` (pipeline ``ray``: embedded Ray, 2 collector actors),
``examples/cartpole_dqn.py`` (``serial``: ``serial_pipeline``, one process) and
``examples/cartpole_ppo.py`` (``serial_onpolicy``: ``serial_pipeline_onpolicy``, one process) as
fresh processes, seed by seed, in one session, and reads each run's ``result.json``.
``launch_to_stop_s`` is the process's age when the stop value was reached (Ray start-up included;
a serial run's exit time stands for it); ``launch_to_exit_s`` also counts the shutdown;
``s_per_env_step`` is result.json's ``wall_s`` (the pipeline's own run, without interpreter
start-up and imports) over its ``env_steps``.

``--baseline REV`` also runs every selected example of an older commit (exported with
``git archive`` into a temporary folder and imported from there), seed by seed interleaved with
today's tree (which of the two runs first alternates from pair to pair), to check a change:

- ``ray``: the ratio of the median ``launch_to_stop_s``: how the change moved the time to solve.
- ``serial``, ``serial_onpolicy``: the runs are deterministic, so per seed both trees must stop
  at the same ``env_steps``; and the ratio of the median ``s_per_env_step``: how the change moved
  the serial loop's speed.

Run:  python benchmarks/bench_time_to_solve.py [--seeds 0 1 2] [--repeat K] [--baseline REV]
                                               [--only ray|serial|serial_onpolicy]
Prints, key=value:
- ``bench_time_to_solve pipeline=P seed=S ...`` per run (``P-baseline`` for the baseline's runs);
- with ``--baseline``, for a serial pipeline, per seed and repeat ``bench_time_to_solve_seed
  pipeline=P seed=S env_steps=.. env_steps_baseline=.. identical_env_steps=.. s_per_env_step=..
  s_per_env_step_baseline=..``;
- with ``--baseline``, one ``bench_time_to_solve_ratio pipeline=P ...`` per pipeline: for ``ray``
  ``median_ray median_baseline ratio`` (launch to stop), for a serial one ``median_s_per_env_step
  median_baseline_s_per_env_step ratio`` (the ratio of the medians), ``median_seed_ratio`` (the
  median of each seed's now / baseline) and ``identical_env_steps`` (over all its runs).
Each pipeline's runs, medians and ratio go to ``benchmarks/results/time_to_solve_<pipeline>.json``.
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

from results_io import write_result

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = {"apex_dqn": "ray", "cartpole_dqn": "serial", "cartpole_ppo": "serial_onpolicy"}


def python_env(repo: str) -> dict[str, str]:
    """The environment that imports ``repo``'s own ``ding_ray`` (before the venv's editable one)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p)}


def run(example: str, seed: int, workdir: str, repo: str = REPO) -> dict:
    """Run ``repo``'s example in ``workdir``; its ``result.json`` with the times measured here."""
    script = os.path.join(repo, "examples", f"{example}.py")
    if not os.path.isfile(script):
        raise FileNotFoundError(f"{script} does not exist (a baseline older than the example?)")
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, script, "--seed", str(seed)],
        cwd=workdir,
        capture_output=True,
        text=True,
        env=python_env(repo),
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
    result["s_per_env_step"] = result.get("wall_s", exit_s) / max(result["env_steps"], 1)
    return result


def export(rev: str, folder: str) -> str:
    """The tree of commit ``rev`` in ``folder``, checked to be the ``ding_ray`` its runs import."""
    archive = subprocess.run(["git", "archive", rev], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    imported = subprocess.run(
        [sys.executable, "-c", "import ding_ray; print(ding_ray.__file__)"],
        cwd=folder,
        capture_output=True,
        text=True,
        env=python_env(folder),
        check=True,
    ).stdout.strip()
    if not os.path.realpath(imported).startswith(os.path.realpath(folder) + os.sep):
        raise RuntimeError(f"the baseline's runs would import {imported}, not the tree in {folder}")
    return folder


def report(pipeline: str, seed: int, r: dict) -> None:
    first = r.get("first_batch_s")
    print(
        f"bench_time_to_solve pipeline={pipeline} seed={seed} stop={r['stop']} "
        f"best_eval_return={r['best_eval_return']} env_steps={r['env_steps']} "
        f"train_iter={r['train_iter']} launch_to_stop_s={r['launch_to_stop_s']:.1f} "
        f"launch_to_exit_s={r['launch_to_exit_s']:.1f} s_per_env_step={r['s_per_env_step']:.6f}"
        + ("" if first is None else f" first_batch_s={first:.1f}"),
        flush=True,
    )


def report_pair(pipeline: str, seed: int, now: dict, before: dict) -> None:
    print(
        f"bench_time_to_solve_seed pipeline={pipeline} seed={seed} env_steps={now['env_steps']} "
        f"env_steps_baseline={before['env_steps']} "
        f"identical_env_steps={now['env_steps'] == before['env_steps']} "
        f"s_per_env_step={now['s_per_env_step']:.6f} s_per_env_step_baseline={before['s_per_env_step']:.6f}",
        flush=True,
    )


def report_ratio(pipeline: str, now: list[dict], before: list[dict], rev: str) -> dict[str, float]:
    """Print the pipeline's ratio line; the ratios, named ``figure/baseline``."""
    if pipeline == "ray":
        median = statistics.median(r["launch_to_stop_s"] for r in now)
        median_before = statistics.median(r["launch_to_stop_s"] for r in before)
        print(
            f"bench_time_to_solve_ratio pipeline=ray median_ray={median:.1f} "
            f"median_baseline={median_before:.1f} ratio={median / median_before:.2f} runs={len(now)} "
            f"baseline={rev}",
            flush=True,
        )
        return {"median_launch_to_stop_s/baseline": round(median / median_before, 3)}
    median = statistics.median(r["s_per_env_step"] for r in now)
    median_before = statistics.median(r["s_per_env_step"] for r in before)
    pairs = list(zip(now, before, strict=True))
    identical = all(a["env_steps"] == b["env_steps"] for a, b in pairs)
    # the same seed in both trees: the median of the pairs' ratios leaves out how much slower a
    # seed's longer run is per step (a fuller replay buffer)
    seed_ratio = statistics.median(a["s_per_env_step"] / b["s_per_env_step"] for a, b in pairs)
    print(
        f"bench_time_to_solve_ratio pipeline={pipeline} median_s_per_env_step={median:.6f} "
        f"median_baseline_s_per_env_step={median_before:.6f} ratio={median / median_before:.3f} "
        f"median_seed_ratio={seed_ratio:.3f} identical_env_steps={identical} runs={len(now)} "
        f"baseline={rev}",
        flush=True,
    )
    return {
        "median_s_per_env_step/baseline": round(median / median_before, 3),
        "median of each seed's s_per_env_step/baseline": round(seed_ratio, 3),
        "runs with identical env_steps/runs": sum(a["env_steps"] == b["env_steps"] for a, b in pairs)
        / len(pairs),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--baseline", help="a git revision whose examples to compare with, interleaved")
    parser.add_argument("--only", choices=sorted(set(EXAMPLES.values())), help="run one pipeline only")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per seed: the async pipeline's time to solve varies"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        trees = {"": REPO}
        if args.baseline:
            trees["-baseline"] = export(args.baseline, tempfile.mkdtemp(dir=workdir))
        for example, pipeline in EXAMPLES.items():
            if args.only and pipeline != args.only:
                continue
            results: dict[str, list[dict]] = {suffix: [] for suffix in trees}
            for seed in [s for _ in range(args.repeat) for s in args.seeds]:
                # the tree that goes first alternates, so a drift of the machine's speed within a
                # pair does not favour one of them
                order = list(trees.items())
                for suffix, repo in order if len(results[""]) % 2 == 0 else order[::-1]:
                    r = run(example, seed, tempfile.mkdtemp(dir=workdir), repo)
                    report(pipeline + suffix, seed, r)
                    results[suffix].append(r)
                if args.baseline and pipeline != "ray":
                    report_pair(pipeline, seed, results[""][-1], results["-baseline"][-1])
            ratio = {}
            if args.baseline:
                ratio = report_ratio(pipeline, results[""], results["-baseline"], args.baseline)
            save(pipeline, results, ratio, args)


def save(pipeline: str, results: dict[str, list[dict]], ratio: dict, args: argparse.Namespace) -> None:
    """The runs of one pipeline, their medians and ratios: ``results/time_to_solve_<pipeline>.json``."""
    keys = ("stop", "env_steps", "train_iter", "launch_to_stop_s", "launch_to_exit_s", "s_per_env_step")
    figures: dict = {}
    for suffix, runs in results.items():
        tree = "baseline" if suffix else "now"
        figures[f"median_launch_to_stop_s_{tree}"] = round(
            statistics.median(r["launch_to_stop_s"] for r in runs), 2
        )
        figures[f"median_s_per_env_step_{tree}"] = statistics.median(r["s_per_env_step"] for r in runs)
    seeds = [s for _ in range(args.repeat) for s in args.seeds]
    figures["runs"] = [
        dict(tree=f"baseline {args.baseline}" if suffix else "now", seed=seed, **{k: r.get(k) for k in keys})
        for suffix, runs in results.items()
        for seed, r in zip(seeds, runs)
    ]
    reference = (
        f"the same example from commit {args.baseline}'s tree, seed by seed interleaved in the same session"
        if args.baseline
        else "none: run with --baseline REV to time an older commit's tree in the same session"
    )
    write_result(f"time_to_solve_{pipeline}", figures, reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
