"""Self-play on the session's Ray: battle collector actors feeding one buffer actor."""

import os
import sys

import numpy as np
import ray

from ding_ray.distributed.battle import BattleCollectorActor, selfplay_on_ray
from ding_ray.distributed.weights import WeightsRef
from ding_ray.worker.selfplay import SelfPlayLearner

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from selfplay import make_config, selfplay_config  # noqa: E402


def test_battle_collector_actor_pulls_both_players_weights(ray_session):
    cfg = make_config(seed=0, n_evaluator_episode=8, collector_env_num=2)
    learner = SelfPlayLearner(cfg)
    actor = ray.remote(BattleCollectorActor).options(num_cpus=0).remote(cfg, 0)
    try:
        weights = WeightsRef(7, ray.put(learner.weights()))
        opponent = WeightsRef(0, ray.put(learner.pool.sample()[1]))
        info = ray.get(actor.collect.remote(weights, opponent, 7, {"eps": 0.5}, n_sample=16))
        batch = ray.get(info["data"])
        assert info["n"] == 32 and len(batch["action"]) == 32  # 16 samples of each player
        assert info["policy_version"] == 7 and set(batch["policy_version"].tolist()) == {7}
        assert batch["obs"]["action_mask"].shape == (32, 10)
        legal = batch["obs"]["action_mask"][np.arange(32), batch["action"]]
        assert legal.all()  # both players only played legal actions
    finally:
        ray.kill(actor)
        learner.close()


def test_selfplay_on_ray_fills_one_buffer_from_two_collectors(ray_session):
    cfg = make_config(seed=0, n_evaluator_episode=20, collector_env_num=4)
    result = selfplay_on_ray(cfg, selfplay_config, n_collectors=2, max_env_step=1500, collector_cpus=0.5)
    per_round = 2 * 2 * cfg.policy.collect.n_sample  # 2 collectors x 2 players x n_sample
    assert result["n_collectors"] == 2
    assert result["env_steps"] >= 1500
    rounds = result["buffer_count"] // per_round
    assert result["buffer_count"] == rounds * per_round and rounds >= 2
    assert result["train_iter"] == rounds * 2 * selfplay_config["update_per_collect"]
    assert result["games"] == 20 and 0.0 <= result["win_rate"] <= 1.0
    assert ray.is_initialized()  # the session's Ray is left running
