"""A collector actor whose process is frozen (SIGSTOP) neither answers nor dies: with one collector
the run used to wait for it without a word for as long as it was frozen. Its call is logged as slow
against the recent median, and past ``ray.call_timeout_s`` the actor is killed; Ray restarts it and
the run goes on (the pool's usual death path: the batch is lost, the collector rejoins)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time

import pytest
import ray

from ding_ray.distributed import RayRun, make_plan
from ding_ray.errors import ConfigError
from ding_ray.framework import pipelines
from tests.distributed.configs import compiled

pytestmark = pytest.mark.ray

TIMEOUT_S = 12.0  # ray.call_timeout_s here; a collector call takes well under a second
GIVE_UP_S = 180.0  # the test fails (never hangs) if the run is still stalled this long after the freeze


def test_a_frozen_collector_is_killed_and_replaced(ray_session, tmp_path, caplog):
    cfg = compiled(tmp_path, name="frozen", call_timeout_s=TIMEOUT_S)
    cfg.ray.num_collectors = 1  # nothing else collects while it is frozen
    frozen: dict = {}

    def freeze_once(ctx):
        if not frozen and ctx.train_iter >= 40:
            collector = rc.actors.collectors[0]
            frozen["pid"] = ray.get(collector.__ray_call__.remote(lambda worker: os.getpid()), timeout=60)
            frozen["at"], frozen["train_iter"] = time.monotonic(), ctx.train_iter
            os.kill(frozen["pid"], signal.SIGSTOP)
        elif frozen and time.monotonic() - frozen["at"] > GIVE_UP_S:
            raise AssertionError(f"the run is still stalled {GIVE_UP_S:g} s after the collector froze")

    try:
        with caplog.at_level(logging.WARNING, logger="ding_ray.distributed.supervisor"):
            with RayRun(cfg, make_plan(cfg)) as rc, rc.task() as task:
                pipelines.off_policy(task, rc.cfg, rc, max_train_iter=300)
                task.use(freeze_once)
                task.run()
    finally:
        if "pid" in frozen:  # never leave a stopped process behind, whatever happened
            with contextlib.suppress(ProcessLookupError):
                os.kill(frozen["pid"], signal.SIGCONT)
    assert frozen and task.ctx.train_iter >= 300
    # at least: a machine loaded enough to hold a normal call 12 s would add its own restarts
    assert rc.result["collector_restarts"] >= 1 and rc.result["lost_batches"] >= 1
    assert "the collector-0 actor's call has taken" in caplog.text and "its recent median" in caplog.text
    assert "the collector-0 actor has not answered its call for" in caplog.text
    assert "(ray.call_timeout_s=12): treated as dead and killed, Ray restarts it" in caplog.text
    with pytest.raises(ProcessLookupError):  # the frozen process was killed, not left stopped
        os.kill(frozen["pid"], 0)


def test_a_call_timeout_must_be_positive(tmp_path):
    with pytest.raises(ConfigError, match="'ray.call_timeout_s' must be > 0"):
        compiled(tmp_path, call_timeout_s=0)
