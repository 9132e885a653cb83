"""Sample Factory 2's sampler on Pong (its ``sf_examples`` Atari setup), in Sample Factory's own venv.

Started by ``benchmarks/bench_pixels.py`` with the Python of ``.cache/bench_venvs/sample_factory``;
prints one ``RESULT {json}`` line. Sample Factory's own sampler-only loop
(``SyncSamplingAPI``, as ``sf_examples/sampler/use_simplified_sampling_api.py``) with the Atari
defaults of ``sf_examples.atari`` (``atari_pong`` = ``PongNoFrameskip-v4``, 30 no-ops, max-and-skip
4, fire reset, 84x84 grayscale, a stack of 4; the Nature CNN ``convnet_atari`` with input
normalisation; rollout 128) but ``--num_workers 2 --num_envs_per_worker 4 --device cpu``: 2
rollout-worker processes and Sample Factory's inference worker, trajectories in its shared-memory
buffers. One env step = one agent step (4 emulator frames); Sample Factory's "FPS with frameskip"
is 4 x this. Arguments after ``--`` go to Sample Factory's parser (e.g. ``--worker_num_splits 2``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile

# ale-py 0.9 registers the ALE ids with gymnasium 0.29 on import; Sample Factory's env processes
# are spawned and import this module again, so the import sits at the top.
import ale_py  # noqa: F401
from timing import measure, report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--envs-per-worker", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    args, sf_args = parser.parse_known_args()
    sf_args = [a for a in sf_args if a != "--"]

    from sample_factory.algo.sampling.simplified_sampling_api import SyncSamplingAPI
    from sample_factory.algo.utils.env_info import obtain_env_info_in_a_separate_process
    from sample_factory.algo.utils.rl_utils import samples_per_trajectory
    from sf_examples.atari.train_atari import parse_atari_args, register_atari_components

    train_dir = tempfile.mkdtemp(prefix="sf_bench_")
    register_atari_components()
    cfg = parse_atari_args(
        [
            "--env=atari_pong",
            "--experiment=bench_pixels",
            f"--train_dir={train_dir}",
            f"--num_workers={args.num_workers}",
            f"--num_envs_per_worker={args.envs_per_worker}",
            "--device=cpu",
            *sf_args,
        ]
    )
    env_info = obtain_env_info_in_a_separate_process(cfg)
    sampler = SyncSamplingAPI(cfg, env_info)
    sampler.start()

    def step() -> int:
        trajectory = sampler.get_trajectories_sync()
        if trajectory is None:
            sys.exit("Sample Factory's sampler stopped")
        return samples_per_trajectory(trajectory)

    result = measure(step, args.seconds, args.warmup)
    sampler.stop()
    shutil.rmtree(train_dir, ignore_errors=True)
    keys = (
        "num_workers",
        "num_envs_per_worker",
        "worker_num_splits",
        "batched_sampling",
        "rollout",
        "device",
    )
    report(dict(result, config={key: getattr(cfg, key) for key in (*keys, "encoder_conv_architecture")}))


if __name__ == "__main__":
    main()
