"""DI-engine 0.5.3's framework scripts, ``ding/example/{dqn,ppo,sac,dqn_per,ppo_offpolicy}.py`` from
its wheel, learn (the last two on the new buffer API: ``DequeBuffer``, ``PriorityExperienceReplay``).

Each script runs in a subprocess, as ``python <script>``, after these text edits and no others
(each must apply, so a script that changes upstream fails here rather than running unedited):

- ``ding`` -> ``ding_ray`` as the module name of every import;
- ``from ditk import logging`` -> ``import logging``: DI-toolkit is not a ding_ray dependency (it
  pulls scikit-learn, scipy, seaborn, pandas and TensorBoard); its ``logging`` is the stdlib's with
  a rich handler, and the stdlib's form is what shows ding_ray's INFO lines here;
- the dizoo config import -> the same file of the wheel read by ``read_dizoo_config`` (env type and
  id changed only);
- env construction: ``import gym`` -> ``import gymnasium as gym`` (the CartPole scripts: the lines
  ``DingEnvWrapper(gym.make("CartPole-v0"))`` stay as written); dizoo's ``PendulumEnv(cfg.env)``
  -> ``GymnasiumEnv(cfg.env)`` (sac).

No budget is added: the CartPole scripts run until the evaluator reaches the stop value (195), sac
until Pendulum's (-250) or the script's own ``termination_checker(max_train_iter=10000)``. The
INFO lines the test reads appear because the script sets the root level to INFO (DI-engine's
idiom). Measured here (2 shared cores), beside DI-engine 0.5.3 running the unedited scripts
(torch 1 thread; 2026-11-27): dqn.py 1,016 env steps, ~5 s (DI-engine 1,016); ppo.py 6,656, ~7 s (DI-engine
6,656); sac.py 32,990, ~45 s (DI-engine 33,990).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.compat.dizoo import dizoo_source, example_script, read_dizoo_config

REPO = Path(__file__).resolve().parents[2]

# (pattern, replacement), applied with re.MULTILINE; every one must match at least once
_COMMON_EDITS = [
    (r"^(\s*)(from|import) ding\b", r"\1\2 ding_ray"),
    (r"^from ditk import logging$", "import logging"),
    (
        r"^from dizoo\.(\S+) import main_config, create_config$",
        lambda m: (
            "from tests.compat.dizoo import read_dizoo_config\n"
            f"main_config, create_config = read_dizoo_config({m.group(1).replace('.', '/') + '.py'!r})"
        ),
    ),
]
_CARTPOLE_ENV = [(r"^import gym$", "import gymnasium as gym")]
_PENDULUM_ENV = [
    (
        r"^from dizoo\.classic_control\.pendulum\.envs\.pendulum_env import PendulumEnv$",
        "from ding_ray.envs import GymnasiumEnv",
    ),
    (r"PendulumEnv\(cfg\.env\)", "GymnasiumEnv(cfg.env)"),
]

# script -> (its dizoo config, env edits, subprocess time limit in seconds)
SCRIPTS = {
    "dqn.py": ("classic_control/cartpole/config/cartpole_dqn_config.py", _CARTPOLE_ENV, 300),
    "ppo.py": ("classic_control/cartpole/config/cartpole_ppo_config.py", _CARTPOLE_ENV, 300),
    "sac.py": ("classic_control/pendulum/config/pendulum_sac_config.py", _PENDULUM_ENV, 600),
    "dqn_per.py": ("classic_control/cartpole/config/cartpole_dqn_config.py", _CARTPOLE_ENV, 300),
    "ppo_offpolicy.py": (
        "classic_control/cartpole/config/cartpole_ppo_offpolicy_config.py",
        _CARTPOLE_ENV,
        300,
    ),
}
EVAL_LINE = re.compile(r"\[evaluator\] iter (\d+) envstep (\d+) eval return (-?\d+(?:\.\d+)?)")


def ding_ray_script(name: str) -> str:
    """``ding/example/<name>`` with the edits above."""
    return _edited(example_script(name), _COMMON_EDITS + SCRIPTS[name][1], f"ding/example/{name}")


def _edited(source: str, edits: list, where: str) -> str:
    for pattern, replacement in edits:
        source, count = re.subn(pattern, replacement, source, flags=re.MULTILINE)
        assert count, f"the edit {pattern!r} found nothing in {where}"
    assert not re.search(r"^\s*(from|import) (ding|dizoo|ditk|gym)\b", source, re.MULTILINE), source
    return source


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_ding_example_script_learns(tmp_path, name):
    config, _, limit_s = SCRIPTS[name]
    main_config, _ = read_dizoo_config(config)
    script = tmp_path / name
    script.write_text(ding_ray_script(name))
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        # one torch thread: dqn_per.py and ppo_offpolicy.py do not call ding_init, which sets it
        OMP_NUM_THREADS="1",
    )
    try:
        run = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=limit_s,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{name} did not finish in {limit_s} s; its output ended with:\n{str(e.output)[-3000:]}")
    output = run.stdout + run.stderr
    assert run.returncode == 0, f"{name} failed:\n{output[-5000:]}"
    evaluations = [(int(step), float(ret)) for _, step, ret in EVAL_LINE.findall(output)]
    assert evaluations, f"{name} logged no evaluation at INFO level:\n{output[-3000:]}"
    env_step, last_return = evaluations[-1]
    assert last_return >= main_config.env.stop_value, (
        f"{name} ended at {env_step} env steps with eval return {last_return}, below the stop value "
        f"{main_config.env.stop_value}"
    )
    # CkptSaver(policy, cfg.exp_name, train_freq=100): every 100 iterations', the best evaluated
    # and the final weights, readable without running code
    # (the exp_name of the config, or the one a script sets: dqn_per.py's 'cartpole_dqn_per')
    (ckpt,) = tmp_path.glob("*/ckpt")
    files = set(os.listdir(ckpt))
    assert {"eval.pth.tar", "final.pth.tar"} <= files, files
    assert any(f.startswith("iteration_") for f in files), files
    assert "model" in torch.load(ckpt / "final.pth.tar", weights_only=True)


# dizoo's hand-written loop for PPO: `ding` -> `ding_ray`, gym -> gymnasium, its config from the wheel
PPO_MAIN = "classic_control/cartpole/entry/cartpole_ppo_main.py"
_PPO_MAIN_EDITS = [
    (r"^(\s*)(from|import) ding\b", r"\1\2 ding_ray"),
    (r"^import gym$", "import gymnasium as gym"),
    (
        r"^from dizoo\.(\S+) import (\w+)$",
        lambda m: (
            "from tests.compat.dizoo import read_dizoo_config\n"
            f"{m.group(2)} = read_dizoo_config({m.group(1).replace('.', '/') + '.py'!r})[0]"
        ),
    ),
]


@pytest.mark.slow
def test_dizoo_cartpole_ppo_main_learns(tmp_path):
    """dizoo's ``cartpole_ppo_main.py``: compile_config's class form, ``deep_merge_dicts`` and
    ``set_pkg_seed`` from ``ding_ray.utils``, BaseLearner/collector/evaluator by hand, and a loop
    that runs until the evaluator reaches 195. The harness only sets the root log level to INFO
    (so the evaluator's lines show) and runs the file as ``__main__``."""
    script = tmp_path / "cartpole_ppo_main.py"
    script.write_text(_edited(dizoo_source(PPO_MAIN), _PPO_MAIN_EDITS, f"dizoo/{PPO_MAIN}"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    harness = (
        "import logging, runpy, sys; logging.getLogger().setLevel(logging.INFO); "
        "runpy.run_path(sys.argv[1], run_name='__main__')"
    )
    run = subprocess.run(
        [sys.executable, "-c", harness, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-5000:]
    evaluations = [(int(step), float(ret)) for _, step, ret in EVAL_LINE.findall(output)]
    assert evaluations and evaluations[-1][1] >= 195, output[-3000:]
    # the loop counts DI-engine's iterations: 8 per collect of 256 (2 epochs x 4 minibatches)
    assert all(int(i) % 8 == 0 for i, _, _ in EVAL_LINE.findall(output))
