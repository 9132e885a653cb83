"""DI-engine's dizoo cartpole_impala_config.py through serial_pipeline, unchanged but for env type/id."""

import json
import os

from ding_ray.entry import serial_pipeline
from tests.compat.dizoo import read_dizoo_config

CARTPOLE_IMPALA = "classic_control/cartpole/config/cartpole_impala_config.py"


def test_cartpole_impala_config_reaches_its_stop_value(tmp_path):
    """Each collect call gathers n_sample=16 unrolls of 8 steps (8 envs), the buffer keeps each
    unroll for at most max_use=16 samples, and the learner takes update_per_collect=4 gradient
    steps of 16 unrolls: 4 iterations per collect, as DI-engine counts them."""
    os.chdir(tmp_path)
    main, create = read_dizoo_config(CARTPOLE_IMPALA)
    serial_pipeline((main, create), seed=0, max_env_step=60_000)
    result = json.load(open("cartpole_impala_seed0/result.json"))
    assert result["stop"] and result["best_eval_return"] >= 195, result
    assert result["train_iter"] % 4 == 0 and result["pipeline"] == "serial"
    # DI-engine 0.5.3 on this config: 30,320 / 22,832 / 36,416 env steps (seeds 0-2, median 30,320);
    # ding_ray: 36,968 / 16,504 / 16,496 (median 16,504; benchmarks/bench_dizoo_parity.py). Seed 0
    # within DI-engine's slowest seed, plus one evaluation interval
    assert result["env_steps"] < 40_000
    cfg = json.load(open("cartpole_impala_seed0/total_config.json"))
    policy = cfg["policy"]
    assert policy["type"] == "impala" and policy["unroll_len"] == 8
    assert policy["learn"]["discount_factor"] == 0.9 and policy["learn"]["lambda_"] == 0.95
    assert policy["other"]["replay_buffer"]["max_use"] == 16


PONG_IMPALA = "atari/config/serial/pong/pong_impala_config.py"


def test_pong_impala_config_runs_unchanged_on_pixels(tmp_path):
    """dizoo's pong_impala_config.py, unchanged (its env type is already 'atari', its id
    PongNoFrameskip-v4): 12 subprocess Pong envs stream unrolls of 64 frame-stacked uint8 steps
    into the buffer (its ``sliced`` key is DI-engine's DequeBuffer's, which DI-engine's serial
    buffer ignores too). 2,000 env steps: too few for a batch of 128 unrolls, so no training."""
    os.chdir(tmp_path)
    main, create = read_dizoo_config(PONG_IMPALA)
    assert create.env.type == "atari" and main.env.env_id == "PongNoFrameskip-v4"
    serial_pipeline((main, create), seed=0, max_env_step=2_000)  # into dizoo's exp_name
    result = json.load(open("impala_log/pong_impala_seed0/result.json"))
    assert result["env_steps"] >= 2_000 and result["pipeline"] == "serial"
    assert result["last_eval_return"] is not None and -21 <= result["last_eval_return"] <= 21
    cfg = json.load(open("impala_log/pong_impala_seed0/total_config.json"))
    policy = cfg["policy"]
    assert policy["type"] == "impala" and policy["unroll_len"] == 64
    model = policy["model"]
    assert model["obs_shape"] == [4, 84, 84] and model["encoder_hidden_size_list"] == [64, 128, 256]
    assert policy["other"]["replay_buffer"]["sliced"] is False
