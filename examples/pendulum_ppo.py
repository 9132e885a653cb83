"""PPO with a Gaussian policy on Pendulum-v1 with the on-policy serial pipeline (one process, no Ray).

Run:
    python examples/pendulum_ppo.py --seed 0

The config (``ding_ray/configs/pendulum_ppo.py``, also ``ding-ray train pendulum_ppo``) is
DI-engine's (``main_config`` + ``create_config``): continuous actions
(``action_space='continuous'``, a state-independent log std), gamma 0.9, GAE lambda 0.95, lr 1e-3,
10 epochs as rl-zoo3's tuned Pendulum PPO (without its gSDE and reward normalisation; DI-engine's
value_norm instead). Seeds 0-2 reach -250 in 18,400 / 13,600 / 12,000 env steps. The sampled
torque goes to the env unclipped; gymnasium's Pendulum clips it to [-2, 2] itself. Results land in
``pendulum_ppo_seed<seed>/`` (config, TensorBoard logs, checkpoints, ``result.json``).
"""

import argparse
import json

from ding_ray.configs.pendulum_ppo import create_config, main_config
from ding_ray.entry import read_result, serial_pipeline_onpolicy
from ding_ray.entry.cli_commands import exit_on_interrupt

if __name__ == "__main__":
    with exit_on_interrupt():  # Ctrl-C/SIGTERM: one line and exit status 130, as ding-ray
        parser = argparse.ArgumentParser(
            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--max-env-step", type=int, default=100_000)
        args = parser.parse_args()
        main_config["exp_name"] = f"pendulum_ppo_seed{args.seed}"
        serial_pipeline_onpolicy((main_config, create_config), seed=args.seed, max_env_step=args.max_env_step)
        print(json.dumps(read_result(main_config["exp_name"])))
