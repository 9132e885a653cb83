"""An env that the driver's script defines and registers (in its ``__main__``, which no actor runs)
trains on Ray as in one process: the actors get the gymnasium registration, the env type and the
model type from the driver. Each script runs in a process of its own, with its own Ray. An error in
the collectors' constructors ends a run with that error, not with advice to allow more restarts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ding_ray.distributed import RayRun, make_plan
from ding_ray.entry import compile_ray_config
from ding_ray.framework import pipelines
from tests.distributed.configs import small_config
from tests.distributed.conftest import REPO
from tests.short_tmp import short_tmp

pytestmark = pytest.mark.ray
BUDGET = 400  # env steps

DRIVER = '''
import sys

import gymnasium as gym
import numpy as np

from ding_ray.entry import ray_pipeline
from ding_ray.envs import GymnasiumEnv
from ding_ray.model import DQN
from ding_ray.utils import ENV_REGISTRY, MODEL_REGISTRY
from tests.distributed.configs import small_config


class Line(gym.Env):
    """Observation [t, t, t, t] / 10; reward 1 per step; 10 steps an episode."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(4, dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(4, self.t / 10, dtype=np.float32), 1.0, self.t >= 10, False, {}


gym.register(id="Line-v0", entry_point="__main__:Line")


@ENV_REGISTRY.register("line")
class LineEnv(GymnasiumEnv):
    """An env type of the script's own, as a DI-engine config names one (create_config's env type)."""


@MODEL_REGISTRY.register("line_q")
class LineQ(DQN):
    """A model type of the script's own (policy.model.type)."""


if __name__ == "__main__":
    main, create = small_config(sys.argv[1])
    main["ray"]["num_collectors"] = 1
    main["env"]["env_id"] = "Line-v0"
    create["env"]["type"] = "line"
    main["policy"]["model"]["type"] = "line_q"
    ray_pipeline((main, create), seed=0, max_env_step=int(sys.argv[2]))
'''


def run_script(args: list[str], cwd) -> subprocess.CompletedProcess:
    """``python <args>`` in ``cwd``, with ``tests`` importable and a Ray of its own."""
    env = {**os.environ, "PYTHONPATH": REPO, "RAY_TMPDIR": short_tmp("drse")}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def trained(proc: subprocess.CompletedProcess, exp, budget: int) -> dict:
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((exp / "result.json").read_text())
    assert result["pipeline"] == "ray-async" and "error" not in result, result
    assert result["env_steps"] >= budget and result["train_iter"] > 0, result
    return result


def test_an_env_id_env_type_and_model_type_the_driver_script_registers_train_on_ray(tmp_path):
    (tmp_path / "driver.py").write_text(DRIVER)
    proc = run_script(["driver.py", str(tmp_path / "exp"), str(BUDGET)], tmp_path)
    trained(proc, tmp_path / "exp", BUDGET)


@pytest.mark.slow
def test_the_custom_env_example_trains_on_ray(tmp_path):
    example = os.path.join(REPO, "examples", "custom_env.py")
    budget = 1500  # past the example's random warm-up
    args = ["--max-env-step", str(budget), "--num-collectors", "1", "--set", "ray.progress_bar=False"]
    proc = run_script([example, "--ray", *args], tmp_path)
    result = trained(proc, tmp_path / "custom_env_seed0", budget)
    assert json.loads(proc.stdout.splitlines()[-1]) == result  # what the example prints


def test_a_collector_constructor_error_ends_the_run_with_it_and_no_restart_advice(ray_session, tmp_path):
    main, create = small_config(str(tmp_path / "exp"))
    main["ray"]["num_collectors"] = 1
    main["env"]["kwargs"] = dict(no_such_argument=1)  # CartPole's constructor raises a TypeError
    cfg = compile_ray_config((main, create), seed=0, save_cfg=False)
    with pytest.raises(Exception) as err:
        with RayRun(cfg, make_plan(cfg)) as rc, rc.task() as task:
            pipelines.off_policy(task, rc.cfg, rc, max_train_iter=20)
            task.run()
    message = str(err.value)
    assert "collector-0, whose constructor raised TypeError" in message and "no_such_argument" in message
    assert "A restart raises it again: fix that error" in message
    assert "max_restarts" not in message
