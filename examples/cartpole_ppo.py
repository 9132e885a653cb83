"""PPO on CartPole-v1 with the on-policy serial pipeline, or the sync pipeline on Ray.

Run:
    python examples/cartpole_ppo.py --seed 0         # one process
    python examples/cartpole_ppo.py --seed 0 --ray   # collector, learner and evaluator actors

The config (``ding_ray/configs/cartpole_ppo.py``, also ``ding-ray train cartpole_ppo``) is
DI-engine's (``main_config`` + ``create_config``), with hyperparameters close to rl-zoo3's tuned
CartPole PPO: 8 envs x 32 steps per collect, 20 epochs of minibatches of 256, gamma 0.98, GAE
lambda 0.8, lr falling linearly from 1e-3, separate actor and critic networks. Results land in
``cartpole_ppo_seed<seed>/`` (config, TensorBoard logs, checkpoints, ``result.json``).
"""

import argparse
import json

from ding_ray import entry  # names load on first use: the Ray run imports torch while Ray starts
from ding_ray.configs.cartpole_ppo import create_config, main_config
from ding_ray.entry.cli_commands import add_override_args, apply_override_args, exit_on_interrupt

if __name__ == "__main__":
    with exit_on_interrupt():  # Ctrl-C/SIGTERM: one line and exit status 130, as ding-ray
        parser = argparse.ArgumentParser(
            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        parser.add_argument("--seed", type=int, help="default 0; a resumed run's own")
        parser.add_argument("--max-env-step", type=int, help="default 100,000; a resumed run's own")
        parser.add_argument("--ray", action="store_true", help="the sync pipeline on Ray (started here)")
        add_override_args(parser)  # --num-collectors N, --set key.path=value ...
        args = parser.parse_args()
        apply_override_args(args, main_config, create_config, max_env_step=100_000)
        main_config["exp_name"] = f"cartpole_ppo_seed{args.seed}"
        train = entry.ray_pipeline if args.ray else entry.serial_pipeline_onpolicy
        train(
            (main_config, create_config), seed=args.seed, max_env_step=args.max_env_step, resume=args.resume
        )
        print(json.dumps(entry.read_result(args.resume or main_config["exp_name"])))
