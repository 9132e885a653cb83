"""TicTacToeEnv: rules, masks, rewards, who moves first, errors, and the env manager."""

from functools import partial

import pytest

from ding_ray.envs import BaseEnvManager, TicTacToeEnv, get_vec_env_setting
from ding_ray.envs.board_game import PASS
from ding_ray.errors import ConfigError, EnvError


def play(env, moves):
    """Play cells in turn from a fresh game; the player not to move passes. Returns the last timestep."""
    obs = env.reset()
    timestep = None
    for cell in moves:
        mover = 0 if obs[0]["observation"][-1] == 1.0 else 1
        actions = [PASS, PASS]
        actions[mover] = cell
        timestep = env.step(actions)
        obs = timestep.obs
    return timestep


def test_first_game_masks_and_observations():
    env = TicTacToeEnv(dict(first_player="player0"))
    obs = env.reset()
    assert obs[0]["action_mask"].tolist() == [1] * 9 + [0]
    assert obs[1]["action_mask"].tolist() == [0] * 9 + [1]
    assert obs[0]["observation"][-1] == 1.0 and obs[1]["observation"][-1] == 0.0
    timestep = env.step([4, PASS])
    assert not timestep.done and timestep.reward.tolist() == [0.0, 0.0]
    # each player sees its own marks first: player 0's centre is player 1's opponent mark
    assert timestep.obs[0]["observation"][4] == 1.0 and timestep.obs[1]["observation"][9 + 4] == 1.0
    assert timestep.obs[1]["action_mask"][4] == 0 and timestep.obs[1]["action_mask"][PASS] == 0


def test_win_loss_and_draw_rewards_are_zero_sum():
    env = TicTacToeEnv(dict(first_player="player0"))
    # X: 0, 1, 2 wins the top row; O plays 3, 4
    timestep = play(env, [0, 3, 1, 4, 2])
    assert timestep.done and timestep.reward.tolist() == [1.0, -1.0]
    assert [i["result"] for i in timestep.info] == ["win", "loss"]
    assert [i["eval_episode_return"] for i in timestep.info] == [1.0, -1.0]
    assert timestep.info[0]["first"] == 1.0 and timestep.info[1]["win"] == 0.0
    draw = play(env, [0, 1, 2, 4, 3, 5, 7, 6, 8])
    assert draw.done and draw.reward.tolist() == [0.0, 0.0]
    assert [i["result"] for i in draw.info] == ["draw", "draw"]
    assert all(obs["action_mask"].tolist() == [0] * 9 + [1] for obs in draw.obs)


def test_player_one_can_win_when_it_moves_first():
    env = TicTacToeEnv(dict(first_player="player1"))
    timestep = play(env, [2, 0, 4, 1, 6])  # player 1 takes the 2-4-6 diagonal
    assert timestep.reward.tolist() == [-1.0, 1.0]


def test_alternate_and_random_first_player():
    env = TicTacToeEnv()  # 'alternate'
    env.seed(0)
    firsts = [int(env.reset()[1]["observation"][-1]) for _ in range(4)]
    assert firsts == [0, 1, 0, 1]
    env = TicTacToeEnv(dict(first_player="random"))
    env.seed(5, dynamic_seed=False)  # every reset starts over: the same first player each time
    assert len({int(env.reset()[1]["observation"][-1]) for _ in range(10)}) == 1
    env.seed(5)
    assert len({int(env.reset()[1]["observation"][-1]) for _ in range(40)}) == 2


def test_illegal_actions_and_bad_config_are_clear_errors():
    env = TicTacToeEnv(dict(first_player="player0"))
    env.reset()
    env.step([4, PASS])
    with pytest.raises(EnvError, match="Player 1 played illegal action 4"):
        env.step([PASS, 4])
    with pytest.raises(EnvError, match="Player 0 played illegal action 3"):
        env.step([3, 0])  # player 0 is not to move: only PASS is legal for it
    with pytest.raises(EnvError, match="one action per player"):
        env.step([1])
    with pytest.raises(ConfigError, match="first_player"):
        TicTacToeEnv(dict(first_player="player2"))
    with pytest.raises(EnvError, match="cannot save replays"):
        env.enable_save_replay("videos")


def test_random_games_in_the_env_manager_by_config_name():
    env_cls, collector_cfgs, _ = get_vec_env_setting(
        dict(type="tictactoe", collector_env_num=3, evaluator_env_num=1)
    )
    assert env_cls is TicTacToeEnv
    manager = BaseEnvManager([partial(env_cls, cfg=c) for c in collector_cfgs])
    manager.seed(0)
    manager.launch()
    results, steps = [], 0
    while len(results) < 60:
        actions = {i: manager.random_action(i) for i in manager.ready_obs}
        for timestep in manager.step(actions).values():
            steps += 1
            if timestep.done:
                assert sum(timestep.reward) == 0.0
                results.append(timestep.info[0]["result"])
    manager.close()
    assert steps >= 60 * 5  # a game lasts 5 to 9 moves
    counts = {r: results.count(r) for r in ("win", "loss", "draw")}
    assert counts["win"] > 5 and counts["loss"] > 5  # random vs random: both sides win games
