"""Learner samples/s of one learner actor and of a learner group of 2 (``ray.num_learners``).

Both train the CartPole DQN of ``examples/apex_dqn.py`` on the same sampled batches (put into
the object store once, 16 minibatches of 128 per call), after a warm-up call; the ratio is the
group's speed over the single learner's, measured in the same run. On a 2-core machine expect
no gain: the members share the cores and add an all-reduce per gradient; the group is for
learners on several GPUs or nodes.

Run:  python benchmarks/bench_learner_group.py [--calls 20] [--gpus 0]
Prints one ``bench_learner_group ...`` line per setting and a ratio line, and writes them to
``benchmarks/results/learner_group.json`` (``learner_group_gpu.json`` with ``--gpus``).
"""

from __future__ import annotations

import argparse
import copy
import os
import tempfile
import time

import ray
from results_io import write_result

from ding_ray.configs import load_config
from ding_ray.distributed.actors import LearnerActor
from ding_ray.distributed.learner_group import create_learner_group
from ding_ray.entry import compile_ray_config
from ding_ray.worker.rollout_worker import RolloutWorker


def samples_per_s(members: list, batch_ref, calls: int) -> float:
    ray.get([m.train.remote(batch_ref) for m in members])  # warm-up
    start = time.perf_counter()
    infos = [ray.get([m.train.remote(batch_ref) for m in members])[0] for _ in range(calls)]
    seconds = time.perf_counter() - start
    return sum(info["samples"] for info, _ in infos) / seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--gpus", type=float, default=0.0, help="GPUs per learner (also sets policy.cuda)")
    args = parser.parse_args()
    bundled = load_config("apex_dqn")
    main_cfg = copy.deepcopy(dict(bundled.main_config))
    main_cfg["exp_name"] = os.path.join(tempfile.mkdtemp(), "bench_group")
    main_cfg["policy"]["priority"] = main_cfg["policy"]["priority_IS_weight"] = False
    main_cfg["policy"]["cuda"] = args.gpus > 0
    cfg = compile_ray_config((main_cfg, dict(bundled.create_config)), save_cfg=False)
    ray.init(include_dashboard=False, logging_level="ERROR")
    worker = RolloutWorker(cfg)
    batch, _ = worker.warm_up_rollout(16 * int(cfg.policy.learn.batch_size))
    worker.close()
    batch_ref = ray.put(batch)
    options = dict(num_cpus=0.5, num_gpus=args.gpus)
    single = [ray.remote(LearnerActor).options(**options).remote(cfg, 10**9)]
    one = samples_per_s(single, batch_ref, args.calls)
    ray.kill(single[0])
    print(f"bench_learner_group learners=1 samples_per_s={one:.0f}", flush=True)
    group = create_learner_group(cfg, 10**9, 2, {**options, "namespace": "bench_learner_group"})
    two = samples_per_s(group, batch_ref, args.calls)
    print(f"bench_learner_group learners=2 samples_per_s={two:.0f}", flush=True)
    print(f"bench_learner_group_ratio two_over_one={two / one:.2f}", flush=True)
    ray.shutdown()
    figures = dict(learners_1_samples_per_s=round(one), learners_2_samples_per_s=round(two), gpus=args.gpus)
    reference = "one learner actor, measured in the same run on the same batches (samples per second)"
    name = "learner_group" + ("_gpu" if args.gpus > 0 else "")
    write_result(name, figures, reference=reference, ratio={"learners_2/learners_1": round(two / one, 3)})


if __name__ == "__main__":
    main()
