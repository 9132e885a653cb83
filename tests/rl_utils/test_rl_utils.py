import math

import pytest
import torch

from ding_ray.config import ConfigError
from ding_ray.rl_utils import (
    double_dqn_next_value,
    double_dqn_nstep_loss,
    get_epsilon_greedy_fn,
    nstep_td_target,
    td_loss,
)


def test_epsilon_exp_and_linear_by_hand():
    exp = get_epsilon_greedy_fn(0.95, 0.1, 10000, "exp")
    assert exp(0) == pytest.approx(0.95)
    assert exp(10000) == pytest.approx(0.1 + 0.85 * math.exp(-1))
    lin = get_epsilon_greedy_fn(1.0, 0.1, 100, "linear")
    assert lin(0) == 1.0 and lin(50) == pytest.approx(0.55) and lin(100) == pytest.approx(0.1)
    assert lin(1000) == pytest.approx(0.1)
    with pytest.raises(ConfigError):
        get_epsilon_greedy_fn(1.0, 0.1, 100, "cosine")


def test_double_dqn_picks_online_argmax_and_target_value():
    online = torch.tensor([[1.0, 5.0, 2.0], [3.0, 0.0, 1.0]])
    target = torch.tensor([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]])
    assert double_dqn_next_value(online, target).tolist() == [20.0, 40.0]


def test_nstep_td_target_by_hand():
    gamma = 0.9
    reward = torch.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, 0.0]])
    next_value = torch.tensor([10.0, 10.0])
    done = torch.tensor([0.0, 1.0])
    # row 0: 1 + 0.9*2 + 0.81*3 + 0.729*10 = 12.52 ; row 1: terminal after one step -> 1
    target = nstep_td_target(reward, next_value, done, gamma)
    assert target.tolist() == pytest.approx([12.52, 1.0])
    # a window shortened to 1 step by a time limit: bootstrap with gamma**1
    target = nstep_td_target(
        torch.tensor([[1.0, 0.0, 0.0]]),
        torch.tensor([10.0]),
        torch.tensor([0.0]),
        gamma,
        value_gamma=torch.tensor([0.9]),
    )
    assert target.tolist() == pytest.approx([10.0])


def test_one_step_target_and_truncation_bootstraps():
    reward = torch.tensor([1.0, 1.0])
    next_value = torch.tensor([5.0, 5.0])
    # terminated: no bootstrap; truncated (done=0): bootstrap 1 + 0.97 * 5
    target = nstep_td_target(reward, next_value, torch.tensor([1.0, 0.0]), 0.97)
    assert target.tolist() == pytest.approx([1.0, 1.0 + 0.97 * 5.0])


def test_td_loss_weighted_mse_and_huber():
    q = torch.tensor([1.0, 2.0], requires_grad=True)
    target = torch.tensor([2.0, 5.0])
    loss, td = td_loss(q, target)
    assert loss.item() == pytest.approx((1 + 9) / 2) and td.tolist() == [1.0, 3.0]
    loss, _ = td_loss(q, target, weight=torch.tensor([1.0, 0.0]))
    assert loss.item() == pytest.approx(0.5)
    loss, _ = td_loss(q, target, huber_kappa=1.0)
    assert loss.item() == pytest.approx((0.5 + 2.5) / 2)


def test_double_dqn_nstep_loss_end_to_end():
    q = torch.tensor([[1.0, 2.0]])
    loss, td = double_dqn_nstep_loss(
        q,
        torch.tensor([[0.0, 1.0]]),
        torch.tensor([[4.0, 3.0]]),
        torch.tensor([0]),
        torch.tensor([1.0]),
        torch.tensor([0.0]),
        0.5,
    )
    # target = 1 + 0.5 * 3 (target net's value of the online argmax, action 1) = 2.5; q_sa = 1
    assert td.tolist() == pytest.approx([1.5]) and loss.item() == pytest.approx(2.25)
