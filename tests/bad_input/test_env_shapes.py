"""Spaces that do not fit the model, and an env whose observation shape changes: clear errors that
name the env, both shapes and the config value to set, before any torch matrix error."""

import copy
import os
from functools import partial

import pytest

import tests.bad_input.envs  # noqa: F401 - registers the BadInput* envs
from ding_ray.entry import serial_pipeline
from ding_ray.envs import GymnasiumEnv, create_env_manager
from ding_ray.errors import EnvError, ShapeError
from ding_ray.policy import DQNPolicy
from ding_ray.worker import EpisodeSerialCollector, SampleSerialCollector
from ding_ray.worker.eval_worker import EvalWorker
from ding_ray.worker.rollout_worker import RolloutWorker
from tests.bad_input.configs import CREATE, compiled, small_main

MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16], dueling=False)


# ---------------------------------------------------------------------- spaces vs. model config
@pytest.mark.parametrize(
    "model, message",
    [
        (
            dict(obs_shape=5),
            r"policy\.model\.obs_shape is 5 but the env's observations have shape \(4,\)\. Set obs_shape=4\.",
        ),
        (
            dict(obs_shape=[2, 2]),
            r"obs_shape is \[2, 2\] but the env's observations have shape \(4,\)\. Set obs_shape=4",
        ),
        (
            dict(action_shape=3),
            r"policy\.model\.action_shape is 3 but the env has 2 actions\. Set action_shape=2\.",
        ),
    ],
)
def test_serial_pipeline_refuses_a_model_that_does_not_fit_the_env(tmp_path, model, message):
    os.chdir(tmp_path)
    main = small_main("spaces", policy=dict(model=model))
    with pytest.raises(EnvError, match=message):
        serial_pipeline((main, CREATE), max_train_iter=1)


def test_a_policy_for_other_actions_names_the_kind(tmp_path):
    os.chdir(tmp_path)
    main = dict(exp_name="spaces", env=small_main().env, policy=dict(model=dict(obs_shape=4, action_shape=1)))
    with pytest.raises(
        EnvError, match=r"SACPolicy needs a continuous action space, but the env's is discrete"
    ):
        serial_pipeline((main, dict(CREATE, policy=dict(type="sac"))), max_train_iter=1)


@pytest.mark.parametrize("worker", [RolloutWorker, EvalWorker])
@pytest.mark.parametrize(
    "key, value, message",
    [
        ("obs_shape", 5, r"obs_shape is 5 .* shape \(4,\)\. Set obs_shape=4"),
        ("action_shape", 3, "Set action_shape=2"),
    ],
)
def test_collector_and_evaluator_workers_check_the_spaces_when_built(tmp_path, worker, key, value, message):
    cfg = copy.deepcopy(compiled(tmp_path))
    cfg.policy.model[key] = value
    with pytest.raises(EnvError, match=message):
        worker(cfg)


# ---------------------------------------------------------------------- observation shape changes
def shape_shift_manager(kind: str = "base", n: int = 2):
    cfg = GymnasiumEnv.default_config()
    cfg.update(env_id="BadInputShapeShift-v0", kwargs=dict(shift_at=3))
    env = create_env_manager(dict(type=kind), [partial(GymnasiumEnv, cfg=cfg)] * n)
    env.seed(0)
    return env


@pytest.mark.parametrize(
    "collector_cls, arg", [(SampleSerialCollector, "n_sample"), (EpisodeSerialCollector, "n_episode")]
)
def test_an_observation_that_changes_shape_names_the_env_and_both_shapes(collector_cls, arg):
    collector = collector_cls({arg: 16}, shape_shift_manager(), DQNPolicy(dict(model=MODEL)).collect_mode)
    with pytest.raises(ShapeError) as err:
        collector.collect()
    message = str(err.value)
    assert (
        "env 0 (GymnasiumEnv(BadInputShapeShift-v0)) returned an observation of shape (5,) at step 3"
        in message
    )
    assert "observation_space (and so the model, policy.model.obs_shape) has shape (4,)" in message
    assert "fix the env, or wrap it in a gymnasium.ObservationWrapper" in message


def test_the_shape_check_works_with_envs_in_worker_processes():
    env = shape_shift_manager("subprocess", n=1)
    try:
        collector = SampleSerialCollector(dict(n_sample=4), env, DQNPolicy(dict(model=MODEL)).collect_mode)
        with pytest.raises(
            ShapeError, match=r"env 0 of SyncSubprocessEnvManager returned an observation of shape \(5,\)"
        ):
            collector.collect()
    finally:
        env.close()


def test_an_env_with_a_wrong_first_observation_fails_at_reset():
    cfg = GymnasiumEnv.default_config()
    cfg.update(env_id="BadInputShapeShift-v0", kwargs=dict(shift_at=0))
    env = create_env_manager(dict(type="base"), [partial(GymnasiumEnv, cfg=cfg)])
    collector = SampleSerialCollector(dict(n_sample=4), env, DQNPolicy(dict(model=MODEL)).collect_mode)
    with pytest.raises(ShapeError, match=r"shape \(5,\) at reset, but .* has shape \(4,\)"):
        collector.collect()
