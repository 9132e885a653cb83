"""TD(lambda), UPGO and A2C losses on numbers worked out by hand."""

import math

import pytest
import torch

from ding_ray.errors import ShapeError
from ding_ray.rl_utils import (
    a2c_data,
    a2c_error,
    a2c_error_continuous,
    generalized_lambda_returns,
    td_lambda_data,
    td_lambda_error,
    upgo_loss,
    upgo_returns,
)


def test_td_lambda_returns_and_loss():
    value, reward = torch.tensor([[1.0], [2.0], [3.0]]), torch.ones(2, 1)
    # G1 = 1 + .5 * 3 = 2.5; G0 = 1 + .25 * G1 + .25 * V1 = 2.125
    returns = generalized_lambda_returns(value, reward, 0.5, 0.5)
    assert returns.flatten().tolist() == pytest.approx([2.125, 2.5])
    loss = td_lambda_error(td_lambda_data(value, reward, None), gamma=0.5, lambda_=0.5)
    assert loss.item() == pytest.approx(0.5 * ((2.125 - 1) ** 2 + (2.5 - 2) ** 2) / 2)
    weighted = td_lambda_error(td_lambda_data(value, reward, torch.tensor([[0.0], [1.0]])), 0.5, 0.5)
    assert weighted.item() == pytest.approx(0.5 * 0.25 / 2)
    # the ending step stops the return: G1 = 1
    done = torch.tensor([[0.0], [1.0]])
    assert generalized_lambda_returns(value, reward, 0.5, 0.5, done)[1].item() == pytest.approx(1.0)
    with pytest.raises(ShapeError, match="one more step"):
        generalized_lambda_returns(value[:2], reward, 0.5, 0.5)


def test_upgo_follows_the_return_only_after_improving_steps():
    rewards = torch.tensor([[0.0], [1.0]])
    # step 1 does worse than V1 = 2 (1 + 0 < 2), so step 0 bootstraps from V1: G = [2, 1]
    assert upgo_returns(rewards, torch.tensor([[1.0], [2.0], [0.0]])).flatten().tolist() == [2.0, 1.0]
    # step 1 does better than V1 = .5, so step 0 follows it: G = [1, 1]
    values = torch.tensor([[1.0], [0.5], [0.0]])
    assert upgo_returns(rewards, values).flatten().tolist() == [1.0, 1.0]
    # uniform policy over 2 actions: -mean(adv * log .5) with advantages [0, .5]
    logits, values = torch.zeros(2, 1, 2, requires_grad=True), values.requires_grad_(True)
    loss = upgo_loss(logits, torch.ones(2, 1), torch.zeros(2, 1, dtype=torch.long), rewards, values)
    assert loss.item() == pytest.approx(0.25 * math.log(2))
    loss.backward()
    assert logits.grad is not None and values.grad is None  # the advantages are constants


def test_upgo_loss_with_sub_actions_and_a_mask():
    rewards, values = torch.tensor([[0.0], [1.0]]), torch.tensor([[1.0], [0.5], [0.0]])
    logits, labels = torch.zeros(2, 1, 3, 2), torch.zeros(2, 1, 3, dtype=torch.long)
    full = upgo_loss(logits, torch.ones(2, 1), labels, rewards, values)
    assert full.item() == pytest.approx(3 * 0.25 * math.log(2))  # three sub-actions' log-likelihoods
    mask = torch.tensor([1.0, 0.0, 0.0]).repeat(2, 1, 1)
    masked = upgo_loss(logits, torch.ones(2, 1), labels, rewards, values, mask)
    assert masked.item() == pytest.approx(0.25 * math.log(2))


def test_a2c_losses_discrete_and_continuous():
    data = a2c_data(
        torch.zeros(1, 2),
        torch.tensor([0]),
        torch.tensor([1.0]),
        torch.tensor([2.0]),
        torch.tensor([3.0]),
        None,
    )
    loss = a2c_error(data)
    assert loss.policy_loss.item() == pytest.approx(2 * math.log(2))
    assert loss.value_loss.item() == pytest.approx(4.0)
    assert loss.entropy_loss.item() == pytest.approx(math.log(2))
    gaussian = data._replace(
        logit={"mu": torch.zeros(1, 1), "sigma": torch.ones(1, 1)}, action=torch.zeros(1, 1)
    )
    loss = a2c_error_continuous(gaussian)
    assert loss.policy_loss.item() == pytest.approx(2 * 0.5 * math.log(2 * math.pi))
    assert loss.entropy_loss.item() == pytest.approx(0.5 * math.log(2 * math.pi * math.e))
    weighted = a2c_error(data._replace(weight=torch.tensor([0.5])))
    assert weighted.value_loss.item() == pytest.approx(2.0)
    with pytest.raises(ValueError, match="mu"):
        a2c_error_continuous(data)
