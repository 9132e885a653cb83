"""examples/selfplay.py with a small budget: self-play DQN beats a uniformly random player."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from selfplay import main  # noqa: E402


@pytest.mark.slow
def test_selfplay_beats_the_random_player_in_200_games():
    result = main(seed=0, max_env_step=20_000)  # seed 0 stops at about 8k env steps (10 s)
    assert result["games"] == 200
    assert result["win_rate"] >= 0.8, result
    assert result["pool_size"] > 1  # the opponent pool was refreshed while training
