"""The Ray pipelines are Task pipelines: the example and ``ray_pipeline`` build the same one, the
stages pass object references between actors, and the remote forms keep the stages' contract."""

from __future__ import annotations

import importlib.util
import os

import pytest
import ray

from ding_ray.distributed import RayRun, make_plan
from ding_ray.entry import compile_ray_config, ray_pipeline
from ding_ray.framework import OnlineRLContext, Task, pipelines, stage_name
from tests.distributed.configs import small_config
from tests.distributed.conftest import REPO

pytestmark = pytest.mark.ray


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, "examples", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record_stages(monkeypatch) -> list[list[str]]:
    """Patch ``Task`` so that ``use`` notes each task's stage names and ``run``, instead of running,
    appends the task's list to the list returned."""
    used: dict[int, list[str]] = {}
    built: list[list[str]] = []
    use = Task.use

    def noting_use(self, fn, lock=False):
        used.setdefault(id(self), []).append(stage_name(fn))
        return use(self, fn, lock)

    monkeypatch.setattr(Task, "use", noting_use)
    monkeypatch.setattr(Task, "run", lambda self, max_step=None: built.append(used.get(id(self), [])))
    return built


def test_the_example_and_ray_pipeline_build_the_same_task(ray_session, tmp_path, monkeypatch):
    """Both build their task on real actors; ``Task.run`` records the stages instead of running."""
    monkeypatch.chdir(tmp_path)
    built = record_stages(monkeypatch)
    example = load_example("apex_dqn")
    result = example.main(seed=0, max_env_step=1000)
    assert result["env_steps"] == 0 and result["stop"] is False  # recorded, not run
    main, create = example.main_config, example.create_config
    main["exp_name"] = str(tmp_path / "through_ray_pipeline")
    ray_pipeline((main, create), seed=0, max_env_step=1000)
    assert len(built) == 2 and built[0] == built[1], built
    assert "monitor_stage" in built[0] and built[0][-1] == "termination_checker"
    # the run's record and checkpoints, from both (the drift the issue found: ckpt_final, resources)
    for exp in ("apex_dqn_seed0", str(tmp_path / "through_ray_pipeline")):
        assert os.path.isfile(os.path.join(exp, "result.json"))
        assert os.path.isfile(os.path.join(exp, "ckpt", "ckpt_final.pth.tar"))


def test_stages_hand_references_from_actor_to_actor(ray_session, tmp_path, monkeypatch):
    """The transitions go collector -> buffer -> learner without being fetched by the driver: the
    collector actors push into the buffer themselves, the driver's own warm-up batches reach the
    pusher stage as object references, and the fetcher stage hands the learner a reference."""
    cfg = compile_ray_config(small_config(str(tmp_path / "refs")), save_cfg=False)
    seen: dict[str, list] = {"trajectories": [], "train_data": []}

    def spy(ctx: OnlineRLContext):
        seen["trajectories"] += list(ctx.trajectories or [])
        yield  # the fetcher runs later in the iteration; its batch is still there on the way back
        seen["train_data"] += [] if ctx.train_data is None else [ctx.train_data]

    with RayRun(cfg, make_plan(cfg)) as rc, rc.task() as task:
        use, spied = task.use, []

        def use_with_spy(fn, lock=False):
            use(fn, lock)
            if stage_name(fn) == "collector":  # after the collector, before the pusher; sees the
                spied.append(use(spy))  # fetch on the way back
            return task

        monkeypatch.setattr(task, "use", use_with_spy)
        pipelines.off_policy(task, cfg, rc, max_train_iter=60)
        assert len(spied) == 1
        task.run()
        held = ray.get(rc.actors.buffer.ping.remote())
    assert all(isinstance(r, ray.ObjectRef) for r in seen["trajectories"])
    warm_up = len(seen["trajectories"]) * rc.plan.n_sample
    # everything the rate limiter counted is in the buffer (and what calls still in flight pushed),
    # most of it pushed by the actors
    assert held >= rc.limiter.inserted > warm_up
    assert seen["train_data"] and all(isinstance(r, ray.ObjectRef) for r in seen["train_data"])
    assert task.ctx.train_iter >= 60 and rc.result["train_iter"] == task.ctx.train_iter
