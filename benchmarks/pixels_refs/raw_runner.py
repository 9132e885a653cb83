"""The raw ceiling: ale-py's native vector env stepping Pong with a random policy, in one process.

Started by ``benchmarks/bench_pixels.py`` (in any venv with ale-py >= 0.11, ding_ray's own
included); prints one ``RESULT {json}`` line. ``AtariVectorEnv``'s defaults are the standard
preprocessing: frame skip 4 with max-pooling, 84x84 grayscale, a stack of 4, up to 30 no-op
resets, fire reset. One env step = one agent step (4 emulator frames).

``--batch-size 4`` (of 8 envs) runs the vector env asynchronously: each call hands actions to
the 4 envs it got last and returns the next 4 ready. ``--processes 2`` splits the envs and threads
over 2 processes, each its own vector env (the layout of 2 collector actors, without their work).

``--kind async`` steps gymnasium's ``AsyncVectorEnv`` instead (one process per env, each with
``AtariPreprocessing`` and ``FrameStackObservation``): the ceiling of process-based env managers.
"""

from __future__ import annotations

import argparse
import multiprocessing

import numpy as np
from timing import measure, report


def make_ale_vector(num_envs: int, num_threads: int, batch_size: int):
    from ale_py.vector_env import AtariVectorEnv

    return AtariVectorEnv("pong", num_envs=num_envs, num_threads=num_threads, batch_size=batch_size)


def make_async(num_envs: int):
    import ale_py
    import gymnasium as gym
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    gym.register_envs(ale_py)

    def make():
        env = gym.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0)
        return FrameStackObservation(AtariPreprocessing(env, frame_skip=4, noop_max=30), 4)

    return gym.vector.AsyncVectorEnv([make] * num_envs)


def run(args: argparse.Namespace) -> dict:
    """Step the envs of ``args`` for the timed window; the measured figures."""
    if args.kind == "ale_vector":
        envs = make_ale_vector(args.num_envs, args.num_threads, args.batch_size)
    else:
        envs = make_async(args.num_envs)
    batch = args.batch_size if args.kind == "ale_vector" and args.batch_size else args.num_envs
    obs, _ = envs.reset(seed=args.seed)
    assert obs.shape == (batch, 4, 84, 84) and obs.dtype == np.uint8, (obs.shape, obs.dtype)
    rng = np.random.default_rng(args.seed)
    n = envs.single_action_space.n

    def step() -> int:
        # With a batch below num_envs, each call acts for the envs of the last batch and returns the
        # first ones ready (EnvPool's asynchronous mode): the threads never wait for Python.
        envs.step(rng.integers(0, n, size=batch))
        return batch

    result = measure(step, args.seconds, args.warmup)
    envs.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=("ale_vector", "async"), default="ale_vector")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--num-threads", type=int, default=2)
    parser.add_argument(
        "--batch-size",
        type=int,
        default=0,
        help="ale_vector: envs per step call; below num-envs, asynchronous",
    )
    parser.add_argument(
        "--processes", type=int, default=1, help="split the envs and threads over this many processes"
    )
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.processes == 1:
        report(run(args))
        return
    # The layout of 2 collector actors without any of their work: each process steps its share
    # of the envs at once; the timed windows overlap but for the start-up skew (well under a second).
    shares = [
        argparse.Namespace(
            **dict(
                vars(args),
                num_envs=args.num_envs // args.processes,
                num_threads=max(1, args.num_threads // args.processes),
                seed=args.seed + i,
            )
        )
        for i in range(args.processes)
    ]
    with multiprocessing.get_context("spawn").Pool(args.processes) as pool:
        results = pool.map(run, shares)
    report(
        dict(
            env_steps=sum(r["env_steps"] for r in results),
            seconds=max(r["seconds"] for r in results),
            steps_per_s=sum(r["steps_per_s"] for r in results),
            load=max(r["load"] for r in results),
        )
    )


if __name__ == "__main__":
    main()
