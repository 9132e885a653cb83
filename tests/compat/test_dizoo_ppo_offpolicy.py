"""dizoo's cartpole_ppo_offpolicy_config.py (DI-engine's 'ppo_offpolicy'), read from DI-engine 0.5.3's
wheel and run unchanged but for the env type and id."""

import json
import os

from ding_ray.entry import serial_pipeline
from tests.compat.dizoo import read_dizoo_config


def test_cartpole_ppo_offpolicy_config_solves_as_di_engine_does(tmp_path):
    """DI-engine 0.5.3 beside it, seeds 0-2: stop value 195 at iterations 798 / 714 / 504 (6 per
    collect of 128: about 17k / 15k / 11k env steps); ding_ray seeds 0-2: 336 / 126 / 504 iterations,
    7,776 / 2,936 / 11,496 env steps."""
    os.chdir(tmp_path)
    main, create = read_dizoo_config("classic_control/cartpole/config/cartpole_ppo_offpolicy_config.py")
    assert create.policy.type == "ppo_offpolicy"
    serial_pipeline((main, create), seed=0, max_env_step=40_000)
    result = json.load(open("cartpole_ppo_offpolicy_seed0/result.json"))
    assert result["stop"] and result["best_eval_return"] >= 195, result
    assert result["pipeline"] == "serial"  # off-policy: a replay buffer between collector and learner
    assert result["env_steps"] <= 18_000  # DI-engine's median x 1.2
    assert result["train_iter"] % 6 == 0  # update_per_collect=6: one gradient step per learn call
