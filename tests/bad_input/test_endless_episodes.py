"""An env whose episodes never end (no time limit): an evaluation used to step it for ever with no
log line. An episode that runs ``policy.eval.evaluator.max_episode_steps`` steps is cut there,
logged and counted, its return so far taken as the episode's (as at a time limit)."""

import json
import logging
import os
from functools import partial

import pytest

import tests.bad_input.envs  # noqa: F401 - registers the BadInput* envs
from ding_ray.entry import serial_pipeline
from ding_ray.envs import GymnasiumEnv, create_env_manager
from ding_ray.errors import ConfigError
from ding_ray.policy import DQNPolicy
from ding_ray.worker import InteractionSerialEvaluator
from tests.bad_input.configs import CREATE, compiled, small_main

MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16], dueling=False)
CUT = (
    "an evaluation episode ran 30 steps without ending; cut there "
    "(policy.eval.evaluator.max_episode_steps=30)"
)


def endless_cfg():
    cfg = GymnasiumEnv.default_config()
    cfg.update(env_id="BadInputEndless-v0")  # its step raises after 2000 steps: no test can hang
    return cfg


@pytest.mark.parametrize("kind", ["base", "subprocess"])
def test_an_endless_evaluation_episode_is_cut_and_logged(caplog, kind):
    env = create_env_manager(dict(type=kind), [partial(GymnasiumEnv, cfg=endless_cfg())] * 2)
    env.seed(0)
    policy = DQNPolicy(dict(model=MODEL), enable_field=["eval"])
    ev = InteractionSerialEvaluator(dict(n_episode=3, max_episode_steps=30), env, policy.eval_mode)
    try:
        with caplog.at_level(logging.WARNING):
            stop, info = ev.eval(train_iter=0)
            _, again = ev.eval(train_iter=1)  # the cut episodes' envs start over: the same again
    finally:
        ev.close()
    assert not stop and info["eval_episode_return"] == [30.0, 30.0, 30.0] and info["cut_episodes"] == 3
    assert again["eval_episode_return"] == [30.0] * 3 and again["cut_episodes"] == 3
    assert caplog.text.count(CUT) == 6 and "Give it a time limit (env.max_episode_steps)" in caplog.text


def test_a_serial_run_on_an_endless_env_evaluates_and_ends(tmp_path, caplog):
    """serial_pipeline evaluates before it trains: that first evaluation never ended."""
    os.chdir(tmp_path)
    main = small_main(
        "endless",
        env=dict(env_id="BadInputEndless-v0"),
        policy=dict(eval=dict(evaluator=dict(max_episode_steps=30))),
    )
    with caplog.at_level(logging.WARNING):
        serial_pipeline((main, CREATE), seed=0, max_train_iter=12)
    result = json.load(open("endless/result.json"))
    assert result["train_iter"] >= 12 and "error" not in result and result["best_eval_return"] == 30.0
    assert CUT in caplog.text


def test_a_cut_of_no_steps_is_refused_at_compile_time(tmp_path):
    with pytest.raises(ConfigError, match="'policy.eval.evaluator.max_episode_steps' must be >= 1, got 0"):
        compiled(tmp_path, policy=dict(eval=dict(evaluator=dict(max_episode_steps=0))))
