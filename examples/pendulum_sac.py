"""SAC on Pendulum-v1 with the serial pipeline (one process, no Ray).

Run:
    python examples/pendulum_sac.py --seed 0

The config (``ding_ray/configs/pendulum_sac.py``, also ``ding-ray train pendulum_sac``) is
DI-engine's: a ``main_config`` with the hyperparameters and a ``create_config`` naming the
component types. ``env.act_scale=True`` maps the policy's tanh actions in [-1, 1] onto Pendulum's
torque range [-2, 2] (DI-engine's pendulum env does the same). Results land in
``pendulum_sac_seed<seed>/`` (config, TensorBoard logs, checkpoints, ``result.json``).
"""

import argparse
import json

from ding_ray.configs.pendulum_sac import create_config, main_config
from ding_ray.entry import read_result, serial_pipeline

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-env-step", type=int, default=20_000)
    args = parser.parse_args()
    main_config["exp_name"] = f"pendulum_sac_seed{args.seed}"
    serial_pipeline((main_config, create_config), seed=args.seed, max_env_step=args.max_env_step)
    print(json.dumps(read_result(main_config["exp_name"])))
