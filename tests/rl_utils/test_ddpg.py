"""DDPG/TD3 math against numbers worked out by hand."""

import pytest
import torch

from ding_ray.rl_utils import deterministic_q_target, gaussian_action_noise, twin_min


def test_gaussian_action_noise_clips_the_noise_then_the_action():
    # draws of N(0, 1) from a seeded generator, then the sums worked out by hand
    draws = torch.randn(4, generator=torch.Generator().manual_seed(3))
    action = torch.tensor([0.0, 0.9, -0.95, 0.3])
    sigma = 2.0
    got = gaussian_action_noise(action, sigma, (-0.5, 0.5), torch.Generator().manual_seed(3))
    want = [
        min(max(a + min(max(sigma * d, -0.5), 0.5), -1.0), 1.0)
        for a, d in zip(action.tolist(), draws.tolist())
    ]
    assert got.tolist() == pytest.approx(want, abs=1e-6)
    # no noise_range: only the sum is clipped to [-1, 1]
    got = gaussian_action_noise(action, 0.1, None, torch.Generator().manual_seed(3))
    want = [min(max(a + 0.1 * d, -1.0), 1.0) for a, d in zip(action.tolist(), draws.tolist())]
    assert got.tolist() == pytest.approx(want, abs=1e-6)
    # zero sigma: the action itself
    assert torch.equal(gaussian_action_noise(action, 0.0), action)


def test_deterministic_q_target_takes_the_smaller_twin():
    # r + gamma (1 - done) min(q1, q2): 1 + 0.5 * 2 = 2; -1 + 0 (done) = -1; 0 + 0.5 * (-4) = -2
    q1, q2 = torch.tensor([2.0, 5.0, -3.0]), torch.tensor([3.0, 1.0, -4.0])
    reward, done = torch.tensor([1.0, -1.0, 0.0]), torch.tensor([False, True, False])
    target, next_value = deterministic_q_target([q1, q2], reward, done, 0.5)
    assert next_value.tolist() == [2.0, 1.0, -4.0] and target.tolist() == [2.0, -1.0, -2.0]
    target, next_value = deterministic_q_target(q1, reward, done, 0.5)  # one critic: its own Q
    assert next_value.tolist() == [2.0, 5.0, -3.0] and target.tolist() == [2.0, -1.0, -1.5]
    assert twin_min([q1]).tolist() == q1.tolist()
