"""Env steps per second of collection, against the loops that bound it, measured in one run.

Rows:
  raw_gym          one gymnasium CartPole-v1 env, random actions (the limit of the env itself)
  bare_batched     8 gymnasium envs, one batched forward of the DQN net per step, no bookkeeping
  serial_collector SampleSerialCollector, 8 envs, DQN policy, eps-greedy (what the pipelines run)

Run:  python benchmarks/bench_collect.py [--seconds 3]
Prints one ``bench_collect name=value ...`` line per figure.
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import gymnasium as gym
import numpy as np
import torch

from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.model import DQN
from ding_ray.policy import DQNPolicy
from ding_ray.utils.runtime import set_torch_threads
from ding_ray.worker import SampleSerialCollector

ENV_NUM = 8
MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[128, 128, 64], dueling=True)


def raw_gym(seconds: float) -> float:
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(1000):
            _, _, terminated, truncated, _ = env.step(int(rng.integers(2)))
            if terminated or truncated:
                env.reset()
        steps += 1000
    return steps / (time.perf_counter() - start)


def bare_batched(seconds: float) -> float:
    envs = [gym.make("CartPole-v1") for _ in range(ENV_NUM)]
    obs = np.stack([env.reset(seed=i)[0] for i, env in enumerate(envs)])
    net = DQN(**MODEL)
    steps, start = 0, time.perf_counter()
    with torch.inference_mode():
        while time.perf_counter() - start < seconds:
            for _ in range(100):
                action = net(torch.from_numpy(obs))["logit"].argmax(-1).numpy()
                for i, env in enumerate(envs):
                    o, _, terminated, truncated, _ = env.step(int(action[i]))
                    obs[i] = env.reset()[0] if terminated or truncated else o
            steps += 100 * ENV_NUM
    return steps / (time.perf_counter() - start)


def serial_collector(seconds: float) -> float:
    env_fn, cfgs, _ = get_vec_env_setting(
        dict(env_id="CartPole-v1", collector_env_num=ENV_NUM, evaluator_env_num=1)
    )
    env = create_env_manager(dict(type="base"), [partial(env_fn, cfg=c) for c in cfgs])
    env.seed(0)
    policy = DQNPolicy(dict(model=MODEL), enable_field=["collect"])
    collector = SampleSerialCollector(dict(n_sample=256), env, policy.collect_mode)
    collector.collect(policy_kwargs={"eps": 0.1})  # warm-up
    start_steps, start = collector.envstep, time.perf_counter()
    while time.perf_counter() - start < seconds:
        collector.collect(policy_kwargs={"eps": 0.1})
    rate = (collector.envstep - start_steps) / (time.perf_counter() - start)
    collector.close()
    return rate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    set_torch_threads(1)
    raw = raw_gym(args.seconds)
    bare = bare_batched(args.seconds)
    serial = serial_collector(args.seconds)
    print(f"bench_collect raw_gym_steps_per_s={raw:.0f}")
    print(f"bench_collect bare_batched_steps_per_s={bare:.0f} ratio_to_raw={bare / raw:.3f}")
    print(
        f"bench_collect serial_collector_steps_per_s={serial:.0f} ratio_to_raw={serial / raw:.3f} "
        f"ratio_to_bare_batched={serial / bare:.3f}"
    )


if __name__ == "__main__":
    main()
