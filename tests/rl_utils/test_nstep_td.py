"""DI-engine's n-step Q TD functions on numbers worked out by hand."""

import math

import pytest
import torch
import torch.nn as nn

from ding_ray.errors import ShapeError
from ding_ray.rl_utils import (
    double_dqn_nstep_loss,
    nstep_return,
    nstep_return_data,
    q_1step_td_data,
    q_1step_td_error,
    q_nstep_td_data,
    q_nstep_td_error,
    q_nstep_td_error_with_rescale,
    value_inv_transform,
    value_transform,
)

Q = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
NEXT_Q = torch.tensor([[5.0, 6.0], [7.0, 8.0]])
ACTION, NEXT_ACTION = torch.tensor([0, 1]), torch.tensor([1, 0])
DONE = torch.tensor([0.0, 1.0])


def test_nstep_return_discounts_time_first_rewards_and_bootstraps():
    reward = torch.tensor([[1.0, 1.0], [2.0, 0.0]])  # [nstep=2, B=2]
    data = nstep_return_data(reward, torch.tensor([10.0, 10.0]), DONE)
    # sample 0: 1 + .5 * 2 + .25 * 10 = 4.5; sample 1 ended: 1
    assert nstep_return(data, 0.5, 2).tolist() == pytest.approx([4.5, 1.0])
    # the bootstrap discounted by value_gamma (a window cut short), as a tensor or a number
    assert nstep_return(data, 0.5, 2, torch.tensor([0.5, 0.5])).tolist() == pytest.approx([7.0, 1.0])
    assert nstep_return(data, 0.5, 2, 0.5).tolist() == pytest.approx([7.0, 1.0])
    with pytest.raises(ShapeError, match="time first"):
        nstep_return(data, 0.5, 3)


def test_nstep_return_with_a_discount_per_sample():
    reward = torch.tensor([[1.0, 1.0], [2.0, 2.0]])
    data = nstep_return_data(reward, torch.tensor([10.0, 10.0]), torch.zeros(2))
    # sample 0 with gamma .5: 1 + 1 + 2.5; sample 1 with gamma 1: 1 + 2 + 10
    gammas = [torch.tensor(0.5), torch.tensor(1.0)]
    assert nstep_return(data, gammas, 2).tolist() == pytest.approx([4.5, 13.0])
    with pytest.raises(TypeError, match="gamma"):
        nstep_return(data, "0.5", 2)


def test_q_1step_td_error_is_the_mean_squared_error_to_the_target():
    # targets: 1 + .5 * 6 = 4 (Q 1) and 0 (done; Q 4): errors 9 and 16
    data = q_1step_td_data(Q, NEXT_Q, ACTION, NEXT_ACTION, torch.tensor([1.0, 0.0]), DONE, None)
    assert q_1step_td_error(data, 0.5).item() == pytest.approx(12.5)
    weighted = data._replace(weight=torch.tensor([1.0, 0.0]), done=DONE.bool())
    assert q_1step_td_error(weighted, 0.5).item() == pytest.approx(4.5)
    with pytest.raises(ShapeError, match="reward"):
        q_1step_td_error(data._replace(reward=torch.ones(1, 2)), 0.5)


def test_q_nstep_td_error_returns_the_loss_and_each_samples_error():
    data = q_nstep_td_data(Q, NEXT_Q, ACTION, NEXT_ACTION, torch.tensor([[1.0, 0.0]]), DONE, None)
    loss, per_sample = q_nstep_td_error(data, 0.5)
    assert per_sample.tolist() == pytest.approx([9.0, 16.0]) and loss.item() == pytest.approx(12.5)
    loss, _ = q_nstep_td_error(data._replace(weight=torch.tensor([1.0, 0.0])), 0.5)
    assert loss.item() == pytest.approx(4.5)
    # already summed rewards: 1 + .25 * 6 = 2.5 for Q 1
    summed = data._replace(reward=torch.tensor([1.0, 0.0]))
    _, per_sample = q_nstep_td_error(summed, 0.5, nstep=2, cum_reward=True)
    assert per_sample.tolist() == pytest.approx([2.25, 16.0])
    _, per_sample = q_nstep_td_error(data, 0.5, criterion=nn.SmoothL1Loss(reduction="none"))
    assert per_sample.tolist() == pytest.approx([2.5, 3.5])
    q = Q.clone().requires_grad_(True)
    q_nstep_td_error(data._replace(q=q), 0.5)[0].backward()
    assert q.grad.flatten().tolist() == pytest.approx([-3.0, 0.0, 0.0, 4.0])  # d/dq of mean (q - target)^2
    with pytest.raises(ShapeError, match="one axis fewer"):
        q_nstep_td_error(data._replace(action=Q.long()), 0.5)


def test_dqn_policys_loss_is_q_nstep_td_error_with_the_online_argmax():
    reward = torch.tensor([[1.0, 0.5], [0.0, 2.0], [1.0, 1.0]])  # [B=3, n=2], ding_ray's layout
    q, next_online, next_target = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4)
    action, done = torch.tensor([0, 3, 1]), torch.tensor([0.0, 1.0, 0.0])
    loss, td_error = double_dqn_nstep_loss(q, next_online, next_target, action, reward, done, 0.9)
    data = q_nstep_td_data(q, next_target, action, next_online.argmax(-1), reward.T, done, None)
    di_loss, per_sample = q_nstep_td_error(data, 0.9, nstep=2)
    assert loss.item() == pytest.approx(di_loss.item()) and per_sample.tolist() == pytest.approx(
        td_error.pow(2).tolist()
    )


def test_value_rescale_pair_inverts_and_squashes():
    x = torch.tensor([-1000.0, -3.0, 0.0, 3.0, 1000.0])
    assert value_transform(torch.tensor([3.0])).item() == pytest.approx(1.03)  # sqrt(4) - 1 + .01 * 3
    assert value_inv_transform(value_transform(x)).tolist() == pytest.approx(x.tolist(), rel=1e-4)
    assert value_transform(x, eps=0.1).tolist() == pytest.approx(
        [-(math.sqrt(1001) - 1) - 100, -1.3, 0.0, 1.3, math.sqrt(1001) - 1 + 100]
    )


def test_q_nstep_td_error_with_rescale_takes_the_return_in_unscaled_values():
    next_q = torch.tensor([[value_transform(torch.tensor(3.0)).item(), 0.0]])
    data = q_nstep_td_data(
        torch.zeros(1, 2),
        next_q,
        torch.tensor([0]),
        torch.tensor([0]),
        torch.ones(1, 1),
        torch.zeros(1),
        None,
    )
    loss, per_sample = q_nstep_td_error_with_rescale(data, 1.0)
    # target h(1 + h^-1(h(3))) = h(4) = sqrt(5) - 1 + .04; Q 0
    assert per_sample.item() == pytest.approx((math.sqrt(5) - 1 + 0.04) ** 2, rel=1e-5)
    assert loss.item() == pytest.approx(per_sample.item())
