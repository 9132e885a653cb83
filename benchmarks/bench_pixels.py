"""Pong sampler speed, side by side in one run: ding_ray's collector actors against the raw emulator,
RLlib 2.60's EnvRunners and Sample Factory 2's sampler, on the same cores.

Every side steps 8 Pong envs with the same preprocessing (no-op resets, 4 frames skipped and
max-pooled, 84x84 grayscale, a stack of 4, uint8 frames) and counts **env steps: agent steps of one
env after the frame skip, so frames = 4 x steps** (Sample Factory's "FPS with frameskip" and the
public EnvPool figures are frames). Figures:

  raw_ale_vector      ale-py's ``AtariVectorEnv`` (C++ threads, ``--raw-threads``), random actions,
                      one process: the ceiling
  raw_ale_vector_async
                      the same, asynchronous: each call acts for 4 envs and returns the next 4 ready
  raw_ale_vector_x2   2 processes, each an AtariVectorEnv of 4 envs and 1 thread, stepped at once
                      (the layout of the collector actors without their work), steps/s summed
  raw_async           gymnasium's ``AsyncVectorEnv``, a process per env, random actions
  ding_ray_random     2 ding_ray collector actors x 4 envs (``atari_vector`` manager), random policy
  ding_ray_cnn        the same with the DQN policy's Nature CNN (batched over each actor's 4 envs)
  rllib               RLlib's EnvRunners, 2 runners x 4 envs, its default CNN encoder given the
                      Nature layout, PPO's sampling (the episodes come back to the driver)
  sample_factory      Sample Factory's sampler (``SyncSamplingAPI``), 2 rollout workers x 4 envs
                      and its inference worker, its Atari Nature CNN on the CPU

What each side does with a batch, and where they differ: ding_ray's collector puts each call's
256 transitions (64 steps of 4 envs) into the object store; RLlib's runners return 128 steps of
their 4 envs as episodes to the driver, its env wrapper scales frames to float32 (RLlib's recipe);
Sample Factory's workers write rollouts of 128 steps into shared memory and the sampling API copies
them out; the two references also end an episode at a lost life (no-op in Pong). ding_ray and
Sample Factory play ``PongNoFrameskip-v4``, RLlib ``ALE/Pong-v5`` with sticky actions off: the
same game. Each actor, runner or worker uses one torch thread.

Variants, run only when named in ``--only``: ``rllib_no_ship`` (each runner returns only its step
count), ``rllib_default_cnn`` (RLlib's default filters for 84x84, lighter than the Nature CNN),
``sample_factory_splits2`` (``--worker_num_splits 2``: each worker's envs in two halves, one
stepping while the other waits for inference).

The sides run one after another, never together (2 cores), each in a fresh process: the
references in their own venvs (``--setup`` builds them under ``.cache/bench_venvs/``) through the
runner scripts in ``benchmarks/pixels_refs/``, ding_ray in this venv through this file. Each side
runs ``--warmup`` seconds after its first batch, then ``--seconds`` timed; only whole batches
inside the window count (``pixels_refs/timing.py``). The 1-minute load average is printed with
each figure: on a shared machine, read the ratios of a run whose load stayed near 2.

Run:  python benchmarks/bench_pixels.py --setup            # once: the RLlib and Sample Factory venvs
      python benchmarks/bench_pixels.py [--seconds 30] [--rounds 1] [--only raw_ale_vector rllib ...]
Prints one ``bench_pixels figure=NAME env_steps_per_s=.. frames_per_s=.. load_1m_before=..
load_1m_after=..`` line per figure and round (a reference's settings on a ``bench_pixels_config``
line after it), with ``--rounds`` above 1 a ``bench_pixels_median`` line per figure, then
``bench_pixels_ratio ding_ray_random/raw_ale_vector=.. ding_ray_cnn/rllib=..
ding_ray_cnn/sample_factory=.. ...`` (ratios of the medians; n/a where a side did not run); the
same in ``benchmarks/results/pixels.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

from results_io import write_result

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFS = os.path.join(REPO, "benchmarks", "pixels_refs")
VENVS = os.path.join(REPO, ".cache", "bench_venvs")
sys.path.insert(0, REFS)

ENVS_PER_ACTOR = 4
NUM_ACTORS = 2  # collector actors / env runners / rollout workers: one per core

# The reference venvs: the exact versions measured. torch comes first and stays pinned: any other
# version pulls a multi-GB CUDA build. Sample Factory 2.1.1 needs numpy<2 and gymnasium<1, so its
# ale-py is 0.9.0 (ROMs in the wheel, registers the v4/v5 ids with gymnasium 0.29 on import) and
# its opencv-python the last before numpy 2 became required.
RECIPES = {
    "rllib": [
        "torch==2.13.0",
        "ray[rllib]==2.60.0",
        "ale-py==0.12.1",
        "gymnasium==1.2.2",
        "opencv-python-headless==5.0.0.93",
    ],
    "sample_factory": [
        "torch==2.13.0",
        "sample-factory==2.1.1",
        "ale-py==0.9.0",
        "gymnasium==0.29.1",
        "numpy==1.26.4",
        "opencv-python==4.11.0.86",
    ],
}
SMOKE = {
    "rllib": "import ale_py, ray.rllib, torch",
    "sample_factory": "import ale_py, sample_factory, sf_examples.atari.train_atari, torch",
}

FIGURES = (
    "raw_ale_vector",
    "raw_ale_vector_async",
    "raw_ale_vector_x2",
    "raw_async",
    "ding_ray_random",
    "ding_ray_cnn",
    "rllib",
    "sample_factory",
)
# The reference figures: venv and runner arguments. The variants run only when named in --only.
REFERENCES = {
    "rllib": ("rllib", []),
    "rllib_no_ship": ("rllib", ["--no-ship"]),
    "rllib_default_cnn": ("rllib", ["--model", "default"]),
    "sample_factory": ("sample_factory", []),
    "sample_factory_splits2": ("sample_factory", ["--", "--worker_num_splits", "2"]),
}
RATIOS = (
    ("ding_ray_random", "raw_ale_vector"),
    ("ding_ray_random", "raw_ale_vector_async"),
    ("ding_ray_random", "raw_ale_vector_x2"),
    ("ding_ray_cnn", "rllib"),
    ("ding_ray_cnn", "sample_factory"),
    ("ding_ray_cnn", "ding_ray_random"),
)


# ----- the reference venvs ---------------------------------------------------------------------------


def venv_python(name: str) -> str:
    return os.path.join(VENVS, name, "bin", "python")


def setup(names: list[str]) -> None:
    """Build each reference venv once; a venv whose recorded recipe matches is left as it is."""
    for name in names:
        recipe = RECIPES[name]
        folder = os.path.join(VENVS, name)
        stamp = os.path.join(folder, "bench_pixels_recipe.json")
        if os.path.isfile(stamp):
            with open(stamp) as f:
                if json.load(f) == recipe:
                    print(f"bench_pixels setup {name}: up to date ({folder})", flush=True)
                    continue
        if not os.path.isfile(venv_python(name)):
            subprocess.run([sys.executable, "-m", "venv", folder], check=True)
        print(f"bench_pixels setup {name}: pip install {' '.join(recipe)}", flush=True)
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as constraints:
            # The constraints hold the pins against any dependency that would move them.
            constraints.write("\n".join(re.sub(r"\[.*\]", "", pin) for pin in recipe) + "\n")
            constraints.flush()
            subprocess.run(
                [venv_python(name), "-m", "pip", "install", "-q", "-c", constraints.name, *recipe], check=True
            )
        subprocess.run([venv_python(name), "-c", SMOKE[name]], check=True)
        with open(stamp, "w") as f:
            json.dump(recipe, f)
        print(f"bench_pixels setup {name}: ready", flush=True)


# ----- running one side --------------------------------------------------------------------------------


def run_side(cmd: list[str], timeout_s: float) -> dict | str:
    """Run one side's process; its ``RESULT`` dict, or why there is none.

    The process leads a session of its own, so a hung sampler (Sample Factory's processes, Ray's)
    is ended with all its children.
    """
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return f"timed out after {timeout_s:.0f} s: {out[-500:]!r}"
    for line in reversed(out.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    return f"exit {proc.returncode}, no result: {out[-1500:]}"


def has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # its package is missing
        return False


def command(figure: str, args: argparse.Namespace) -> list[str] | str:
    """The command line of ``figure``, or why it cannot run here."""
    timing = ["--seconds", str(args.seconds), "--warmup", str(args.warmup)]
    if figure.startswith("raw_"):
        if not has_module("ale_py.vector_env"):
            return "ale-py >= 0.11 is not installed in this venv (the atari extra)"
        kind = ["--kind", "async" if figure == "raw_async" else "ale_vector"]
        kind += ["--num-threads", str(args.raw_threads)]
        if figure == "raw_ale_vector_async":
            kind += ["--batch-size", str(ENVS_PER_ACTOR)]
        if figure == "raw_ale_vector_x2":
            kind += ["--processes", str(NUM_ACTORS)]
        return [sys.executable, os.path.join(REFS, "raw_runner.py"), *kind, *timing]
    if figure.startswith("ding_ray"):
        if not has_module("ding_ray.envs.atari"):
            return "not available yet: ding_ray.envs.atari does not exist"
        policy = figure[len("ding_ray_") :]
        return [sys.executable, os.path.abspath(__file__), "--ding-ray-side", policy, *timing]
    venv, extra = REFERENCES[figure]
    if not os.path.isfile(os.path.join(VENVS, venv, "bench_pixels_recipe.json")):
        return f"no venv: run python benchmarks/bench_pixels.py --setup (builds {os.path.join(VENVS, venv)})"
    return [venv_python(venv), os.path.join(REFS, f"{venv}_runner.py"), *timing, *extra]


# ----- the ding_ray side ---------------------------------------------------------------------------------


def ding_ray_side(
    policy: str,
    seconds: float,
    warmup: float,
    n_sample: int = 256,
    ray_init: dict | None = None,
    collector_options: dict | None = None,
    fetch: bool = False,
) -> dict:
    """Env steps/s of 2 collector actors x 4 Pong envs (``random``: random actions; ``cnn``: the DQN
    policy's Nature CNN, eps-greedy 0.1), one collect call in flight per actor.

    Each call returns ``n_sample`` transitions as its second return value, left in the object store
    (the reference a sync round hands to the learner); nothing here reads them unless ``fetch``
    (the driver then takes each batch, as a replay buffer beside it would: on a cluster, the batch
    crosses from the collector's node). ``ray_init``: ``ray.init``'s arguments (default: a Ray of
    2 CPUs started here); ``collector_options``: the actors' (default: 1 CPU each). Expects env type
    ``atari`` (``ding_ray.envs.atari``), the ``atari_vector`` env manager, the conv encoder for a
    3-D ``obs_shape`` in ``ding_ray.model.DQN``, and ``CollectorActor.collect_batch(weights,
    train_iter, policy_kwargs)`` returning ``(info, batch)`` (``warm_up_rollout(n_sample, train_iter,
    policy_kwargs)`` ``(batch, info)`` for random actions) with ``new_env_steps`` in its info.
    """
    import ray
    from timing import measure

    from ding_ray.distributed import CollectorActor
    from ding_ray.entry import compile_ray_config

    exp_name = tempfile.mkdtemp(prefix="bench_pixels_")
    main_cfg = dict(
        exp_name=exp_name,
        env=dict(
            env_id="PongNoFrameskip-v4",
            collector_env_num=ENVS_PER_ACTOR,
            evaluator_env_num=1,
            frame_stack=4,
            # one C++ thread per actor: each actor has one core
            manager=dict(type="atari_vector", num_threads=1),
        ),
        policy=dict(
            # the Nature CNN (conv 32 8x8/4, 64 4x4/2, 64 3x3/1, linear 512), as the references
            model=dict(obs_shape=[4, 84, 84], action_shape=6, encoder_hidden_size_list=[32, 64, 64, 512]),
            collect=dict(n_sample=n_sample),
            other=dict(replay_buffer=dict(replay_buffer_size=10_000)),
        ),
    )
    create_cfg = dict(env=dict(type="atari"), policy=dict(type="dqn"), replay_buffer=dict(type="naive"))
    cfg = compile_ray_config((main_cfg, create_cfg), seed=0, save_cfg=False)
    ray.init(**(ray_init or dict(num_cpus=NUM_ACTORS, include_dashboard=False, log_to_driver=False)))
    try:
        options = collector_options or dict(num_cpus=1)
        collectors = [ray.remote(CollectorActor).options(**options).remote(cfg, i) for i in range(NUM_ACTORS)]

        def launch(collector: ray.actor.ActorHandle) -> tuple[ray.ObjectRef, ray.ObjectRef]:
            """The references of the info and the batch of a call on ``collector``."""
            if policy == "random":
                batch, info = collector.warm_up_rollout.options(num_returns=2).remote(None, 0, {"eps": 0.1})
                return info, batch
            return tuple(collector.collect_batch.remote(None, 0, {"eps": 0.1}))

        in_flight = {}
        for collector in collectors:
            info, batch = launch(collector)
            in_flight[info] = (collector, batch)

        every_call = [0]  # env steps of every call taken, warm-up and first call included

        def step() -> int:
            [ref], _ = ray.wait(list(in_flight), num_returns=1)
            collector, batch = in_flight.pop(ref)
            info = ray.get(ref)
            if fetch:
                ray.get(batch)
            new_info, new_batch = launch(collector)
            in_flight[new_info] = (collector, new_batch)
            every_call[0] += info["new_env_steps"]
            return info["new_env_steps"]

        return dict(measure(step, seconds, warmup), all_env_steps=every_call[0])
    finally:
        ray.shutdown()
        shutil.rmtree(exp_name, ignore_errors=True)


# ----- the run ---------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--setup", action="store_true", help="build the reference venvs, then stop")
    parser.add_argument("--seconds", type=float, default=30.0, help="timed seconds per figure")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds after the first batch, untimed")
    parser.add_argument(
        "--rounds", type=int, default=1, help="every figure this many times, in turn (ratios of medians)"
    )
    parser.add_argument("--only", nargs="+", choices=sorted({*FIGURES, *REFERENCES}), default=list(FIGURES))
    parser.add_argument("--raw-threads", type=int, default=2, help="AtariVectorEnv's C++ threads")
    parser.add_argument("--ding-ray-side", choices=("random", "cnn"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.ding_ray_side:  # one side in this fresh process, started by the run below
        from timing import report

        report(ding_ray_side(args.ding_ray_side, args.seconds, args.warmup))
        return
    if args.setup:
        setup(list(RECIPES))
        return

    print(f"bench_pixels start load_1m={os.getloadavg()[0]:.2f} cpus={os.cpu_count()}", flush=True)
    rates: dict[str, list[float]] = {}
    rows = []
    for round_ in range(args.rounds):
        # every other round in reverse, so that load that grows or fades over the run hits all alike
        for figure in args.only if round_ % 2 == 0 else args.only[::-1]:
            cmd = command(figure, args)
            if isinstance(cmd, str):
                print(f"bench_pixels figure={figure} skipped={cmd!r}", flush=True)
                continue
            load_before = os.getloadavg()[0]
            result = run_side(cmd, timeout_s=args.seconds + args.warmup + 600)
            if isinstance(result, str):
                print(f"bench_pixels figure={figure} failed={result!r}", flush=True)
                continue
            rate = result["steps_per_s"]
            rates.setdefault(figure, []).append(rate)
            row = dict(
                figure=figure, round=round_, env_steps_per_s=round(rate), env_steps=result["env_steps"]
            )
            rows.append(
                dict(row, load_1m_before=round(load_before, 2), load_1m_after=round(result["load"], 2))
            )
            print(
                f"bench_pixels figure={figure} env_steps_per_s={rate:.0f} frames_per_s={4 * rate:.0f} "
                f"env_steps={result['env_steps']} seconds={result['seconds']:.1f} "
                f"load_1m_before={load_before:.2f} load_1m_after={result['load']:.2f}",
                flush=True,
            )
            if "config" in result:
                settings = json.dumps(result["config"], separators=(",", ":"))
                print(f"bench_pixels_config figure={figure} {settings}")
    median = {figure: statistics.median(values) for figure, values in rates.items()}
    if args.rounds > 1:
        for figure, value in median.items():
            print(
                f"bench_pixels_median figure={figure} env_steps_per_s={value:.0f} rounds={len(rates[figure])}"
            )
    ratios = " ".join(
        f"{a}/{b}=" + (f"{median[a] / median[b]:.3f}" if a in median and b in median else "n/a")
        for a, b in RATIOS
    )
    print(f"bench_pixels_ratio {ratios}")
    print(f"bench_pixels end load_1m={os.getloadavg()[0]:.2f}")
    reference = (
        "measured in the same run, one side after another: the raw emulator (raw_*), RLlib 2.60's "
        "EnvRunners (rllib) and Sample Factory 2's sampler (sample_factory) on the same 8 Pong envs; "
        "ratios of the medians over rounds"
    )
    ratio = {f"{a}/{b}": round(median[a] / median[b], 3) for a, b in RATIOS if a in median and b in median}
    figures = dict(median_env_steps_per_s={k: round(v) for k, v in median.items()}, runs=rows)
    write_result("pixels", figures, reference=reference, ratio=ratio)


if __name__ == "__main__":
    main()
