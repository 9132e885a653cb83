import pytest
import torch

from ding_ray.rl_utils import gae, gae_data


def test_gae_matches_numbers_worked_by_hand():
    # gamma = lambda = 0.5; deltas: 1 + .5*2 - 1 = 1, 1 + .5*3 - 2 = .5, 1 + 0 - 3 = -2 (terminal)
    # A2 = -2, A1 = .5 + .25 * -2 = 0, A0 = 1 + .25 * 0 = 1
    value = torch.tensor([1.0, 2.0, 3.0])
    next_value = torch.tensor([2.0, 3.0, 4.0])
    data = gae_data(value, next_value, torch.ones(3), torch.tensor([0.0, 0.0, 1.0]), None)
    adv = gae(data, gamma=0.5, lambda_=0.5)
    assert adv.tolist() == pytest.approx([1.0, 0.0, -2.0])
    assert next_value.tolist() == [2.0, 3.0, 4.0]  # inputs untouched


def test_traj_flag_cuts_the_sum_but_still_bootstraps():
    # gamma .5, lambda 1; deltas: 1 + .5*2 - 1 = 1 and 2 + .5*2 - 1 = 2
    value, next_value = torch.ones(2), torch.full((2,), 2.0)
    reward, done = torch.tensor([1.0, 2.0]), torch.zeros(2)
    cut = gae(gae_data(value, next_value, reward, done, torch.tensor([1.0, 0.0])), 0.5, 1.0)
    assert cut.tolist() == pytest.approx([1.0, 2.0])
    joined = gae(gae_data(value, next_value, reward, done, torch.zeros(2)), 0.5, 1.0)
    assert joined.tolist() == pytest.approx([1.0 + 0.5 * 2.0, 2.0])  # A0 = 1 + .5 * A1


def test_batch_columns_and_per_agent_values():
    value = torch.tensor([[1.0, 2.0, 3.0]]).T.repeat(1, 2)  # [T=3, B=2]
    next_value = value + 1
    reward, done = torch.ones(3, 2), torch.tensor([[0.0], [0.0], [1.0]]).repeat(1, 2)
    adv = gae(gae_data(value, next_value, reward, done, None), 0.5, 0.5)
    assert adv[:, 0].tolist() == pytest.approx([1.0, 0.0, -2.0]) and torch.equal(adv[:, 0], adv[:, 1])
    per_agent = gae(gae_data(value.unsqueeze(-1), next_value.unsqueeze(-1), reward, done, None), 0.5, 0.5)
    assert per_agent.shape == (3, 2, 1) and torch.allclose(per_agent.squeeze(-1), adv)


def _torch_loop(data, gamma, lambda_):  # the recurrence written the plain way, as torch ops
    value, next_value, reward, done, traj_flag = data
    if value.dim() == reward.dim() + 1:
        reward, done, traj_flag = reward.unsqueeze(-1), done.unsqueeze(-1), traj_flag.unsqueeze(-1)
    delta = reward + gamma * (1.0 - done) * next_value - value
    factor = gamma * lambda_ * (1.0 - traj_flag)
    adv, running = torch.empty_like(delta), torch.zeros_like(delta[0])
    for t in reversed(range(len(delta))):
        running = delta[t] + factor[t] * running
        adv[t] = running
    return adv


@pytest.mark.parametrize("shape, per_agent", [((257,), False), ((64, 5), False), ((40, 3), True)])
def test_equals_a_plain_torch_loop_bit_for_bit_on_random_inputs(shape, per_agent):
    gen = torch.Generator().manual_seed(0)
    value_shape = (*shape, 2) if per_agent else shape
    value, next_value = torch.randn(value_shape, generator=gen), torch.randn(value_shape, generator=gen)
    reward = torch.randn(shape, generator=gen)
    done = (torch.rand(shape, generator=gen) < 0.05).float()
    traj_flag = torch.maximum(done, (torch.rand(shape, generator=gen) < 0.05).float())  # time limits, cuts
    data = gae_data(value, next_value, reward, done, traj_flag)
    adv = gae(data, 0.99, 0.95)
    assert adv.dtype == torch.float32 and torch.equal(adv, _torch_loop(data, 0.99, 0.95))
