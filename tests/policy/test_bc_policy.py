"""Behaviour cloning: the losses on hand-checked numbers, the three modes' outputs, bad configs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ding_ray.errors import ConfigError
from ding_ray.policy import create_policy
from ding_ray.torch_utils import LabelSmoothCELoss


def bc_policy(**cfg):
    torch.manual_seed(0)
    model = cfg.pop("model", dict(obs_shape=3, action_shape=2, encoder_hidden_size_list=[8, 8]))
    return create_policy(dict(type="bc", model=model, **cfg), enable_field=["learn", "collect", "eval"])


def rows(n: int, action) -> list[dict]:
    rng = np.random.default_rng(0)
    return [dict(obs=rng.standard_normal(3).astype(np.float32), action=action(i)) for i in range(n)]


def test_discrete_learn_step_is_cross_entropy_on_the_logits_before_the_step():
    policy = bc_policy(learn=dict(learning_rate=0.1))
    data = rows(6, lambda i: np.int64(i % 2))
    obs = torch.tensor(np.stack([r["obs"] for r in data]))
    action = torch.tensor([r["action"] for r in data])
    logit = policy.eval_mode.forward(obs)["logit"]
    want = -torch.log_softmax(logit, -1)[torch.arange(6), action].mean().item()
    info = policy.learn_mode.forward(data)
    assert info["total_loss"] == pytest.approx(want, rel=1e-5)
    assert info["cur_lr"] == 0.1
    assert set(policy.learn_mode.monitor_vars()) <= set(info)
    assert policy.learn_mode.forward(data)["total_loss"] < info["total_loss"]  # SGD went down the loss


def test_label_smoothing_is_di_engine_s():
    # 3 classes, ratio 0.1: wrong classes get 0.05, the right one 0.95
    logits, labels = torch.tensor([[1.0, 2.0, 0.5]]), torch.tensor([1])
    log_p = torch.log_softmax(logits, -1)[0]
    want = -(0.05 * log_p[0] + 0.95 * log_p[1] + 0.05 * log_p[2]).item()
    assert LabelSmoothCELoss(0.1)(logits, labels).item() == pytest.approx(want, rel=1e-6)
    policy = bc_policy(learn=dict(ce_label_smooth=True))
    data = rows(4, lambda i: np.int64(1))
    obs = torch.tensor(np.stack([r["obs"] for r in data]))
    logit = policy.eval_mode.forward(obs)["logit"]
    want = LabelSmoothCELoss(0.1)(logit, torch.ones(4, dtype=torch.int64)).item()
    assert policy.learn_mode.forward(data)["total_loss"] == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize("loss_type,error", [("l1_loss", torch.abs), ("mse_loss", torch.square)])
def test_continuous_learn_step_regresses_the_action(loss_type, error):
    model = dict(obs_shape=3, action_shape=2, action_space="regression", actor_head_hidden_size=8)
    policy = bc_policy(continuous=True, loss_type=loss_type, model=model, learn=dict(optimizer="Adam"))
    data = rows(5, lambda i: np.array([0.5, -0.25 * i], dtype=np.float32))
    obs = torch.tensor(np.stack([r["obs"] for r in data]))
    predicted = policy.eval_mode.forward(obs)["action"]
    assert predicted.abs().max() < 1  # tanh-bounded
    want = error(predicted - torch.tensor(np.stack([r["action"] for r in data]))).mean().item()
    assert policy.learn_mode.forward(data)["total_loss"] == pytest.approx(want, rel=1e-5)


def test_modes_give_di_engine_s_outputs():
    policy = bc_policy()
    obs = {0: np.zeros(3, np.float32), 1: np.ones(3, np.float32)}
    greedy = policy.eval_mode.forward(obs)
    assert set(greedy) == {0, 1} and set(greedy[0]) == {"action", "logit"}
    assert greedy[1]["action"].item() == greedy[1]["logit"].argmax().item()
    assert policy.collect_mode.forward(obs, eps=0.0)[1]["action"].item() == greedy[1]["action"].item()
    explored = [policy.collect_mode.forward(obs, eps=1.0)[0]["action"].item() for _ in range(40)]
    assert set(explored) == {0, 1}  # eps=1: uniform over both actions
    model = dict(obs_shape=3, action_shape=1, action_space="regression", actor_head_hidden_size=8)
    policy = bc_policy(continuous=True, model=model, collect=dict(noise_sigma=5.0))
    mean = policy.eval_mode.forward(obs)[0]["action"]
    noisy = torch.stack([policy.collect_mode.forward(obs)[0]["action"] for _ in range(50)])
    assert noisy.shape == (50, 1) and noisy.abs().max() <= 1.0
    assert (noisy - mean).abs().max() <= 0.5 + 1e-6  # the noise is clipped to noise_range


@pytest.mark.parametrize(
    "cfg,match",
    [
        (dict(learn=dict(optimizer="RMSprop")), "optimizer"),
        (
            dict(
                continuous=True,
                loss_type="huber",
                model=dict(obs_shape=3, action_shape=1, action_space="regression"),
            ),
            "loss_type",
        ),
        (
            dict(continuous=True, model=dict(obs_shape=3, action_shape=1, action_space="reparameterization")),
            "regression",
        ),
    ],
)
def test_bad_configs_are_refused(cfg, match):
    with pytest.raises(ConfigError, match=match):
        bc_policy(**cfg)


def test_lr_decay_starts_at_the_warmup_rate():
    policy = bc_policy(learn=dict(learning_rate=0.01, lr_decay=True, warmup_lr=1e-4))
    assert policy.learn_mode.forward(rows(2, lambda i: np.int64(0)))["cur_lr"] == pytest.approx(1e-4)
    assert math.isclose(policy.learn_mode.get_attribute("lr_scheduler").lr_lambdas[0](40), 0.1)
