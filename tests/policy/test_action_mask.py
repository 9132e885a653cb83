"""DQN with legal-action masks, and the random legal player."""

import numpy as np
import pytest
import torch

from ding_ray.errors import ShapeError
from ding_ray.policy import DQNPolicy
from ding_ray.policy.action_mask import RandomLegalPolicy, split_obs

MODEL = dict(obs_shape=3, action_shape=4, encoder_hidden_size_list=[16])


def masked_obs(mask):
    return {"observation": np.ones(3, dtype=np.float32), "action_mask": np.asarray(mask, dtype=np.int8)}


def policy_preferring(action):
    """A DQN whose Q-values are highest for ``action`` whatever the observation."""
    policy = DQNPolicy(dict(model=dict(MODEL, dueling=False), nstep=1))
    with torch.no_grad():
        model = policy.learn_mode.get_attribute("model")  # the one model of every mode
        for p in model.parameters():
            p.zero_()
        head = list(model.modules())[-1]
        head.bias[action] = 5.0
    return policy


def test_greedy_and_exploring_actions_stay_legal():
    policy = policy_preferring(0)  # action 0 is the best and illegal below
    data = {i: masked_obs([0, 1, 0, 1]) for i in range(50)}
    greedy = policy.eval_mode.forward(data)
    assert {out["action"].item() for out in greedy.values()} == {1}  # ties among legal actions: the first
    explored = policy.collect_mode.forward(data, eps=1.0)
    assert {out["action"].item() for out in explored.values()} == {1, 3}
    unmasked = policy.eval_mode.forward({0: np.ones(3, dtype=np.float32)})
    assert unmasked[0]["action"].item() == 0


def test_double_dqn_target_uses_only_legal_next_actions():
    policy = policy_preferring(0)
    model, target = policy.learn_mode.get_attribute("model"), policy.learn_mode.get_attribute("target_model")
    target.load_state_dict(model.state_dict())
    transition = dict(
        obs=masked_obs([1, 1, 1, 1]),
        next_obs=masked_obs([0, 0, 1, 0]),
        action=np.int64(2),
        reward=np.float32(1.0),
        done=False,
    )
    out = policy.learn_mode.forward([transition])
    # Q is 5 for action 0 and 0 elsewhere; the legal next action 2 has Q 0, so the target is the
    # reward alone: loss = (1 + gamma * 0 - 0) ** 2. An unmasked target would use Q = 5.
    assert out["total_loss"] == pytest.approx(1.0)


def test_random_legal_player_and_mask_errors():
    player = RandomLegalPolicy(seed=3)
    out = player.forward({i: masked_obs([1, 0, 0, 1]) for i in range(40)})
    assert {o["action"] for o in out.values()} == {0, 3}
    with pytest.raises(ShapeError, match="allows no action"):
        split_obs({0: masked_obs([0, 0, 0, 0])})
    with pytest.raises(ShapeError, match="'observation' and 'action_mask'"):
        split_obs({0: {"board": np.zeros(3)}})
