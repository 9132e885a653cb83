"""Envs that return NaN/inf observations or rewards: the steps are counted and reported, dropped
before they become training data, and the learner never trains on a non-finite value."""

import logging
import os
from functools import partial

import numpy as np
import pytest
from easydict import EasyDict
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import tests.bad_input.envs  # noqa: F401 - registers the BadInput* envs
from ding_ray.data import NaiveReplayBuffer
from ding_ray.entry import serial_pipeline
from ding_ray.envs import GymnasiumEnv, create_env_manager
from ding_ray.errors import NonFiniteError
from ding_ray.policy import DQNPolicy
from ding_ray.worker import BaseLearner, SampleSerialCollector
from ding_ray.worker.metrics import COLLECTOR_NONFINITE_STEPS as NONFINITE_STEPS
from ding_ray.worker.rollout_worker import RolloutWorker
from ding_ray.worker.step_checks import all_finite
from tests.bad_input.configs import CREATE, compiled, small_main

MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16], dueling=False)


def env_cfg(bad_every: int, **kwargs) -> EasyDict:
    cfg = GymnasiumEnv.default_config()
    cfg.update(env_id="BadInputNonFinite-v0", kwargs=dict(bad_every=bad_every, **kwargs))
    return cfg


def manager(bad_every: int = 7, n: int = 2, kind: str = "base", **kwargs):
    env = create_env_manager(dict(type=kind), [partial(GymnasiumEnv, cfg=env_cfg(bad_every, **kwargs))] * n)
    env.seed(0)
    return env


def finite(items) -> bool:
    return all(
        np.isfinite(np.asarray(x[k], dtype=np.float64)).all()
        for x in items
        for k in ("obs", "next_obs", "reward")
    )


@pytest.mark.parametrize("kind", ["base", "subprocess", "async_subprocess"])
def test_nonfinite_steps_are_counted_logged_and_never_collected(caplog, kind):
    policy = DQNPolicy(dict(model=MODEL, nstep=3))
    env = manager(bad_every=7, kind=kind)
    collector = SampleSerialCollector(dict(n_sample=60), env, policy.collect_mode)
    with caplog.at_level(logging.WARNING):
        try:
            data = collector.collect(policy_kwargs={"eps": 0.5})
        finally:
            env.close()
    assert len(data) == 60 and finite(data)
    # 2 envs, every 7th step of each is broken: at least one of each kind has been met
    assert collector.nonfinite_count >= 4
    assert "NaN or infinite observation or reward" in caplog.text and NONFINITE_STEPS in caplog.text
    # the broken steps cost no samples and no env steps: each env's episode ended there instead
    assert collector.envstep >= 60


def test_a_nan_first_observation_is_dropped_with_its_step():
    policy = DQNPolicy(dict(model=MODEL))
    collector = SampleSerialCollector(
        dict(n_sample=30), manager(bad_every=0, nan_first_reset=True), policy.collect_mode
    )
    data = collector.collect(policy_kwargs={"eps": 0.5})
    assert len(data) == 30 and finite(data) and collector.nonfinite_count == 2  # one per env


def test_all_finite_looks_into_every_float():
    assert all_finite(
        1.0, np.ones((2, 3), np.float32), {"a": [np.float64(2.0), (np.int64(3),)]}, "text", None
    )
    big = np.full(4, np.finfo(np.float32).max, np.float32)  # huge, but finite
    assert all_finite(big) and all_finite(np.array([1 + 2j]))
    for bad in (float("nan"), np.float32("inf"), np.array([[0.0, np.nan]]), {"a": [np.array([-np.inf])]}):
        assert not all_finite(1.0, bad)
    assert not all_finite(np.array([complex(0, np.inf)]))


def test_learner_trains_only_on_finite_data():
    """The collected data goes through a real buffer into a real DQN learner, whose own guard
    (NonFiniteError on a non-finite loss) would stop training at the first NaN."""
    policy = DQNPolicy(dict(model=MODEL, learn=dict(batch_size=16)), enable_field=["learn", "collect"])
    collector = SampleSerialCollector(dict(n_sample=32), manager(bad_every=5), policy.collect_mode)
    buffer = NaiveReplayBuffer(EasyDict(replay_buffer_size=200))
    learner = BaseLearner(
        EasyDict(hook=dict(save_ckpt_after_iter=False, save_ckpt_after_run=False)), policy.learn_mode
    )
    for _ in range(3):
        buffer.push(collector.collect(policy_kwargs={"eps": 0.5}))
        learner.train(buffer.sample(16, learner.train_iter), collector.envstep)
    assert collector.nonfinite_count > 0 and learner.train_iter == 3
    assert finite(buffer.sample(buffer.count(), 0))
    # the guard the learner relies on is real: a NaN reward in a batch is refused, by column name
    batch = buffer.sample(16, 0)
    batch[0]["reward"] = np.float32("nan")
    with pytest.raises(NonFiniteError, match="reward"):
        learner.train(batch, collector.envstep)


def test_an_env_that_is_always_nan_is_an_error_not_an_endless_loop():
    policy = DQNPolicy(dict(model=MODEL))
    collector = SampleSerialCollector(dict(n_sample=8), manager(bad_every=1, n=1), policy.collect_mode)
    with pytest.raises(NonFiniteError, match=r"in 100 steps in a row.*Fix the env"):
        collector.collect()


def test_rollout_worker_reports_the_dropped_steps_in_its_info(tmp_path):
    cfg = compiled(tmp_path, env=dict(env_id="BadInputNonFinite-v0", kwargs=dict(bad_every=4)))
    worker = RolloutWorker(cfg)
    batch, info = worker.rollout(policy_kwargs={"eps": 1.0})
    assert info["nonfinite_steps"] > 0 and info[NONFINITE_STEPS] == info["nonfinite_steps"]
    for key in ("obs", "next_obs", "reward"):
        assert np.isfinite(batch[key]).all()
    _, again = worker.rollout()
    assert again[NONFINITE_STEPS] == info["nonfinite_steps"] + again["nonfinite_steps"]


def test_serial_pipeline_with_a_nan_env_trains_and_reports_the_count(tmp_path):
    """A tiny serial run: the collector's envs are broken, the evaluator's are not (env_setting).
    The run ends normally (the learner's NonFiniteError never fired) and TensorBoard has the count."""
    os.chdir(tmp_path)
    main = small_main("nan_run", env=dict(env_id="BadInputNonFinite-v0"))
    collector_cfgs = [env_cfg(bad_every=6) for _ in range(2)]
    evaluator_cfgs = [env_cfg(bad_every=0)]
    serial_pipeline(
        (main, CREATE), seed=0, env_setting=[GymnasiumEnv, collector_cfgs, evaluator_cfgs], max_train_iter=12
    )
    events = EventAccumulator("nan_run/log/serial", size_guidance={"scalars": 0})
    events.Reload()
    counts = [e.value for e in events.Scalars(NONFINITE_STEPS)]
    assert counts and counts[-1] > 0
    losses = [e.value for e in events.Scalars("learner/total_loss")]
    assert losses and np.isfinite(losses).all()
