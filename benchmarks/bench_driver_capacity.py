"""How many remote calls per second one driver sustains, with N collector actors that do almost no work.

Past one machine the driver is the part that does not scale out: every collect, push, sample and
train call of a Ray run is launched (and its result taken) by it. This runs each pipeline shape on
embedded Ray with N collector actors of 0.05 CPU each, every collect call one env step of
CartPole-v1 (``n_sample=1``, one env), the evaluator idle, and counts every actor-method call the
driver launches (``ActorMethod._remote``, patched in the driver only) over a fixed window after
all collectors have delivered. The figures are calls per second of that window, the driver's CPU
use over it (1.0: one core busy all the time, saturated) and calls per CPU-second of the driver
(what it would sustain saturated); where calls/s stops growing with N, the driver is saturated.
Each (pipeline, N) runs in a fresh process. Where the collectors' shares alone exceed the cores
(N = 64 here), Ray is told of as many logical CPUs as the shares add up to.

On 2 cores the collectors' own work saturates the machine long before the driver (it stays near
0.3 CPU), so each driver iteration finds about one finished call, and every stage's per-iteration
work is paid per call. A saturated driver finds many finished calls per iteration instead.
``--pace-ms P`` makes every driver iteration last at least P ms (it sleeps the rest, which costs
no CPU): calls then finish in batches (``calls_per_iter``), as for a saturated driver, and calls
per driver CPU-second estimates what it would sustain saturated. Only the Ape-X shape (``async``)
batches that way: a sync round waits for all its calls, and IMPALA's learner calls are paced too,
so its queue fills and its collectors block (about 3 calls an iteration at 100 ms).

The reference, ``raw``: Ray alone on the same machine, N actors of 0.05 CPU whose method returns its
one small argument, one call in flight per actor, relaunched as soon as ``ray.wait`` hands it back:
the most calls/s a driver gets from Ray here, with no pipeline around the calls. Each pipeline's
line gives its calls/s as a fraction of the raw line's for the same N (``of_raw``).

Run:  python benchmarks/bench_driver_capacity.py [--collectors 8 32 64] [--seconds 20]
        [--pipelines raw async sync impala] [--pace-ms 0]
Prints one ``bench_driver_capacity pipeline=... collectors=N calls_per_s=...`` line per run and
writes them to ``benchmarks/results/driver_capacity.json`` (``driver_capacity_pace<P>ms.json`` when paced).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from results_io import write_result

PIPELINES = ("raw", "async", "sync", "impala")
COLLECTOR_CPUS = 0.05  # each collector's CPU share: they do almost no work
# IMPALA on CartPole-v1: unrolls of 16 steps, a queue of 128 of them, each used at most 8 times
IMPALA_CONFIG = (
    dict(
        env=dict(env_id="CartPole-v1", stop_value=475),
        policy=dict(
            model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[64, 64]),
            unroll_len=16,
            learn=dict(batch_size=16, learning_rate=1e-3),
            collect=dict(n_sample=8),
            other=dict(replay_buffer=dict(replay_buffer_size=128, max_use=8)),
        ),
    ),
    dict(env=dict(type="gymnasium"), env_manager=dict(type="base"), policy=dict(type="impala")),
)


def configs(pipeline: str, n: int, exp_name: str) -> tuple[dict, dict]:
    """The run's config: a pipeline shape, N collectors of 0.05 CPU, one env step per collect call."""
    ray_cfg = dict(
        num_collectors=n,
        collector_num_cpus=COLLECTOR_CPUS,
        progress_bar=False,
        actor_start_timeout_s=600.0,
        call_timeout_s=600.0,
        n_sample=1,
    )
    if pipeline == "async":
        from ding_ray.configs.apex_dqn import create_config, main_config
    elif pipeline == "sync":
        from ding_ray.configs.cartpole_ppo import create_config, main_config
    else:
        main_config, create_config = IMPALA_CONFIG
        ray_cfg.update(backpressure="block", train_iters_per_call=4)
    main = json.loads(json.dumps(main_config))
    main["exp_name"] = exp_name
    main["env"]["collector_env_num"] = 1
    main["env"]["evaluator_env_num"] = 1
    main["env"]["n_evaluator_episode"] = 1
    main["policy"]["eval"] = dict(evaluator=dict(eval_freq=10**9))  # the evaluator stays idle
    main["policy"]["collect"]["n_sample"] = 1
    if pipeline == "sync":  # a round: one step per collector, one epoch of one minibatch
        ray_cfg["n_sample"] = n
        main["policy"]["learn"].update(batch_size=n, epoch_per_collect=1)
    main["policy"].pop("random_collect_size", None)
    ray_cfg.setdefault("min_replay_size", 64)  # training starts within the window
    if declared_cpus(n) is not None:
        ray_cfg["num_cpus"] = declared_cpus(n)
    main.setdefault("ray", {}).update(ray_cfg)
    return main, json.loads(json.dumps(create_config))


def declared_cpus(n: int) -> int | None:
    """The logical CPUs Ray is told of for N collectors; None: this machine's cores.

    Where the collectors' shares alone exceed the cores (N = 64 on 2 cores: 3.2 CPUs), Ray is told
    of as many CPUs as the actors' shares add up to, as on a cluster that has them; the collectors
    do almost no work, what is measured is the driver."""
    if n * COLLECTOR_CPUS > (os.cpu_count() or 1):
        return int(n * COLLECTOR_CPUS + 1.0) + 1
    return None


def cpu_s() -> float:
    """CPU seconds this process (the driver) has used, all its threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def count_actor_calls() -> list[int]:
    """From now on, count every actor-method call this process (the driver) launches: a one-item list
    whose item grows with each call."""
    from ray.actor import ActorMethod

    calls = [0]
    launch = ActorMethod._remote

    def counted(self, *args, **kwargs):
        calls[0] += 1
        return launch(self, *args, **kwargs)

    ActorMethod._remote = counted
    return calls


def raw_run(n: int, seconds: float) -> dict:
    """The reference: Ray alone, N actors of 0.05 CPU echoing a small argument, one call in flight
    each, over a window of ``seconds`` after every actor answered once."""
    import ray

    ray.init(num_cpus=declared_cpus(n), include_dashboard=False)

    @ray.remote(num_cpus=COLLECTOR_CPUS)
    class Echo:
        def step(self, x: bytes) -> bytes:
            return x

    actors = [Echo.remote() for _ in range(n)]
    ray.get([a.step.remote(b"x") for a in actors], timeout=600)
    in_flight = {a.step.remote(b"x"): a for a in actors}
    calls, start, cpu = 0, time.monotonic(), cpu_s()
    while (now := time.monotonic()) - start < seconds:
        for ref in ray.wait(list(in_flight), num_returns=1)[0]:
            actor = in_flight.pop(ref)
            ray.get(ref)
            in_flight[actor.step.remote(b"x")] = actor
            calls += 1
    cpu = cpu_s() - cpu
    ray.shutdown()
    return {
        "pipeline": "raw",
        "collectors": n,
        "calls_per_s": round(calls / (now - start), 1),
        "driver_cpu": round(cpu / (now - start), 2),
        "calls_per_driver_cpu_s": round(calls / max(cpu, 1e-9), 1),
        "window_s": round(now - start, 1),
    }


def one_run(pipeline: str, n: int, seconds: float, pace_ms: float = 0.0) -> dict:
    """Runs in its own process: the pipeline until ``seconds`` after every collector delivered,
    each driver iteration lasting at least ``pace_ms``."""
    import ray

    from ding_ray import distributed
    from ding_ray.framework import pipelines
    from ding_ray.framework.task_runner import current_task

    calls = count_actor_calls()
    exp = os.path.join(tempfile.mkdtemp(), f"driver_{pipeline}_{n}")
    cfg, plan, started = distributed.start_run(configs(pipeline, n, exp), seed=0, save_cfg=False)
    window: dict = {}
    iteration = {"count": 0, "start": time.monotonic()}
    with distributed.RayRun(cfg, plan) as rc, rc.task() as task:
        shape = pipelines.on_policy if rc.on_policy else pipelines.off_policy
        shape(task, cfg, rc)

        def measure(ctx) -> None:
            now = time.monotonic()
            delivered = sum(slot.delivered > 0 for slot in rc.collector.pool.slots)
            iteration["count"] += 1
            if "start" not in window and delivered == n:
                window.update(
                    start=now,
                    calls=calls[0],
                    env_step=ctx.env_step,
                    train_iter=ctx.train_iter,
                    cpu=cpu_s(),
                    iterations=iteration["count"],
                )
            elif "start" in window and now - window["start"] >= seconds:
                window.update(
                    seconds=now - window["start"],
                    calls=calls[0] - window["calls"],
                    env_step=ctx.env_step - window["env_step"],
                    train_iter=ctx.train_iter - window["train_iter"],
                    cpu=cpu_s() - window["cpu"],
                    iterations=iteration["count"] - window["iterations"],
                )
                current_task().finish = True
                return
            left = pace_ms / 1000 - (time.monotonic() - iteration["start"])
            if left > 0:
                time.sleep(left)
            iteration["start"] = time.monotonic()

        task.use(measure)
        task.run()
    if started:
        ray.shutdown()
    return {
        "pipeline": pipeline,
        "collectors": n,
        "calls_per_s": round(window["calls"] / window["seconds"], 1),
        "env_steps_per_s": round(window["env_step"] / window["seconds"], 1),
        "train_iter_per_s": round(window["train_iter"] / window["seconds"], 1),
        # the driver's own CPU time over the window: below 1 it waited on the actors, not saturated
        "driver_cpu": round(window["cpu"] / window["seconds"], 2),
        "calls_per_driver_cpu_s": round(window["calls"] / max(window["cpu"], 1e-9), 1),
        "calls_per_iter": round(window["calls"] / max(window["iterations"], 1), 2),
        "pace_ms": pace_ms,
        "window_s": round(window["seconds"], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--collectors", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--pipelines", nargs="+", default=list(PIPELINES), choices=PIPELINES)
    parser.add_argument(
        "--pace-ms", type=float, default=0.0, help="each driver iteration lasts at least this long"
    )
    parser.add_argument("--one", nargs=2, metavar=("PIPELINE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        pipeline, n = args.one[0], int(args.one[1])
        if pipeline == "raw":
            result = raw_run(n, args.seconds)
        else:
            result = one_run(pipeline, n, args.seconds, args.pace_ms)
        print("RESULT " + json.dumps(result), flush=True)
        return
    raw: dict[int, float] = {}  # calls/s of the reference, per N
    rows, ratio = [], {}
    for pipeline in sorted(args.pipelines, key=PIPELINES.index):  # the reference first
        for n in args.collectors:
            cmd = [sys.executable, __file__, "--one", pipeline, str(n), "--seconds", str(args.seconds)]
            cmd += ["--pace-ms", str(args.pace_ms)]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
            if not lines:
                print(
                    f"bench_driver_capacity pipeline={pipeline} collectors={n} failed: {out.stderr[-2000:]}"
                )
                continue
            result = json.loads(lines[-1][len("RESULT ") :])
            if pipeline == "raw":
                raw[n] = result["calls_per_s"]
            elif n in raw:
                result["of_raw"] = round(result["calls_per_s"] / raw[n], 3)
                ratio[f"{pipeline}/raw collectors={n}"] = result["of_raw"]
            rows.append(result)
            print("bench_driver_capacity " + " ".join(f"{k}={v}" for k, v in result.items()), flush=True)
    reference = (
        "raw, measured in the same run: Ray alone, N actors of 0.05 CPU echoing a small argument, one call "
        "in flight each (calls per second)"
    )
    name = "driver_capacity" + (f"_pace{args.pace_ms:g}ms" if args.pace_ms else "")
    write_result(name, rows, reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
