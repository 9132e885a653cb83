"""Battle collectors and evaluator on TicTacToeEnv: counts, per-player returns, the evaluator's result."""

from functools import partial

import numpy as np
import pytest

from ding_ray.config import compile_config
from ding_ray.envs import BaseEnvManager, TicTacToeEnv
from ding_ray.errors import ConfigError
from ding_ray.policy import DQNPolicy
from ding_ray.policy.action_mask import RandomLegalPolicy
from ding_ray.utils.registry import SERIAL_COLLECTOR_REGISTRY, SERIAL_EVALUATOR_REGISTRY
from ding_ray.worker import (
    BattleEpisodeSerialCollector,
    BattleInteractionSerialEvaluator,
    BattleSampleSerialCollector,
)

MODEL = dict(obs_shape=19, action_shape=10, encoder_hidden_size_list=[32])


class Sink:
    """A tb_logger stand-in that keeps every scalar."""

    def __init__(self):
        self.scalars = {}

    def add_scalar(self, key, value, step):
        self.scalars[key] = value

    def flush(self):
        pass


def manager(n_env, seed=0, **cfg):
    env = BaseEnvManager([partial(TicTacToeEnv, cfg) for _ in range(n_env)])
    env.seed(seed)
    return env


def dqn(seed=0):
    np.random.seed(seed)
    return DQNPolicy(dict(model=MODEL, nstep=1))


def test_registered_under_di_engine_names():
    assert SERIAL_COLLECTOR_REGISTRY.get("sample_1v1") is BattleSampleSerialCollector
    assert SERIAL_COLLECTOR_REGISTRY.get("episode_1v1") is BattleEpisodeSerialCollector
    assert SERIAL_EVALUATOR_REGISTRY.get("battle_interaction") is BattleInteractionSerialEvaluator
    create_cfg = dict(
        env=dict(type="tictactoe"),
        policy=dict(type="dqn"),
        collector=dict(type="sample_1v1"),
        evaluator=dict(type="battle_interaction"),
    )
    cfg = compile_config(dict(policy=dict(model=MODEL)), create_cfg=create_cfg, auto=True, save_cfg=False)
    assert cfg.policy.collect.collector.type == "sample_1v1" and cfg.env.first_player == "alternate"
    assert cfg.policy.eval.evaluator.type == "battle_interaction"


def counted(mode, counts: dict):
    """``mode`` with the transitions it makes, and those it cuts into samples, counted."""

    def process_transition(*args, **kwargs):
        counts["made"] += 1
        return mode.process_transition(*args, **kwargs)

    def get_train_sample(traj):
        samples = mode.get_train_sample(traj)
        counts["cut"] += len(traj)
        counts["samples"] += len(samples)
        return samples

    return mode._replace(process_transition=process_transition, get_train_sample=get_train_sample)


def test_sample_collector_counts_per_policy_and_trains():
    learner, opponent = dqn(0), dqn(1)
    sink = Sink()
    counts = [dict(made=0, cut=0, samples=0) for _ in range(2)]
    modes = [counted(p.collect_mode, c) for p, c in zip((learner, opponent), counts)]
    # 27 samples a player: 9 steps of each of the 3 envs, and a game of tic-tac-toe ends within 9
    # moves, so every env ends a game (the returns checked below) whatever the policies play
    collector = BattleSampleSerialCollector(dict(n_sample=27), manager(3), modes, tb_logger=sink)
    (data_0, data_1), (infos_0, infos_1) = collector.collect(drop_extra=False, policy_kwargs=dict(eps=0.5))
    assert len(data_0) >= 27 and len(data_1) >= 27
    # every env step gives one transition per player (nstep=1: one sample each); the rest waits
    assert [c["made"] for c in counts] == [collector.envstep] * 2
    assert all(c["samples"] == c["cut"] for c in counts)
    assert [len(data_0), len(data_1)] == [c["samples"] for c in counts]  # every sample came back
    waiting = [c["made"] - c["cut"] for c in counts]  # transitions not cut into samples yet
    assert len(data_0) + waiting[0] == len(data_1) + waiting[1] == collector.envstep
    exact, _ = collector.collect(n_sample=10, policy_kwargs=dict(eps=0.5))
    assert len(exact[0]) == len(exact[1]) == 10
    # per-player returns: zero-sum, and as the env reported them
    assert len(infos_0) == len(infos_1) >= 3
    for i0, i1 in zip(infos_0, infos_1):
        assert i0["eval_episode_return"] == -i1["eval_episode_return"]
    returns_0 = [i["eval_episode_return"] for i in infos_0]
    assert sink.scalars["collector/player0_return_mean"] == pytest.approx(np.mean(returns_0))
    assert sink.scalars["collector/player1_return_mean"] == pytest.approx(-np.mean(returns_0))
    assert sink.scalars["collector/episode_return_mean"] == pytest.approx(np.mean(returns_0))
    # the samples carry dict observations with masks, and DQN trains on them
    assert set(data_0[0]["obs"]) == {"observation", "action_mask"}
    assert data_0[0]["obs"]["action_mask"][data_0[0]["action"]] == 1
    out = learner.learn_mode.forward(data_0 + data_1)
    assert np.isfinite(out["total_loss"])
    collector.close()


def test_episode_collector_returns_whole_games_per_player():
    learner = dqn(0)
    collector = BattleEpisodeSerialCollector(
        dict(n_episode=5), manager(1), [learner.collect_mode, RandomLegalPolicy(seed=0)]
    )
    (episodes_0, episodes_1), (infos_0, infos_1) = collector.collect(policy_kwargs=dict(eps=0.3))
    assert len(episodes_0) == len(infos_0) == len(infos_1) == 5
    assert episodes_1 == []  # the random player keeps no data
    # one env, stopped as the 5th game ended: every env step is in a returned episode
    assert sum(len(e) for e in episodes_0) == collector.envstep
    collector.reset_policy()  # resets the policies, keeps the counts
    assert collector.envepisode == 5
    for episode, info_0, info_1 in zip(episodes_0, infos_0, infos_1):
        assert 5 <= len(episode) <= 9 and episode[-1]["done"] and not episode[0]["done"]
        assert (
            sum(t["reward"] for t in episode)
            == info_0["eval_episode_return"]
            == -info_1["eval_episode_return"]
        )
    samples, _ = BattleEpisodeSerialCollector(
        dict(n_episode=2, get_train_sample=True), manager(2), [learner.collect_mode, learner.collect_mode]
    ).collect()
    assert len(samples[0]) == len(samples[1]) >= 10  # two games of 5 to 9 moves
    assert isinstance(samples[0][0], dict)


def test_collectors_refuse_bad_input():
    learner = dqn()
    with pytest.raises(ConfigError, match="at least 2 policy modes"):
        BattleSampleSerialCollector(dict(n_sample=8), manager(1), [learner.collect_mode])
    with pytest.raises(ConfigError, match="collect_data=False"):
        BattleSampleSerialCollector(dict(n_sample=8), manager(1), [RandomLegalPolicy(), RandomLegalPolicy()])
    collector = BattleEpisodeSerialCollector(dict(), manager(1), [learner.collect_mode, RandomLegalPolicy()])
    with pytest.raises(ConfigError, match="n_episode > 0"):
        collector.collect()


def test_evaluator_plays_balanced_games_and_reports_rates():
    env = manager(4, first_player="alternate")
    evaluator = BattleInteractionSerialEvaluator(
        dict(n_episode=40, stop_value=-1.0), env, [RandomLegalPolicy(seed=1), RandomLegalPolicy(seed=2)]
    )
    saved = []
    stop, return_info = evaluator.eval(saved.append, train_iter=0)
    assert not stop and saved == ["ckpt_best.pth.tar"]  # first evaluation: a new best; iteration 0: no stop
    assert len(return_info) == 2 and len(return_info[0]) == len(return_info[1]) == 40
    summary = evaluator.last_summary
    assert summary["episode_count"] == 40
    assert summary["first_mean"] == 0.5  # 'alternate': 10 games per env, 5 with each player first
    assert summary["win_mean"] + summary["draw_mean"] + summary["loss_mean"] == pytest.approx(1.0)
    assert summary["reward_mean"] == pytest.approx(summary["win_mean"] - summary["loss_mean"])
    assert summary["player1_return_mean"] == pytest.approx(-summary["reward_mean"])
    stop, _ = evaluator.eval(train_iter=5)
    assert stop  # stop_value -1: any mean return reaches it once training began
    with pytest.raises(ConfigError, match="at least 2 policy modes"):
        BattleInteractionSerialEvaluator(dict(n_episode=4), manager(1), [RandomLegalPolicy()])


def test_greedy_dqn_is_judged_as_player_zero():
    """A policy that never blocks nor wins on purpose still plays legal moves only, as player 0."""
    evaluator = BattleInteractionSerialEvaluator(
        dict(n_episode=20), manager(2, first_player="player0"), [dqn(3).eval_mode, RandomLegalPolicy(seed=4)]
    )
    _, return_info = evaluator.eval()
    assert all(info["first"] == 1.0 for info in return_info[0])
    assert evaluator.last_summary["episode_count"] == 20


def test_opponent_pool_keeps_the_last_copies():
    from ding_ray.worker.selfplay import OpponentPool

    pool = OpponentPool(max_size=2, seed=0)
    with pytest.raises(ConfigError, match="empty"):
        pool.sample()
    for version in range(4):
        pool.add(version, {"w": np.full(1, version)})
    assert len(pool) == 2
    assert {pool.sample()[0] for _ in range(30)} == {2, 3}
