"""Behaviour cloning on the same demonstrations: ding_ray beside DI-engine 0.5.3, same machine.

1. ding_ray trains dizoo's ``cartpole_dqn_config`` (env type/id changed only) with ``serial_pipeline``
   to its stop value (seed 0), and ``collect_demo_data`` writes ``--collect-count`` greedy transitions
   of that expert to ``demo.msgpack`` (ding_ray's file).
2. The same transitions go to ``demo.pkl`` in DI-engine's 'naive' format (a pickled list of dicts of
   tensors, as DI-engine's collector makes them): the converter below, for this benchmark only.
3. For each seed, dizoo's ``cartpole_bc_config`` runs through ``serial_pipeline_bc``: in ding_ray (env
   type/id changed only) on ``demo.msgpack``, and in DI-engine (its file unchanged,
   ``di_engine_bc_runner.py`` in ``--di-engine-python``) on ``demo.pkl``. Each run is a fresh python
   process in its own folder; the evaluators are watched, not changed.

Printed per run and written to ``benchmarks/results/offline_bc_cartpole.json``: the final evaluation's
mean return (the one the run ended on), the best, the iteration it ended at, and whether it stopped
at the stop value.

Run:  python benchmarks/bench_offline_bc.py --seeds 0 1 2 [--collect-count 10000]
          [--di-engine-python /tmp/dienv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time

from results_io import write_result

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
DQN_CONFIG = "classic_control/cartpole/config/cartpole_dqn_config.py"
BC_CONFIG = "classic_control/cartpole/config/cartpole_bc_config.py"


def watch_evaluations(start: float) -> list[dict]:
    """Every evaluation of ding_ray's evaluator from now on, appended to the list returned."""
    from ding_ray.worker import InteractionSerialEvaluator

    evaluations: list[dict] = []
    evaluate = InteractionSerialEvaluator.eval

    def watched(self, save_ckpt_fn=None, train_iter=-1, *args, **kwargs):
        stop, info = evaluate(self, save_ckpt_fn, train_iter, *args, **kwargs)
        evaluations.append(
            dict(
                train_iter=train_iter,
                return_mean=info["eval_episode_return_mean"],
                stop=bool(stop),
                since_launch_s=time.perf_counter() - start,
            )
        )
        return stop, info

    InteractionSerialEvaluator.eval = watched
    return evaluations


def make_expert_data(collect_count: int, nstep: int | None = None) -> dict:
    """In a child process: the DQN expert and its demonstrations, in the current folder; ``nstep``
    (the config's when None) sets the expert's n-step returns, which its samples' rewards hold."""
    start = time.perf_counter()
    from ding_ray.entry import collect_demo_data, serial_pipeline
    from tests.compat.dizoo import read_dizoo_config

    def dqn_config():
        main, create = read_dizoo_config(DQN_CONFIG)
        if nstep is not None:
            main.policy.nstep = nstep
        return main, create

    evaluations = watch_evaluations(start)
    policy = serial_pipeline(dqn_config(), seed=0, max_env_step=100_000)
    state = policy.collect_mode.state_dict()
    collect_demo_data(
        dqn_config(),
        seed=0,
        collect_count=collect_count,
        expert_data_path="demo.msgpack",
        state_dict=state,
    )
    return dict(
        expert_solved=bool(evaluations and evaluations[-1]["stop"]),
        expert_eval_return=evaluations[-1]["return_mean"] if evaluations else None,
        **demo_stats("demo.msgpack"),
    )


def demo_stats(path: str) -> dict:
    """The transitions, episodes and mean episode return of the demonstrations at ``path``."""
    from ding_ray.framework.middleware.offline_dataset import NaiveRLDataset

    data = NaiveRLDataset(path).columns
    ends = data["done"].reshape(-1)
    if "value_gamma" in data:  # n-step windows: each ending window is done, the last one has 1 step
        value_gamma = data["value_gamma"].reshape(-1)
        ends = ends & (value_gamma == value_gamma.max())
    episode_returns, ret = [], 0.0
    for reward, done in zip(data["reward"].reshape(len(ends), -1)[:, 0], ends):
        ret += float(reward)
        if done:
            episode_returns.append(ret)
            ret = 0.0
    return dict(
        demo_transitions=len(data["reward"]),
        demo_episodes=len(episode_returns),
        demo_return_mean=round(statistics.mean(episode_returns), 1) if episode_returns else None,
    )


def to_di_engine_pickle(src: str, dst: str) -> None:
    """ding_ray's 'naive' file -> DI-engine's: a pickled list of per-transition dicts of tensors,
    typed as DI-engine's collector types them (obs float32, action int64 0-d, reward float32 [nstep],
    done bool, value_gamma float32 0-d where the samples have it). For the offline benchmarks only:
    ding_ray itself never writes or reads pickle."""
    import torch

    from ding_ray.framework.middleware.offline_dataset import NaiveRLDataset

    rows = []
    for item in NaiveRLDataset(src):
        rows.append(
            dict(
                obs=torch.as_tensor(item["obs"], dtype=torch.float32),
                next_obs=torch.as_tensor(item["next_obs"], dtype=torch.float32),
                action=torch.as_tensor(item["action"], dtype=torch.int64).reshape(()),
                reward=torch.as_tensor(item["reward"], dtype=torch.float32).reshape(-1),
                done=bool(item["done"]),
            )
        )
        if "value_gamma" in item:  # n-step samples cut short by an episode's end
            rows[-1]["value_gamma"] = torch.as_tensor(item["value_gamma"], dtype=torch.float32)
    with open(dst, "wb") as f:
        pickle.dump(rows, f)


def run_ding_ray_bc(data_path: str, seed: int) -> None:
    """In a child process: cartpole_bc_config through ding_ray's serial_pipeline_bc."""
    start = time.perf_counter()
    from ding_ray.entry import serial_pipeline_bc
    from tests.compat.dizoo import read_dizoo_config

    evaluations = watch_evaluations(start)
    try:
        serial_pipeline_bc(read_dizoo_config(BC_CONFIG), seed=seed, data_path=data_path)
    finally:
        with open("evaluations.json", "w") as f:
            json.dump(dict(evaluations=evaluations, wall_s=time.perf_counter() - start), f)


def measure(
    system: str,
    data_path: str,
    seed: int,
    python: str,
    algo: str = "bc",
    script: str = __file__,
    extra: tuple[str, ...] = (),
) -> dict:
    """One run in a fresh folder: ding_ray's through ``script --child-<algo>``, DI-engine's through
    ``di_engine_<algo>_runner.py`` in ``python``; ``extra`` arguments go to both."""
    workdir = tempfile.mkdtemp(prefix=f"offline_{algo}_{system}_")
    if system == "ding_ray":
        cmd = [sys.executable, os.path.abspath(script), f"--child-{algo}", data_path, str(seed), *extra]
    else:
        runner = os.path.join(REPO, "benchmarks", f"di_engine_{algo}_runner.py")
        cmd = [python, runner, data_path, str(seed), *extra]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True)
    path = os.path.join(workdir, "evaluations.json")
    if done.returncode != 0 or not os.path.isfile(path):
        raise RuntimeError(f"{system} seed {seed} failed:\n{done.stderr[-3000:]}")
    with open(path) as f:
        evaluations = json.load(f)["evaluations"]
    returns = [e["return_mean"] for e in evaluations]
    return dict(
        system=system,
        seed=seed,
        final_return=round(returns[-1], 1),
        best_return=round(max(returns), 1),
        final_train_iter=evaluations[-1]["train_iter"],
        stopped_at_stop_value=bool(evaluations[-1].get("stop")),
        evaluations=len(evaluations),
        wall_s=round(time.perf_counter() - start, 1),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--collect-count", type=int, default=10_000)
    parser.add_argument("--di-engine-python", default="/tmp/dienv/bin/python")
    parser.add_argument("--child-expert", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-bc", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_expert is not None:
        print(json.dumps(make_expert_data(args.child_expert)))
        return
    if args.child_bc is not None:
        run_ding_ray_bc(args.child_bc[0], int(args.child_bc[1]))
        return

    data_dir = tempfile.mkdtemp(prefix="offline_bc_data_")
    cmd = [sys.executable, os.path.abspath(__file__), "--child-expert", str(args.collect_count)]
    done = subprocess.run(cmd, cwd=data_dir, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"expert failed:\n{done.stderr[-3000:]}")
    expert = json.loads(done.stdout.strip().splitlines()[-1])
    print("bench_offline_bc_expert", json.dumps(expert), flush=True)
    msgpack_path, pickle_path = os.path.join(data_dir, "demo.msgpack"), os.path.join(data_dir, "demo.pkl")
    to_di_engine_pickle(msgpack_path, pickle_path)

    runs = []
    for seed in args.seeds:
        for system, path in (("ding_ray", msgpack_path), ("di_engine", pickle_path)):
            run = measure(system, path, seed, args.di_engine_python)
            print("bench_offline_bc", json.dumps(run), flush=True)
            runs.append(run)
    final = {s: [r["final_return"] for r in runs if r["system"] == s] for s in ("ding_ray", "di_engine")}
    medians = {s: statistics.median(v) for s, v in final.items()}
    print("bench_offline_bc_median", json.dumps(medians), flush=True)
    write_result(
        "offline_bc_cartpole",
        dict(expert=expert, runs=runs, median_final_return=medians),
        reference=(
            "DI-engine 0.5.3's serial_pipeline_bc on dizoo's cartpole_bc_config (file unchanged), same "
            "demonstrations converted to its pickle format, same seeds, same machine, same run"
        ),
        ratio={
            "final_return ding_ray/di_engine (medians)": round(medians["ding_ray"] / medians["di_engine"], 3)
        },
    )


if __name__ == "__main__":
    main()
