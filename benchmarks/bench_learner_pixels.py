"""Learner samples/s of ding_ray's DQN on Atari-sized frames vs a plain PyTorch DQN update loop.

Both train the Nature CNN (conv 32 8x8/4, 64 4x4/2, 64 3x3/1, linear 512; then a 512 hidden layer
and one Q-value per action: ding_ray's non-dueling DQN head) with double-DQN 1-step targets, Adam
and a hard target update, on the same batches of 32 uint8 (4, 84, 84) frames (columnar numpy
dicts, as a replay buffer's ``sample`` gives them). ding_ray's side is its policy's learn mode
(``learn_mode.forward(batch)``: tensors from numpy, the model scaling the uint8 frames itself);
the plain side is the CleanRL-style loop written out below, once with torch's default Adam (what
such a loop usually has: ``plain_torch``) and once with the fused Adam ding_ray uses where torch has
it (``plain_torch_fused``: the like-for-like reference, so its ratio is ding_ray's own overhead).
The sides take turns gradient step by gradient step in one process, with torch's threads as
ding_ray sets them for a learner (``policy.learn.num_threads``), so that the load of a shared
machine falls on all of them alike; samples/s is the batch size over the median step time (the
mean is printed too).

Run:  python benchmarks/bench_learner_pixels.py [--device cpu|cuda] [--batch 32] [--threads 1]
          [--iters 10] [--rounds 3]
Prints one ``bench_learner_pixels ...`` line per side and a ratio line per plain side, and writes
them to ``benchmarks/results/learner_pixels_<device>.json``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F
from results_io import write_result
from torch import nn

from ding_ray.policy import create_policy
from ding_ray.utils.runtime import set_torch_threads

OBS_SHAPE, ACTIONS, GAMMA, LR, TARGET_UPDATE = (4, 84, 84), 6, 0.99, 1e-4, 500


def make_batches(n: int, batch_size: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [
        dict(
            obs=rng.integers(0, 256, (batch_size, *OBS_SHAPE), dtype=np.uint8),
            next_obs=rng.integers(0, 256, (batch_size, *OBS_SHAPE), dtype=np.uint8),
            action=rng.integers(0, ACTIONS, batch_size),
            reward=rng.normal(size=batch_size).astype(np.float32),
            done=rng.random(batch_size) < 0.01,
        )
        for _ in range(n)
    ]


def ding_ray_learner(device: str, batch_size: int, threads: int):
    cfg = dict(
        type="dqn",
        cuda=device == "cuda",
        discount_factor=GAMMA,
        model=dict(obs_shape=list(OBS_SHAPE), action_shape=ACTIONS, dueling=False),
        learn=dict(
            batch_size=batch_size, learning_rate=LR, target_update_freq=TARGET_UPDATE, num_threads=threads
        ),
    )
    policy = create_policy(cfg, enable_field=["learn"])
    set_torch_threads(policy._cfg.learn.num_threads)  # as ding_ray's learner process does
    return policy.learn_mode.forward


class NatureQNetwork(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(OBS_SHAPE[0], 32, 8, 4),
            nn.ReLU(),
            nn.Conv2d(32, 64, 4, 2),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, 1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(64 * 7 * 7, 512),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, ACTIONS),
        )

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs.float() / 255.0)


def plain_learner(device: str, fused: bool = False):
    q_network = NatureQNetwork().to(device)
    target_network = NatureQNetwork().to(device)
    target_network.load_state_dict(q_network.state_dict())
    optimizer = torch.optim.Adam(q_network.parameters(), lr=LR, fused=fused or None)
    step = 0

    def update(batch: dict[str, np.ndarray]) -> float:
        nonlocal step
        obs = torch.from_numpy(batch["obs"]).to(device)
        next_obs = torch.from_numpy(batch["next_obs"]).to(device)
        action = torch.from_numpy(batch["action"]).to(device)
        reward = torch.from_numpy(batch["reward"]).to(device)
        done = torch.from_numpy(batch["done"]).to(device).float()
        with torch.no_grad():
            next_action = q_network(next_obs).argmax(-1, keepdim=True)
            target_max = target_network(next_obs).gather(1, next_action).squeeze(1)
            td_target = reward + GAMMA * target_max * (1 - done)
        q_value = q_network(obs).gather(1, action.unsqueeze(1)).squeeze(1)
        loss = F.mse_loss(q_value, td_target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        if step % TARGET_UPDATE == 0:
            target_network.load_state_dict(q_network.state_dict())
        return loss.item()

    return update


def seconds(update, batch: dict[str, np.ndarray], device: str) -> float:
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    update(batch)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--iters", type=int, default=10, help="batches (gradient steps per side per round)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32, help="batch size (DI-engine's pong_dqn: 32)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (policy.learn.num_threads)")
    args = parser.parse_args()
    torch.manual_seed(0)
    sides = {
        "ding_ray": ding_ray_learner(args.device, args.batch, args.threads),
        "plain_torch": plain_learner(args.device),
        "plain_torch_fused": plain_learner(args.device, fused=True),
    }
    batches = make_batches(args.iters, args.batch)
    for update in sides.values():  # warm-up: allocator, kernels, Adam state
        for batch in batches[:2]:
            update(batch)
    steps: dict[str, list[float]] = {side: [] for side in sides}
    for _ in range(args.rounds):
        for batch in batches:
            for side, update in sides.items():
                steps[side].append(seconds(update, batch, args.device))
    # The median step: other processes on a shared machine stretch single steps, not the typical one.
    median = {side: args.batch / statistics.median(times) for side, times in steps.items()}
    threads = torch.get_num_threads()
    rows = []
    for side, rate in median.items():
        mean = len(steps[side]) * args.batch / sum(steps[side])
        row = dict(side=side, device=args.device, threads=threads, batch=args.batch)
        rows.append(
            dict(row, samples_per_s=round(rate, 1), mean_samples_per_s=round(mean, 1), steps=len(steps[side]))
        )
        print(
            f"bench_learner_pixels side={side} device={args.device} threads={threads} batch={args.batch} "
            f"samples_per_s={rate:.1f} mean_samples_per_s={mean:.1f} steps={len(steps[side])}",
            flush=True,
        )
    ratio = {}
    for plain in ("plain_torch", "plain_torch_fused"):
        ratio[f"ding_ray/{plain}"] = round(median["ding_ray"] / median[plain], 3)
        print(
            f"bench_learner_pixels_ratio ding_ray_over_{plain}={ratio[f'ding_ray/{plain}']:.3f} "
            f"device={args.device}",
            flush=True,
        )
    reference = (
        "measured in the same run, step by step in turn: the CleanRL-style loop written in this script "
        "with torch's default Adam (plain_torch) and with fused Adam as ding_ray uses (plain_torch_fused)"
    )
    write_result(f"learner_pixels_{args.device}", rows, reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
