"""SAC math against numbers worked out by hand."""

import math

import pytest
import torch

from ding_ray.rl_utils import (
    discrete_sac_policy_loss,
    sac_alpha_loss,
    sac_critic_loss,
    sac_policy_loss,
    soft_q_target,
    soft_update,
    tanh_gaussian_sample,
)

HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)  # 0.918939


def test_tanh_gaussian_sample_with_the_tanh_correction():
    # dim 0: mu 0, sigma 1, noise 0 -> u = 0, a = 0; log N = -0.918939, correction log(1 + 1e-6) ~ 0
    # dim 1: mu .5, sigma .5, noise 1 -> u = 1, a = tanh(1) = 0.761594
    #   log N = -0.5 - log .5 - 0.918939 = -0.725792; log(1 - a^2) = log(0.419974) = -0.867563
    mu, sigma, noise = torch.tensor([[0.0, 0.5]]), torch.tensor([[1.0, 0.5]]), torch.tensor([[0.0, 1.0]])
    action, log_prob = tanh_gaussian_sample(mu, sigma, noise)
    assert action.tolist()[0] == pytest.approx([0.0, 0.761594], abs=1e-6)
    expected = (-HALF_LOG_2PI) + (-0.725792 + 0.867563)
    assert log_prob.shape == (1,) and log_prob.item() == pytest.approx(expected, abs=1e-5)
    # the same as torch's distributions, and the sample is reparameterized (gradients reach mu, sigma)
    mu = torch.randn(6, 3, requires_grad=True)
    sigma = torch.rand(6, 3) + 0.1
    noise = torch.randn(6, 3)
    action, log_prob = tanh_gaussian_sample(mu, sigma, noise)
    normal = torch.distributions.Independent(torch.distributions.Normal(mu, sigma), 1)
    pre = mu + sigma * noise
    reference = normal.log_prob(pre) - torch.log(1 - torch.tanh(pre) ** 2 + 1e-6).sum(-1)
    assert torch.allclose(log_prob, reference, atol=1e-5)
    action.sum().backward()
    assert mu.grad is not None and bool((mu.grad > 0).all())


def test_tanh_gaussian_sample_draws_noise_when_not_given():
    torch.manual_seed(0)
    action, log_prob = tanh_gaussian_sample(torch.zeros(1000, 1), torch.ones(1000, 1))
    assert bool((action.abs() < 1).all()) and abs(action.mean().item()) < 0.1
    assert torch.isfinite(log_prob).all()


def test_soft_q_target_takes_the_twin_minimum_and_stops_at_terminals():
    # min(Q1, Q2) = [1, 0]; minus alpha .2 * log pi [.5, -1] -> [.9, .2]
    # targets: 1 + .9 * .9 = 1.81 and (terminal) 1
    next_q = [torch.tensor([1.0, 2.0]), torch.tensor([3.0, 0.0])]
    target, value = soft_q_target(
        next_q, torch.tensor([0.5, -1.0]), torch.ones(2), torch.tensor([0.0, 1.0]), 0.9, 0.2
    )
    assert target.tolist() == pytest.approx([1.81, 1.0])
    assert value.tolist() == pytest.approx([0.9, 0.2])  # the soft value of s', terminal or not
    single, _ = soft_q_target(
        torch.tensor([1.0]), torch.tensor([0.0]), torch.zeros(1), torch.zeros(1), 0.5, 1.0
    )
    assert single.tolist() == pytest.approx([0.5])


def test_critic_loss_is_each_critics_mean_squared_error():
    # Q1 - y = [0, 1] -> mean square .5; Q2 - y = [-1, 1] -> 1; squared TD errors averaged over the
    # critics (DI-engine's td_error and priority): [(0 + 1) / 2, (1 + 1) / 2]
    q1 = torch.tensor([1.0, 2.0], requires_grad=True)
    q2 = torch.tensor([0.0, 2.0])
    target = torch.tensor([1.0, 1.0], requires_grad=True)
    losses, td_error = sac_critic_loss([q1, q2], target)
    assert [x.item() for x in losses] == pytest.approx([0.5, 1.0]) and td_error.tolist() == pytest.approx(
        [0.5, 1.0]
    )
    loss = sum(losses)
    loss.backward()
    assert target.grad is None  # the target is held fixed
    assert q1.grad.tolist() == pytest.approx([0.0, 1.0])  # d/dq (q - y)^2 / 2 = (q - y)
    # importance weights [2, 0]: Q1 -> (0 * 2 + 1 * 0) / 2 = 0; Q2 -> (1 * 2 + 1 * 0) / 2 = 1
    weighted, weighted_td = sac_critic_loss([q1, q2], target, torch.tensor([2.0, 0.0]))
    assert sum(weighted).item() == pytest.approx(1.0)
    assert weighted_td.tolist() == pytest.approx([0.5, 1.0])  # the priority is not weighted
    (single,), td = sac_critic_loss(q2, target)
    assert single.item() == pytest.approx(1.0) and td.tolist() == [1.0, 1.0]


def test_policy_loss_uses_the_smaller_critic():
    # min(Q) = [2, 1]; alpha .5: [.5 - 2, -.5 - 1] = [-1.5, -1.5]
    loss = sac_policy_loss(
        torch.tensor([1.0, -1.0]), [torch.tensor([2.0, 4.0]), torch.tensor([3.0, 1.0])], 0.5
    )
    assert loss.item() == pytest.approx(-1.5)


def test_alpha_loss_moves_alpha_toward_the_target_entropy():
    # log pi = [-.5, .5] (entropy estimate 0) with target entropy -1: mean(log pi + target) = -1,
    # so the loss is -log_alpha * -1 = log(.2) and its gradient +1: a descent step lowers alpha
    log_alpha = torch.tensor([math.log(0.2)], requires_grad=True)
    log_prob = torch.tensor([-0.5, 0.5], requires_grad=True)
    loss = sac_alpha_loss(log_alpha, log_prob, -1.0)
    assert loss.item() == pytest.approx(math.log(0.2))
    loss.backward()
    assert log_alpha.grad.tolist() == pytest.approx([1.0]) and log_prob.grad is None
    # entropy below the target (log pi = 3 > 1): the gradient is negative, a step raises alpha
    low_entropy = sac_alpha_loss(log_alpha, torch.tensor([3.0]), -1.0)
    (grad,) = torch.autograd.grad(low_entropy, log_alpha)
    assert grad.item() == pytest.approx(-2.0)


def test_soft_update_is_polyak_averaging_in_place():
    target, source = [torch.tensor([0.0, 10.0])], [torch.tensor([10.0, 0.0])]
    soft_update(target, source, 0.1)
    assert target[0].tolist() == pytest.approx([1.0, 9.0]) and source[0].tolist() == [10.0, 0.0]
    with pytest.raises(ValueError, match="2 target tensors but 1"):
        soft_update([torch.zeros(1), torch.zeros(1)], [torch.zeros(1)], 0.1)


def test_discrete_sac_policy_loss_is_an_expectation_over_actions():
    # one state, pi = (0.25, 0.75), Q = (1, 3), alpha 0.5:
    #   0.25 * (0.5 * log .25 - 1) + 0.75 * (0.5 * log .75 - 3)
    #   = 0.25 * (-0.693147 - 1) + 0.75 * (-0.143841 - 3) = -0.423287 - 2.357881 = -2.781168
    logit = torch.tensor([[0.25, 0.75]]).log().requires_grad_()
    log_prob = torch.log_softmax(logit, -1)
    prob = log_prob.exp()
    q = torch.tensor([[1.0, 3.0]], requires_grad=True)
    loss = discrete_sac_policy_loss(prob, log_prob, q, 0.5)
    assert loss.item() == pytest.approx(-2.781168, abs=1e-5)
    loss.backward()
    assert logit.grad is not None and q.grad is None  # the critics are judges here, not trained
    prob = prob.detach()
    # a batch of two: the mean of the per-state sums
    two = discrete_sac_policy_loss(
        prob.repeat(2, 1), prob.log().repeat(2, 1), torch.tensor([[1.0, 3.0]] * 2), 0.5
    )
    assert two.item() == pytest.approx(-2.781168, abs=1e-5)
