"""DI-engine 0.5.3's framework scripts ``ding/example/dqn_per.py`` and ``ppo_offpolicy.py`` (the new
buffer API: ``DequeBuffer``, ``PriorityExperienceReplay``), ding_ray beside DI-engine, seed by seed.

- ding_ray: the script with the edits of ``tests/compat/test_ding_examples.py`` (``ding`` ->
  ``ding_ray``, gymnasium, the dizoo config read from the wheel);
- DI-engine: the script unedited, run by DI-engine's venv (``--di-engine-python``).
Both get one more edit, the seed: ``compile_config(..., seed=S)``. Each run is a fresh process in a
fresh folder with one torch thread (``OMP_NUM_THREADS=1``; neither script sets it), until the
evaluator reaches CartPole's stop value (195). The figure is the env step of that evaluation.

Run:  python benchmarks/bench_ding_examples.py [--scripts dqn_per.py ppo_offpolicy.py] [--seeds 0 1 2]
          [--di-engine-python /tmp/dienv/bin/python]
Prints one ``bench_ding_examples`` line per run and per script and side the median, and writes
them to ``benchmarks/results/ding_examples.json``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

from results_io import write_result

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.compat.dizoo import example_script  # noqa: E402
from tests.compat.test_ding_examples import EVAL_LINE, ding_ray_script  # noqa: E402

SCRIPTS = ("dqn_per.py", "ppo_offpolicy.py")
DI_ENGINE_EVAL = re.compile(r"Evaluation: Train Iter\((\d+)\) Env Step\((\d+)\) Episode Return\((-?[\d.]+)\)")
COMPILE = "compile_config(main_config, create_cfg=create_config, auto=True)"


def seeded(source: str, seed: int) -> str:
    assert source.count(COMPILE) == 1, "the script's compile_config call changed"
    return source.replace(
        COMPILE, f"compile_config(main_config, create_cfg=create_config, auto=True, seed={seed})"
    )


def run(python: str, source: str, workdir: str, pattern: re.Pattern) -> list[tuple[int, float]]:
    """The script's evaluations, ``(env_step, return)``, in order."""
    path = os.path.join(workdir, "script.py")
    with open(path, "w") as f:
        f.write(source)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=REPO)
    done = subprocess.run([python, path], cwd=workdir, env=env, capture_output=True, text=True, timeout=1800)
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise RuntimeError(f"{path} failed:\n{output[-3000:]}")
    return [(int(step), float(ret)) for _, step, ret in pattern.findall(output)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scripts", nargs="+", choices=SCRIPTS, default=list(SCRIPTS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument(
        "--di-engine-python", default=os.environ.get("DI_ENGINE_PYTHON", "/tmp/dienv/bin/python")
    )
    args = parser.parse_args()
    rows, ratio = [], {}
    for name in args.scripts:
        sides = {
            "ding_ray": (sys.executable, ding_ray_script(name), EVAL_LINE),
            "di_engine": (args.di_engine_python, example_script(name), DI_ENGINE_EVAL),
        }
        solved: dict[str, list[int]] = {}
        for seed in args.seeds:
            for system, (python, source, pattern) in sides.items():
                with tempfile.TemporaryDirectory(prefix="bench_ding_examples") as workdir:
                    evaluations = run(python, seeded(source, seed), workdir, pattern)
                step = next((s for s, ret in evaluations if ret >= 195), None)
                row = dict(
                    script=name, system=system, seed=seed, solved_env_step=step, evaluations=len(evaluations)
                )
                print("bench_ding_examples", row, flush=True)
                rows.append(row)
                solved.setdefault(system, []).append(step if step is not None else 10**9)
        medians = {system: statistics.median(steps) for system, steps in solved.items()}
        print(f"bench_ding_examples_median script={name} {medians}", flush=True)
        rows.append(dict(script=name, medians=medians))
        ratio[f"{name} ding_ray/di_engine median env steps"] = round(
            medians["ding_ray"] / medians["di_engine"], 3
        )
    write_result(
        "ding_examples",
        rows,
        reference="DI-engine 0.5.3 running the unedited scripts in its own venv, same seeds, same run",
        ratio=ratio,
    )


if __name__ == "__main__":
    main()
