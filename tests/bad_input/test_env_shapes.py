"""Spaces that do not fit the model, and an env whose observations change shape or are of another
dtype or None: clear errors that name the env, both shapes (or dtypes) and what to do, before any
torch matrix error, from the collectors and the evaluator alike (one check)."""

import copy
import json
import os
from functools import partial

import gymnasium as gym
import numpy as np
import pytest

import tests.bad_input.envs  # noqa: F401 - registers the BadInput* envs
from ding_ray.entry import serial_pipeline
from ding_ray.envs import GymnasiumEnv, create_env_manager
from ding_ray.errors import EnvError, ShapeError
from ding_ray.policy import DQNPolicy
from ding_ray.worker import EpisodeSerialCollector, InteractionSerialEvaluator, SampleSerialCollector
from ding_ray.worker.eval_worker import EvalWorker
from ding_ray.worker.rollout_worker import RolloutWorker
from ding_ray.worker.step_checks import obs_fits, obs_spec
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


# ---------------------------------------------------------------------- the evaluator's observations
def bad_obs_manager(env_id: str, manager: str = "base", **kwargs):
    cfg = GymnasiumEnv.default_config()
    cfg.update(env_id=env_id, kwargs=kwargs)
    env = create_env_manager(dict(type=manager), [partial(GymnasiumEnv, cfg=cfg)])
    env.seed(0)
    return env


def eval_mode():
    return DQNPolicy(dict(model=MODEL), enable_field=["eval"]).eval_mode


@pytest.mark.parametrize("kind", ["base", "subprocess"])
def test_the_evaluator_checks_the_shape_as_collectors_do(kind):
    env = bad_obs_manager("BadInputShapeShift-v0", kind, shift_at=3)
    evaluator = InteractionSerialEvaluator(dict(n_episode=1), env, eval_mode())
    try:
        with pytest.raises(ShapeError) as err:
            evaluator.eval()
    finally:
        evaluator.close()
    name = (
        "env 0 (GymnasiumEnv(BadInputShapeShift-v0))"
        if kind == "base"
        else "env 0 of SyncSubprocessEnvManager"
    )
    assert f"{name} returned an observation of shape (5,) at step 3 of its episode" in str(err.value)
    assert "policy.model.obs_shape) has shape (4,)" in str(err.value)


OBS_ERRORS = {
    "int64": (
        "returned an observation of dtype int64 at reset, but its observation_space has dtype float32, "
        "which the model is built for. Return observations of the space's dtype (obs.astype(np.float32)), "
        "or wrap the env: gymnasium.wrappers.TransformObservation("
    ),
    "none": "returned None as its observation at reset, but its observation_space",
}


@pytest.mark.parametrize("runner", ["collector", "evaluator"])
@pytest.mark.parametrize("obs", list(OBS_ERRORS))
def test_int_or_none_observations_are_refused_by_name_before_the_model(runner, obs):
    env = bad_obs_manager("BadInputBadObs-v0", kind=obs)
    if runner == "collector":
        collector = SampleSerialCollector(dict(n_sample=4), env, DQNPolicy(dict(model=MODEL)).collect_mode)
        run = collector.collect
    else:
        run = InteractionSerialEvaluator(dict(n_episode=1), env, eval_mode()).eval
    with pytest.raises(ShapeError) as err:
        run()
    assert str(err.value).startswith("env 0 (GymnasiumEnv(BadInputBadObs-v0)) " + OBS_ERRORS[obs])
    env.close()


def test_obs_fits_takes_the_widths_of_a_kind_and_refuses_other_kinds():
    floats = obs_spec(gym.spaces.Box(-1, 1, shape=(2,), dtype=np.float32))
    pixels = obs_spec(gym.spaces.Box(0, 255, shape=(2,), dtype=np.uint8))
    for obs in (np.zeros(2, np.float64), np.zeros(2, np.float16), np.zeros(2, bool), [0.0, 1.0]):
        assert obs_fits(floats, obs)
    for obs in (np.zeros(2, np.int64), np.zeros(3, np.float32), None, np.zeros((), np.float32)):
        assert not obs_fits(floats, obs)
    assert obs_fits(pixels, np.zeros(2, np.uint8)) and obs_fits(pixels, np.zeros(2, np.int64))
    assert not obs_fits(pixels, np.zeros(2, np.float32))
    assert obs_spec(gym.spaces.Dict(a=gym.spaces.Discrete(2))) is None and obs_fits(None, "anything")


def test_serial_pipeline_with_a_shape_shifting_env_fails_in_its_first_evaluation(tmp_path):
    """serial_pipeline evaluates first: the evaluator's own check names the env, not torch's matrix error."""
    os.chdir(tmp_path)
    main = small_main("shift_run", env=dict(env_id="BadInputShapeShift-v0"))
    with pytest.raises(ShapeError, match=r"returned an observation of shape \(5,\) at step 3 of its episode"):
        serial_pipeline((main, CREATE), seed=0, max_train_iter=5)
    result = json.load(open("shift_run/result.json"))
    assert result["error"].startswith("ShapeError: env 0 (GymnasiumEnv(BadInputShapeShift-v0))")
    assert result["train_iter"] == 0 and result["best_eval_return"] is None
    assert not os.path.exists("shift_run/ckpt/ckpt_best.pth.tar")
