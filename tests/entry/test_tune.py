"""A real 2-trial Ray Tune sweep over the serial DQN pipeline on CartPole, with a tiny budget."""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("ray.tune", reason="needs the tune extra: pip install 'ding_ray[tune]'")

import ray  # noqa: E402

from ding_ray.entry.tune import tune_pipeline  # noqa: E402
from ding_ray.errors import ConfigError  # noqa: E402

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_local():
    """The session Ray of tests/distributed when it is up, else a small local one for this module."""
    if ray.is_initialized():
        yield
        return
    ray.init(num_cpus=2, include_dashboard=False, namespace="ding_ray_tests")
    yield
    ray.shutdown()


# small CartPole DQN trials: an evaluation every half collect, 2 episodes, 2 envs a side
SMALL = {
    "policy.eval.evaluator.eval_freq": 8,
    "env.n_evaluator_episode": 2,
    "env.evaluator_env_num": 2,
    "env.collector_env_num": 2,
}


def run_record(result) -> dict:
    """The result.json of the serial run in a trial's folder."""
    run_dirs = [d for d in os.listdir(result.path) if d.startswith("cartpole_dqn")]
    assert run_dirs, os.listdir(result.path)
    with open(os.path.join(result.path, run_dirs[0], "result.json")) as f:
        return json.load(f)


def test_two_trial_sweep_reports_each_evaluation(ray_local, tmp_path):
    learning_rates = [1e-3, 3e-4]
    grid = tune_pipeline(
        "cartpole_dqn",
        param_space={
            "policy.learn.learning_rate": {"grid_search": learning_rates},
            "policy.nstep": 3,
            **SMALL,
        },
        max_env_step=1500,
        storage_path=str(tmp_path / "tune"),
        name="cartpole_sweep",
    )
    assert grid.num_errors == 0, [r.error for r in grid]
    assert len(grid) == 2
    for result in grid:
        history = result.metrics_dataframe
        # one row per evaluation: the budget of ~1500 env steps leaves room for several
        assert len(history) >= 3, history
        assert history["eval_return"].notna().all() and (history["eval_return"] > 0).all()
        assert history["env_step"].is_monotonic_increasing
        # the last evaluation is the one due before the collect (32 env steps) that spent the
        # budget: as in DI-engine's loop, the weights trained after it are not evaluated
        assert history["env_step"].iloc[-1] >= 1500 - 32 or history["stop_value_reached"].iloc[-1]
        assert result.config["policy.nstep"] == 3
        # the serial run's own folder lives in the trial's folder, with its result.json
        record = run_record(result)
        # the run went on to its budget after its last evaluation (one collect at most)
        assert history["env_step"].iloc[-1] <= record["env_steps"] <= history["env_step"].iloc[-1] + 64
        # each report carries a run checkpoint of the moment it was taken
        with result.checkpoint.as_directory() as folder:
            with open(os.path.join(folder, "meta.json")) as f:
                meta = json.load(f)
            assert {"learner.pth", "buffer.msgpack"} <= set(os.listdir(folder))
        assert meta["train_iter"] == history["train_iter"].iloc[-1]
        assert meta["env_steps"] == history["env_step"].iloc[-1]
    best = grid.get_best_result()
    assert best.config["policy.learn.learning_rate"] in learning_rates
    assert best.metrics["eval_return"] == max(r.metrics["eval_return"] for r in grid)


def test_the_evaluation_that_reaches_the_stop_value_is_the_trial_s_last_report(ray_local, tmp_path):
    """That evaluation ends its iteration before the report stage runs: it is reported after the
    run (it was lost before, when the report stage had last seen an earlier iteration)."""
    grid = tune_pipeline(
        "cartpole_dqn",
        param_space={
            "env.stop_value": 12,  # within a few evaluations of the start
            **SMALL,
        },
        max_env_step=3000,
        storage_path=str(tmp_path / "tune"),
        name="cartpole_stop",
    )
    assert grid.num_errors == 0, [r.error for r in grid]
    (result,) = grid
    history = result.metrics_dataframe
    assert history["stop_value_reached"].iloc[-1] and history["eval_return"].iloc[-1] >= 12, history
    assert not history["stop_value_reached"].iloc[:-1].any()
    record = run_record(result)
    assert record["stop"] and history["env_step"].iloc[-1] == record["env_steps"]


def test_a_ray_pipeline_trial_reports_evaluations_with_checkpoints(ray_local, tmp_path):
    grid = tune_pipeline(
        "apex_dqn",
        param_space={
            "policy.learn.learning_rate": 1e-3,
            "policy.eval.evaluator.eval_freq": 50,
            "policy.random_collect_size": 512,
            "env.stop_value": 1000,  # out of CartPole's reach: the trial runs to max_train_iter
            "env.n_evaluator_episode": 2,
            "env.evaluator_env_num": 2,
            "ray.num_collectors": 1,
            "ray.collector_num_cpus": 0.25,
            "ray.learner_num_cpus": 0.25,
            "ray.evaluator_num_cpus": 0.1,
            "ray.buffer_num_cpus": 0.1,
        },
        max_train_iter=1000,
        storage_path=str(tmp_path / "tune"),
        name="apex_trial",
        pipeline="ray",
        cpus_per_trial=0.25,
    )
    assert grid.num_errors == 0, [r.error for r in grid]
    (result,) = grid
    history = result.metrics_dataframe
    assert len(history) >= 2 and history["train_iter"].is_monotonic_increasing
    with result.checkpoint.as_directory() as folder:
        with open(os.path.join(folder, "meta.json")) as f:
            meta = json.load(f)
        assert {"learner.pth", "buffer.msgpack"} <= set(os.listdir(folder))
    assert meta["pipeline"] == "ray-async" and meta["train_iter"] >= history["train_iter"].iloc[-1]
    run_dirs = [d for d in os.listdir(result.path) if d.startswith("apex_dqn")]
    with open(os.path.join(result.path, run_dirs[0], "result.json")) as f:
        assert json.load(f)["train_iter"] >= 1000


def test_sweep_rejects_bad_input(tmp_path):
    with pytest.raises(ConfigError, match="No bundled config"):
        tune_pipeline("cartpole_dqm", {"policy.nstep": 3}, max_env_step=10)
    with pytest.raises(ConfigError, match="param_space is empty"):
        tune_pipeline("cartpole_dqn", {}, max_env_step=10)
    with pytest.raises(ConfigError, match="pipeline must be 'serial' or 'ray'"):
        tune_pipeline("cartpole_dqn", {"policy.nstep": 3}, max_env_step=10, pipeline="cluster")
