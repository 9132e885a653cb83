"""C51, QR-DQN and IQN TD losses on numbers worked out by hand."""

import math

import pytest
import torch

from ding_ray.errors import ShapeError
from ding_ray.rl_utils import (
    dist_1step_td_data,
    dist_1step_td_error,
    dist_nstep_td_data,
    dist_nstep_td_error,
    iqn_nstep_td_data,
    iqn_nstep_td_error,
    qrdqn_nstep_td_data,
    qrdqn_nstep_td_error,
)

# support [-1, 0, 1]; the current distribution of the taken action
DIST = torch.tensor([[[0.2, 0.3, 0.5]]])  # [B=1, A=1, n_atom=3]
AT_ZERO = torch.tensor([[[0.0, 1.0, 0.0]]])  # all next-state mass on atom 0


def _c51(reward, done, next_dist=AT_ZERO, **kwargs):
    data = dist_nstep_td_data(DIST, next_dist, torch.tensor([0]), torch.tensor([0]), reward, done, None)
    return dist_nstep_td_error(data, 1.0, -1.0, 1.0, 3, **kwargs)


def test_c51_projects_the_shifted_support_between_neighbouring_atoms():
    # target atoms 0.5 + z: the mass at 0 moves to 0.5, half to atom 0 and half to atom 1
    loss, per_sample = _c51(torch.tensor([[0.5]]), torch.tensor([0.0]))
    expected = -(0.5 * math.log(0.3) + 0.5 * math.log(0.5))
    assert per_sample.tolist() == pytest.approx([expected]) and loss.item() == pytest.approx(expected)


def test_c51_targets_on_an_atom_and_at_the_bounds_keep_their_mass():
    spread = torch.tensor([[[0.2, 0.3, 0.5]]])
    # terminal with reward 1 (beyond the top after clamping): everything on the top atom
    _, per_sample = _c51(torch.tensor([[1.0]]), torch.tensor([1.0]), spread)
    assert per_sample.item() == pytest.approx(-math.log(0.5))
    # terminal with reward -1: everything on the bottom atom
    _, per_sample = _c51(torch.tensor([[-1.0]]), torch.tensor([1.0]), spread)
    assert per_sample.item() == pytest.approx(-math.log(0.2))
    # reward 0 and next mass at 0, bootstrap discount 0 via value_gamma: all mass on the middle atom (z = 0)
    _, per_sample = _c51(torch.tensor([[0.0]]), torch.tensor([0.0]), value_gamma=torch.tensor([0.0]))
    assert per_sample.item() == pytest.approx(-math.log(0.3))


def test_c51_nstep_discounts_rewards_and_weights_samples():
    # two steps, gamma 1: 0.25 + 0.25 = 0.5 as in the one-step case
    loss, per_sample = _c51(torch.tensor([[0.25], [0.25]]), torch.tensor([0.0]), nstep=2)
    assert per_sample.item() == pytest.approx(-(0.5 * math.log(0.3) + 0.5 * math.log(0.5)))
    data = dist_nstep_td_data(
        DIST,
        AT_ZERO,
        torch.tensor([0]),
        torch.tensor([0]),
        torch.tensor([[0.5]]),
        torch.tensor([0.0]),
        torch.tensor([2.0]),
    )
    weighted, _ = dist_nstep_td_error(data, 1.0, -1.0, 1.0, 3)
    assert weighted.item() == pytest.approx(2 * per_sample.item())
    with pytest.raises(ValueError, match="zero or negative probability"):
        dist_nstep_td_error(data._replace(dist=torch.tensor([[[0.0, 0.5, 0.5]]])), 1.0, -1.0, 1.0, 3)


def test_c51_one_step_and_per_agent_actions_agree_with_n_step():
    data = dist_1step_td_data(
        DIST, AT_ZERO, torch.tensor([0]), torch.tensor([0]), torch.tensor([0.5]), torch.tensor([0.0]), None
    )
    one_step = dist_1step_td_error(data, 1.0, -1.0, 1.0, 3)
    assert one_step.item() == pytest.approx(-(0.5 * math.log(0.3) + 0.5 * math.log(0.5)))
    # two agents [B=1, agents=2, A=1, n_atom]: the same row twice
    agents = data._replace(
        dist=DIST.unsqueeze(1).repeat(1, 2, 1, 1),
        next_dist=AT_ZERO.unsqueeze(1).repeat(1, 2, 1, 1),
        act=torch.zeros(1, 2, dtype=torch.long),
        next_act=torch.zeros(1, 2, dtype=torch.long),
    )
    assert dist_1step_td_error(agents, 1.0, -1.0, 1.0, 3).item() == pytest.approx(one_step.item())
    with pytest.raises(ShapeError, match="reward"):
        dist_1step_td_error(data._replace(reward=torch.ones(1, 1)), 1.0, -1.0, 1.0, 3)


def test_qrdqn_quantile_huber_loss_by_hand():
    # quantiles of Q(s, a): [0, 1] at tau [.25, .75]; target quantiles [0, 2]
    q, next_q = torch.tensor([[[0.0, 1.0]]]), torch.tensor([[[0.0, 2.0]]])
    tau = torch.tensor([0.25, 0.75]).view(1, 2, 1)
    data = qrdqn_nstep_td_data(
        q, next_q, torch.tensor([0]), torch.tensor([0]), torch.zeros(1, 1), torch.zeros(1), tau, None
    )
    loss, per_sample = qrdqn_nstep_td_error(data, 1.0)
    # rows (pred 0, 1) x columns (target 0, 2): huber [[0, 1.5], [.5, .5]], |tau - 1{t <= p}|
    # [[.75, .25], [.25, .75]]: row sums .375 and .5, mean .4375
    assert per_sample.tolist() == pytest.approx([0.4375]) and loss.item() == pytest.approx(0.4375)
    with pytest.raises(ShapeError, match="q must have 3"):
        qrdqn_nstep_td_error(data._replace(q=q[0]), 1.0)


def test_iqn_quantile_huber_loss_by_hand():
    # Q(s, a) at fractions [.25, .75] is [0, 1] (q [tau=2, B=1, A=1]); one target sample, 2
    q, next_q = torch.tensor([[[0.0]], [[1.0]]]), torch.tensor([[[2.0]]])
    fractions = torch.tensor([[0.25], [0.75]])
    data = iqn_nstep_td_data(
        q, next_q, torch.tensor([0]), torch.tensor([0]), torch.zeros(1, 1), torch.zeros(1), fractions, None
    )
    loss, per_sample = iqn_nstep_td_error(data, 1.0)
    # errors [2, 1]: huber [1.5, .5] times [.25, .75], summed over the predictions: .75
    assert per_sample.tolist() == pytest.approx([0.75]) and loss.item() == pytest.approx(0.75)
    # kappa 2: huber [2, .5] / 2 -> .25 * 1 + .75 * .25
    assert iqn_nstep_td_error(data, 1.0, kappa=2.0)[1].item() == pytest.approx(0.4375)
