"""C51, QR-DQN, IQN and Rainbow: what is ding_ray's own around DI-engine's learn step (which
tests/compat/test_di_engine_learn_steps.py compares): the noise Rainbow draws before its forwards,
n-step samples into a learn step, checkpoints and the keys they refuse."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ding_ray.errors import ConfigError
from ding_ray.model import NoiseLinearLayer
from ding_ray.policy import create_policy

TYPES = ("c51", "qrdqn", "iqn", "rainbow")
MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16, 16])


def make(policy_type: str, **over):
    cfg = dict(type=policy_type, model=dict(MODEL), priority=True, nstep=3, **over)
    return create_policy(cfg, enable_field=["learn", "collect", "eval"])


def episode(policy, steps: int = 12, seed: int = 0) -> list[dict]:
    """One env's transitions through the collect mode's get_train_sample (n-step windows)."""
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(steps + 1, 4)).astype(np.float32)
    transitions = [
        dict(
            obs=obs[t],
            next_obs=obs[t + 1],
            action=np.int64(rng.integers(2)),
            reward=np.float32(rng.normal()),
            done=t == steps - 1,
        )
        for t in range(steps)
    ]
    samples = policy.collect_mode.get_train_sample(transitions)
    for sample in samples:
        sample["IS"] = np.float32(rng.uniform(0.5, 1.5))
    return samples


def noise(model: torch.nn.Module) -> list[torch.Tensor]:
    return [m.weight_eps.clone() for m in model.modules() if isinstance(m, NoiseLinearLayer)]


def changed(before: list[torch.Tensor], after: list[torch.Tensor]) -> bool:
    return all(not torch.equal(b, a) for b, a in zip(before, after, strict=True))


def test_rainbow_draws_new_noise_in_online_and_target_nets_before_learning():
    policy = make("rainbow")
    learn = policy.learn_mode
    online, target = learn.get_attribute("learn_model"), learn.get_attribute("target_model")
    assert noise(online) and noise(target)
    online_before, target_before = noise(online), noise(target)
    learn.forward(episode(policy))
    assert changed(online_before, noise(online)) and changed(target_before, noise(target))
    # the target net learns with its noise on, as DI-engine's (train mode)
    assert target.training


def test_rainbow_collect_draws_new_noise_but_acts_on_the_noise_free_means():
    policy = make("rainbow")
    model = policy.collect_mode.get_attribute("collect_model")
    obs = {i: np.random.default_rng(i).normal(size=4).astype(np.float32) for i in range(5)}
    before = noise(model)
    out = policy.collect_mode.forward(obs, eps=0.0)
    assert changed(before, noise(model))
    with torch.no_grad():
        model.eval()
        greedy = model(torch.tensor(np.stack(list(obs.values()))))["logit"].argmax(-1)
    assert [int(out[i]["action"]) for i in obs] == greedy.tolist()


@pytest.mark.parametrize("policy_type", TYPES)
def test_n_step_samples_train_and_give_one_priority_per_sample(policy_type):
    policy = make(policy_type)
    samples = episode(policy)
    assert np.shape(samples[0]["reward"]) == (3,)
    log = policy.learn_mode.forward(samples)
    assert np.isfinite(log["total_loss"])
    assert log["priority"].shape == (len(samples),) and (log["priority"] >= 0).all()
    assert set(policy.learn_mode.monitor_vars()) <= set(log)


@pytest.mark.parametrize("policy_type", TYPES)
def test_a_learn_state_resumes_training_where_it_was(policy_type):
    torch.manual_seed(0)
    first = make(policy_type)
    first.learn_mode.forward(episode(first, seed=1))
    second = make(policy_type)
    second.learn_mode.load_state_dict(first.learn_mode.state_dict())
    batch = episode(first, seed=2)
    torch.manual_seed(5)  # IQN's quantiles, Rainbow's noise
    want = first.learn_mode.forward(batch)["total_loss"]
    torch.manual_seed(5)
    assert second.learn_mode.forward(batch)["total_loss"] == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("policy_type", TYPES)
def test_dqn_s_huber_kappa_is_refused_by_name(policy_type):
    with pytest.raises(ConfigError, match="huber_kappa"):
        make(policy_type, learn=dict(huber_kappa=1.0))
