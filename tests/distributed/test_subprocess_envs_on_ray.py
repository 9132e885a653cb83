"""Subprocess env managers inside Ray: workers come from a fork server there, never from fork."""

from __future__ import annotations

from functools import partial

import pytest
import ray

from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.envs.subprocess_env_manager import default_context

pytestmark = pytest.mark.ray


def step_cartpole_envs() -> tuple[str, int]:
    """Start a subprocess manager of 2 CartPole envs, step them 10 times: (start method, steps)."""
    env_fn, cfgs, _ = get_vec_env_setting(
        dict(env_id="CartPole-v1", collector_env_num=2, evaluator_env_num=1)
    )
    manager = create_env_manager(dict(type="subprocess"), [partial(env_fn, cfg=c) for c in cfgs])
    manager.seed(0)
    manager.launch()
    steps = 0
    for _ in range(10):
        steps += len(manager.step({i: 0 for i in manager.ready_obs}))
    manager.close()
    return manager.context, steps


def test_workers_start_from_a_fork_server_in_ray_processes(ray_session):
    """A Ray process runs gRPC threads and holds the sockets through which Ray sees it end: a
    forked env worker would inherit both, so the driver and the actors use a fork server."""
    assert default_context() == "forkserver"
    assert ray.get(ray.remote(step_cartpole_envs).remote()) == ("forkserver", 20)
