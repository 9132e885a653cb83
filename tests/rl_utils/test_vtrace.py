import math

import pytest
import torch

from ding_ray.rl_utils import (
    compute_importance_weights,
    vtrace,
    vtrace_advantage,
    vtrace_data,
    vtrace_error_continuous_action,
    vtrace_error_discrete_action,
    vtrace_nstep_return,
)

# The hand-worked unroll: T = 3, gamma = .5, V = [1, 2, 3], V(x_3) = 4, r = 1 everywhere,
# rho = [2, .5, 1] (clipped at 1: [1, .5, 1]; c alike).
VALUES, BOOTSTRAP, REWARDS = torch.tensor([1.0, 2.0, 3.0]), torch.tensor(4.0), torch.ones(3)
LOG_RHOS = torch.log(torch.tensor([2.0, 0.5, 1.0]))


def test_vtrace_matches_numbers_worked_by_hand():
    # deltas: 1 * (1 + .5*2 - 1) = 1, .5 * (1 + .5*3 - 2) = .25, 1 * (1 + .5*4 - 3) = 0
    # vs_2 = 3; vs_1 = 2 + .25 + .5*.5*0 = 2.25; vs_0 = 1 + 1 + .5*1*.25 = 2.125
    # adv: 1 * (1 + .5*2.25 - 1) = 1.125, .5 * (1 + .5*3 - 2) = .25, 1 * (1 + .5*4 - 3) = 0
    out = vtrace(LOG_RHOS, torch.full((3,), 0.5), REWARDS, VALUES, BOOTSTRAP)
    assert out.vs.tolist() == pytest.approx([2.125, 2.25, 3.0])
    assert out.pg_advantages.tolist() == pytest.approx([1.125, 0.25, 0.0])


def test_rho_pg_clip_and_lambda_worked_by_hand():
    # rho_pg clipped at 3 keeps rho_0 = 2: adv_0 = 2 * 1.125
    out = vtrace(LOG_RHOS, torch.full((3,), 0.5), REWARDS, VALUES, BOOTSTRAP, rho_pg_clip_ratio=3.0)
    assert out.pg_advantages.tolist() == pytest.approx([2.25, 0.25, 0.0])
    assert out.vs.tolist() == pytest.approx([2.125, 2.25, 3.0])  # the targets' clips are unchanged
    # lambda .5 halves each c: vs_0 = 1 + 1 + .5 * (.5*1) * .25 = 2.0625
    out = vtrace(LOG_RHOS, torch.full((3,), 0.5), REWARDS, VALUES, BOOTSTRAP, lambda_=0.5)
    assert out.vs.tolist() == pytest.approx([2.0625, 2.25, 3.0])
    # rho clipped at .5 everywhere: deltas .5 * [1, .5, 0] = [.5, .25, 0], c = [1, .5, 1] as before:
    # vs_1 = 2 + .25 = 2.25, vs_0 = 1 + .5 + .5*1*.25 = 1.625
    out = vtrace(LOG_RHOS, torch.full((3,), 0.5), REWARDS, VALUES, BOOTSTRAP, rho_clip_ratio=0.5)
    assert out.vs.tolist() == pytest.approx([1.625, 2.25, 3.0])


def test_an_episode_end_inside_the_unroll_worked_by_hand():
    # the episode ends at step 1 (discount 0): delta_1 = .5 * (1 + 0 - 2) = -.5, and no trace or
    # bootstrap crosses it: vs_1 = 1.5; vs_0 = 1 + 1 + .5*1*(-.5) = 1.75; step 2 starts afresh
    out = vtrace(LOG_RHOS, torch.tensor([0.5, 0.0, 0.5]), REWARDS, VALUES, BOOTSTRAP)
    assert out.vs.tolist() == pytest.approx([1.75, 1.5, 3.0])
    assert out.pg_advantages.tolist() == pytest.approx([1.0 + 0.5 * 1.5 - 1.0, -0.5, 0.0])


def reference_vtrace(log_rhos, discounts, rewards, values, bootstrap, lambda_, rho_clip, c_clip, pg_clip):
    """The paper's recursion, one step at a time, one column at a time."""
    steps, batch = rewards.shape
    vs = torch.zeros(steps, batch, dtype=values.dtype)
    adv = torch.zeros(steps, batch, dtype=values.dtype)
    for b in range(batch):
        acc = 0.0
        for t in reversed(range(steps)):
            rho = math.exp(log_rhos[t, b].item())
            next_value = bootstrap[b] if t == steps - 1 else values[t + 1, b]
            delta = min(rho_clip, rho) * (rewards[t, b] + discounts[t, b] * next_value - values[t, b])
            acc = delta + discounts[t, b] * lambda_ * min(c_clip, rho) * acc
            vs[t, b] = values[t, b] + acc
        for t in range(steps):
            rho = math.exp(log_rhos[t, b].item())
            next_vs = bootstrap[b] if t == steps - 1 else vs[t + 1, b]
            adv[t, b] = min(pg_clip, rho) * (rewards[t, b] + discounts[t, b] * next_vs - values[t, b])
    return vs, adv


@pytest.mark.parametrize("clips", [(1.0, 1.0, 1.0, 1.0), (0.95, 1.5, 0.8, 2.0), (0.5, 0.7, 1.2, 0.9)])
def test_vectorised_equals_the_reference_loop_on_random_inputs(clips):
    lambda_, rho_clip, c_clip, pg_clip = clips
    gen = torch.Generator().manual_seed(0)
    steps, batch = 11, 6
    log_rhos = torch.randn(steps, batch, generator=gen, dtype=torch.float64)
    done = torch.rand(steps, batch, generator=gen) < 0.25  # several episode ends inside unrolls
    discounts = 0.97 * (~done).double()
    rewards = torch.randn(steps, batch, generator=gen, dtype=torch.float64)
    values = torch.randn(steps, batch, generator=gen, dtype=torch.float64)
    bootstrap = torch.randn(batch, generator=gen, dtype=torch.float64)
    out = vtrace(log_rhos, discounts, rewards, values, bootstrap, lambda_, rho_clip, c_clip, pg_clip)
    vs, adv = reference_vtrace(log_rhos, discounts, rewards, values, bootstrap, *clips)
    assert done.any(dim=0).sum() >= 3
    assert torch.allclose(out.vs, vs, atol=1e-6, rtol=0)
    assert torch.allclose(out.pg_advantages, adv, atol=1e-6, rtol=0)
    # float32 inputs (what the learner has) stay within float32's precision
    out32 = vtrace(*(x.float() for x in (log_rhos, discounts, rewards, values, bootstrap)), *clips)
    assert torch.allclose(out32.vs.double(), vs, atol=1e-5)


def test_di_engine_forms_agree_with_vtrace():
    gen = torch.Generator().manual_seed(1)
    steps, batch, gamma, lambda_ = 5, 4, 0.9, 0.8
    log_rhos = torch.randn(steps, batch, generator=gen)
    rewards, values = torch.randn(steps, batch, generator=gen), torch.randn(steps + 1, batch, generator=gen)
    rhos = torch.exp(log_rhos)
    out = vtrace(log_rhos, torch.full((steps, batch), gamma), rewards, values[:-1], values[-1], lambda_)
    return_ = vtrace_nstep_return(rhos.clamp(max=1.0), rhos.clamp(max=1.0), rewards, values, gamma, lambda_)
    assert torch.allclose(return_, out.vs, atol=1e-6)
    return_next = torch.cat([return_[1:], values[-1:]])
    adv = vtrace_advantage(rhos.clamp(max=1.0), rewards, return_next, values[:-1], gamma)
    assert torch.allclose(adv, out.pg_advantages, atol=1e-6)


def test_importance_weights_of_the_taken_actions():
    logits = torch.log(torch.tensor([[[0.25, 0.75]]]))  # [T=1, B=1, A=2]
    behaviour = torch.log(torch.tensor([[[0.5, 0.5]]]))
    rho = compute_importance_weights(logits, behaviour, torch.tensor([[1]]))
    assert rho.shape == (1, 1) and rho.item() == pytest.approx(1.5)
    gauss = {"mu": torch.zeros(1, 1, 2), "sigma": torch.ones(1, 1, 2)}
    assert compute_importance_weights(
        gauss, gauss, torch.randn(1, 1, 2), "continuous"
    ).item() == pytest.approx(1)


def test_discrete_losses_on_policy_data():
    """Same logits for learner and behaviour: rho = 1, the losses are the plain actor-critic ones.
    Compared to float32 rounding of terms near 1 (absolute): a mean near 0 of such terms can differ
    from another summation order by far more than a relative 1e-6."""
    torch.manual_seed(0)  # the same draws whatever ran before in this process
    steps, batch = 4, 3
    logits = torch.randn(steps, batch, 2, requires_grad=True)
    value = torch.randn(steps + 1, batch, requires_grad=True)
    action, reward = torch.randint(0, 2, (steps, batch)), torch.randn(steps, batch)
    done = torch.zeros(steps, batch)
    done[1, 0] = 1.0
    loss = vtrace_error_discrete_action(
        vtrace_data(logits, logits.detach(), action, value, reward, None, done), 0.9, 1.0
    )
    out = vtrace(torch.zeros(steps, batch), 0.9 * (1 - done), reward, value[:-1].detach(), value[-1].detach())
    log_prob = torch.log_softmax(logits, -1).gather(-1, action.unsqueeze(-1)).squeeze(-1)
    close = dict(rel=1e-6, abs=1e-6)
    assert loss.policy_loss.item() == pytest.approx(-(log_prob * out.pg_advantages).mean().item(), **close)
    assert loss.value_loss.item() == pytest.approx(((value[:-1] - out.vs) ** 2).mean().item(), **close)
    entropy = -(torch.softmax(logits, -1) * torch.log_softmax(logits, -1)).sum(-1).mean()
    assert loss.entropy_loss.item() == pytest.approx(entropy.item(), **close)
    (loss.policy_loss + loss.value_loss).backward()
    assert logits.grad is not None and value.grad is not None
    assert value.grad[-1].abs().sum() == 0  # the bootstrap value is a target only


def test_weight_masks_steps_and_six_field_data_builds():
    steps, batch = 3, 2
    logits, value = torch.randn(steps, batch, 3), torch.randn(steps + 1, batch)
    action, reward = torch.randint(0, 3, (steps, batch)), torch.randn(steps, batch)
    weight = torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    data = vtrace_data(logits, torch.randn(steps, batch, 3), action, value, reward, weight)
    assert data.done is None
    loss = vtrace_error_discrete_action(data)
    full = vtrace_error_discrete_action(data._replace(weight=None))
    assert loss.entropy_loss.item() < full.entropy_loss.item()


def test_continuous_losses():
    steps, batch, dim = 4, 2, 3
    mu = torch.randn(steps, batch, dim, requires_grad=True)
    sigma = torch.rand(steps, batch, dim) + 0.5
    behaviour = {"mu": torch.randn(steps, batch, dim), "sigma": torch.rand(steps, batch, dim) + 0.5}
    value = torch.randn(steps + 1, batch)
    data = vtrace_data(
        {"mu": mu, "sigma": sigma},
        behaviour,
        torch.randn(steps, batch, dim),
        value,
        torch.randn(steps, batch),
        None,
    )
    loss = vtrace_error_continuous_action(data, 0.99, 0.95)
    assert all(torch.isfinite(x) for x in loss)
    loss.policy_loss.backward()
    assert mu.grad is not None and mu.grad.abs().sum() > 0


def test_the_clipped_surrogate_worked_by_hand():
    """APPO's loss: fresh data gives the plain policy gradient; a stale step whose ratio left
    [1 - eps, 1 + eps] in the direction its advantage favours gives none, the other way it does."""
    torch.manual_seed(0)
    steps, batch, eps = 3, 4, 0.2
    value = torch.randn(steps + 1, batch)
    action, reward = torch.zeros(steps, batch, dtype=torch.long), torch.randn(steps, batch)

    def grads(target, behaviour, surrogate):
        logits = target.clone().requires_grad_(True)
        data = vtrace_data(logits, behaviour, action, value, reward, None, torch.zeros(steps, batch))
        vtrace_error_discrete_action(data, 0.9, 1.0, surrogate_clip_ratio=surrogate).policy_loss.backward()
        return logits.grad

    logits = torch.randn(steps, batch, 2)
    # fresh data (rho = 1): the surrogate's gradient is IMPALA's
    assert torch.allclose(grads(logits, logits, eps), grads(logits, logits, None), atol=1e-7)
    # the learner's pi(a=0) is now 0.9 where the behaviour's was 0.5: ratio 1.8, outside 1.2
    learner = torch.tensor([math.log(9.0), 0.0]).expand(steps, batch, 2)
    behaviour = torch.zeros(steps, batch, 2)
    data = vtrace_data(learner, behaviour, action, value, reward, None, torch.zeros(steps, batch))
    advantage = vtrace(
        torch.full((steps, batch), math.log(1.8)), torch.full((steps, batch), 0.9), reward,
        value[:-1], value[-1], 1.0, rho_pg_clip_ratio=None,
    ).pg_advantages  # fmt: skip
    loss = vtrace_error_discrete_action(data, 0.9, 1.0, surrogate_clip_ratio=eps)
    expected = -torch.where(advantage > 0, 1.2 * advantage, 1.8 * advantage).mean()
    assert loss.policy_loss.item() == pytest.approx(expected.item(), rel=1e-5)
    g = grads(learner, behaviour, eps)
    positive = advantage > 0
    assert positive.any() and (~positive).any()
    assert g[positive].abs().sum() == 0  # already moved past the trust region the way A wants
    assert (g[~positive].abs().sum(-1) > 0).all()  # moved the wrong way: pulled back
