"""Envs whose ``step`` fails every time (it raises, or returns what gymnasium's API does not): after
``env.manager.max_step_failures`` failures in a row the manager raises an ``EnvError`` naming the
env, the error and its likely cause, instead of resetting the env for ever."""

import json
import logging
import os
import re
import time
from functools import partial

import pytest

import tests.bad_input.envs  # noqa: F401 - registers the BadInput* envs
from ding_ray.entry import serial_pipeline
from ding_ray.envs import GymnasiumEnv, create_env_manager
from ding_ray.errors import ConfigError, EnvError
from ding_ray.policy import DQNPolicy
from ding_ray.worker import InteractionSerialEvaluator, SampleSerialCollector
from tests.bad_input.configs import CREATE, small_main

MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16], dueling=False)
LIMIT_S = 20.0  # before the limit, each of these loops ran for ever

# what the error says the likely cause is, per mistake of BrokenStepEnv
CAUSES = {
    "raise": "Last error: TypeError(\"unsupported operand type(s) for +: 'int' and 'NoneType'\")",
    "old_gym": "returns 4 values (obs, reward, done, info): the old gym API. gymnasium's step returns 5",
    "str_reward": "reward is a str ('1.0'), not a number",
    "array_reward": "reward is an array of shape (2,) (array([1. , 0.5])), not a number",
    "info_list": "info is not a dict but a list ([{}])",
}


def broken_manager(mistake: str, kind: str = "base", n: int = 2, **manager):
    cfg = GymnasiumEnv.default_config()
    cfg.update(env_id="BadInputBrokenStep-v0", kwargs=dict(mistake=mistake))
    env = create_env_manager(
        dict(type=kind, retry_waiting_time=0.0, **manager), [partial(GymnasiumEnv, cfg=cfg)] * n
    )
    env.seed(0)
    return env


@pytest.mark.parametrize("kind", ["base", "subprocess", "async_subprocess"])
@pytest.mark.parametrize("mistake", list(CAUSES))
def test_a_step_that_always_fails_ends_collection_with_its_cause(caplog, kind, mistake):
    env = broken_manager(mistake, kind)
    collector = SampleSerialCollector(dict(n_sample=16), env, DQNPolicy(dict(model=MODEL)).collect_mode)
    start = time.monotonic()
    try:
        with caplog.at_level(logging.WARNING), pytest.raises(EnvError) as err:
            collector.collect()
    finally:
        env.close()
    assert time.monotonic() - start < LIMIT_S
    message = str(err.value)
    # the async manager's envs answer in any order: either may be the first to reach the limit
    where = r"\)" if kind == "base" else r", in worker process \d+\)"
    assert re.match(r"env [01] \(GymnasiumEnv\(BadInputBrokenStep-v0\)" + where + " failed in step", message)
    assert "failed in step 5 times in a row (env.manager.max_step_failures=5" in message
    assert CAUSES[mistake] in message
    if mistake == "old_gym":
        assert "shimmy.GymV21CompatibilityV0" in message
    # the log holds a few failures, not a flood: at most max_step_failures per env
    assert 5 <= caplog.text.count("failed in step") <= 10


def test_the_evaluator_stops_too():
    env = broken_manager("raise", n=1)
    evaluator = InteractionSerialEvaluator(
        dict(n_episode=2), env, DQNPolicy(dict(model=MODEL), enable_field=["eval"]).eval_mode
    )
    with pytest.raises(EnvError, match=r"env 0 .* failed in step 5 times in a row"):
        evaluator.eval()
    evaluator.close()


@pytest.mark.parametrize("kind", ["base", "subprocess"])
def test_an_evaluation_whose_episodes_all_fail_midway_ends(kind):
    """Steps 1 and 2 of each episode work, so no env fails 5 steps in a row; but every episode is
    cut by a failure, and the evaluator (which replaces a cut episode, as DI-engine's) would never end."""
    env = broken_manager("third_step", kind, n=1)
    evaluator = InteractionSerialEvaluator(
        dict(n_episode=2), env, DQNPolicy(dict(model=MODEL), enable_field=["eval"]).eval_mode
    )
    try:
        with pytest.raises(EnvError) as err:
            evaluator.eval()
    finally:
        evaluator.close()
    assert str(err.value).startswith(
        "The evaluation cannot finish: 6 of its episodes ended in a failed env step (more than "
        "max(n_episode, 5)) while 0 of its 2 finished. The last failure, of env 0"
    )
    assert 'TypeError("unsupported operand type(s)' in str(err.value)


def test_the_limit_counts_failures_in_a_row_and_is_configurable(caplog):
    # an env that fails every other step is not given up on, even with a limit of 2 ...
    cfg = GymnasiumEnv.default_config()
    cfg.update(env_id="BadInputBrokenStep-v0", kwargs=dict(mistake="flaky"))
    env = create_env_manager(
        dict(type="base", max_step_failures=2, retry_waiting_time=0.0), [partial(GymnasiumEnv, cfg=cfg)]
    )
    collector = SampleSerialCollector(dict(n_sample=20), env, DQNPolicy(dict(model=MODEL)).collect_mode)
    assert len(collector.collect()) == 20 and env.error_count >= 10
    # ... and an env that always fails is given up on at the second failure
    caplog.clear()
    with caplog.at_level(logging.WARNING), pytest.raises(EnvError, match="failed in step 2 times in a row"):
        policy = DQNPolicy(dict(model=MODEL)).collect_mode
        SampleSerialCollector(
            dict(n_sample=4), broken_manager("raise", n=1, max_step_failures=2), policy
        ).collect()
    assert caplog.text.count("failed in step") == 1  # the first failure's warning; the second raised


@pytest.mark.parametrize(
    "value, message",
    [
        (0, "env.manager.max_step_failures must be >= 1 (failed steps in a row of one env before the"),
        (-1, "must be >= 1"),
        (1.5, "'env.manager.max_step_failures' expects int (default 5), got float 1.5"),
        ("5", "expects int"),
    ],
)
def test_a_limit_that_is_not_a_positive_integer_is_refused(value, message):
    with pytest.raises(ConfigError) as err:
        create_env_manager(dict(type="base", max_step_failures=value), [GymnasiumEnv])
    assert message in str(err.value)


def test_serial_pipeline_with_a_failing_env_ends_with_the_error_and_no_best_checkpoint(tmp_path):
    os.chdir(tmp_path)
    main = small_main("failing_run", env=dict(env_id="BadInputBrokenStep-v0", kwargs=dict(mistake="old_gym")))
    start = time.monotonic()
    with pytest.raises(EnvError, match="the old gym API"):
        serial_pipeline((main, CREATE), seed=0, max_train_iter=5)
    assert time.monotonic() - start < LIMIT_S
    result = json.load(open("failing_run/result.json"))
    assert "failed in step 5 times in a row" in result["error"] and result["stop"] is False
    assert result["best_eval_return"] is None
    assert not os.path.exists("failing_run/ckpt/ckpt_best.pth.tar")
