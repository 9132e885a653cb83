"""Discrete CQL on the same demonstrations: ding_ray beside DI-engine 0.5.3, same machine.

1. ding_ray trains dizoo's ``cartpole_dqn_config`` with ``nstep=3`` (env type/id changed too) with
   ``serial_pipeline`` to its stop value (seed 0), and ``collect_demo_data`` writes ``--collect-count``
   greedy transitions of that expert, with 3-step rewards as dizoo's ``cartpole_cql_config`` (nstep 3)
   learns from, to ``demo.msgpack`` (ding_ray's file). DI-engine's own recipe
   (``cartpole_cql_main.py``) takes a QR-DQN expert of nstep 3 instead.
2. The same transitions go to ``demo.pkl`` in DI-engine's 'naive' format (``bench_offline_bc``'s
   converter, for the benchmarks only).
3. For each seed, ``cartpole_cql_config`` runs through ``serial_pipeline_offline`` with the data file
   and ``--max-train-iter`` as its only changes: in ding_ray (env type/id changed too) on
   ``demo.msgpack``, in DI-engine (``di_engine_cql_runner.py`` in ``--di-engine-python``) on
   ``demo.pkl``. Each run is a fresh python process in its own folder; the evaluators are watched.

Printed per run and written to ``benchmarks/results/offline_cql_cartpole[_<only>].json``: the final
evaluation's mean return, the best, the iteration it ended at, and whether it stopped at the stop
value. ``--data-dir`` reuses the data of an earlier run (its ``demo.msgpack`` and ``demo.pkl``), so
the two systems can run in separate invocations (DI-engine's runs take far longer).

Run:  python benchmarks/bench_offline_cql.py --seeds 0 1 2 [--collect-count 10000]
          [--max-train-iter 20000] [--di-engine-python /tmp/dienv/bin/python] [--only ding_ray]
          [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench_offline_bc import demo_stats, make_expert_data, measure, to_di_engine_pickle, watch_evaluations
from results_io import write_result

CQL_CONFIG = "classic_control/cartpole/config/cartpole_cql_config.py"
NSTEP = 3  # cartpole_cql_config's


def run_ding_ray_cql(data_path: str, seed: int, max_train_iter: int) -> None:
    """In a child process: cartpole_cql_config through ding_ray's serial_pipeline_offline."""
    start = time.perf_counter()
    from ding_ray.entry import serial_pipeline_offline
    from tests.compat.dizoo import read_dizoo_config

    evaluations = watch_evaluations(start)
    main, create = read_dizoo_config(CQL_CONFIG)
    main.policy.collect.update(data_type="naive", data_path=data_path)
    try:
        serial_pipeline_offline((main, create), seed=seed, max_train_iter=max_train_iter)
    finally:
        with open("evaluations.json", "w") as f:
            json.dump(dict(evaluations=evaluations, wall_s=time.perf_counter() - start), f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--collect-count", type=int, default=10_000)
    parser.add_argument("--max-train-iter", type=int, default=20_000)
    parser.add_argument("--di-engine-python", default="/tmp/dienv/bin/python")
    parser.add_argument("--only", choices=["ding_ray", "di_engine"], default=None)
    parser.add_argument("--data-dir", default=None, help="reuse the demo.msgpack/demo.pkl of an earlier run")
    parser.add_argument("--child-expert", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-cql", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_expert is not None:
        print(json.dumps(make_expert_data(args.child_expert, nstep=NSTEP)))
        return
    if args.child_cql is not None:
        run_ding_ray_cql(args.child_cql[0], int(args.child_cql[1]), int(args.child_cql[2]))
        return

    data_dir = args.data_dir
    if data_dir is not None:  # the expert's own figures were recorded with the run that made the data
        expert = dict(data_dir=data_dir, **demo_stats(os.path.join(data_dir, "demo.msgpack")))
    else:
        data_dir = tempfile.mkdtemp(prefix="offline_cql_data_")
        cmd = [sys.executable, os.path.abspath(__file__), "--child-expert", str(args.collect_count)]
        done = subprocess.run(cmd, cwd=data_dir, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"expert failed:\n{done.stderr[-3000:]}")
        expert = json.loads(done.stdout.strip().splitlines()[-1])
        print("bench_offline_cql_expert", json.dumps(expert), "data", data_dir, flush=True)
    msgpack_path, pickle_path = os.path.join(data_dir, "demo.msgpack"), os.path.join(data_dir, "demo.pkl")
    if not os.path.isfile(pickle_path):
        to_di_engine_pickle(msgpack_path, pickle_path)

    systems = [s for s in ("ding_ray", "di_engine") if args.only in (None, s)]
    paths = {"ding_ray": msgpack_path, "di_engine": pickle_path}
    runs = []
    for seed in args.seeds:
        for system in systems:
            extra = (str(args.max_train_iter),)
            run = measure(system, paths[system], seed, args.di_engine_python, "cql", __file__, extra)
            print("bench_offline_cql", json.dumps(run), flush=True)
            runs.append(run)
    final = {s: [r["final_return"] for r in runs if r["system"] == s] for s in systems}
    medians = {s: statistics.median(v) for s, v in final.items()}
    print("bench_offline_cql_median", json.dumps(medians), flush=True)
    both = len(medians) == 2
    ratio = round(medians["ding_ray"] / medians["di_engine"], 3) if both else None
    write_result(
        "offline_cql_cartpole" + (f"_{args.only}" if args.only else ""),
        dict(expert=expert, runs=runs, median_final_return=medians, max_train_iter=args.max_train_iter),
        reference=(
            "DI-engine 0.5.3's serial_pipeline_offline on dizoo's cartpole_cql_config (its file but for "
            "the data file and the iteration budget), same demonstrations converted to its pickle format, "
            "same seeds, same machine, same run"
            if both
            else "none measured in this run (--only)"
        ),
        ratio=({"final_return ding_ray/di_engine (medians)": ratio} if both else {}),
    )


if __name__ == "__main__":
    main()
