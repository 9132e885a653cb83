"""The raw ceiling: ale-py's native vector env stepping Pong with a random policy, in one process.

Started by ``benchmarks/bench_pixels.py`` (in any venv with ale-py >= 0.11, ding_ray's own
included); prints one ``RESULT {json}`` line. ``AtariVectorEnv``'s defaults are the standard
preprocessing: frame skip 4 with max-pooling, 84x84 grayscale, a stack of 4, up to 30 no-op
resets, fire reset. One env step = one agent step (4 emulator frames).

``--kind async`` steps gymnasium's ``AsyncVectorEnv`` instead (one process per env, each with
``AtariPreprocessing`` and ``FrameStackObservation``): the ceiling of process-based env managers.
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import measure, report


def make_ale_vector(num_envs: int, num_threads: int):
    from ale_py.vector_env import AtariVectorEnv

    return AtariVectorEnv("pong", num_envs=num_envs, num_threads=num_threads)


def make_async(num_envs: int):
    import ale_py
    import gymnasium as gym
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    gym.register_envs(ale_py)

    def make():
        env = gym.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0)
        return FrameStackObservation(AtariPreprocessing(env, frame_skip=4, noop_max=30), 4)

    return gym.vector.AsyncVectorEnv([make] * num_envs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=("ale_vector", "async"), default="ale_vector")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--num-threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    args = parser.parse_args()

    if args.kind == "ale_vector":
        envs = make_ale_vector(args.num_envs, args.num_threads)
    else:
        envs = make_async(args.num_envs)
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (args.num_envs, 4, 84, 84) and obs.dtype == np.uint8, (obs.shape, obs.dtype)
    rng = np.random.default_rng(0)
    n = envs.single_action_space.n

    def step() -> int:
        envs.step(rng.integers(0, n, size=args.num_envs))
        return args.num_envs

    result = measure(step, args.seconds, args.warmup)
    envs.close()
    report(result)


if __name__ == "__main__":
    main()
