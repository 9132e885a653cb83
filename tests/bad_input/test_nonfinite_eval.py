"""An evaluation episode whose return is NaN or infinite (one non-finite reward) is a failed episode,
not a result: it is logged and counted, left out of the mean return, and never saves ckpt_best or
ends the run as solved (an env that can never return more than 10 once "reached" stop_value=100)."""

import json
import logging
import os
from functools import partial

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import tests.bad_input.envs  # noqa: F401 - registers the BadInput* envs
from ding_ray.entry import serial_pipeline
from ding_ray.envs import GymnasiumEnv, create_env_manager
from ding_ray.policy import DQNPolicy
from ding_ray.worker import InteractionSerialEvaluator
from ding_ray.worker.metrics import EVAL_NONFINITE_EPISODES, EVAL_RETURN_MEAN
from tests.bad_input.configs import CREATE, small_main

MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16], dueling=False)


def eval_env_cfg():
    """Episodes of 10 steps, reward 1 each: the returns are 10, inf, 10, NaN, 10, inf, ... (the
    breakages of every 10th step are a NaN final observation, an inf reward, a -inf final
    observation and a NaN reward, in turn)."""
    cfg = GymnasiumEnv.default_config()
    cfg.update(env_id="BadInputNonFinite-v0", kwargs=dict(bad_every=10, length=10))
    return cfg


def evaluator(kind: str = "base", **cfg) -> InteractionSerialEvaluator:
    env = create_env_manager(dict(type=kind), [partial(GymnasiumEnv, cfg=eval_env_cfg())])
    env.seed(0)
    policy = DQNPolicy(dict(model=MODEL), enable_field=["eval"])
    return InteractionSerialEvaluator(dict(dict(n_episode=1), **cfg), env, policy.eval_mode)


@pytest.mark.parametrize("kind", ["base", "subprocess"])
def test_an_inf_or_nan_return_is_a_failed_episode_never_a_best_or_a_stop(caplog, kind):
    saved = []
    ev = evaluator(kind, stop_value=100)
    try:
        stop, info = ev.eval(saved.append, train_iter=1)  # return 10
        assert not stop and saved == ["ckpt_best.pth.tar"] and ev.best_return == 10
        with caplog.at_level(logging.WARNING):
            stop, info = ev.eval(saved.append, train_iter=2)  # return inf
        assert not stop and saved == ["ckpt_best.pth.tar"] and ev.best_return == 10
        assert np.isnan(info["eval_episode_return_mean"]) and info["eval_episode_return"] == []
        assert info["nonfinite_episodes"] == 1 and info["episode_count"] == 1 and ev.nonfinite_episodes == 1
        assert "finished an episode with the return inf" in caplog.text and "counts as failed" in caplog.text
        ev.eval(saved.append, train_iter=3)  # 10: not better than the best
        stop, info = ev.eval(saved.append, train_iter=4)  # NaN
        assert not stop and saved == ["ckpt_best.pth.tar"] and ev.best_return == 10
        assert info["nonfinite_episodes"] == 1 and ev.nonfinite_episodes == 2
    finally:
        ev.close()


def test_the_finite_episodes_of_an_evaluation_still_count():
    saved = []
    ev = evaluator(n_episode=4, stop_value=10)
    stop, info = ev.eval(saved.append, train_iter=1)  # 10, inf, 10, NaN
    ev.close()
    assert info["eval_episode_return"] == [10.0, 10.0] and info["nonfinite_episodes"] == 2
    assert info["episode_count"] == 4 and info["eval_episode_return_mean"] == 10.0
    assert stop and saved == ["ckpt_best.pth.tar"] and ev.best_return == 10.0


def test_serial_run_with_an_inf_eval_reward_is_not_solved(tmp_path):
    """The issue's run: stop_value=100 on an env whose returns are at most 10. Before, the
    evaluation at iteration 6 (return inf) ended the run as solved and saved ckpt_best there."""
    os.chdir(tmp_path)
    main = small_main("inf_eval", env=dict(env_id="BadInputNonFinite-v0", stop_value=100))
    collector_cfgs = [GymnasiumEnv.default_config() for _ in range(2)]
    for cfg in collector_cfgs:
        cfg.update(env_id="BadInputNonFinite-v0", kwargs=dict(bad_every=0))
    serial_pipeline(
        (main, CREATE),
        seed=0,
        env_setting=[GymnasiumEnv, collector_cfgs, [eval_env_cfg()]],
        max_train_iter=16,
    )
    result = json.load(open("inf_eval/result.json"))
    assert result["stop"] is False and result["train_iter"] >= 16 and "error" not in result
    assert result["best_eval_return"] == 10.0
    best = torch.load("inf_eval/ckpt/ckpt_best.pth.tar", weights_only=True)
    assert best["last_iter"] == 0  # saved by the first evaluation (10), by no later one
    events = EventAccumulator("inf_eval/log/serial", size_guidance={"scalars": 0})
    events.Reload()
    counts = [e.value for e in events.Scalars(EVAL_NONFINITE_EPISODES)]  # evaluations at iterations 0, 6, 12
    assert len(counts) >= 3 and counts[:3] == [0, 1, 1]
    means = [e.value for e in events.Scalars(EVAL_RETURN_MEAN)]
    assert len(means) == len(counts) - counts[-1] and set(means) == {10.0}  # no figure of no result
