"""SAC on MuJoCo Hopper-v5 with the serial pipeline (one process), or with ``--ray`` on Ray's async
pipeline (collector, replay-buffer, learner and evaluator actors).

Needs the ``mujoco`` extra:
    pip install "ding_ray[mujoco]"

Run:
    python examples/hopper_sac.py --seed 0                 # serial, 100,000 env steps
    python examples/hopper_sac.py --seed 0 --ray           # Ray starts inside this process
    ray submit cluster.yaml examples/hopper_sac.py --ray   # on a cluster

The config (``ding_ray/configs/hopper_sac.py``, also ``ding-ray train hopper_sac``) is rl-zoo3's
Hopper SAC in DI-engine's names: 10,000 random steps, one gradient step of 256 per env step, lr
3e-4, gamma 0.99, tau 0.005, 256x256 networks, automatic entropy temperature. Evaluations (5
episodes) every 5,000 env steps. Measured once (seed 0, serial, one core under ``nice -n 19`` on a
shared 2-core machine, mujoco 4.0.0, 100,000 env steps in 1,303 s): evaluation returns 129 after the
random steps (10k; the untrained actor's near-zero mean actions), 244 at 20k, 264 at 40k, 317 at 50k
(best so far 462 at 45k), 488 at 75k, 743 at 90k, 724 at 100k. That is behind rl-zoo3's SAC (about
1,000 by 50k); uniformly random actions score 25 (20 episodes). One seed only: how much of the gap
is seed variance was not measured.
Results land in ``hopper_sac_seed<seed>/`` (config, TensorBoard logs, checkpoints, ``result.json``).
"""

import argparse
import json

from ding_ray.configs.hopper_sac import create_config, main_config
from ding_ray.entry import ray_pipeline, read_result, serial_pipeline
from ding_ray.entry.cli_commands import exit_on_interrupt

if __name__ == "__main__":
    with exit_on_interrupt():  # Ctrl-C/SIGTERM: one line and exit status 130, as ding-ray
        parser = argparse.ArgumentParser(
            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--max-env-step", type=int, default=100_000)
        parser.add_argument("--ray", action="store_true", help="Ray's async pipeline instead of one process")
        args = parser.parse_args()
        main_config["exp_name"] = f"hopper_sac_seed{args.seed}"
        train = ray_pipeline if args.ray else serial_pipeline
        train((main_config, create_config), seed=args.seed, max_env_step=args.max_env_step)
        print(json.dumps(read_result(main_config["exp_name"])))
