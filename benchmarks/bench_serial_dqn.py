"""The serial pipeline on DI-engine's own CartPole DQN config file, seed by seed, twice.

The config is ``tests/compat/configs/cartpole_dqn_config.py``: dizoo's ``cartpole_dqn_config.py``
of DI-engine 0.5.3 with only the env type and id changed (CartPole-v0, stop value 195, 8
collector envs, 5 evaluator envs / 5 episodes, dueling [128, 128, 64], discount 0.97, 1-step,
n_sample 8, 5 updates per collect, batch 64, lr 1e-3, exponential epsilon 0.95 -> 0.1 over
10,000 steps, a 'deque' replay of 20,000, evaluation every 40 iterations, and its replay_path and
load_path, which training ignores). Every seed runs twice in the same folder: the second run
must neither warm-start from the first run's checkpoint nor overwrite its folder.
DI-engine 0.5.3 measured on the 2-core development machine, torch on 1 thread, seeds 0-4: median
1,016 env steps (952-1,208) and 6.7 s (6.4-8.4) from the pipeline call to the stop value.

Run:  python benchmarks/bench_serial_dqn.py [--seeds 0 1 2 3 4] [--repeats 2]
Prints one ``bench_serial_dqn ...`` line per run and one with the medians and their ratios, and
writes them to ``benchmarks/results/serial_dqn.json``.
"""

from __future__ import annotations

import argparse
import glob
import json
import logging
import os
import statistics
import tempfile
import time

from results_io import write_result

from ding_ray.config import read_config
from ding_ray.entry import serial_pipeline

DI_ENGINE_MEDIAN_ENV_STEPS = 1016
DI_ENGINE_MEDIAN_WALL_S = 6.7
CONFIG = os.path.join(os.path.dirname(__file__), "..", "tests", "compat", "configs", "cartpole_dqn_config.py")


def run(seed: int) -> tuple[int, float, bool, str]:
    """One run in the current folder: (env steps, wall seconds, stopped, the run's folder)."""
    main_config, create_config = read_config(CONFIG)
    before = set(glob.glob(main_config.exp_name + "*"))
    start = time.perf_counter()
    serial_pipeline((main_config, create_config), seed=seed)
    wall = time.perf_counter() - start
    (folder,) = set(glob.glob(main_config.exp_name + "*")) - before
    with open(os.path.join(folder, "result.json")) as f:
        result = json.load(f)
    return int(result["env_steps"]), wall, bool(result["stop"]), folder


def main() -> None:
    logging.disable(logging.INFO)  # one line per seed, not the pipeline's progress
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    steps, walls, rows = [], [], []
    home = os.getcwd()
    with tempfile.TemporaryDirectory() as root:
        os.chdir(root)  # the config's relative exp_name, as a user runs it
        try:
            for repeat in range(args.repeats):
                for seed in args.seeds:
                    env_steps, wall, stop, folder = run(seed)
                    steps.append(env_steps)
                    walls.append(wall)
                    rows.append(
                        dict(repeat=repeat, seed=seed, env_steps=env_steps, wall_s=round(wall, 2), stop=stop)
                    )
                    print(
                        f"bench_serial_dqn repeat={repeat} seed={seed} env_steps={env_steps} "
                        f"wall_s={wall:.2f} stop={stop} folder={folder}"
                    )
        finally:
            os.chdir(home)
    median_steps, median_wall = statistics.median(steps), statistics.median(walls)
    ratio = {
        "median_env_steps/di_engine": round(median_steps / DI_ENGINE_MEDIAN_ENV_STEPS, 3),
        "median_wall_s/di_engine": round(median_wall / DI_ENGINE_MEDIAN_WALL_S, 3),
    }
    print(
        f"bench_serial_dqn median_env_steps={median_steps:.0f} median_wall_s={median_wall:.2f} "
        f"ratio_env_steps_to_di_engine={ratio['median_env_steps/di_engine']:.3f} "
        f"ratio_wall_to_di_engine={ratio['median_wall_s/di_engine']:.3f}"
    )
    reference = (
        f"DI-engine 0.5.3 on the same config, seeds 0-4: median {DI_ENGINE_MEDIAN_ENV_STEPS} env steps and "
        f"{DI_ENGINE_MEDIAN_WALL_S} s, measured earlier on the 2-core development machine, not in this run "
        "(benchmarks/bench_dizoo_parity.py runs both sides in one run)"
    )
    figures = dict(median_env_steps=median_steps, median_wall_s=round(median_wall, 2), runs=rows)
    write_result("serial_dqn", figures, reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
