"""Env steps per second of collection, against the loops that bound it, measured in one run.

Rows:
  raw_gym          one gymnasium CartPole-v1 env, random actions (the limit of the env itself)
  bare_batched     8 gymnasium envs, one batched forward of the DQN net per step, no bookkeeping
  serial_collector SampleSerialCollector, 8 envs, DQN policy, eps-greedy (what the pipelines run)
  ray_collectors_1 / ray_collectors_2
                   1 and 2 collector actors (the same collector inside), each call pushing its
                   batch to a replay-buffer actor, one call in flight per collector
Every collect call gathers N_SAMPLE (512) transitions.

Run:  python benchmarks/bench_collect.py [--seconds 3]
Prints one ``bench_collect name=value ...`` line per figure and writes them to
``benchmarks/results/collect.json``.
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import gymnasium as gym
import numpy as np
import torch
from results_io import write_result

from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.model import DQN
from ding_ray.policy import DQNPolicy
from ding_ray.utils.runtime import set_torch_threads
from ding_ray.worker import SampleSerialCollector

ENV_NUM = 8
N_SAMPLE = 512  # transitions per collect call (64 steps of the 8 envs): each Ray call costs the
# driver and the buffer a fixed overhead, which on 2 busy cores comes out of the collectors' share
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
    collector = SampleSerialCollector(dict(n_sample=N_SAMPLE), env, policy.collect_mode)
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
    one, two = ray_collector_rows(args.seconds, raw, serial)
    figures = dict(
        raw_gym=raw, bare_batched=bare, serial_collector=serial, ray_collectors_1=one, ray_collectors_2=two
    )
    ratio = {
        "serial_collector/bare_batched": serial / bare,
        "serial_collector/raw_gym": serial / raw,
        "ray_collectors_1/serial_collector": one / serial,
        "ray_collectors_2/serial_collector": two / serial,
        "ray_collectors_2/ray_collectors_1": two / one,
    }
    reference = (
        "measured in the same run: raw_gym (one CartPole-v1 env, random actions) and bare_batched "
        f"({ENV_NUM} envs, one batched forward of the same net per step, no bookkeeping); env steps/s"
    )
    write_result(
        "collect",
        {f"{name}_steps_per_s": round(value) for name, value in figures.items()},
        reference=reference,
        ratio={name: round(value, 3) for name, value in ratio.items()},
    )


# ----- Ray rows: collector actors feeding a buffer actor --------------------------------------------


def ray_collectors(seconds: float, num_collectors: int) -> float:
    """Env steps/s of ``num_collectors`` collector actors pushing to one buffer actor."""
    import ray

    from ding_ray.distributed import BufferActor, CollectorActor
    from ding_ray.entry import compile_ray_config

    main_cfg = dict(
        exp_name="/tmp/bench_collect",
        env=dict(env_id="CartPole-v1", collector_env_num=ENV_NUM, evaluator_env_num=1),
        policy=dict(
            model=MODEL,
            collect=dict(n_sample=N_SAMPLE),
            other=dict(replay_buffer=dict(replay_buffer_size=100_000)),
        ),
    )
    create_cfg = dict(env=dict(type="gymnasium"), policy=dict(type="dqn"), replay_buffer=dict(type="naive"))
    cfg = compile_ray_config((main_cfg, create_cfg), seed=0, save_cfg=False)
    namespace = f"bench_collect_{num_collectors}"
    buffer = (
        ray.remote(BufferActor)
        .options(name="buffer", namespace=namespace, num_cpus=0.1)
        .remote(cfg.policy.other.replay_buffer, cfg.exp_name)
    )
    collectors = [
        ray.remote(CollectorActor)
        .options(num_cpus=0.5, namespace=namespace)
        .remote(cfg, i, buffer_namespace=namespace)
        for i in range(num_collectors)
    ]
    kwargs = {"eps": 0.1}
    ray.get([c.collect.remote(None, 0, kwargs) for c in collectors])  # started and warm
    in_flight = {c.collect.remote(None, 0, kwargs): c for c in collectors}
    rate = 0.0
    # The best of 3 windows: Ray's own processes settle during the first
    # seconds after ray.init, and other load on a small machine comes and goes.
    for _ in range(3):
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            [ref], _ = ray.wait(list(in_flight), num_returns=1)
            collector = in_flight.pop(ref)
            steps += ray.get(ref)["new_env_steps"]
            in_flight[collector.collect.remote(None, 0, kwargs)] = collector
        rate = max(rate, steps / (time.perf_counter() - start))
    ray.get(list(in_flight))
    for actor in [buffer, *collectors]:
        ray.kill(actor)
    return rate


def ray_collector_rows(seconds: float, raw: float, serial: float) -> tuple[float, float]:
    """Env steps/s of 1 and 2 collector actors, printed beside the serial figures."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False)
    one = ray_collectors(seconds, 1)
    two = ray_collectors(seconds, 2)
    ray.shutdown()
    print(
        f"bench_collect ray_collectors_1_steps_per_s={one:.0f} ratio_to_raw={one / raw:.3f} "
        f"ratio_to_serial={one / serial:.3f}"
    )
    print(
        f"bench_collect ray_collectors_2_steps_per_s={two:.0f} ratio_to_raw={two / raw:.3f} "
        f"ratio_to_serial={two / serial:.3f} ratio_to_1_collector={two / one:.3f}"
    )
    return one, two


if __name__ == "__main__":
    main()
