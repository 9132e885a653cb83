"""A game whose optional package is missing is named, with the extra that installs it, before
anything starts: by ``compile_config``, and by a Ray run before Ray starts. The package is made
missing the way Python sees an uninstalled one (``find_spec`` finds nothing)."""

import importlib.util
import subprocess
import sys

import pytest

from ding_ray.config import compile_config
from ding_ray.configs import load_config
from ding_ray.errors import ConfigError


def without(monkeypatch, package: str) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == package else find_spec(n, *a))


@pytest.mark.parametrize(
    "package, env, env_type",
    [
        ("minatar", dict(env_id="MinAtar/Breakout-v1"), "gymnasium"),
        ("ale_py", dict(env_id="ALE/Pong-v5"), "atari"),
        ("ale_py", dict(env_id="PongNoFrameskip-v4"), "atari"),
    ],
)
def test_compile_config_names_the_extra_of_a_missing_game_package(monkeypatch, package, env, env_type):
    without(monkeypatch, package)
    with pytest.raises(ConfigError) as err:
        compile_config(dict(env=env), create_cfg=dict(env=dict(type=env_type)), save_cfg=False)
    assert f"needs {package}, which is not installed" in str(err.value)
    assert 'pip install "ding_ray[atari]"' in str(err.value)


@pytest.mark.ray
def test_a_ray_run_names_the_missing_extra_before_ray_starts(tmp_path):
    bundled = load_config("minatar_breakout_dqn")
    assert bundled.main_config.env.env_id.startswith("MinAtar/")
    code = (
        "import runpy, sys\n"
        "sys.modules['minatar'] = None  # as if the atari extra were not installed\n"
        "sys.argv = ['ding-ray', 'train', 'minatar_breakout_dqn', '--mode', 'ray']\n"
        "runpy.run_module('ding_ray.entry.cli', run_name='__main__')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ding-ray: error: env.env_id='MinAtar/Breakout-v1' needs minatar"), last
    assert 'pip install "ding_ray[atari]"' in last
    assert "Traceback" not in proc.stderr
    assert "Ray" not in proc.stdout + proc.stderr.replace(last, "")  # no line about starting Ray
