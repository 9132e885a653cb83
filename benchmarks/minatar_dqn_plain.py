"""A plain single-process DQN on MinAtar Breakout, CleanRL style: one env, one file, no ding_ray.

The network and hyperparameters are those of ``ding_ray/configs/minatar_breakout_dqn.py``, read from
that file (executed on its own: it is plain dicts, and nothing of ding_ray is imported), so the two
cannot drift: ding_ray's DQN network for MinAtar frames (conv 16 3x3/1, linear 128, then its head's
linear 128 + ReLU and the Q-values), double DQN, Huber loss, Adam, a gradient step every
``n_sample / update_per_collect`` env steps, a hard target update every ``target_update_freq``
gradient steps, epsilon linear over env steps, uniform random actions for the first
``random_collect_size`` env steps, greedy evaluation. Replay is uniform (the config's Ape-X side
is prioritized).

Run:  python benchmarks/minatar_dqn_plain.py --seed 0 [--max-env-step 1000000] [--eval-every 100000]
Prints one JSON line per evaluation (at env step 0, every ``--eval-every`` and at the budget):
``{"env_step", "eval_return", "eval_return_std", "wall_s"}`` (seconds from launch), then a summary.
"""

# ruff: noqa: E402 - the launch time is taken before the imports
import time

LAUNCH = time.time()

import argparse
import importlib.util
import json
import os
import random

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from minatar.gym import register_envs
from torch import nn

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ding_ray", "configs")


def load_config() -> dict:
    path = os.path.join(CONFIG, "minatar_breakout_dqn.py")
    spec = importlib.util.spec_from_file_location("_minatar_cfg", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main_config


class QNetwork(nn.Module):
    """ding_ray's DQN of the bundled config (MinAtar's encoder, no dueling), layer by layer."""

    def __init__(self, obs_shape: tuple[int, int, int], n_actions: int):
        super().__init__()
        c, h, w = obs_shape
        conv = [nn.Conv2d(c, 16, 3, 1), nn.ReLU(), nn.Flatten()]
        self.encoder = nn.Sequential(*conv, nn.Linear(16 * (h - 2) * (w - 2), 128))  # no activation
        self.head = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, n_actions))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


def to_obs(obs: np.ndarray) -> np.ndarray:
    return np.moveaxis(obs, -1, 0).astype(np.uint8)  # (10, 10, C) bool -> (C, 10, 10), as ding_ray's


def greedy(q_network: QNetwork, obs: np.ndarray) -> int:
    with torch.no_grad():
        return q_network(torch.as_tensor(obs[None], dtype=torch.float32)).argmax(1).item()


def evaluate(q_network: QNetwork, env_id: str, episodes: int, seed: int) -> list[float]:
    env, returns = gym.make(env_id), []
    obs, _ = env.reset(seed=seed)  # the same eval env at every evaluation, as ding_ray's evaluator
    while len(returns) < episodes:
        episode_return, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(greedy(q_network, to_obs(obs)))
            episode_return, done = episode_return + float(reward), terminated or truncated
        returns.append(episode_return)
        obs, _ = env.reset()
    return returns


def main(seed: int, max_env_step: int, eval_every: int, threads: int) -> None:
    cfg = load_config()
    p, learn, eps = cfg["policy"], cfg["policy"]["learn"], cfg["policy"]["other"]["eps"]
    assert p["nstep"] == 1 and not p["model"]["dueling"]
    encoder = [p["model"][k] for k in ("encoder_hidden_size_list", "encoder_kernel_size", "encoder_stride")]
    assert encoder == [[16, 128], [3], [1]]  # the network QNetwork builds
    assert eps["type"] == "linear"
    train_freq = p["collect"]["n_sample"] // learn["update_per_collect"]  # env steps per gradient step
    gamma, batch_size, learning_starts = p["discount_factor"], learn["batch_size"], p["random_collect_size"]
    random.seed(seed), np.random.seed(seed), torch.manual_seed(seed), torch.set_num_threads(threads)
    register_envs()
    env_id = cfg["env"]["env_id"]
    env = gym.make(env_id)
    env.action_space.seed(seed)
    obs_shape, n_actions = tuple(p["model"]["obs_shape"]), int(p["model"]["action_shape"])
    q_network, target_network = QNetwork(obs_shape, n_actions), QNetwork(obs_shape, n_actions)
    target_network.load_state_dict(q_network.state_dict())
    optimizer = torch.optim.Adam(q_network.parameters(), lr=learn["learning_rate"])
    size = p["other"]["replay_buffer"]["replay_buffer_size"]
    rb = dict(obs=np.zeros((size, *obs_shape), np.uint8), next_obs=np.zeros((size, *obs_shape), np.uint8))
    rb.update(
        action=np.zeros(size, np.int64), reward=np.zeros(size, np.float32), done=np.zeros(size, np.float32)
    )
    eval_s = []

    def log_eval(step: int) -> None:
        t = time.time()
        returns = evaluate(q_network, env_id, cfg["env"]["n_evaluator_episode"], seed)
        eval_s.append(time.time() - t)
        line = dict(
            env_step=step, eval_return=float(np.mean(returns)), eval_return_std=float(np.std(returns))
        )
        print(json.dumps(dict(line, wall_s=round(time.time() - LAUNCH, 1))), flush=True)

    log_eval(0)
    obs, _ = env.reset(seed=seed)
    obs, start, grad_steps = to_obs(obs), time.time(), 0
    for global_step in range(1, max_env_step + 1):
        epsilon = max(
            eps["end"], eps["start"] - (eps["start"] - eps["end"]) * (global_step - 1) / eps["decay"]
        )
        random_action = global_step <= learning_starts or random.random() < epsilon
        action = env.action_space.sample() if random_action else greedy(q_network, obs)
        next_obs, reward, terminated, truncated, _ = env.step(action)
        next_obs, i = to_obs(next_obs), (global_step - 1) % size
        for key, value in zip(rb, (obs, next_obs, action, reward, terminated)):
            rb[key][i] = value
        obs = to_obs(env.reset()[0]) if terminated or truncated else next_obs

        if global_step > learning_starts and global_step % train_freq == 0:
            idx = np.random.randint(0, min(global_step, size), batch_size)
            b = {key: torch.as_tensor(value[idx]) for key, value in rb.items()}
            b_obs, b_next_obs = b["obs"].float(), b["next_obs"].float()
            with torch.no_grad():  # double DQN: the online net picks the action, the target net values it
                next_action = q_network(b_next_obs).argmax(1, keepdim=True)
                target_max = target_network(b_next_obs).gather(1, next_action).squeeze(1)
                td_target = b["reward"] + gamma * target_max * (1 - b["done"])
            old_val = q_network(b_obs).gather(1, b["action"][:, None]).squeeze(1)
            loss = F.huber_loss(old_val, td_target, delta=learn["huber_kappa"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            grad_steps += 1
            if grad_steps % learn["target_update_freq"] == 0:
                target_network.load_state_dict(q_network.state_dict())

        if global_step % eval_every == 0 or global_step == max_env_step:
            log_eval(global_step)
    train_s = time.time() - start - sum(eval_s[1:])  # without the evaluations
    summary = dict(
        done=True, seed=seed, env_steps=max_env_step, train_iter=grad_steps, train_s=round(train_s, 1)
    )
    print(json.dumps(dict(summary, env_steps_per_s=round(max_env_step / train_s, 1))), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-env-step", type=int, default=1_000_000)
    parser.add_argument("--eval-every", type=int, default=100_000, help="env steps between evaluations")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (ding_ray's learner: 1)")
    args = parser.parse_args()
    main(args.seed, args.max_env_step, args.eval_every, args.threads)
