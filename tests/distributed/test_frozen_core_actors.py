"""A learner or buffer actor whose process is frozen (SIGSTOP) neither answers nor dies: the run used
to wait for it without a word. Its call is logged as slow against the recent median, and past
``ray.call_timeout_s`` the actor is killed; Ray restarts it from the latest checkpoint, what was in
flight on it is dropped, and the run goes on with the restart in result.json's ``recoveries``."""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import signal
import time

import pytest
import ray

from ding_ray.distributed import RayRun, make_plan
from ding_ray.framework import pipelines
from tests.distributed.configs import compiled

pytestmark = pytest.mark.ray

TIMEOUT_S = 15.0  # ray.call_timeout_s here; a learner or buffer call takes well under a second
GIVE_UP_S = 120.0  # the test fails (never hangs) if the run is still stalled this long after the freeze


def test_a_frozen_learner_then_a_frozen_buffer_are_killed_and_restarted(ray_session, tmp_path, caplog):
    """One run: the learner freezes at iteration 24; once the run has trained 24 iterations past
    the learner's restart, the buffer freezes. Each is killed past the timeout and restarted once."""
    cfg = compiled(tmp_path, name="frozen", call_timeout_s=TIMEOUT_S)
    cfg.ray.num_collectors = 1
    frozen: dict = {}  # name -> {"pid", "at"}

    def freeze(name: str) -> None:
        actor = getattr(rc.actors, name)
        pid = ray.get(actor.__ray_call__.remote(lambda worker: os.getpid()), timeout=60)
        frozen[name] = {"pid": pid, "at": time.monotonic()}
        os.kill(pid, signal.SIGSTOP)

    def freeze_each_once(ctx):
        if "learner" not in frozen and ctx.train_iter >= 24:
            freeze("learner")
        elif "buffer" not in frozen and "learner" in frozen:
            restarted = [e for e in rc.supervisor.events if e["actor"] == "learner"]
            if restarted and ctx.train_iter >= frozen["learner"].setdefault("back_at", ctx.train_iter) + 24:
                freeze("buffer")
        last = max((f["at"] for f in frozen.values()), default=None)
        if last is not None and time.monotonic() - last > GIVE_UP_S:
            raise AssertionError(f"the run is still stalled {GIVE_UP_S:g} s after a freeze: {list(frozen)}")

    try:
        with caplog.at_level(logging.WARNING, logger="ding_ray.distributed"):
            with RayRun(cfg, make_plan(cfg)) as rc, rc.task() as task:
                pipelines.off_policy(task, rc.cfg, rc, max_train_iter=120)
                task.use(freeze_each_once)
                task.run()
    finally:
        for each in frozen.values():  # never leave a stopped process behind, whatever happened
            with contextlib.suppress(ProcessLookupError):
                os.kill(each["pid"], signal.SIGCONT)
    assert set(frozen) == {"learner", "buffer"} and task.ctx.train_iter >= 120
    for name in ("learner", "buffer"):
        timed_out = [e for e in rc.result["recoveries"] if e["actor"] == name and e.get("timed_out")]
        assert len(timed_out) == 1, rc.result["recoveries"]
        assert name != "learner" or "lost_train_iters" in timed_out[0]  # counted as for any death
        assert f"the {name} actor's call has taken" in caplog.text
        assert f"the {name} actor has not answered its call for" in caplog.text
        with pytest.raises(ProcessLookupError):  # the frozen process was killed, not left stopped
            os.kill(frozen[name]["pid"], 0)
    assert "its recent median" in caplog.text
    assert "(ray.call_timeout_s=15): treated as dead and killed" in caplog.text


def test_a_frozen_learner_of_the_sync_pipeline_is_killed_and_restarted(ray_session, tmp_path):
    """On-policy, the driver waits for each round's train call: in steps, so the watch can act."""
    from ding_ray.configs.cartpole_ppo import create_config, main_config
    from ding_ray.entry import compile_ray_config

    main = copy.deepcopy(main_config)
    main["exp_name"], main["checkpoint"] = str(tmp_path / "ppo"), dict(freq=10)
    main.setdefault("ray", {}).update(progress_bar=False, call_timeout_s=TIMEOUT_S)
    main["env"]["stop_value"] = 1e9  # out of reach: the run ends at its budget, after the recovery
    cfg = compile_ray_config((main, create_config), seed=0, save_cfg=False)
    frozen: dict = {}

    def freeze_once(ctx):
        if not frozen and ctx.train_iter >= 15:
            learner = rc.actors.learner
            frozen["pid"] = ray.get(learner.__ray_call__.remote(lambda worker: os.getpid()), timeout=60)
            os.kill(frozen["pid"], signal.SIGSTOP)

    try:
        with RayRun(cfg, make_plan(cfg)) as rc, rc.task() as task:
            pipelines.on_policy(task, cfg, rc, max_train_iter=40)
            task.use(freeze_once)
            task.run()
    finally:
        if "pid" in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(frozen["pid"], signal.SIGCONT)
    assert frozen and task.ctx.train_iter >= 40
    (event,) = rc.result["recoveries"]
    assert event["actor"] == "learner" and event["timed_out"] and "lost_train_iters" in event, rc.result[
        "recoveries"
    ]
