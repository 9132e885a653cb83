"""A user module named by ``import_names`` that registers a gymnasium env works on Ray as in one
process: the actors import it too, from where the driver found it (a local Ray shares the driver's
file system). Where an actor cannot import it (its folder is not on that node), the run fails at
once with one line naming the module and what to do, before any actor is created."""

from __future__ import annotations

import copy
import shutil
import sys
import textwrap
import uuid

import pytest

from ding_ray.distributed import RayRun, make_plan
from ding_ray.distributed.user_modules import user_modules
from ding_ray.entry import compile_ray_config
from ding_ray.errors import ConfigError
from ding_ray.framework import pipelines
from tests.distributed.configs import small_config

pytestmark = pytest.mark.ray

TINY_ENV = '''
import gymnasium as gym
import numpy as np


class TinyEnv(gym.Env):
    """Observation [t, t, t, t] / 10; reward 1 per step; 10 steps an episode."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return np.zeros(4, dtype=np.float32), {}

    def step(self, action):
        self._t += 1
        return np.full(4, self._t / 10, dtype=np.float32), 1.0, self._t >= 10, False, {}


gym.register(id="{env_id}", entry_point="{module}:TinyEnv")
'''


def user_env(tmp_path, monkeypatch) -> tuple[str, str, object]:
    """A module registering a tiny env, in a folder on the driver's ``sys.path`` only (not on the
    PYTHONPATH the Ray workers start with); ``(module, env_id, folder)``."""
    uid = uuid.uuid4().hex[:8]
    module, env_id = f"tiny_user_env_{uid}", f"TinyUserEnv{uid}-v0"
    folder = tmp_path / "user_code"
    folder.mkdir()
    (folder / f"{module}.py").write_text(
        textwrap.dedent(TINY_ENV.replace("{env_id}", env_id).replace("{module}", module))
    )
    monkeypatch.syspath_prepend(str(folder))
    return module, env_id, folder


def ray_cfg(tmp_path, module: str, env_id: str):
    """The shared small DQN config on the user's env, which create_config's import_names registers."""
    main, create = small_config(str(tmp_path / "exp"))
    main["ray"]["num_collectors"] = 1
    main["env"]["env_id"] = env_id
    create = copy.deepcopy(create)
    create["env"]["import_names"] = [module]
    return compile_ray_config((main, create), seed=0, save_cfg=False)


def test_an_env_registered_through_import_names_trains_on_ray(ray_session, tmp_path, monkeypatch):
    module, env_id, folder = user_env(tmp_path, monkeypatch)
    cfg = ray_cfg(tmp_path, module, env_id)
    assert user_modules(cfg) == {module: str(folder)}  # found through the env id's entry point
    with RayRun(cfg, make_plan(cfg)) as rc, rc.task() as task:
        pipelines.off_policy(task, rc.cfg, rc, max_train_iter=20)
        task.run()
    assert task.ctx.train_iter >= 20 and task.ctx.env_step > 0
    assert "error" not in rc.result


def test_a_module_the_actors_cannot_import_ends_the_run_with_its_name(ray_session, tmp_path, monkeypatch):
    module, env_id, folder = user_env(tmp_path, monkeypatch)
    cfg = ray_cfg(tmp_path, module, env_id)  # the driver imported it from folder
    shutil.rmtree(folder)  # as on a node that lacks the folder
    with pytest.raises(ConfigError) as err:
        RayRun(cfg, make_plan(cfg))
    message = str(err.value)
    assert "\n" not in message
    assert f"The Ray actors cannot import module '{module}'" in message
    assert f"the driver found it in {folder}, which this node lacks" in message
    assert "Install it as a package on every node" in message and "py_modules" in message
    sys.modules.pop(module, None)


def test_a_module_nobody_can_import_is_named(ray_session, tmp_path):
    main, create = small_config(str(tmp_path / "exp"))
    main["env"]["import_names"] = ["no_such_user_module_4711"]
    cfg = compile_ray_config((main, create), seed=0, save_cfg=False)
    with pytest.raises(
        ConfigError, match="cannot import module 'no_such_user_module_4711'.*nor can the driver"
    ):
        RayRun(cfg, make_plan(cfg))
