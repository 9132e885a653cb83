"""Fingerprints of short serial DQN and PPO runs on CartPole, to check that a refactoring of the
env-stepping code changes no step.

Run:
    python benchmarks/check_serial_identity.py                  # writes the fingerprints
    python benchmarks/check_serial_identity.py --compare OLD    # and compares them with OLD's
    python benchmarks/check_serial_identity.py --name NAME      # writes them as NAME.json

For each algorithm and seed (0, 1, 2) a run of ``serial_pipeline`` / ``serial_pipeline_onpolicy``
with a small env-step budget records: the env steps and episodes the collector counted, a hash of
every transition the collector handed over (obs, action, reward, done), a hash of every evaluation's
returns and a hash of the final weights. A task-style ``StepCollector`` run (the ``inferencer`` /
``rolloutor`` pair) is fingerprinted too. Two runs of the same code give the same fingerprints, so
any difference after a change is a change of behaviour. Output: ``benchmarks/results/serial_identity.json``
(``--compare`` takes such a file, or a plain mapping of run names to fingerprints).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from results_io import write_result

import ding_ray.configs.cartpole_dqn as dqn_config
import ding_ray.configs.cartpole_ppo as ppo_config
from ding_ray.config import compile_config
from ding_ray.entry import serial_pipeline, serial_pipeline_onpolicy
from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.framework import OnlineRLContext
from ding_ray.framework.middleware import StepCollector
from ding_ray.policy import create_policy
from ding_ray.worker import InteractionSerialEvaluator, SampleSerialCollector

SEEDS = (0, 1, 2)
BUDGET = {"dqn": 8_000, "ppo": 8_192}  # env steps of each serial run
STEP_COLLECT_CALLS = 40  # StepCollector calls of the task-style run


class Recorder:
    """Hashes what the collector and evaluator hand back, by wrapping their public methods."""

    def __init__(self) -> None:
        self.transitions = hashlib.sha256()
        self.eval_returns = hashlib.sha256()
        self.evals = 0
        self.samples = 0
        self.collector: Any = None

    def __enter__(self) -> Recorder:
        self._collect, self._eval = SampleSerialCollector.collect, InteractionSerialEvaluator.eval
        recorder, collect, evaluate = self, self._collect, self._eval

        def _collect(collector: Any, *args: Any, **kwargs: Any) -> Any:
            recorder.collector = collector
            data = collect(collector, *args, **kwargs)
            recorder.samples += len(data)
            for transition in data:
                update_hash(recorder.transitions, transition)
            return data

        def _eval(evaluator: Any, *args: Any, **kwargs: Any) -> Any:
            stop, info = evaluate(evaluator, *args, **kwargs)
            recorder.evals += 1
            update_hash(recorder.eval_returns, info["eval_episode_return"])
            return stop, info

        SampleSerialCollector.collect, InteractionSerialEvaluator.eval = _collect, _eval
        return self

    def __exit__(self, *exc: Any) -> None:
        SampleSerialCollector.collect, InteractionSerialEvaluator.eval = self._collect, self._eval


def update_hash(h: Any, value: Any) -> None:
    """Feed ``value`` (the training-relevant keys of a transition, or returns) into ``h``."""
    if isinstance(value, dict):
        for key in ("obs", "next_obs", "action", "reward", "done", "logit", "value", "adv"):
            if key in value:
                h.update(key.encode())
                update_hash(h, value[key])
        return
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    array = np.ascontiguousarray(np.asarray(value, dtype=np.float64))
    h.update(str(array.shape).encode())
    h.update(array.tobytes())


def weights_hash(state_dict: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for name, tensor in sorted(state_dict.items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def serial_run(algorithm: str, seed: int) -> dict[str, Any]:
    module = dqn_config if algorithm == "dqn" else ppo_config
    main_config = copy.deepcopy(module.main_config)
    main_config["exp_name"] = f"identity_{algorithm}_seed{seed}"
    entry = serial_pipeline if algorithm == "dqn" else serial_pipeline_onpolicy
    with Recorder() as recorder:
        policy = entry(
            (main_config, copy.deepcopy(module.create_config)), seed=seed, max_env_step=BUDGET[algorithm]
        )
    return {
        "env_steps": recorder.collector.envstep,
        "episodes": recorder.collector.envepisode,
        "samples": recorder.samples,
        "transitions": recorder.transitions.hexdigest()[:16],
        "evaluations": recorder.evals,
        "eval_returns": recorder.eval_returns.hexdigest()[:16],
        "weights": weights_hash(policy.learn_mode.state_dict()["model"]),
    }


def step_collector_run(seed: int) -> dict[str, Any]:
    """``StepCollector`` (inferencer + rolloutor) with a fresh DQN policy, epsilon 0.5."""
    cfg = compile_config(
        copy.deepcopy(dqn_config.main_config), create_cfg=copy.deepcopy(dqn_config.create_config), seed=seed
    )
    env_fn, collector_cfgs, _ = get_vec_env_setting(cfg.env)
    env = create_env_manager(cfg.env.manager, [lambda c=c: env_fn(c) for c in collector_cfgs])
    policy = create_policy(cfg.policy, enable_field=["learn", "collect", "eval"])
    stage = StepCollector(cfg, policy.collect_mode, env, random_collect_size=64)
    ctx = OnlineRLContext(collect_kwargs={"eps": 0.5})
    h = hashlib.sha256()
    for _ in range(STEP_COLLECT_CALLS):
        stage(ctx)
        for transition in ctx.trajectories:
            update_hash(h, transition)
        update_hash(h, ctx.trajectory_end_idx)
    env.close()
    return {"env_steps": ctx.env_step, "episodes": ctx.env_episode, "transitions": h.hexdigest()[:16]}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--compare", type=Path, help="an earlier result file that must be identical")
    parser.add_argument("--name", default="serial_identity", help="the result's name in benchmarks/results")
    args = parser.parse_args()
    torch.set_num_threads(1)  # one thread: float sums in the same order every run
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as workdir:
        cwd = os.getcwd()
        os.chdir(workdir)  # the runs' folders (logs, checkpoints) go there
        try:
            for algorithm in ("dqn", "ppo"):
                for seed in SEEDS:
                    result[f"{algorithm}_seed{seed}"] = serial_run(algorithm, seed)
                    print(algorithm, seed, result[f"{algorithm}_seed{seed}"], flush=True)
            for seed in SEEDS:
                result[f"step_collector_seed{seed}"] = step_collector_run(seed)
                print("step_collector", seed, result[f"step_collector_seed{seed}"], flush=True)
        finally:
            os.chdir(cwd)
    if args.compare is None:
        reference = "none: run with --compare OLD.json to compare with fingerprints made earlier"
        write_result(args.name, result, reference=reference, ratio={})
        return 0
    recorded = json.loads(args.compare.read_text())
    before = recorded.get("figures", recorded)  # a result file, or the fingerprints alone
    differ = sorted(k for k in set(before) | set(result) if before.get(k) != result.get(k))
    for key in differ:
        print(f"DIFFERENT {key}: before {before.get(key)} after {result.get(key)}")
    print("identical" if not differ else f"{len(differ)} of {len(result)} runs differ")
    made_at = f" (made at commit {recorded['commit']})" if "commit" in recorded else ""
    reference = f"the fingerprints in {args.compare}{made_at}, compared run by run"
    ratio = {"identical_runs/runs": 1 - len(differ) / len(result)}
    write_result(args.name, result, reference=reference, ratio=ratio)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
