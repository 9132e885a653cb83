"""Learning parity on DI-engine's own dizoo configs: ding_ray beside DI-engine 0.5.3, same machine.

Each run is a fresh python process in a fresh folder, seed by seed, the two systems interleaved:
- ding_ray: the config file of DI-engine's wheel (``tests/compat/dizoo.py`` reads it), changed only
  in its env type and id, through ``serial_pipeline`` or ``serial_pipeline_onpolicy``;
- DI-engine: the same file, unchanged, from the ``dizoo`` package of a venv with DI-engine 0.5.3
  (``--di-engine-python``), through ``benchmarks/di_engine_runner.py``;
- ``sb3`` (with ``--only sb3``, for the MuJoCo SAC configs): Stable-Baselines3's SAC with rl-zoo3's
  settings on the same gymnasium env (``--sb3-python``, ``benchmarks/sb3_runner.py``).
Both evaluators are watched, not changed: every evaluation's train_iter, env step (the evaluator's
count) and mean return is recorded. Printed per run: the env step of the first evaluation at the
stop value (``solved_env_step``, None if never), the best and last return, the return of the last
evaluation at or before ``--at`` env steps, and the wall seconds from launching python.

Run:  python benchmarks/bench_dizoo_parity.py classic_control/cartpole/config/cartpole_ppo_config.py \
          --seeds 0 1 2 --max-env-step 30000 [--at 24000] [--only ding_ray|di_engine|sb3]
          [--di-engine-env-id ID] [--ding-ray-env-id ID]  (another env id on one side, e.g. Hopper-v4)
Prints one ``bench_dizoo_parity ...`` line per run and one ``bench_dizoo_parity_median`` line per system
(a run that never reaches the stop value counts as longer than every run that does, so a median exists
while more than half the runs solve), and writes them to ``benchmarks/results/dizoo_parity_<config>.json``
(``_<systems>`` with ``--only``). ``--only ding_ray --di-engine-solved S0 S1 S2`` takes DI-engine's figures
of an earlier run of this script as the reference.
Any dizoo config of a policy both sides have runs, e.g. IMPALA (serial, a ``max_use`` replay buffer):
      python benchmarks/bench_dizoo_parity.py classic_control/cartpole/config/cartpole_impala_config.py \
          --seeds 0 1 2 --max-env-step 100000
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

from results_io import write_result

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)


def run_ding_ray(relpath: str, seed: int, max_env_step: int, env_id: str | None = None) -> None:
    """In this process (started by ``measure``): the config through ding_ray's serial entry
    (on ``env_id`` instead of the config's, when given)."""
    start = time.perf_counter()
    from ding_ray.entry import serial_pipeline, serial_pipeline_onpolicy
    from ding_ray.entry.serial_entry_onpolicy import is_on_policy
    from ding_ray.worker import InteractionSerialEvaluator
    from tests.compat.dizoo import read_dizoo_config

    evaluations = []
    evaluate = InteractionSerialEvaluator.eval

    def watched(self, save_ckpt_fn=None, train_iter=-1, envstep=-1, *args, **kwargs):
        stop, info = evaluate(self, save_ckpt_fn, train_iter, envstep, *args, **kwargs)
        evaluations.append(
            dict(
                train_iter=train_iter,
                env_step=envstep,
                return_mean=info["eval_episode_return_mean"],
                stop=bool(stop),
                since_launch_s=time.perf_counter() - start,
            )
        )
        return stop, info

    InteractionSerialEvaluator.eval = watched
    main, create = read_dizoo_config(relpath)
    if env_id is not None:
        main.env.env_id = env_id
    entry = serial_pipeline_onpolicy if is_on_policy(main, create) else serial_pipeline
    try:
        entry((main, create), seed=seed, max_env_step=max_env_step)
    finally:
        with open("evaluations.json", "w") as f:
            json.dump(dict(evaluations=evaluations, wall_s=time.perf_counter() - start), f)


def measure(
    system: str,
    relpath: str,
    seed: int,
    max_env_step: int,
    python: dict[str, str],
    env_ids: dict[str, str | None],
) -> dict:
    """One run in a fresh folder; its evaluations and the wall time from launching python.
    ``env_ids[system]``, when set, replaces the config's env id on that side."""
    env_id = env_ids.get(system)
    workdir = tempfile.mkdtemp(prefix=f"parity_{system}_")
    if system == "ding_ray":
        cmd = [sys.executable, os.path.abspath(__file__), relpath, "--child", str(seed), str(max_env_step)]
        if env_id is not None:
            cmd += ["--ding-ray-env-id", env_id]
    elif system == "di_engine":
        module = "dizoo." + relpath.removesuffix(".py").replace("/", ".")
        runner = os.path.join(REPO, "benchmarks", "di_engine_runner.py")
        cmd = [python[system], runner, module, str(seed), str(max_env_step)]
        if env_id is not None:
            cmd.append(env_id)
    else:
        from tests.compat.dizoo import read_dizoo_config

        env_id = read_dizoo_config(relpath)[0].env.env_id
        runner = os.path.join(REPO, "benchmarks", "sb3_runner.py")
        cmd = [python[system], runner, env_id, str(seed), str(max_env_step)]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True)
    wall_s = time.perf_counter() - start
    path = os.path.join(workdir, "evaluations.json")
    if done.returncode != 0 or not os.path.isfile(path):
        raise RuntimeError(f"{system} seed {seed} failed:\n{done.stderr[-3000:]}")
    with open(path) as f:
        evaluations = json.load(f)["evaluations"]
    return dict(evaluations=evaluations, exit_s=round(wall_s, 1))


def summary(evaluations: list[dict], at: int | None) -> dict:
    solved = next((e for e in evaluations if e.get("stop")), None)
    returns = [e["return_mean"] for e in evaluations]
    out = dict(
        solved_env_step=None if solved is None else solved["env_step"],
        solved_s=None if solved is None else round(solved["since_launch_s"], 1),
        best_return=round(max(returns), 1) if returns else None,
        last_return=round(returns[-1], 1) if returns else None,
        last_env_step=evaluations[-1]["env_step"] if evaluations else None,
        evaluations=len(evaluations),
    )
    if at is not None:
        before = [e for e in evaluations if e["env_step"] <= at]
        out[f"return_at_{at}"] = round(before[-1]["return_mean"], 1) if before else None
        out[f"env_step_of_return_at_{at}"] = before[-1]["env_step"] if before else None
    return out


def solved_median(steps: list[int | None]) -> float | None:
    """The median env steps to the stop value, a run that never got there counting as longer than
    every run that did; None unless more than half the runs got there."""
    done = sorted(s for s in steps if s is not None)
    if 2 * len(done) <= len(steps):
        return None
    ordered = done + [math.inf] * (len(steps) - len(done))
    return statistics.median(ordered)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config", help="path under dizoo/, e.g. mujoco/config/hopper_sac_config.py")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--max-env-step", type=int, default=100_000)
    parser.add_argument("--at", type=int, default=None, help="also report the return at this env step")
    parser.add_argument("--only", choices=["ding_ray", "di_engine", "sb3"], nargs="+", default=None)
    default_python = os.environ.get("DI_ENGINE_PYTHON", "/work/dienv/bin/python")
    parser.add_argument("--di-engine-python", default=default_python, help="python of DI-engine's venv")
    parser.add_argument("--di-engine-env-id", default=None, help="DI-engine's env id, e.g. Hopper-v4")
    parser.add_argument("--ding-ray-env-id", default=None, help="ding_ray's env id, e.g. Hopper-v4")
    parser.add_argument("--sb3-python", default=os.environ.get("SB3_PYTHON", "/work/sb3env/bin/python"))
    parser.add_argument(
        "--di-engine-solved",
        type=int,
        nargs="+",
        default=None,
        help="with --only ding_ray: DI-engine's solved env steps on these seeds, measured before on this "
        "machine with this script, as the reference (-1: not solved)",
    )
    parser.add_argument("--child", nargs=2, type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        run_ding_ray(args.config, *args.child, env_id=args.ding_ray_env_id)
        return
    systems = args.only or ["ding_ray", "di_engine"]
    python = {"di_engine": args.di_engine_python, "sb3": args.sb3_python}
    env_ids = {"ding_ray": args.ding_ray_env_id, "di_engine": args.di_engine_env_id}
    solved: dict[str, list] = {s: [] for s in systems}
    rows = []
    for seed in args.seeds:
        for system in systems:
            result = measure(system, args.config, seed, args.max_env_step, python, env_ids)
            line = dict(system=system, config=args.config, seed=seed)
            line.update(summary(result["evaluations"], args.at))
            line["exit_s"] = result["exit_s"]
            print("bench_dizoo_parity " + json.dumps(line), flush=True)
            rows.append(line)
            solved[system].append(line["solved_env_step"])
    earlier = args.di_engine_solved
    if earlier is not None:
        if "di_engine" in systems or len(earlier) != len(args.seeds):
            parser.error("--di-engine-solved takes one figure per seed, when DI-engine does not run here")
        solved["di_engine"] = [None if s < 0 else s for s in earlier]
    medians = {system: solved_median(steps) for system, steps in solved.items()}
    for system, steps in solved.items():
        line = dict(system=system, solved_env_steps=steps, median=medians[system])
        print("bench_dizoo_parity_median " + json.dumps(line))
    others = [s for s in solved if s != "ding_ray"]
    ratio = {
        f"ding_ray/{other} median solved_env_step": (
            None
            if not medians.get("ding_ray") or not medians[other]
            else medians["ding_ray"] / medians[other]
        )
        for other in others
        if "ding_ray" in medians
    }
    reference = (
        "measured in the same run, seed by seed interleaved: DI-engine 0.5.3 on the same dizoo config file "
        "(di_engine), Stable-Baselines3 with rl-zoo3's settings (sb3); none when only ding_ray runs"
    )
    if earlier is not None:
        reference = (
            "DI-engine 0.5.3 on the same dizoo config file and seeds, measured before on this machine with "
            "this script (--di-engine-solved)"
        )
    name = "dizoo_parity_" + os.path.basename(args.config).removesuffix(".py").removesuffix("_config")
    if args.only:
        name += "_" + "_".join(systems)
    figures = dict(median_solved_env_step=medians, runs=rows)
    if earlier is not None:
        figures["di_engine_solved_env_steps"] = solved["di_engine"]
    write_result(name, figures, reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
