"""The bundled MinAtar Breakout DQN config: a tiny serial run, and the benchmark's plain loop builds
the same network and reads the same hyperparameters (benchmarks/minatar_dqn_plain.py)."""

import copy
import importlib.util
import json
import os

import pytest
import torch

from ding_ray.configs import load_config
from ding_ray.entry import serial_pipeline
from ding_ray.model.q_network import DQN

pytest.importorskip("minatar", reason='needs the atari extra: pip install "ding_ray[atari]"')

PLAIN = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "minatar_dqn_plain.py")


def plain_module():
    spec = importlib.util.spec_from_file_location("_minatar_dqn_plain", PLAIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_plain_loop_builds_ding_rays_network_and_reads_the_config():
    plain, bundled = plain_module(), load_config("minatar_breakout_dqn")
    assert plain.load_config() == bundled.main_config  # the very values ding_ray trains with
    model_cfg = bundled.main_config.policy.model
    ours = DQN(**model_cfg)
    theirs = plain.QNetwork(tuple(model_cfg.obs_shape), model_cfg.action_shape)
    ours_params, theirs_params = list(ours.state_dict().values()), list(theirs.state_dict().values())
    assert [p.shape for p in ours_params] == [p.shape for p in theirs_params]
    # ding_ray's weights in the plain network: the same function, layer for layer
    theirs.load_state_dict(dict(zip(theirs.state_dict(), ours_params)))
    obs = (torch.rand(5, *model_cfg.obs_shape) < 0.1).float()
    torch.testing.assert_close(theirs(obs), ours(obs)["logit"])


def test_a_tiny_serial_run_of_the_bundled_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bundled = load_config("minatar_breakout_dqn")
    cfg = copy.deepcopy(bundled.main_config)
    cfg.exp_name = "minatar_tiny"
    cfg.env.update(evaluator_env_num=2, n_evaluator_episode=2)
    cfg.policy.random_collect_size = 64
    cfg.policy.eval.evaluator.eval_freq = 20
    serial_pipeline((cfg, bundled.create_config), seed=0, max_env_step=300)
    result = json.loads((tmp_path / "minatar_tiny" / "result.json").read_text())
    assert result["env_steps"] >= 300 and result["pipeline"] == "serial"
    # 8 gradient steps per collect call of 32 env steps after the random ones, none dropped
    assert result["train_iter"] == 8 * ((result["env_steps"] - 64) // 32)
    assert result["best_eval_return"] is not None
