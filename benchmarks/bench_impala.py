"""IMPALA on Ray at steady state, beside ding_ray's sync PPO on Ray with the same collectors.

Both run the bundled CartPole-v1 configs (``cartpole_impala``, ``cartpole_ppo``) on embedded Ray
with ``--collectors`` collector actors (2 by default: the same two for both), a stop value no run
reaches, and everything else as bundled. After ``--warmup`` seconds from the learner's first
trained batch, a window of ``--seconds`` is measured from the driver:
- env steps/s and learner iterations/s over the window;
- learner busy: seconds the learner spent in train calls over the window's seconds;
- queue length (the buffer actor's items; IMPALA only), the object store's bytes in use (Ray's
  plasma store) and the resident memory of the driver and the run's actors (where objects under
  100 KB live), sampled every ``--every`` seconds: max and last (memory: first too);
- policy lag (learner version minus the version that collected the data), median and p95, as
  the learner reports it at the end of the window.
Each pipeline runs in a fresh process; seeds one after another.

Run:  python benchmarks/bench_impala.py [--seeds 0] [--seconds 60] [--warmup 10] [--collectors 2]
        [--pipelines impala ppo] [--set ray.sample_prefetch=3 ...]  (settings of the IMPALA run)
The issue's 10-minute run:  python benchmarks/bench_impala.py --pipelines impala --seconds 600
Prints one ``bench_impala pipeline=... seed=...`` line per run and an
``bench_impala_ratio impala_over_ppo=...`` line per seed (env steps/s), and writes them to
``benchmarks/results/impala.json``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

from results_io import write_result

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

PIPELINES = ("impala", "ppo")


def override(main: dict, assignments: list[str]) -> None:
    """``KEY=VALUE`` settings (dotted keys, Python literals) applied to ``main``."""
    for assignment in assignments:
        key, _, text = assignment.partition("=")
        *path, last = key.split(".")
        node = main
        for part in path:
            node = node.setdefault(part, {})
        try:
            node[last] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            node[last] = text


def config(pipeline: str, collectors: int, exp_name: str) -> tuple[dict, dict]:
    if pipeline == "impala":
        from ding_ray.configs.cartpole_impala import create_config, main_config
    else:
        from ding_ray.configs.cartpole_ppo import create_config, main_config
    main = json.loads(json.dumps(main_config))
    main["exp_name"] = exp_name
    main["env"]["stop_value"] = 10**9  # never reached: the window decides when the run ends
    main.setdefault("ray", {}).update(num_collectors=collectors, progress_bar=False)
    main["env"]["collector_env_num"] = 8  # the same collectors for both: 8 envs each (PPO's own)
    return main, json.loads(json.dumps(create_config))


def plasma_bytes() -> int | None:
    """Bytes of objects in Ray's object store now (all of the run's), from Ray's memory summary."""
    import ray
    from ray._private.internal_api import memory_summary

    text = memory_summary(address=ray.get_runtime_context().gcs_address, stats_only=True)
    found = re.search(r"Plasma memory usage (\d+(?:\.\d+)?) MiB", text)
    return None if found is None else int(float(found.group(1)) * 2**20)


def rss_bytes(pid: int) -> int:
    """Resident memory of process ``pid`` (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def actor_pids(actors) -> list[int]:
    """The processes of the run's actors (learner, buffer, evaluator, collectors)."""
    import ray

    handles = [actors.learner, actors.buffer, actors.evaluator, *actors.collectors]
    calls = [h.__ray_call__.remote(lambda worker: os.getpid()) for h in handles if h is not None]
    return ray.get(calls, timeout=60)


class Sampler(threading.Thread):
    """Every ``every`` seconds: the buffer actor's item count, the object store's bytes and the
    resident memory of the run's processes (the driver and its actors: small objects live in the
    memory of the processes that own them, not in the object store)."""

    def __init__(self, actors, every: float, has_buffer: bool) -> None:
        super().__init__(daemon=True)
        self.actors, self.every, self.has_buffer = actors, every, has_buffer
        self.pids: list[int] = [os.getpid()]
        self.queue: list[int] = []
        self.plasma: list[int] = []
        self.rss: list[int] = []
        self.errors = 0
        self.last_error = ""
        self.stop = threading.Event()

    def run(self) -> None:
        import ray

        from ding_ray.data.monitors import SIZE

        # asked here, not in the driver's loop: a collector held by backpressure answers late
        self.pids += actor_pids(self.actors)
        while not self.stop.wait(self.every):
            try:
                if self.has_buffer:
                    self.queue.append(int(ray.get(self.actors.buffer.stats.remote(), timeout=10)[SIZE]))
                used = plasma_bytes()
                if used is not None:
                    self.plasma.append(used)
                self.rss.append(sum(rss_bytes(pid) for pid in self.pids))
            except Exception as err:  # a restarting actor, a slow reply: this sample is skipped
                self.errors += 1
                self.last_error = repr(err)[:300]


def one_run(
    pipeline: str, seed: int, collectors: int, warmup: float, seconds: float, every: float, sets: list[str]
) -> dict:
    """Runs in its own process: the pipeline until the window has passed."""
    import ray

    from ding_ray import distributed
    from ding_ray.framework import pipelines
    from ding_ray.framework.task_runner import current_task

    exp = os.path.join(tempfile.mkdtemp(), f"impala_bench_{pipeline}_{seed}")
    main, create = config(pipeline, collectors, exp)
    override(main, sets)
    cfg, plan, started = distributed.start_run((main, create), seed=seed, save_cfg=False)
    window: dict = {}
    with distributed.RayRun(cfg, plan) as rc, rc.task() as task:
        sampler = Sampler(rc.actors, every, has_buffer=pipeline == "impala")
        shape = pipelines.on_policy if rc.on_policy else pipelines.off_policy
        shape(task, cfg, rc)

        def measure(ctx) -> None:
            now = time.monotonic()
            learner = rc.learner
            if "first" not in window:
                if learner.train_s > 0:  # the first train call came back
                    window["first"] = now
            elif "start" not in window:
                if now - window["first"] >= warmup:
                    window.update(
                        start=now, env_step=ctx.env_step, train_iter=ctx.train_iter, train_s=learner.train_s
                    )
                    sampler.start()
            elif now - window["start"] >= seconds:
                window.update(
                    seconds=now - window["start"],
                    env_step=ctx.env_step - window["env_step"],
                    train_iter=ctx.train_iter - window["train_iter"],
                    train_s=learner.train_s - window["train_s"],
                    policy_lag=dict(learner.policy_lag),
                )
                sampler.stop.set()
                current_task().finish = True

        task.use(measure)
        task.run()
    sampler.join(timeout=30)
    if started:
        ray.shutdown()
    span = window["seconds"]
    return {
        "pipeline": pipeline,
        "seed": seed,
        "collectors": collectors,
        "env_steps_per_s": round(window["env_step"] / span, 1),
        "train_iter_per_s": round(window["train_iter"] / span, 1),
        "learner_busy": round(window["train_s"] / span, 3),
        "policy_lag": window["policy_lag"],
        "queue_max": max(sampler.queue, default=None),
        "queue_last": sampler.queue[-1] if sampler.queue else None,
        "plasma_max_mib": round(max(sampler.plasma) / 2**20, 2) if sampler.plasma else None,
        "plasma_last_mib": round(sampler.plasma[-1] / 2**20, 2) if sampler.plasma else None,
        "rss_first_mib": round(sampler.rss[0] / 2**20, 1) if sampler.rss else None,
        "rss_max_mib": round(max(sampler.rss) / 2**20, 1) if sampler.rss else None,
        "rss_last_mib": round(sampler.rss[-1] / 2**20, 1) if sampler.rss else None,
        "samples": len(sampler.rss),
        "sample_errors": sampler.errors,
        "last_sample_error": sampler.last_error,
        "window_s": round(span, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="the measured window")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds after the first trained batch")
    parser.add_argument("--collectors", type=int, default=2)
    parser.add_argument("--every", type=float, default=2.0, help="seconds between queue/object-store samples")
    parser.add_argument("--pipelines", nargs="+", default=list(PIPELINES), choices=PIPELINES)
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="IMPALA config settings, e.g. ray.sample_prefetch=3",
    )
    parser.add_argument("--one", nargs=2, metavar=("PIPELINE", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        result = one_run(
            args.one[0], int(args.one[1]), args.collectors, args.warmup, args.seconds, args.every, args.set
        )
        print("RESULT " + json.dumps(result), flush=True)
        return
    rows, ratio = [], {}
    for seed in args.seeds:
        rates = {}
        for pipeline in args.pipelines:
            cmd = [sys.executable, __file__, "--one", pipeline, str(seed)]
            cmd += ["--seconds", str(args.seconds), "--warmup", str(args.warmup)]
            cmd += ["--collectors", str(args.collectors), "--every", str(args.every)]
            if args.set and pipeline == "impala":
                cmd += ["--set", *args.set]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.seconds + 900)
            lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
            if not lines:
                print(
                    f"bench_impala pipeline={pipeline} seed={seed} failed: {out.stderr[-3000:]}", flush=True
                )
                continue
            result = json.loads(lines[-1][len("RESULT ") :])
            rates[pipeline] = result["env_steps_per_s"]
            rows.append(result)
            print("bench_impala " + " ".join(f"{k}={v}" for k, v in result.items()), flush=True)
        if len(rates) == 2:
            ratio[f"impala/ppo env_steps_per_s seed={seed}"] = round(rates["impala"] / rates["ppo"], 3)
            print(
                f"bench_impala_ratio seed={seed} impala_over_ppo={rates['impala'] / rates['ppo']:.2f}",
                flush=True,
            )
    reference = (
        "ppo, measured in the same run: ding_ray's sync PPO on Ray with the same collectors and envs "
        f"(IMPALA settings: {' '.join(args.set) or 'as bundled'})"
    )
    write_result("impala", rows, reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
