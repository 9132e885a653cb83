"""Ray Tune sweep of DQN on CartPole-v1: learning rate x n-step, one serial run per trial.

Run:
    pip install 'ding_ray[tune]'
    python examples/tune_cartpole_dqn.py --max-env-step 10000

Each trial runs the bundled ``cartpole_dqn`` config with its overrides (dotted keys) on one CPU
and reports ``eval_return`` after every evaluation; Tune keeps the trials under
``<storage-path>/<name>/`` (each with the run's own folder: config, TensorBoard logs, result.json).
The best trial is the one with the highest last evaluation return.
"""

import argparse
import os

from ding_ray.entry import tune_pipeline

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--max-env-step", type=int, default=10_000, help="budget of each trial")
    parser.add_argument("--learning-rates", type=float, nargs="+", default=[1e-3, 3e-4])
    parser.add_argument("--nsteps", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--storage-path", default=os.path.abspath("tune_results"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    grid = tune_pipeline(
        "cartpole_dqn",
        param_space={
            "policy.learn.learning_rate": {"grid_search": args.learning_rates},
            "policy.nstep": {"grid_search": args.nsteps},
        },
        max_env_step=args.max_env_step,
        storage_path=args.storage_path,
        name="tune_cartpole_dqn",
        seed=args.seed,
    )
    for result in grid:
        m = result.metrics or {}
        print(
            f"lr={result.config['policy.learn.learning_rate']:g} nstep={result.config['policy.nstep']}: "
            f"eval_return={m.get('eval_return')} at env_step={m.get('env_step')}"
            + (f" (error: {result.error})" if result.error else "")
        )
    best = grid.get_best_result()
    print(
        f"best: lr={best.config['policy.learn.learning_rate']:g} nstep={best.config['policy.nstep']} "
        f"eval_return={best.metrics['eval_return']:.1f} ({best.path})"
    )
