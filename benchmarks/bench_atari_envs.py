"""Env steps per second of 8 Pong envs (DeepMind preprocessing: 84x84 grayscale, 4 frames skipped
and max-pooled, 4 stacked, uint8), random actions, in one run:

  raw_vector      ale-py's AtariVectorEnv stepped directly in this process (C++ threads): the ceiling
  gym_async       gymnasium's AsyncVectorEnv, a process per env with AtariPreprocessing and
                  FrameStackObservation (shared memory)
  ding_base       ding_ray's 'base' manager over env type 'atari' (all envs in this process)
  ding_subprocess ding_ray's 'subprocess' manager over env type 'atari' (a process per env)
  ding_vector     ding_ray's 'atari_vector' manager (AtariVectorEnv behind the env-manager API)

The kinds are timed in turns, window after window, so other load on the machine hits them alike;
each figure is the best of ``--windows`` windows. An env step is one env's step (8 per call).
ratio_to_raw is each figure over raw_vector's. A last line times raw_vector and ding_vector one call
of each in turn (the overhead of the manager's API over the bare vector env, robust to other load).

Run:  python benchmarks/bench_atari_envs.py [--envs 8] [--seconds 2] [--windows 3]
Prints one ``bench_atari_envs kind=... env_steps_per_s=... ratio_to_raw=...`` line per kind and
writes them to ``benchmarks/results/atari_envs.json``.
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import gymnasium as gym
import numpy as np
from results_io import write_result

from ding_ray.envs import AtariEnv, create_env_manager
from ding_ray.envs.game_ids import ensure_registered

ENV_ID = "PongNoFrameskip-v4"
ACTIONS = 6


def make_gym_env() -> gym.Env:
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    ensure_registered(ENV_ID)
    return FrameStackObservation(AtariPreprocessing(gym.make(ENV_ID), noop_max=30), 4)


class Raw:
    def __init__(self, n: int) -> None:
        from ale_py.vector_env import AtariVectorEnv

        self.vec = AtariVectorEnv("pong", n, autoreset_mode="SameStep", reward_clipping=True)
        self.vec.reset(seed=0)
        self.n = n

    def run(self, rng: np.random.Generator, seconds: float) -> float:
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            self.vec.step(rng.integers(ACTIONS, size=self.n))
            steps += self.n
        return steps / (time.perf_counter() - start)

    def close(self) -> None:
        self.vec.close()


def interleaved(raw: Raw, ding: Ding, rng: np.random.Generator, calls: int) -> tuple[float, float]:
    """Env steps/s of raw_vector and ding_vector, one call of each in turn: load that comes and goes
    on a shared machine hits both alike, so their ratio holds where the windows' figures wander."""
    spent = [0.0, 0.0]
    for _ in range(calls):
        start = time.perf_counter()
        raw.vec.step(rng.integers(ACTIONS, size=raw.n))
        middle = time.perf_counter()
        ready = ding.env.ready_obs
        ding.env.step(dict(zip(ready, rng.integers(ACTIONS, size=len(ready)).tolist())))
        spent[0] += middle - start
        spent[1] += time.perf_counter() - middle
    return raw.n * calls / spent[0], raw.n * calls / spent[1]


class GymAsync(Raw):
    def __init__(self, n: int) -> None:
        self.vec = gym.vector.AsyncVectorEnv([make_gym_env] * n, shared_memory=True)
        self.vec.reset(seed=0)
        self.n = n


class Ding:
    def __init__(self, n: int, manager: str) -> None:
        cfg = dict(env_id=ENV_ID, is_train=True)
        self.env = create_env_manager(dict(type=manager), [partial(AtariEnv, cfg=cfg)] * n)
        self.env.seed(0)
        self.env.launch()

    def run(self, rng: np.random.Generator, seconds: float) -> float:
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            ready = self.env.ready_obs
            actions = dict(zip(ready, rng.integers(ACTIONS, size=len(ready)).tolist()))
            steps += len(self.env.step(actions))
        return steps / (time.perf_counter() - start)

    def close(self) -> None:
        self.env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one timing window")
    parser.add_argument("--windows", type=int, default=3, help="windows per kind (the best counts)")
    parser.add_argument("--kinds", nargs="+", default=None, help="a subset of the kinds")
    parser.add_argument(
        "--interleaved-calls", type=int, default=500, help="calls of each in the interleaved pair"
    )
    args = parser.parse_args()
    makers = {
        "raw_vector": lambda: Raw(args.envs),
        "gym_async": lambda: GymAsync(args.envs),
        "ding_base": lambda: Ding(args.envs, "base"),
        "ding_subprocess": lambda: Ding(args.envs, "subprocess"),
        "ding_vector": lambda: Ding(args.envs, "atari_vector"),
    }
    kinds = args.kinds or list(makers)
    runners = {kind: makers[kind]() for kind in kinds}
    rng = np.random.default_rng(0)
    best = dict.fromkeys(kinds, 0.0)
    try:
        for runner in runners.values():  # warm up: first resets, page faults, process start
            runner.run(rng, 0.3)
        for _ in range(args.windows):
            for kind, runner in runners.items():
                best[kind] = max(best[kind], runner.run(rng, args.seconds))
        if "raw_vector" in runners and "ding_vector" in runners:
            pair = interleaved(runners["raw_vector"], runners["ding_vector"], rng, args.interleaved_calls)
    finally:
        for runner in runners.values():
            runner.close()
    raw = best.get("raw_vector")
    rows = [dict(kind=kind, envs=args.envs, env_steps_per_s=round(best[kind])) for kind in kinds]
    ratio = {
        f"{kind}/raw_vector": round(best[kind] / raw, 3) for kind in kinds if raw and kind != "raw_vector"
    }
    for row in rows:
        share = ratio.get(f"{row['kind']}/raw_vector")
        print(
            f"bench_atari_envs kind={row['kind']} envs={args.envs} env_steps_per_s={row['env_steps_per_s']}"
            + ("" if share is None else f" ratio_to_raw={share:.3f}")
        )
    if "raw_vector" in runners and "ding_vector" in runners:
        rows.append(
            dict(kind="interleaved", envs=args.envs, raw_vector_steps_per_s=round(pair[0]),
                 ding_vector_steps_per_s=round(pair[1]))
        )  # fmt: skip
        ratio["ding_vector/raw_vector interleaved"] = round(pair[1] / pair[0], 3)
        print(
            f"bench_atari_envs kind=interleaved envs={args.envs} raw_vector_steps_per_s={pair[0]:.0f} "
            f"ding_vector_steps_per_s={pair[1]:.0f} ratio_to_raw={pair[1] / pair[0]:.3f}"
        )
    reference = (
        "raw_vector, measured in the same run: ale-py's AtariVectorEnv stepped directly in this process; "
        "'interleaved' times it call by call in turn with ding_vector"
    )
    write_result("atari_envs", rows, reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
