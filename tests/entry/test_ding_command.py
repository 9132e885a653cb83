"""The ``ding`` console script: DI-engine's command line on dizoo's config files and bundled configs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ding_ray.entry.ding_command import main
from tests.compat.dizoo import wheel_root

CARTPOLE_DQN = "classic_control/cartpole/config/cartpole_dqn_config.py"


def test_ding_serial_on_dizoo_s_cartpole_dqn_config_file_solves(tmp_path):
    """``ding -m serial -c cartpole_dqn_config.py -s 0`` as a DI-engine user types it (the installed
    script), on the wheel's file: dizoo's env type 'cartpole' runs gymnasium's CartPole-v0."""
    ding = shutil.which("ding", path=os.path.dirname(sys.executable))
    config = str(wheel_root() / "dizoo" / CARTPOLE_DQN)
    proc = subprocess.run(
        [ding, "-m", "serial", "-c", config, "-s", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "cartpole_dqn_seed0" / "result.json").read_text())
    assert result["stop"] is True and result["best_eval_return"] >= 195 and result["seed"] == 0
    with open(tmp_path / "cartpole_dqn_seed0" / "total_config.json") as f:
        assert json.load(f)["env"]["env_id"] == "CartPole-v0"


def test_several_seeds_run_in_a_folder_each_as_di_engine_lays_them_out(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = str(wheel_root() / "dizoo" / CARTPOLE_DQN)
    assert main(["-m", "serial", "-c", config, "-s", "0", "-s", "1", "--env-step", "200"]) == 0
    for seed in (0, 1):
        run = tmp_path / "cartpole_dqn_config_result" / f"seed{seed}" / "cartpole_dqn_seed0"
        result = json.loads((run / "result.json").read_text())
        assert result["seed"] == seed and result["env_steps"] >= 200
    assert Path.cwd() == tmp_path


def test_a_bundled_config_trains_and_its_checkpoint_evaluates(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert (
        main(["-m", "serial", "-e", "cartpole", "-p", "dqn", "--env-step", "300", "--exp-name", "run"]) == 0
    )
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["env_steps"] >= 300
    best = str(tmp_path / "run" / "ckpt" / "ckpt_best.pth.tar")  # DI-engine's file, as ding-ray train says
    args = ["-m", "eval", "-e", "cartpole", "-p", "dqn", "--load-path", best]
    assert main([*args, "--exp-name", "evaluated"]) == 0
    assert (tmp_path / "evaluated" / "eval_config.json").is_file()


def test_di_engine_modes_ding_ray_does_not_run_are_refused_by_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["-m", "parallel", "-c", "cfg.py"]) == 1
    assert capsys.readouterr().err.strip() == (
        "ding: error: -m parallel is a DI-engine mode ding_ray does not run: ding_ray runs distributed on "
        "Ray: ding-ray train CONFIG --mode ray."
    )
    assert main(["-m", "serial_gail", "-c", "cfg.py"]) == 1
    assert "-m serial_gail is a DI-engine mode ding_ray does not run" in capsys.readouterr().err
    assert main(["-m", "serial", "-c", "no_such_config.py"]) == 1
    assert capsys.readouterr().err.strip() == "ding: error: -c no_such_config.py: no such file."
    assert main(["-m", "serial"]) == 1
    assert "ding needs -c CONFIG_FILE, or -e ENV and -p POLICY" in capsys.readouterr().err
    assert main(["-m", "serial", "-c", "x.py", "--env-step", "lots"]) == 1
    assert os.listdir(tmp_path) == []  # nothing started, nothing written
