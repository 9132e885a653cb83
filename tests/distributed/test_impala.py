"""IMPALA on Ray: collector actors stream unrolls with the policy version that produced them into
the buffer actor (the bounded queue: ``replay_buffer_size`` unrolls, each used at most ``max_use``
times), the learner trains on them with V-trace while they come in, and ``ray.backpressure``
decides who waits: 'block' holds the collectors at the tolerance (the learner never waits for
them), 'drop' holds nobody back (what the buffer cannot take in time is dropped and counted)."""

from __future__ import annotations

import contextlib
import copy
import os
import signal
import time

import pytest
import ray

from ding_ray.distributed import RayRun, make_plan
from ding_ray.distributed.actors import Pusher
from ding_ray.entry import compile_ray_config
from ding_ray.framework import pipelines
from ding_ray.framework.task_runner import current_task

pytestmark = pytest.mark.ray


def impala_config(tmp_path, name: str, **ray_over):
    main = dict(
        exp_name=str(tmp_path / name),
        env=dict(env_id="CartPole-v1", collector_env_num=4, evaluator_env_num=2, n_evaluator_episode=2),
        policy=dict(
            model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[64, 64]),
            unroll_len=16,
            learn=dict(batch_size=16, learning_rate=1e-3),
            collect=dict(n_sample=8),
            eval=dict(evaluator=dict(eval_freq=100)),
            other=dict(replay_buffer=dict(replay_buffer_size=128, max_use=8)),
        ),
        ray=dict(num_collectors=2, progress_bar=False, train_iters_per_call=4, publish_freq=4, **ray_over),
    )
    create = dict(env=dict(type="gymnasium"), env_manager=dict(type="base"), policy=dict(type="impala"))
    return compile_ray_config((copy.deepcopy(main), create), seed=0, save_cfg=False)


def run(rc: RayRun, each=None, **budget):
    with rc.task() as task:
        pipelines.off_policy(task, rc.cfg, rc, **budget)
        if each is not None:
            task.use(each)
        task.run()
    return task.ctx


def test_block_keeps_the_learner_busy_and_the_queue_bounded(ray_session, tmp_path):
    cfg = impala_config(tmp_path, "block", backpressure="block")
    plan = make_plan(cfg)
    ahead = []  # unrolls inserted (or in flight) and not yet consumed at the replay ratio, each iteration

    def watch(ctx):
        limiter = rc.limiter
        ahead.append(limiter.inserted + limiter.pending - limiter.sampled / limiter.samples_per_insert)

    with RayRun(cfg, plan) as rc:
        ctx = run(rc, watch, max_train_iter=400)
        # what the queue holds: unrolls of 16 steps, each with the behaviour logits and the version
        batch = ray.get(rc.actors.buffer.sample.remote(8, ctx.train_iter))
    result = rc.result
    assert ctx.train_iter >= 400 and result["backpressure"] == "block"
    assert result["learner_waits"] == 0  # once the buffer had its minimum, the learner never waited on data
    # the collectors were held back at the tolerance: never more than it (plus one call each) ahead
    bound = (
        plan.min_replay_size
        + plan.tolerance / plan.samples_per_insert
        + cfg.ray.num_collectors * plan.n_sample
    )
    assert max(ahead) <= bound
    # the unrolls trained on were a few versions old, never more than the queue's length allows
    lag = result["policy_lag"]
    assert 0 <= lag["median"] <= lag["p95"] < 400
    assert batch["logit"].shape == (8, 16, 2) and batch["obs"].shape == (8, 16, 4)
    assert (batch["policy_version"] >= 0).all() and batch["policy_version"].max() <= ctx.train_iter


def test_drop_never_holds_the_collectors_and_drops_what_a_stalled_buffer_cannot_take(ray_session, tmp_path):
    cfg = impala_config(tmp_path, "drop", backpressure="drop")
    frozen: dict = {}

    def freeze_the_buffer_for_a_while(ctx):
        if not frozen and ctx.train_iter >= 40:
            # every collector up first: on a loaded machine one may still be starting, and the probes
            # below would hold the driver (and its collect calls) until it is
            ray.get([c.__ray_call__.remote(lambda worker: None) for c in rc.actors.collectors], timeout=60)
            pid = ray.get(rc.actors.buffer.__ray_call__.remote(lambda worker: os.getpid()), timeout=60)
            frozen.update(pid=pid, at=time.monotonic(), dropped=rc.collector.dropped_batches)
            os.kill(pid, signal.SIGSTOP)
        elif frozen and "thawed" not in frozen:
            # each collector pushes into the buffer itself: its pushes in flight stay bounded
            pending = [c.pushes_in_flight.remote() for c in rc.actors.collectors]
            assert max(ray.get(pending, timeout=60)) <= Pusher.MAX_PENDING
            if time.monotonic() - frozen["at"] > 3.0:
                os.kill(frozen["pid"], signal.SIGCONT)
                frozen["thawed"] = rc.collector.dropped_batches
        elif frozen and ctx.train_iter >= 200:
            current_task().finish = True

    try:
        with RayRun(cfg, make_plan(cfg)) as rc:
            ctx = run(rc, freeze_the_buffer_for_a_while, max_train_iter=2000)
    finally:
        if "pid" in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(frozen["pid"], signal.SIGCONT)
    assert ctx.train_iter >= 200  # the run went on after the buffer came back
    # while the buffer stood still the collectors went on (nobody waits) and their batches were dropped
    assert frozen["thawed"] > frozen["dropped"]
    assert rc.result["dropped_batches"] >= frozen["thawed"] and rc.result["backpressure"] == "drop"
    assert rc.buffer.max_pushes == 2 * cfg.ray.num_collectors


def test_a_killed_learner_comes_back_and_impala_goes_on(ray_session, tmp_path):
    cfg = impala_config(tmp_path, "kill", backpressure="block")
    cfg.checkpoint.freq = 100
    killed = {}

    def kill_once(ctx):
        if not killed and ctx.train_iter >= 150 and rc.checkpointer.last is not None:
            killed.update(train_iter=ctx.train_iter)
            ray.kill(rc.actors.learner, no_restart=False)

    with RayRun(cfg, make_plan(cfg)) as rc:
        ctx = run(rc, kill_once, max_train_iter=400)
    assert killed and ctx.train_iter >= 400
    events = [e for e in rc.result["recoveries"] if e["actor"] == "learner"]
    assert len(events) == 1 and events[0]["lost_train_iters"] >= 0
