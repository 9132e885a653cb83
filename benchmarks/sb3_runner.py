"""Stable-Baselines3 SAC with rl-zoo3's MuJoCo settings, evaluated as dizoo's configs evaluate (run
in a venv with stable-baselines3; started by ``bench_dizoo_parity.py --only sb3``).

rl-zoo3's ``sac.yml`` for Hopper, Walker2d, HalfCheetah and Ant: ``MlpPolicy`` (256x256), 10,000
random steps first (``learning_starts``), and SB3's defaults otherwise (lr 3e-4, batch 256,
buffer 1M, tau 0.005, gamma 0.99, one gradient step per env step, entropy coefficient learned).
Every ``EVAL_EVERY`` env steps, ``N_EPISODES`` deterministic episodes on a separate env; each
evaluation is written to ``evaluations.json`` as ``di_engine_runner.py`` writes DI-engine's.

Run:  python sb3_runner.py Hopper-v5 SEED MAX_ENV_STEP
"""

import json
import sys
import time

START = time.perf_counter()

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from stable_baselines3 import SAC  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402

EVAL_EVERY = 5000  # env steps, as ding_ray's hopper_sac example evaluates
N_EPISODES = 8  # dizoo hopper_sac_config's n_evaluator_episode


class Evaluations(BaseCallback):
    def __init__(self, env_id: str, seed: int) -> None:
        super().__init__()
        self.env = gym.make(env_id)
        self.seed = seed
        self.evaluations: list[dict] = []

    def _evaluate(self) -> None:
        returns = []
        for episode in range(N_EPISODES):
            obs, _ = self.env.reset(seed=10_000 + 100 * self.seed + episode)
            done, total = False, 0.0
            while not done:
                action, _ = self.model.predict(obs, deterministic=True)
                obs, reward, terminated, truncated, _ = self.env.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
        self.evaluations.append(
            dict(
                env_step=int(self.num_timesteps),
                return_mean=float(np.mean(returns)),
                since_launch_s=time.perf_counter() - START,
            )
        )

    def _on_step(self) -> bool:
        if self.num_timesteps % EVAL_EVERY == 0:
            self._evaluate()
        return True


def main(env_id: str, seed: int, max_env_step: int) -> None:
    torch.set_num_threads(1)  # as every ding_ray process: on 2 cores more threads only contend
    model = SAC("MlpPolicy", gym.make(env_id), learning_starts=10_000, seed=seed, verbose=0, device="cpu")
    callback = Evaluations(env_id, seed)
    try:
        model.learn(total_timesteps=max_env_step, callback=callback)
    finally:
        with open("evaluations.json", "w") as f:
            json.dump(dict(evaluations=callback.evaluations, wall_s=time.perf_counter() - START), f)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
