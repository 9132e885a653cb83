"""Run dizoo's cartpole_cql_config with DI-engine's serial_pipeline_offline on a pickle file (its venv).

Started by ``bench_offline_cql.py`` with the Python of a venv where DI-engine 0.5.3 is installed, in
a fresh folder. The config is DI-engine's own file but for its dataset (``data_type='naive'``, the
file given) and the iteration budget; the evaluator is only watched (as ``di_engine_runner.py``
watches it) and every evaluation is written to ``evaluations.json``.

Run:  python di_engine_cql_runner.py DATA.pkl SEED MAX_TRAIN_ITER
"""

import copy
import json
import sys
import time

import di_engine_runner
from ding.entry import serial_pipeline_offline
from ding.worker import InteractionSerialEvaluator
from dizoo.classic_control.cartpole.config import cartpole_cql_config as config


def main(data_path: str, seed: int, max_train_iter: int) -> None:
    InteractionSerialEvaluator.eval = di_engine_runner._watched_eval
    main_config, create_config = copy.deepcopy(config.main_config), copy.deepcopy(config.create_config)
    main_config.policy.collect.data_type = "naive"
    main_config.policy.collect.data_path = data_path
    try:
        serial_pipeline_offline([main_config, create_config], seed=seed, max_train_iter=max_train_iter)
    finally:
        with open("evaluations.json", "w") as f:
            wall_s = time.perf_counter() - di_engine_runner.START
            json.dump(dict(evaluations=di_engine_runner.EVALUATIONS, wall_s=wall_s), f)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
