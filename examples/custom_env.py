"""DQN on an env of your own, defined and registered with gymnasium in this script.

Run:
    python examples/custom_env.py --seed 0          # one process
    python examples/custom_env.py --seed 0 --ray    # collector, buffer, learner and evaluator actors

On Ray the actors are other processes, which never run this script: the driver sends them the
gymnasium registration of the config's env id, with ``Corridor`` itself (Ray pickles what this
script defines by value), and each actor registers it before it builds its envs. So
``gym.register`` here is all it takes, as RLlib's ``register_env`` is. An env in a module of its
own works too (name the module in the config's ``import_names``; on a cluster, install it on
every node or ship it with Ray's ``runtime_env``). Results land in ``custom_env_seed<seed>/``
(config, TensorBoard logs, checkpoints, ``result.json``).
"""

import argparse
import json

import gymnasium as gym
import numpy as np

from ding_ray import entry  # names load on first use: the Ray run imports torch while Ray starts
from ding_ray.entry.cli_commands import add_override_args, apply_override_args, exit_on_interrupt


class Corridor(gym.Env):
    """A corridor of ``length`` cells. The agent starts in the middle; one end, drawn at each reset,
    holds the goal: reaching it gives reward 1, the other end -1, and either ends the episode.
    The observation is the position (one-hot) and the goal's side (-1 left, +1 right)."""

    action_space = gym.spaces.Discrete(2)  # 0: a step left, 1: a step right

    def __init__(self, length: int = 7):
        self.length = length
        self.observation_space = gym.spaces.Box(-1.0, 1.0, shape=(length + 1,), dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = self.length // 2
        self.goal_side = 1 if self.np_random.random() < 0.5 else -1
        return self._obs(), {}

    def step(self, action):
        self.position += 1 if action == 1 else -1
        at_end = self.position in (0, self.length - 1)
        side = 1 if self.position > 0 else -1
        reward = (1.0 if side == self.goal_side else -1.0) if at_end else 0.0
        return self._obs(), reward, at_end, False, {}

    def _obs(self):
        obs = np.zeros(self.length + 1, dtype=np.float32)
        obs[self.position] = 1.0
        obs[-1] = self.goal_side
        return obs


# As any gymnasium env; gymnasium's TimeLimit ends an episode still going after 50 steps
gym.register(id="Corridor-v0", entry_point=Corridor, max_episode_steps=50)

main_config = dict(
    exp_name="custom_env",
    env=dict(
        env_id="Corridor-v0", collector_env_num=4, evaluator_env_num=4, n_evaluator_episode=8, stop_value=1
    ),
    policy=dict(
        model=dict(obs_shape=8, action_shape=2, encoder_hidden_size_list=[64, 64]),
        discount_factor=0.9,
        learn=dict(update_per_collect=8, batch_size=64, learning_rate=1e-3, target_update_freq=100),
        collect=dict(n_sample=32),
        eval=dict(evaluator=dict(eval_freq=100)),
        other=dict(eps=dict(type="linear", start=1.0, end=0.05, decay=2000)),
    ),
)
create_config = dict(env=dict(type="gymnasium"), policy=dict(type="dqn"), replay_buffer=dict(type="naive"))

if __name__ == "__main__":
    with exit_on_interrupt():  # Ctrl-C/SIGTERM: one line and exit status 130, as ding-ray
        parser = argparse.ArgumentParser(
            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        parser.add_argument("--seed", type=int, help="default 0; a resumed run's own")
        parser.add_argument("--max-env-step", type=int, help="default 20,000; a resumed run's own")
        parser.add_argument("--ray", action="store_true", help="the async pipeline on Ray (started here)")
        add_override_args(parser)  # --num-collectors N, --set key.path=value ...
        args = parser.parse_args()
        apply_override_args(args, main_config, create_config, max_env_step=20_000)
        main_config["exp_name"] = f"custom_env_seed{args.seed}"
        train = entry.ray_pipeline if args.ray else entry.serial_pipeline
        train(
            (main_config, create_config), seed=args.seed, max_env_step=args.max_env_step, resume=args.resume
        )
        print(json.dumps(entry.read_result(args.resume or main_config["exp_name"])))
