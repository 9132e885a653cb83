"""MinAtar Breakout: ding_ray's Ape-X DQN on Ray beside a plain single-process DQN, same budget;
with ``--sides``, also ding_ray's IMPALA and sync PPO on Ray (same encoder, collectors and budget).

For each seed, one after the other (the order of the sides turns around from seed to seed):

- ``ding_ray``: ``ding-ray train minatar_breakout_dqn --mode ray`` (embedded Ray, the bundled config's
  2 collector actors, prioritized replay) for ``--max-env-step`` env steps. Its evaluations come
  from the run's TensorBoard files (``evaluator/episode_return_mean``, logged at the env step the
  evaluated weights were taken); the return at a mark is the last evaluation at or before it
  (``*_env_step`` says where that was). At the budget the final weights (``ckpt_final.pth.tar``)
  are evaluated once more with ``ding-ray eval`` (the config's episodes, the run's seed), since
  the pipeline's last evaluation falls up to ``eval_freq`` iterations before the end.
- ``plain``: ``benchmarks/minatar_dqn_plain.py``, one process, the same network and
  hyperparameters (read from the same config), uniform replay; it evaluates at every mark.
- ``impala`` / ``ppo``: as ``ding_ray``, with the bundled ``minatar_breakout_impala`` /
  ``minatar_breakout_ppo`` (issue 25's comparison of the three Ray pipelines).

Budgets under the config's (1M) scale ding_ray's ``eval_freq`` down with them, so a short check
still evaluates (at 1M it is the config's, about every 20k env steps).

Run:  python benchmarks/bench_minatar.py [--seeds 0 1 2] [--max-env-step 1000000]
                                         [--sides ding_ray plain impala ppo] [--set KEY=VALUE ...]
Runs land in ``results/bench_minatar/<yymmdd_HHMMSS>/`` (logs, ding_ray's run folders).
Prints one JSON line per run (``{"bench": "minatar", "side", "seed", "marks": {mark: return},
"mark_env_steps", "wall_s", "env_steps_per_s"}``), then a table per seed and side, then one
``{"bench": "minatar_summary", ...}`` line: the mean over seeds per side at each mark and whether
ding_ray's is the higher. The runs and the summary go to ``benchmarks/results/minatar.json``
(``minatar_<sides>.json`` for other sides than the default two).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

from results_io import write_result

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the ding_ray sides and their bundled configs (``plain`` is the single-process loop)
CONFIGS = {
    "ding_ray": "minatar_breakout_dqn",  # Ape-X DQN
    "impala": "minatar_breakout_impala",
    "ppo": "minatar_breakout_ppo",
}
PLAIN = os.path.join(REPO, "benchmarks", "minatar_dqn_plain.py")


def run_logged(cmd: list[str], log_path: str, cwd: str) -> tuple[str, float]:
    """Run ``cmd`` with its output into ``log_path``; the output and the seconds from launch to exit."""
    start = time.perf_counter()
    with open(log_path, "w") as log:
        done = subprocess.run(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    with open(log_path) as log:
        out = log.read()
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {done.returncode}):\n{out[-3000:]}")
    return out, time.perf_counter() - start


def at_marks(xs: list[float], ys: list[float], marks: list[int]) -> tuple[dict, dict]:
    """The last value at or before each mark, and the step it was taken at (None: none yet)."""
    values, steps = {}, {}
    for mark in marks:
        before = [(x, y) for x, y in zip(xs, ys) if x <= mark]
        steps[mark], values[mark] = (int(before[-1][0]), float(before[-1][1])) if before else (None, None)
    return values, steps


def run_ding_ray(
    side: str, seed: int, max_env_step: int, marks: list[int], workdir: str, overrides: list[str]
) -> dict:
    from ding_ray.configs import load_config
    from ding_ray.entry.plot import read_curve

    config = CONFIGS[side]
    bundled = load_config(config)
    eval_freq = bundled.main_config.policy.eval.evaluator.eval_freq
    eval_freq = max(min(100, eval_freq // 5), eval_freq * max_env_step // bundled.max_env_step)
    name = f"{side}_seed{seed}"
    if os.path.exists(os.path.join(workdir, name)):  # ding-ray would write a renewed folder instead
        raise FileExistsError(f"{os.path.join(workdir, name)} exists: pass a fresh --workdir")
    cli = [sys.executable, "-m", "ding_ray.entry.cli"]
    sets = [f"exp_name={name}", "ray.progress_bar=False", f"policy.eval.evaluator.eval_freq={eval_freq}"]
    cmd = [*cli, "train", config, "--mode", "ray", "--seed", str(seed), "--max-env-step", str(max_env_step)]
    _, exit_s = run_logged([*cmd, "--set", *sets, *overrides], os.path.join(workdir, f"{name}.log"), workdir)
    run_dir = os.path.join(workdir, name)
    with open(os.path.join(run_dir, "result.json")) as f:
        result = json.load(f)
    curve = read_curve(run_dir)
    values, steps = at_marks(list(curve.x), list(curve.y), marks)
    # the final weights, evaluated once more: the return at the budget itself
    final = os.path.join(run_dir, "ckpt", "ckpt_final.pth.tar")
    out, _ = run_logged(
        [*cli, "eval", final, "--seed", str(seed)], os.path.join(workdir, f"{name}_eval.log"), workdir
    )
    found = re.search(r"mean evaluation return over \S+ episodes: (\S+)", out)
    if found is None:
        raise RuntimeError(f"ding-ray eval printed no mean return:\n{out[-2000:]}")
    if marks[-1] == max_env_step:
        values[marks[-1]], steps[marks[-1]] = float(found.group(1)), int(result["env_steps"])
    return dict(
        marks=values,
        mark_env_steps=steps,
        evaluations=len(curve.x),
        wall_s=round(exit_s, 1),
        env_steps_per_s=result["env_steps_per_s"],  # over the pipeline's own wall_s (no start-up)
        train_iter=result["train_iter"],
    )


def run_plain(seed: int, max_env_step: int, marks: list[int], workdir: str) -> dict:
    eval_every = max_env_step // 10 if all(m % (max_env_step // 10) == 0 for m in marks) else min(marks)
    cmd = [sys.executable, PLAIN, "--seed", str(seed), "--max-env-step", str(max_env_step)]
    out, exit_s = run_logged(
        [*cmd, "--eval-every", str(eval_every)], os.path.join(workdir, f"plain_seed{seed}.log"), workdir
    )
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    evals = [line for line in lines if "eval_return" in line]
    summary = next(line for line in lines if line.get("done"))
    values, steps = at_marks([e["env_step"] for e in evals], [e["eval_return"] for e in evals], marks)
    return dict(
        marks=values,
        mark_env_steps=steps,
        evaluations=len(evals),
        wall_s=round(exit_s, 1),
        env_steps_per_s=summary["env_steps_per_s"],  # training only (evaluations left out)
        train_iter=summary["train_iter"],
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--max-env-step", type=int, default=1_000_000)
    parser.add_argument("--marks", type=int, nargs="+", help="env steps to report (default: half and all)")
    parser.add_argument(
        "--sides", nargs="+", choices=(*CONFIGS, "plain"), default=["ding_ray", "plain"], help="what runs"
    )
    parser.add_argument("--workdir", help="default: results/bench_minatar/<yymmdd_HHMMSS>")
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", help="ding_ray config overrides")
    args = parser.parse_args()
    marks = sorted(args.marks or [args.max_env_step // 2, args.max_env_step])
    workdir = os.path.abspath(
        args.workdir or os.path.join(REPO, "results", "bench_minatar", time.strftime("%y%m%d_%H%M%S"))
    )
    os.makedirs(workdir, exist_ok=True)
    sides = args.sides
    rows = []
    for i, seed in enumerate(args.seeds):
        for side in sides if i % 2 == 0 else sides[::-1]:
            if side == "plain":
                row = run_plain(seed, args.max_env_step, marks, workdir)
            else:
                row = run_ding_ray(side, seed, args.max_env_step, marks, workdir, args.set)
            row = dict(bench="minatar", side=side, seed=seed, **row)
            rows.append(row)
            print(json.dumps(row), flush=True)

    header = f"{'seed':>4}  {'side':<8}" + "".join(f"  {f'eval@{m:,}':>16}" for m in marks)
    print("\n" + header + f"  {'wall_s':>8}  {'env_steps/s':>11}")
    for row in sorted(rows, key=lambda r: (r["seed"], r["side"])):
        cells = []
        for m in marks:
            value, step = row["marks"][m], row["mark_env_steps"][m]
            cells.append(f"  {'-' if value is None else f'{value:.2f} ({step // 1000}k)':>16}")
        print(
            f"{row['seed']:>4}  {row['side']:<8}"
            + "".join(cells)
            + f"  {row['wall_s']:>8}  {row['env_steps_per_s']:>11}"
        )

    means = {}
    for side in sides:
        for m in marks:
            got = [r["marks"][m] for r in rows if r["side"] == side and r["marks"][m] is not None]
            means[f"{side}@{m}"] = round(statistics.mean(got), 3) if got else None
    summary = dict(bench="minatar_summary", seeds=args.seeds, max_env_step=args.max_env_step, mean=means)
    if {"ding_ray", "plain"} <= set(sides):
        a, b = (means[f"ding_ray@{m}"] for m in marks), (means[f"plain@{m}"] for m in marks)
        summary["ding_ray_higher"] = {
            m: None if x is None or y is None else x > y for m, x, y in zip(marks, a, b)
        }
    print(json.dumps(summary))
    ratio = {
        f"{side}/plain eval@{m}": None if means[f"{side}@{m}"] is None or not means[f"plain@{m}"] else
        round(means[f"{side}@{m}"] / means[f"plain@{m}"], 3)
        for side in sides if side != "plain" and "plain" in sides for m in marks
    }  # fmt: skip
    reference = (
        "plain, measured in the same run, seed by seed in turn: benchmarks/minatar_dqn_plain.py, a "
        "single-process DQN with the same network, hyperparameters and budget (uniform replay); none "
        "when plain does not run"
    )
    name = "minatar" if sides == ["ding_ray", "plain"] else "minatar_" + "_".join(sides)
    write_result(name, dict(summary, runs=rows), reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
