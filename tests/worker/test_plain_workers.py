"""RolloutWorker, LearnWorker and EvalWorker: what the actors run, tested without Ray."""

import copy
import os

import numpy as np
import pytest

from ding_ray.data import AdvancedReplayBuffer
from ding_ray.errors import ConfigError, ShapeError
from ding_ray.worker import metrics
from ding_ray.worker.eval_worker import EvalWorker
from ding_ray.worker.learn_worker import LearnWorker
from ding_ray.worker.rollout_worker import RolloutWorker
from tests.distributed.configs import compiled


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):
    return compiled(tmp_path_factory.mktemp("plain"))


def test_batches_carry_the_policy_version(cfg):
    worker = RolloutWorker(cfg, index=1)
    batch, info = worker.rollout(policy_kwargs={"eps": 0.5})
    assert info["n"] == 32 and len(batch["obs"]) == 32 and batch["reward"].shape == (32, 3)
    assert (batch["policy_version"] == -1).all() and info["policy_version"] == -1
    assert info["new_env_steps"] >= 32 and info[metrics.COLLECTOR_ENV_STEPS] == worker.envstep
    learner = LearnWorker(cfg)
    version, weights = learner.weights()
    assert worker.load_weights(version, weights) and worker.version == 0
    assert not worker.load_weights(version, weights)  # same version: skipped
    batch, info = worker.rollout()
    assert (batch["policy_version"] == 0).all() and (batch["collect_iter"] == 0).all()


def test_weights_of_a_restarted_learner_replace_newer_ones_of_the_dead_one(cfg):
    """``incarnation`` tells learner processes apart (on Ray): within one only newer versions load;
    a learner restarted from a checkpoint counts its iterations again from there."""
    worker = RolloutWorker(cfg)
    _, weights = LearnWorker(cfg).weights()
    assert worker.load_weights(10, weights, incarnation=1) and worker.weights_incarnation == 1
    assert not worker.wants_weights(10, 1) and not worker.wants_weights(9, 1) and worker.wants_weights(11, 1)
    assert worker.load_weights(4, weights, incarnation=2) and worker.version == 4
    assert not worker.load_weights(12, weights, incarnation=1) and worker.version == 4


def test_collectors_are_seeded_apart(cfg):
    a, _ = RolloutWorker(cfg, index=0).rollout(policy_kwargs={"eps": 1.0})
    b, _ = RolloutWorker(cfg, index=1).rollout(policy_kwargs={"eps": 1.0})
    assert not np.array_equal(a["obs"], b["obs"])


def test_learn_worker_trains_minibatches_and_reports_priorities(cfg):
    collector, learner = RolloutWorker(cfg), LearnWorker(cfg)
    buffer = AdvancedReplayBuffer(cfg.policy.other.replay_buffer)
    for _ in range(8):
        buffer.push(collector.rollout(policy_kwargs={"eps": 1.0})[0])
    batch = buffer.sample(4 * learner.batch_size, 0, columnar=True)
    info, priority = learner.train(batch, envstep=collector.envstep)
    assert info["iters"] == 4 and learner.train_iter == 4 and info["samples"] == 128
    assert np.isfinite(info[metrics.learner_key("total_loss")])
    assert len(priority["priority"]) == 128
    assert sorted(priority["replay_unique_id"]) == sorted(batch["replay_unique_id"])  # shuffled, not lost
    buffer.update(priority)
    assert learner.train(None)[0]["iters"] == 0
    version, weights = learner.weights()
    assert version == 4 and set(weights) == set(learner.state_dict()["model"])


def test_train_on_policy_uses_all_the_data(cfg):
    collector, learner = RolloutWorker(cfg), LearnWorker(cfg)
    batches = [collector.rollout()[0] for _ in range(2)]
    info = learner.train_on_policy(batches)
    # one learner call on the rows joined, as serial_pipeline_onpolicy makes per collect; DQN's
    # learn forward is one gradient step
    rows = sum(len(b["reward"]) for b in batches)
    assert info["iters"] == 1 == learner.train_iter and info["samples"] == rows


def test_eval_worker_saves_the_evaluated_weights(cfg):
    learner, evaluator = LearnWorker(cfg), EvalWorker(cfg)
    evaluator.load_weights(*learner.weights())
    info = evaluator.eval(train_iter=1, envstep=10)
    assert info["policy_version"] == 0 and info[metrics.EVAL_RETURN_MEAN] > 0 and not info["stop"]
    assert os.path.isfile(os.path.join(cfg.exp_name, "ckpt", "ckpt_best.pth.tar"))


def test_wrong_weights_and_collector_type_fail_clearly(cfg):
    worker = RolloutWorker(cfg)
    with pytest.raises(ShapeError, match="missing keys"):
        worker.load_weights(1, {})
    bad = copy.deepcopy(cfg)
    bad.policy.collect.collector.type = "episode"
    with pytest.raises(ConfigError, match="'sample' collector"):
        RolloutWorker(bad)


def test_learn_worker_measures_the_policy_lag_of_its_data(cfg):
    collector, learner = RolloutWorker(cfg), LearnWorker(cfg)
    old = collector.rollout(policy_kwargs={"eps": 1.0})[0]  # the initial weights: version -1, lag from 0
    learner.train(old)  # 32 rows: one gradient step, trained at iteration 0
    assert learner.batch_lag == 0 and learner.lag.summary()["rows"] == 32
    collector.load_weights(*learner.weights())  # version 1
    fresh = collector.rollout()[0]
    for _ in range(3):
        learner.train(old)  # iterations 1, 2, 3: lags 1, 2, 3 for the old rows
    info, _ = learner.train(fresh)  # iteration 4 on version-1 data: lag 3
    assert learner.batch_lag == 3
    # lags 0, 1, 2, 3, 3 for 32 rows each: median 2, p95 3
    assert info[metrics.LEARNER_POLICY_LAG_MEDIAN] == 2 and info[metrics.LEARNER_POLICY_LAG_P95] == 3
    assert learner.lag.summary() == {"median": 2, "p95": 3, "max": 3, "rows": 160}
