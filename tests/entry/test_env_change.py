"""``--set env.env_id=...`` on a bundled config: the model's shapes come from the new env."""

from __future__ import annotations

import json
import subprocess
import sys

from ding_ray.configs import load_config
from ding_ray.entry.cli_commands import apply_overrides


def test_a_new_env_id_frees_the_shapes_the_user_did_not_set(capsys):
    bundled = load_config("cartpole_dqn")
    main, create = bundled.main_config, bundled.create_config
    apply_overrides(main, create, ["env.env_id=MountainCar-v0"])
    assert main.policy.model.obs_shape is None and main.policy.model.action_shape is None
    line = capsys.readouterr().out
    assert "CartPole-v1 to MountainCar-v0" in line and "obs_shape=4, action_shape=2" in line

    main = load_config("cartpole_dqn").main_config  # a shape set with the env is kept
    apply_overrides(main, create, ["env.env_id=MountainCar-v0", "policy.model.action_shape=3"])
    assert main.policy.model.obs_shape is None and main.policy.model.action_shape == 3
    assert "takes obs_shape from MountainCar-v0" in capsys.readouterr().out

    main = load_config("cartpole_dqn").main_config  # the same env, or no env change: untouched
    apply_overrides(main, create, ["env.env_id=CartPole-v1", "env.stop_value=100"])
    assert main.policy.model.obs_shape == 4 and main.policy.model.action_shape == 2
    main = load_config("cartpole_dqn").main_config  # eval loads a checkpoint: its shapes stay
    apply_overrides(main, create, ["env.env_id=MountainCar-v0"], infer_shapes=False)
    assert main.policy.model.obs_shape == 4
    assert capsys.readouterr().out == ""


def test_train_a_bundled_config_on_another_env(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ding_ray.entry.cli",
            "train",
            "cartpole_dqn",
            "--max-env-step",
            "200",
            "--set",
            "env.env_id=MountainCar-v0",
            "env.n_evaluator_episode=1",
            "env.evaluator_env_num=1",
            "env.collector_env_num=2",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "the model takes obs_shape and action_shape from MountainCar-v0" in proc.stdout
    config = json.loads((tmp_path / "cartpole_dqn_seed0" / "total_config.json").read_text())
    assert config["env"]["env_id"] == "MountainCar-v0"
    log = proc.stdout + proc.stderr
    assert "policy.model.obs_shape=2, from the env's observations" in log
    assert "policy.model.action_shape=3, from the env's actions" in log
