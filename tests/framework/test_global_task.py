"""DI-engine's global ``task`` and ``ding_init``: a face over ``Task``, one process."""

import os

import pytest
import torch
from easydict import EasyDict

from ding_ray.compat.global_task import GlobalTask
from ding_ray.errors import NotSupportedError
from ding_ray.framework import OnlineRLContext, Task, current_task, ding_init, task
from ding_ray.framework.experiment import default_exp_name, set_default_exp_name
from ding_ray.framework.middleware import online_logger


def test_the_package_attribute_is_the_global_task_and_describes_one_process():
    import ding_ray.framework as framework

    assert isinstance(framework.task, GlobalTask) and task is framework.task
    assert task.router.is_active is False and task.router.node_id is None  # DI-engine's values
    assert task.role.LEARNER == "learner" and not task.finish


def test_start_use_run_delegate_to_a_task_that_the_stages_see():
    seen = []

    def stage(ctx):
        seen.append((current_task().ctx is ctx, task.ctx is ctx, isinstance(current_task(), Task)))
        if ctx.total_step == 2:
            task.finish = True  # DI-engine's middleware ends a run through the global task

    with task.start(async_mode=False, ctx=OnlineRLContext()):
        task.use(stage)
        task.run()
        assert task.ctx.total_step == 2 and task.finish
    assert seen == [(True, True, True)] * 3
    with pytest.raises(RuntimeError, match="task.start"):
        task.use(stage)  # the with block closed it


def test_each_start_is_a_new_pipeline_and_the_with_block_closes_it():
    closed = []
    for _ in range(2):
        with task.start(ctx=OnlineRLContext()):
            task.on_close(lambda: closed.append(True))
            task.use(lambda ctx: None)
            task.run(max_step=3)
            assert task.ctx.total_step == 2  # not 5: the second start began afresh
    assert closed == [True, True]


def test_a_stage_of_a_ding_ray_task_may_use_the_global_task():
    def stop_at_once(ctx):
        task.finish = True

    with Task(OnlineRLContext()) as own:
        own.use(stop_at_once)
        own.run(max_step=10)
    assert own.ctx.total_step == 0


def test_roles_are_recorded_as_in_di_engine():
    with task.start(ctx=OnlineRLContext()):
        assert task.has_role(task.role.COLLECTOR)  # no role given: this process does everything
        task.add_role(task.role.LEARNER)
        assert task.has_role("learner") and not task.has_role(task.role.COLLECTOR)
        assert task.roles == {task.role.LEARNER}


def test_what_needs_di_engine_router_is_refused_by_name():
    with pytest.raises(NotSupportedError, match="async_mode"):
        task.start(async_mode=True, ctx=OnlineRLContext())
    with task.start(ctx=OnlineRLContext()):
        with pytest.raises(NotSupportedError, match="router"):
            task.emit("finish", True)
        with pytest.raises(AttributeError):
            task.no_such_method  # noqa: B018


def test_ding_init_names_the_experiment_the_loggers_write_to(tmp_path, monkeypatch, request):
    monkeypatch.chdir(tmp_path)
    set_default_exp_name(None)  # none named yet, as in a new process; and so again after the test
    request.addfinalizer(lambda: set_default_exp_name(None))
    assert default_exp_name() == os.path.join(str(tmp_path), "default_experiment")
    torch.set_num_threads(2)
    try:
        ding_init(EasyDict(exp_name="my_exp", policy=dict(learn=dict())))
        assert torch.get_num_threads() == 1  # ding_ray's default for every process
    finally:
        torch.set_num_threads(1)
    with task.start(ctx=OnlineRLContext()):
        task.use(online_logger())
        task.run(max_step=1)
    assert os.listdir(tmp_path / "my_exp" / "log" / "task")
