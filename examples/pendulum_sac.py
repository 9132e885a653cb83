"""SAC on Pendulum-v1: collector, replay-buffer, learner and evaluator actors on Ray (the async
pipeline), or with ``--serial`` everything in one process.

Run:
    python examples/pendulum_sac.py --seed 0            # Ray starts inside this process
    python examples/pendulum_sac.py --seed 0 --serial   # the serial pipeline
    ray submit cluster.yaml examples/pendulum_sac.py    # on a cluster

The config (``ding_ray/configs/pendulum_sac.py``, also ``ding-ray train pendulum_sac``) is
DI-engine's, plus a ``ray`` section: one collector actor, the serial replay ratio (one gradient
step of 256 per env step) kept by the rate limiter. ``env.act_scale=True`` maps the policy's tanh
actions in [-1, 1] onto Pendulum's torque range [-2, 2]. Measured on 2 cores, -250 reached at
3,224 / 3,224 / 4,256 env steps, 11.2 / 11.6 / 16.4 s from launch (seeds 0-2, Ray); serially
3,000 / 2,000 / 4,000 env steps. Results land in ``pendulum_sac_seed<seed>/`` (config, TensorBoard
logs, checkpoints, ``result.json``).
"""

import argparse
import json

from ding_ray import entry  # names load on first use: the Ray run imports torch while Ray starts
from ding_ray.configs.pendulum_sac import create_config, main_config
from ding_ray.entry.cli_commands import add_override_args, apply_override_args, exit_on_interrupt

if __name__ == "__main__":
    with exit_on_interrupt():  # Ctrl-C/SIGTERM: one line and exit status 130, as ding-ray
        parser = argparse.ArgumentParser(
            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        parser.add_argument("--seed", type=int, help="default 0; a resumed run's own")
        parser.add_argument("--max-env-step", type=int, help="default 20,000; a resumed run's own")
        parser.add_argument("--serial", action="store_true", help="one process, no Ray")
        add_override_args(parser)  # --num-collectors N, --set key.path=value ...
        args = parser.parse_args()
        apply_override_args(args, main_config, create_config, max_env_step=20_000)
        main_config["exp_name"] = f"pendulum_sac_seed{args.seed}"
        train = entry.serial_pipeline if args.serial else entry.ray_pipeline
        train(
            (main_config, create_config), seed=args.seed, max_env_step=args.max_env_step, resume=args.resume
        )
        print(json.dumps(entry.read_result(args.resume or main_config["exp_name"])))
