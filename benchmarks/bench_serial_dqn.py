"""The serial pipeline on DI-engine's own CartPole DQN config, seed by seed.

Same task and hyperparameters as DI-engine's ``cartpole_dqn_config.py`` (CartPole-v0, stop value
195, 8 collector envs, 5 evaluator envs / 5 episodes, dueling [128, 128, 64], discount 0.97,
1-step, n_sample 8, 5 updates per collect, batch 64, lr 1e-3, target update every 100 iterations,
exponential epsilon 0.95 -> 0.1 over 10,000 steps, replay 20,000, evaluation every 40 iterations).
DI-engine 0.5.3 measured on the 2-core development machine, torch on 1 thread, seeds 0-4: median
1,016 env steps (952-1,208) and 6.7 s (6.4-8.4) from the pipeline call to the stop value.

Run:  python benchmarks/bench_serial_dqn.py [--seeds 0 1 2 3 4]
Prints one ``bench_serial_dqn ...`` line per seed and one with the medians and their ratios.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import statistics
import tempfile
import time

from ding_ray.entry import serial_pipeline

DI_ENGINE_MEDIAN_ENV_STEPS = 1016
DI_ENGINE_MEDIAN_WALL_S = 6.7

main_config = dict(
    env=dict(
        env_id="CartPole-v0", collector_env_num=8, evaluator_env_num=5, n_evaluator_episode=5, stop_value=195
    ),
    policy=dict(
        cuda=False,
        model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[128, 128, 64], dueling=True),
        nstep=1,
        discount_factor=0.97,
        learn=dict(update_per_collect=5, batch_size=64, learning_rate=1e-3, target_update_freq=100),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=40)),
        other=dict(
            eps=dict(type="exp", start=0.95, end=0.1, decay=10000),
            replay_buffer=dict(replay_buffer_size=20000),
        ),
    ),
)
create_config = dict(env=dict(type="gymnasium"), env_manager=dict(type="base"), policy=dict(type="dqn"))


def run(seed: int, root: str) -> tuple[int, float, bool]:
    cfg = copy.deepcopy(main_config)
    cfg["exp_name"] = f"{root}/cartpole_v0_seed{seed}"
    start = time.perf_counter()
    serial_pipeline((cfg, create_config), seed=seed, max_env_step=100_000)
    wall = time.perf_counter() - start
    with open(f"{cfg['exp_name']}/result.json") as f:
        result = json.load(f)
    return int(result["env_steps"]), wall, bool(result["stop"])


def main() -> None:
    logging.disable(logging.INFO)  # one line per seed, not the pipeline's progress
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = parser.parse_args()
    steps, walls = [], []
    with tempfile.TemporaryDirectory() as root:
        for seed in args.seeds:
            env_steps, wall, stop = run(seed, root)
            steps.append(env_steps)
            walls.append(wall)
            print(f"bench_serial_dqn seed={seed} env_steps={env_steps} wall_s={wall:.2f} stop={stop}")
    median_steps, median_wall = statistics.median(steps), statistics.median(walls)
    print(
        f"bench_serial_dqn median_env_steps={median_steps:.0f} median_wall_s={median_wall:.2f} "
        f"ratio_env_steps_to_di_engine={median_steps / DI_ENGINE_MEDIAN_ENV_STEPS:.3f} "
        f"ratio_wall_to_di_engine={median_wall / DI_ENGINE_MEDIAN_WALL_S:.3f}"
    )


if __name__ == "__main__":
    main()
