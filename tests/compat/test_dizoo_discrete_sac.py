"""dizoo's cartpole_sac_config.py (DI-engine's 'discrete_sac'), read from DI-engine 0.5.3's wheel and
run unchanged but for the env type and id."""

import json
import os

from ding_ray.entry import serial_pipeline
from tests.compat.dizoo import read_dizoo_config


def test_cartpole_discrete_sac_config_solves_as_di_engine_does(tmp_path):
    """DI-engine 0.5.3 beside it, seeds 0-2: stop value 195 at iterations 450 / 400 / 450 (about
    61k / 54k / 61k env steps); ding_ray seeds 0-2: 500 / 350 / 450 iterations, 68,016 / 47,320 /
    61,096 env steps."""
    os.chdir(tmp_path)
    main, create = read_dizoo_config("classic_control/cartpole/config/cartpole_sac_config.py")
    assert create.policy.type == "discrete_sac"
    serial_pipeline((main, create), seed=1, max_env_step=100_000)
    result = json.load(open("cartpole_sac_seed0/result.json"))
    assert result["stop"] and result["best_eval_return"] >= 195, result
    assert result["env_steps"] <= 75_000  # DI-engine's median x 1.2
    assert result["train_iter"] % 2 == 0  # update_per_collect=2: two gradient steps per collect
