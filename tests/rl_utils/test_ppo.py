import math

import pytest
import torch

from ding_ray.rl_utils import (
    ppo_data,
    ppo_error,
    ppo_policy_data,
    ppo_policy_error,
    ppo_value_data,
    ppo_value_error,
)

LN3 = math.log(3.0)


def _three_samples():
    # Two actions. Old logits [0, 0]: p = 0.5 each. New logits [ln 3, 0]: p = 0.75 / 0.25.
    # sample 0: action 0, adv +1: ratio .75/.5 = 1.5, min(1.5 * 1, 1.2 * 1) = 1.2
    # sample 1: action 1, adv -1: ratio .25/.5 = 0.5, min(-0.5, 0.8 * -1) = -0.8
    # sample 2: new = old, adv +2: ratio 1, objective 2
    # policy_loss = -(1.2 - 0.8 + 2) / 3 = -0.8; clipfrac = 2/3 (|r - 1| = .5 twice)
    # approx_kl = mean(log p_old - log p_new) = (ln(.5/.75) + ln(.5/.25) + 0) / 3 = ln(4/3) / 3
    logit_old = torch.zeros(3, 2)
    logit_new = torch.tensor([[LN3, 0.0], [LN3, 0.0], [0.0, 0.0]])
    action = torch.tensor([0, 1, 0])
    adv = torch.tensor([1.0, -1.0, 2.0])
    return logit_new, logit_old, action, adv


def test_policy_loss_entropy_and_info_by_hand():
    logit_new, logit_old, action, adv = _three_samples()
    loss, info = ppo_policy_error(ppo_policy_data(logit_new, logit_old, action, adv, None), clip_ratio=0.2)
    assert loss.policy_loss.item() == pytest.approx(-0.8)
    # entropy of (.75, .25) twice and of (.5, .5) once
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert loss.entropy_loss.item() == pytest.approx((2 * h + math.log(2)) / 3)
    assert info.approx_kl == pytest.approx(math.log(4 / 3) / 3)
    assert info.clipfrac == pytest.approx(2 / 3)


def test_dual_clip_bounds_negative_advantages():
    # action 0 with ratio 1.5 and adv -1: min(-1.5, 1.2 * -1) = -1.5; dual clip 1.3: max(-1.5, -1.3) = -1.3
    logit_new, logit_old = torch.tensor([[LN3, 0.0]]), torch.zeros(1, 2)
    data = ppo_policy_data(logit_new, logit_old, torch.tensor([0]), torch.tensor([-1.0]), None)
    assert ppo_policy_error(data, 0.2)[0].policy_loss.item() == pytest.approx(1.5)
    assert ppo_policy_error(data, 0.2, dual_clip=1.3)[0].policy_loss.item() == pytest.approx(1.3)
    with pytest.raises(ValueError, match="dual_clip"):
        ppo_policy_error(data, 0.2, dual_clip=0.5)


def test_value_loss_with_and_without_clipping_by_hand():
    # V_new [1, 3], V_old [0, 3], R [2, 1], clip 0.2
    # sample 0: (2 - 1)^2 = 1; clipped V = 0 + 0.2 -> (2 - 0.2)^2 = 3.24; max 3.24
    # sample 1: (1 - 3)^2 = 4; clipped V = 3 -> 4
    # clipped: 0.5 * (3.24 + 4) / 2 = 1.81; unclipped 0.5 * (1 + 4) / 2 = 1.25
    # weights [2, 0], unclipped: 0.5 * (2 * 1 + 0) / 2 = 0.5
    v_new, v_old, ret = torch.tensor([1.0, 3.0]), torch.tensor([0.0, 3.0]), torch.tensor([2.0, 1.0])
    assert ppo_value_error(ppo_value_data(v_new, v_old, ret, None), 0.2).item() == pytest.approx(1.81)
    plain = ppo_value_error(ppo_value_data(v_new, v_old, ret, None), 0.2, use_value_clip=False)
    assert plain.item() == pytest.approx(1.25)
    weighted = ppo_value_data(v_new, v_old, ret, torch.tensor([2.0, 0.0]))
    assert ppo_value_error(weighted, 0.2, use_value_clip=False).item() == pytest.approx(0.5)


def test_ppo_error_combines_both_halves_and_backpropagates():
    logit_new, logit_old, action, adv = _three_samples()
    logit_new.requires_grad_(True)
    value_new = torch.tensor([1.0, 3.0, 0.0], requires_grad=True)
    value_old, ret = torch.tensor([0.0, 3.0, 0.0]), torch.tensor([2.0, 1.0, 0.0])
    loss, info = ppo_error(ppo_data(logit_new, logit_old, action, value_new, value_old, adv, ret, None), 0.2)
    assert loss.policy_loss.item() == pytest.approx(-0.8)
    assert loss.value_loss.item() == pytest.approx(0.5 * (3.24 + 4 + 0) / 3)
    assert info.clipfrac == pytest.approx(2 / 3)
    (loss.policy_loss + 0.5 * loss.value_loss - 0.01 * loss.entropy_loss).backward()
    assert logit_new.grad is not None and value_new.grad is not None
    # clipped samples (0 and 1) get no policy gradient; only the entropy term moves their logits
    assert torch.isfinite(logit_new.grad).all()


def _gaussian_samples():
    # One action dimension. Old policy N(0, 1) for all three samples.
    # sample 0: new N(1, 1), a = 1: log ratio = -(1-1)^2/2 + (1-0)^2/2 = 0.5, r = e^.5 = 1.6487;
    #           adv +1: min(1.6487, 1.2) = 1.2 (clipped)
    # sample 1: new = old, a = 0.3: r = 1; adv -2: objective -2
    # sample 2: new N(0, 2), a = 0: log ratio = -ln 2 (only the normaliser changes), r = 0.5;
    #           adv -1: min(-0.5, 0.8 * -1) = -0.8 (clipped)
    # policy_loss = -(1.2 - 2 - 0.8) / 3 = 1.6 / 3; clipfrac 2/3
    # approx_kl = mean(log p_old - log p_new) = (-0.5 + 0 + ln 2) / 3
    # entropy of N(mu, s) = 0.5 + 0.5 ln(2 pi) + ln s: s = 1, 1, 2
    old = {"mu": torch.zeros(3, 1), "sigma": torch.ones(3, 1)}
    new = {"mu": torch.tensor([[1.0], [0.0], [0.0]]), "sigma": torch.tensor([[1.0], [1.0], [2.0]])}
    action = torch.tensor([[1.0], [0.3], [0.0]])
    adv = torch.tensor([1.0, -2.0, -1.0])
    return new, old, action, adv


def test_continuous_policy_loss_entropy_and_info_by_hand():
    from ding_ray.rl_utils.ppo import ppo_policy_error_continuous

    new, old, action, adv = _gaussian_samples()
    loss, info = ppo_policy_error_continuous(ppo_policy_data(new, old, action, adv, None), clip_ratio=0.2)
    assert loss.policy_loss.item() == pytest.approx(1.6 / 3)
    h1 = 0.5 + 0.5 * math.log(2 * math.pi)
    assert loss.entropy_loss.item() == pytest.approx(h1 + math.log(2) / 3)
    assert info.approx_kl == pytest.approx((-0.5 + math.log(2)) / 3)
    assert info.clipfrac == pytest.approx(2 / 3)
    # [B] actions and [B] mu/sigma (one action dimension without its axis) give the same numbers
    flat = ppo_policy_data(
        {k: v.squeeze(-1) for k, v in new.items()},
        {k: v.squeeze(-1) for k, v in old.items()},
        action.squeeze(-1),
        adv,
        None,
    )
    assert ppo_policy_error_continuous(flat, 0.2)[0].policy_loss.item() == pytest.approx(1.6 / 3)


def test_continuous_log_prob_and_entropy_sum_over_action_dims():
    # two dimensions, old N(0, 1), new N(1, 1) in both, a = [1, 1]: log ratio .5 + .5 = 1, r = e
    # adv +1: clipped to 1.2 -> loss -1.2; entropy 2 * (0.5 + 0.5 ln 2 pi)
    from ding_ray.rl_utils.ppo import ppo_error_continuous

    new = {"mu": torch.ones(1, 2, requires_grad=True), "sigma": torch.ones(1, 2)}
    old = {"mu": torch.zeros(1, 2), "sigma": torch.ones(1, 2)}
    value_new = torch.tensor([1.0], requires_grad=True)
    data = ppo_data(
        new,
        old,
        torch.ones(1, 2),
        value_new,
        torch.tensor([0.0]),
        torch.tensor([1.0]),
        torch.tensor([2.0]),
        None,
    )
    loss, info = ppo_error_continuous(data, 0.2)
    assert loss.policy_loss.item() == pytest.approx(-1.2)
    assert loss.entropy_loss.item() == pytest.approx(2 * (0.5 + 0.5 * math.log(2 * math.pi)))
    assert info.approx_kl == pytest.approx(-1.0) and info.clipfrac == 1.0
    # value: V_new 1, V_old 0, R 2: max((2 - 1)^2, (2 - 0.2)^2) / 2 = 1.62
    assert loss.value_loss.item() == pytest.approx(1.62)
    (loss.policy_loss + loss.value_loss).backward()
    assert value_new.grad is not None
