"""Slow end-to-end runs: the serial pipeline really learns (select with -m slow)."""

import copy
import json
import os
import sys

import pytest

from ding_ray.entry import serial_pipeline

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from cartpole_dqn import create_config, main_config  # noqa: E402


@pytest.mark.slow
def test_cartpole_dqn_learns_well_above_random(tmp_path):
    os.chdir(tmp_path)
    cfg = copy.deepcopy(main_config)
    cfg["exp_name"] = "cartpole_learn"
    cfg["env"]["stop_value"] = 200  # a random policy scores about 22
    serial_pipeline((cfg, create_config), seed=0, max_env_step=15_000)
    result = json.load(open("cartpole_learn/result.json"))
    assert result["best_eval_return"] >= 200, result
