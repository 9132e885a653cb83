"""Learner samples/s of ding_ray's policies on CPU and on a GPU: what moving a learner to a GPU buys.

Two learners, each its policy's learn mode (``learn_mode.forward(batch)`` on columnar numpy
batches, as a replay buffer's ``sample`` gives them):
- ``dqn_pong_cnn``: DQN on dizoo pong_dqn's conv encoder (``encoder_hidden_size_list=[128, 128, 512]``,
  wider than the Nature CNN of ``bench_learner_pixels``), uint8 (4, 84, 84) frames;
- ``sac_mlp``: SAC on Hopper-sized vectors (11 obs, 3 actions, 256x256 MLPs, twin critics), the
  dizoo hopper_sac batch of 256.
Each is timed on the CPU with torch on ``--cpu-threads`` threads (a list: 1 is what a ding_ray
learner process uses by default) and on ``cuda`` when there is one; samples/s is the batch size
over the median step time. The GPU-vs-CPU ratio lines compare the GPU with each CPU setting.

Run:  python benchmarks/bench_learner_device.py [--cpu-threads 1 16] [--iters 30]
Prints one ``bench_learner_device ...`` line per learner, device and batch, and ratio lines, and
writes them to ``benchmarks/results/learner_device_<gpu>.json`` (``learner_device_cpu.json`` without one).
"""

from __future__ import annotations

import argparse
import re
import statistics
import time

import numpy as np
import torch
from results_io import write_result

from ding_ray.policy import create_policy


def dqn_pong_cnn(batch_size: int, cuda: bool):
    cfg = dict(
        type="dqn",
        cuda=cuda,
        model=dict(obs_shape=[4, 84, 84], action_shape=6, encoder_hidden_size_list=[128, 128, 512]),
        learn=dict(batch_size=batch_size, learning_rate=1e-4, target_update_freq=500),
    )
    rng = np.random.default_rng(0)

    def batch() -> dict[str, np.ndarray]:
        return dict(
            obs=rng.integers(0, 256, (batch_size, 4, 84, 84), dtype=np.uint8),
            next_obs=rng.integers(0, 256, (batch_size, 4, 84, 84), dtype=np.uint8),
            action=rng.integers(0, 6, batch_size),
            reward=rng.normal(size=batch_size).astype(np.float32),
            done=rng.random(batch_size) < 0.01,
        )

    return create_policy(cfg, enable_field=["learn"]).learn_mode.forward, batch


def sac_mlp(batch_size: int, cuda: bool):
    cfg = dict(
        type="sac",
        cuda=cuda,
        model=dict(obs_shape=11, action_shape=3, twin_critic=True, action_space="reparameterization"),
        learn=dict(batch_size=batch_size, learning_rate_q=1e-3, learning_rate_policy=1e-3),
    )
    rng = np.random.default_rng(0)

    def batch() -> dict[str, np.ndarray]:
        return dict(
            obs=rng.normal(size=(batch_size, 11)).astype(np.float32),
            next_obs=rng.normal(size=(batch_size, 11)).astype(np.float32),
            action=rng.uniform(-1, 1, (batch_size, 3)).astype(np.float32),
            reward=rng.normal(size=batch_size).astype(np.float32),
            done=rng.random(batch_size) < 0.01,
        )

    return create_policy(cfg, enable_field=["learn"]).learn_mode.forward, batch


LEARNERS = {"dqn_pong_cnn": (dqn_pong_cnn, [32, 256]), "sac_mlp": (sac_mlp, [256, 1024])}


def samples_per_s(make, batch_size: int, cuda: bool, iters: int) -> float:
    forward, batch = make(batch_size, cuda)
    batches = [batch() for _ in range(min(iters, 8))]
    for b in batches[:3]:  # warm-up: allocator, kernels, optimizer state
        forward(b)
    times = []
    for i in range(iters):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        forward(batches[i % len(batches)])
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return batch_size / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpu-threads", type=int, nargs="+", default=[1])
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--learners", nargs="+", default=list(LEARNERS), choices=list(LEARNERS))
    args = parser.parse_args()
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    rows, ratio = [], {}
    for name in args.learners:
        make, batch_sizes = LEARNERS[name]
        for batch_size in batch_sizes:
            rates: dict[str, float] = {}
            for threads in args.cpu_threads:
                torch.set_num_threads(threads)
                rates[f"cpu{threads}"] = samples_per_s(make, batch_size, False, args.iters)
            if gpu:
                rates["cuda"] = samples_per_s(make, batch_size, True, args.iters)
            for device, rate in rates.items():
                rows.append(dict(learner=name, batch=batch_size, device=device, samples_per_s=round(rate, 1)))
                where = f" gpu={gpu.replace(' ', '_')}" if device == "cuda" else ""
                print(
                    f"bench_learner_device learner={name} batch={batch_size} device={device} "
                    f"samples_per_s={rate:.1f}{where}",
                    flush=True,
                )
            if gpu:
                for device, rate in rates.items():
                    if device != "cuda":
                        ratio[f"{name} batch={batch_size} cuda/{device}"] = round(rates["cuda"] / rate, 2)
                        print(
                            f"bench_learner_device_ratio learner={name} batch={batch_size} "
                            f"cuda_over_{device}={rates['cuda'] / rate:.2f}",
                            flush=True,
                        )
    reference = (
        "the same learner on this machine's CPU, measured in the same run (cpuN: torch on N threads)"
        + ("" if gpu else "; no GPU here, so no ratio")
    )
    name = "learner_device_" + (re.sub(r"[^a-z0-9]+", "_", gpu.lower()).strip("_") if gpu else "cpu")
    write_result(name, rows, reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
