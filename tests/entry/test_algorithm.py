"""``ding_ray.Algorithm``: a train() loop to CartPole's 475, serially and on Ray; save, from_checkpoint
and act agree; stop() frees the actors; Task.run(max_step) pauses a task that a later run goes on with."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest

import ding_ray
from ding_ray.errors import ConfigError, DingRayError
from ding_ray.framework import OnlineRLContext, Task, current_task

MAX_TRAIN_CALLS = 80  # cartpole_ppo's seed 0 reaches 475 after about 30 evaluations


def train_to_475(algo: ding_ray.Algorithm) -> list[dict]:
    """train() until the returned eval return reaches 475 (or the run ends, or the cap)."""
    history = []
    for _ in range(MAX_TRAIN_CALLS):
        metrics = algo.train()
        history.append(metrics)
        if (metrics["eval_return"] or 0) >= 475 or metrics["done"]:
            break
    return history


def observations(n: int = 20) -> np.ndarray:
    """CartPole-like states spread over what an episode visits."""
    rng = np.random.default_rng(0)
    return (rng.normal(size=(n, 4)) * [1.0, 1.0, 0.1, 1.0]).astype(np.float32)


def test_task_run_max_step_pauses_and_a_later_run_goes_on():
    seen = []

    def count(ctx):
        seen.append((ctx.total_step, ctx.env_step, ctx.train_output))
        ctx.env_step += 1
        ctx.train_output = "this iteration's"
        if ctx.env_step == 5:
            current_task().finish = True

    with Task(OnlineRLContext()) as task:
        task.use(count)
        task.run(max_step=2)
        assert task.finish and task.ctx.total_step == 1  # DI-engine's: finished at max_step
        task.run(max_step=2)  # goes on with a renewed context
        assert [s[:2] for s in seen] == [(0, 0), (1, 1), (2, 2), (3, 3)]
        assert all(out is None for _, _, out in seen)  # each iteration starts on a fresh context
        task.run()
        assert task.ctx.env_step == 5 and task.finish
        task.run(max_step=3)  # a stage finished it: nothing more runs
        assert len(seen) == 5


def test_train_loop_reaches_475_serially_and_checkpoints_act_alike(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    algo = ding_ray.Algorithm("cartpole_ppo", mode="serial")
    history = train_to_475(algo)
    took_s = time.perf_counter() - start
    last = history[-1]
    assert last["eval_return"] >= 475 and last["stop_value_reached"] and last["done"], history[-3:]
    assert all(m["evaluated"] for m in history)  # each call ends at an evaluation
    steps = [m["env_step"] for m in history]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)  # one run, going on
    assert "learner/total_loss" in last and np.isfinite(last["learner/total_loss"])
    print(f"serial: {len(history)} train() calls, {last['env_step']} env steps, {took_s:.1f} s to 475")
    assert algo.train()["iterations"] == 0  # a finished run does not go on

    assert algo.evaluate()["eval_return"] >= 475
    obs = observations()
    actions = [algo.act(o) for o in obs]
    assert all(isinstance(a, int) for a in actions)
    assert list(algo.act(obs)) == actions  # a batch acts as its rows do
    folder = algo.save()
    exported = algo.save(tmp_path / "kept")
    algo.stop()
    algo.stop()  # twice: nothing more
    with pytest.raises(DingRayError, match="stopped"):
        algo.train()
    with open(os.path.join(algo.run.cfg.exp_name, "result.json")) as f:
        assert json.load(f)["stop"]

    for source in (folder, exported):
        with ding_ray.Algorithm.from_checkpoint(source) as restored:
            assert [restored.act(o) for o in obs] == actions
            going_on = restored.train()  # from the checkpoint's counters, collecting anew
            assert going_on["train_iter"] > last["train_iter"] and going_on["env_step"] > last["env_step"]
    with ding_ray.Algorithm.from_checkpoint(algo.run.cfg.exp_name, max_env_step=20_000) as resumed:
        assert resumed.run.cfg.exp_name == algo.run.cfg.exp_name  # goes on in the run's own folder
        assert [resumed.act(o) for o in obs] == actions


def test_overrides_take_the_cli_syntax(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with ding_ray.Algorithm(
        "cartpole_dqn", seed=3, env=dict(stop_value=100), **{"policy.learn.batch_size": 32}
    ) as algo:
        cfg = algo.run.cfg
        assert (cfg.env.stop_value, cfg.policy.learn.batch_size, cfg.seed) == (100, 32, 3)
        assert os.path.basename(cfg.exp_name) == "cartpole_dqn_seed3"
        first = algo.train()  # the iteration-0 evaluation, then that iteration's training
        assert first["evaluated"] and first["iterations"] == 1 and first["eval_return"] > 0
        assert algo.train()["train_iter"] > first["train_iter"] > 0
    with pytest.raises(ConfigError, match="batch_sise"):
        ding_ray.Algorithm("cartpole_dqn", **{"policy.learn.batch_sise": 32})
    with pytest.raises(ConfigError, match="Python literals"):
        ding_ray.Algorithm("cartpole_dqn", exp_name=object())
    with pytest.raises(ConfigError, match="mode"):
        ding_ray.Algorithm("cartpole_dqn", mode="cluster")


@pytest.fixture(scope="module")
def ray_local():
    """The session Ray of tests/distributed when it is up, else a small local one for this module
    (as tests/entry/test_tune.py does)."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        yield ray
        return
    ray.init(num_cpus=4, include_dashboard=False, namespace="ding_ray_tests")
    yield ray
    ray.shutdown()


@pytest.mark.ray
def test_train_loop_reaches_475_on_ray_and_stop_frees_the_actors(ray_local, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    algo = ding_ray.Algorithm("cartpole_ppo", mode="ray")
    history = train_to_475(algo)
    took_s = time.perf_counter() - start
    last = history[-1]
    assert last["eval_return"] >= 475 and last["stop_value_reached"], history[-3:]
    print(f"ray: {len(history)} train() calls, {last['env_step']} env steps, {took_s:.1f} s to 475")
    obs = observations()
    actions = [algo.act(o) for o in obs]
    folder = algo.save()
    namespace = algo.run.plan.namespace
    algo.stop()
    deadline = time.monotonic() + 10
    for name in ("learner", "evaluator", "collector-0"):
        while True:
            try:
                ray_local.get_actor(name, namespace=namespace)
            except ValueError:
                break
            assert time.monotonic() < deadline, f"{name} is still alive after stop()"
            time.sleep(0.2)
    with ding_ray.Algorithm.from_checkpoint(folder, mode="serial") as restored:
        assert [restored.act(o) for o in obs] == actions
