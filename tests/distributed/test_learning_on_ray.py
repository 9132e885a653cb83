"""PPO and SAC learn on Ray: the sync pipeline trains PPO in the serial one's rounds and evaluation
schedule (and trains dizoo's A2C config), the async pipeline solves Pendulum with SAC in the serial
pipeline's env steps (and trains dizoo's TD3 config)."""

from __future__ import annotations

import copy
import json
import os

import pytest

from ding_ray.configs import load_config
from ding_ray.entry import ray_pipeline, serial_pipeline_onpolicy
from ding_ray.entry.plot import read_curve
from tests.compat.dizoo import read_dizoo_config

pytestmark = pytest.mark.ray


def run_config(name: str, exp_name: str, **ray_over) -> tuple[dict, dict]:
    bundled = load_config(name)
    main = copy.deepcopy(dict(bundled.main_config))
    main["exp_name"] = exp_name
    main["ray"] = {**main.get("ray", {}), "progress_bar": False, **ray_over}
    return main, dict(bundled.create_config)


def result(exp_name: str) -> dict:
    with open(os.path.join(exp_name, "result.json")) as f:
        return json.load(f)


def test_ppo_on_the_sync_pipeline_learns_as_the_serial_one(ray_session, tmp_path):
    """One collector actor with the serial collector's envs: the same rounds, every due version
    evaluated (however late, the untrained one too), and 475 reached. Not step for step: in one
    process, as in DI-engine, the envs' episode seeds and PPO's minibatch order come from one numpy
    generator; on Ray the collector and the learner each have their own."""
    serial, ray_run = str(tmp_path / "serial"), str(tmp_path / "ray")
    serial_pipeline_onpolicy(run_config("cartpole_ppo", serial), seed=2, max_env_step=20_000)
    ray_pipeline(run_config("cartpole_ppo", ray_run), seed=2, max_env_step=20_000)
    expected, got = result(serial), result(ray_run)
    assert expected["stop"] and got["stop"] and got["pipeline"] == "ray-sync"
    serial_curve, ray_curve = read_curve(serial), read_curve(ray_run)
    # evaluated from the untrained weights on (DI-engine evaluates at iteration 0), to the same
    # return there: the same initial model and evaluation episodes
    assert serial_curve.x[0] == ray_curve.x[0] == 0 and ray_curve.y[0] == pytest.approx(serial_curve.y[0])
    assert all(b > a for a, b in zip(ray_curve.x, ray_curve.x[1:]))
    assert expected["env_steps"] == serial_curve.x[-1] and serial_curve.y[-1] >= 475
    assert ray_curve.y[list(ray_curve.x).index(got["stop_env_step"])] >= 475


def test_sac_on_the_async_pipeline_solves_pendulum(ray_session, tmp_path):
    exp_name = str(tmp_path / "sac")
    ray_pipeline(run_config("pendulum_sac", exp_name), seed=0, max_env_step=8000)
    got = result(exp_name)
    assert got["stop"] and got["best_eval_return"] >= -250 and got["pipeline"] == "ray-async"
    assert got["stop_env_step"] <= 5000  # the serial pipeline: 3,000 (SB3's tuned run: 3,000)


def test_td3_trains_on_the_async_pipeline(ray_session, tmp_path):
    """dizoo's pendulum_td3_config on the Ape-X stage list: the uniform warm-up, then the learner
    trains on what the collector actors push, with TD3's delayed actor steps logged."""
    main, create = read_dizoo_config("classic_control/pendulum/config/pendulum_td3_config.py")
    main.exp_name = str(tmp_path / "td3")
    main.ray = dict(progress_bar=False, min_replay_size=1000)  # the warm-up's 800, and a little
    ray_pipeline((main, create), seed=0, max_env_step=2500)
    got = result(main.exp_name)
    assert got["pipeline"] == "ray-async" and got["env_steps"] >= 2500 and got["train_iter"] > 10


def test_a2c_trains_on_the_sync_pipeline(ray_session, tmp_path):
    """dizoo's cartpole_a2c_config on the on-policy stage list: collector actors compute the advantages
    (A2C's get_train_sample), the learner takes one iteration per round."""
    main, create = read_dizoo_config("classic_control/cartpole/config/cartpole_a2c_config.py")
    main.exp_name = str(tmp_path / "a2c")
    main.ray = dict(progress_bar=False)
    ray_pipeline((main, create), seed=0, max_env_step=2000)
    got = result(main.exp_name)
    assert got["pipeline"] == "ray-sync" and got["env_steps"] >= 2000
    # one learn call per collect call of n_sample=80 samples, each one iteration
    assert 0 < got["train_iter"] <= got["env_steps"] // 80
