"""Env steps of the bundled serial examples to their stop value (CartPole-v1 to 475, Pendulum-v1 to
-250), seeds 0-2: the figures the configs' docstrings point to.

``examples/cartpole_dqn.py``, ``cartpole_ppo.py`` and ``pendulum_ppo.py`` run the serial
pipelines, which are deterministic: a seed stops at the same env step on every run of the same
code (and torch version), whatever the machine's load. Each run is a fresh process in a temporary
folder; its ``result.json`` gives the env steps and whether the stop value was reached.

Run:  python benchmarks/bench_serial_examples.py [--examples cartpole_dqn cartpole_ppo pendulum_ppo]
                                                 [--seeds 0 1 2]
Prints one ``bench_serial_examples example=E seed=S env_steps=N stop=True wall_s=..`` line per run,
then per example ``E: a / b / c env steps to the stop value``, and writes the runs to
``benchmarks/results/serial_examples.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from results_io import write_result

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = ("cartpole_dqn", "cartpole_ppo", "pendulum_ppo")


def run(example: str, seed: int, workdir: str) -> dict:
    """``examples/<example>.py --seed <seed>`` in ``workdir``; its ``result.json``."""
    script = os.path.join(REPO, "examples", f"{example}.py")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run(
        [sys.executable, script, "--seed", str(seed)], cwd=workdir, capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(f"{example} seed {seed} failed:\n{done.stderr[-3000:]}")
    with open(os.path.join(workdir, f"{example}_seed{seed}", "result.json")) as f:
        return json.load(f)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--examples", nargs="+", choices=EXAMPLES, default=list(EXAMPLES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = parser.parse_args()
    figures: dict[str, list[str]] = {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_serial_examples") as workdir:
        for example in args.examples:
            for seed in args.seeds:
                result = run(example, seed, workdir)
                print(
                    f"bench_serial_examples example={example} seed={seed} env_steps={result['env_steps']} "
                    f"stop={result['stop']} best_eval_return={result['best_eval_return']} "
                    f"wall_s={result['wall_s']:.1f}",
                    flush=True,
                )
                keys = ("env_steps", "stop", "best_eval_return")
                rows.append(dict(example=example, seed=seed, **{k: result[k] for k in keys}))
                rows[-1]["wall_s"] = round(result["wall_s"], 1)
                # A run that hit its env-step budget first is no figure "to the stop value".
                figures.setdefault(example, []).append(
                    f"{result['env_steps']:,}" if result["stop"] else f"not solved in {result['env_steps']:,}"
                )
    for example, steps in figures.items():
        print(f"  examples/{example}.py: {' / '.join(steps)} env steps to the stop value")
    reference = (
        "none: the serial runs are deterministic, so a seed's env steps to the stop value are the figure; "
        "wall_s depends on the machine"
    )
    write_result("serial_examples", rows, reference=reference, ratio={})


if __name__ == "__main__":
    main()
