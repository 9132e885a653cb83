"""Run dizoo's cartpole_bc_config with DI-engine's serial_pipeline_bc on a pickle file (DI-engine's venv).

Started by ``bench_offline_bc.py`` with the Python of a venv where DI-engine 0.5.3 is installed, in
a fresh folder. The config is DI-engine's own file, unchanged; the evaluator is only watched (as
``di_engine_runner.py`` watches it) and every evaluation is written to ``evaluations.json``.

Run:  python di_engine_bc_runner.py DATA.pkl SEED
"""

import json
import sys
import time

import di_engine_runner
from ding.entry import serial_pipeline_bc
from ding.worker import InteractionSerialEvaluator
from dizoo.classic_control.cartpole.config import cartpole_bc_config as config


def main(data_path: str, seed: int) -> None:
    InteractionSerialEvaluator.eval = di_engine_runner._watched_eval
    try:
        serial_pipeline_bc([config.main_config, config.create_config], seed=seed, data_path=data_path)
    finally:
        with open("evaluations.json", "w") as f:
            wall_s = time.perf_counter() - di_engine_runner.START
            json.dump(dict(evaluations=di_engine_runner.EVALUATIONS, wall_s=wall_s), f)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
