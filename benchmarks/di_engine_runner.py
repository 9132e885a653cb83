"""Run one dizoo config with DI-engine itself and record every evaluation (run in DI-engine's venv).

This script is not part of ding_ray: ``bench_dizoo_parity.py`` starts it with the Python of a venv
where DI-engine 0.5.3 is installed (``--di-engine-python``), in a fresh folder, so the config runs
exactly as a DI-engine user runs it: the file from DI-engine's own ``dizoo`` package, unchanged,
through the entry its ``__main__`` block calls. The evaluator is only watched: each evaluation's
train_iter, env step and mean return are written to ``evaluations.json``.

Run:  python di_engine_runner.py dizoo.classic_control.cartpole.config.cartpole_ppo_config SEED MAX_ENV_STEP \
          [ENV_ID]
ENV_ID, if given, replaces the config's ``env.env_id`` and nothing else: dizoo's MuJoCo configs name
``Hopper-v3``, which needs mujoco-py; gym 0.25's ``Hopper-v4`` runs on the ``mujoco`` bindings.
"""

import importlib
import inspect
import json
import sys
import time

from ding.entry import serial_pipeline, serial_pipeline_onpolicy
from ding.worker import InteractionSerialEvaluator

START = time.perf_counter()
EVALUATIONS = []
_eval = InteractionSerialEvaluator.eval


def _watched_eval(self, *args, **kwargs):
    logger = self._logger
    tabulate = logger.get_tabulate_vars_hor

    def record(info):  # the evaluator hands each evaluation's summary to its logger
        EVALUATIONS.append(
            dict(
                train_iter=int(info["train_iter"]),
                env_step=int(kwargs.get("envstep", args[2] if len(args) > 2 else -1)),
                return_mean=float(info["reward_mean"]),
                since_launch_s=time.perf_counter() - START,
            )
        )
        return tabulate(info)

    logger.get_tabulate_vars_hor = record
    try:
        stop, info = _eval(self, *args, **kwargs)
    finally:
        logger.get_tabulate_vars_hor = tabulate
    if EVALUATIONS:
        EVALUATIONS[-1]["stop"] = bool(stop)
    return stop, info


def main(module_name: str, seed: int, max_env_step: int, env_id: str | None = None) -> None:
    InteractionSerialEvaluator.eval = _watched_eval
    module = importlib.import_module(module_name)
    if env_id is not None:
        module.main_config.env.env_id = env_id
    on_policy = "serial_pipeline_onpolicy" in inspect.getsource(module)
    entry = serial_pipeline_onpolicy if on_policy else serial_pipeline
    try:
        entry((module.main_config, module.create_config), seed=seed, max_env_step=max_env_step)
    finally:
        with open("evaluations.json", "w") as f:
            json.dump(dict(evaluations=EVALUATIONS, wall_s=time.perf_counter() - START), f)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:5])
