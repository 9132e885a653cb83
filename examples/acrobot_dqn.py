"""DQN on Acrobot-v1 with the serial pipeline: the same loop as CartPole, another gymnasium task.

Run:
    python examples/acrobot_dqn.py --seed 0

Stops when the evaluation mean reaches -100 (a random policy scores about -500).
"""

import argparse
import json

from ding_ray.configs.acrobot_dqn import create_config, main_config
from ding_ray.entry import read_result, serial_pipeline
from ding_ray.entry.cli_commands import exit_on_interrupt

if __name__ == "__main__":
    with exit_on_interrupt():  # Ctrl-C/SIGTERM: one line and exit status 130, as ding-ray
        parser = argparse.ArgumentParser(
            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--max-env-step", type=int, default=60_000)
        args = parser.parse_args()
        main_config["exp_name"] = f"acrobot_dqn_seed{args.seed}"
        serial_pipeline((main_config, create_config), seed=args.seed, max_env_step=args.max_env_step)
        print(json.dumps(read_result(main_config["exp_name"])))
