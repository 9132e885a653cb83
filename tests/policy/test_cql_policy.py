"""CQL and discrete CQL: what is ding_ray's own around DI-engine's learn step (which
tests/compat/test_di_engine_learn_steps.py compares): the penalty makes the critics conservative
about actions the data does not hold, the Lagrange multiplier, checkpoints, the modes' actions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ding_ray.errors import ConfigError, ShapeError
from ding_ray.policy import create_policy
from tests.policy.fakes import continuous_batch, continuous_policy

MODEL = dict(obs_shape=3, action_shape=2, actor_head_hidden_size=16, critic_head_hidden_size=16)


def cql(**over):
    return continuous_policy("cql", MODEL, **over)


def data_action_batch(n: int = 32) -> dict:
    """Transitions that all take the action [0.5, -0.5], with random states and rewards."""
    batch = continuous_batch(n)
    batch["action"][:] = [0.5, -0.5]
    return batch


def gap(policy, batch: dict) -> float:
    """Mean over the batch's states of Q(s, a_data) minus Q at uniform random actions (first critic)."""
    model = policy.learn_mode.get_attribute("learn_model")
    obs = torch.as_tensor(batch["obs"])
    with torch.no_grad():
        q_data = model.compute_critic({"obs": obs, "action": torch.as_tensor(batch["action"])})["q_value"][0]
        random = torch.rand(len(obs), 2, generator=torch.Generator().manual_seed(1)) * 2 - 1
        q_random = model.compute_critic({"obs": obs, "action": random})["q_value"][0]
    return float((q_data - q_random).mean())


def test_the_penalty_values_the_data_s_actions_above_others():
    """Trained on the same batch, CQL's critic ranks the data's action above random ones by far more
    than with the penalty off (min_q_weight 0: SAC's critic loss on a target without entropy)."""
    batch = data_action_batch()
    gaps = {}
    for weight in (0.0, 5.0):
        policy = cql(learn=dict(min_q_weight=weight, learning_rate_q=3e-3))
        for _ in range(60):
            policy.learn_mode.forward(batch)
        gaps[weight] = gap(policy, batch)
    assert gaps[5.0] > gaps[0.0] + 1.0, gaps


def test_the_lagrange_multiplier_moves_toward_the_threshold():
    """Below the threshold the multiplier shrinks; far above it, it grows."""
    batch = data_action_batch()
    moved = {}
    for thresh in (1e3, 1e-3):
        policy = cql(learn=dict(with_lagrange=True, lagrange_thresh=thresh, min_q_weight=5.0))
        for _ in range(3):
            policy.learn_mode.forward(batch)
        moved[thresh] = float(policy.learn_mode.state_dict()["log_alpha_prime"])
    assert moved[1e3] < 0 < moved[1e-3], moved


def test_with_lagrange_needs_a_positive_threshold():
    with pytest.raises(ConfigError, match="with_lagrange=True needs lagrange_thresh > 0"):
        cql(learn=dict(with_lagrange=True))


@pytest.mark.parametrize("lagrange", [False, True])
def test_a_learn_state_loaded_into_a_fresh_policy_gives_the_same_next_step(lagrange):
    """Model, target critics, the three optimizers, alpha and the Lagrange multiplier and its optimizer
    travel in the learn state: a fresh policy that loads it takes the same next step."""
    learn = dict(with_lagrange=lagrange, lagrange_thresh=1.0, min_q_weight=5.0)
    batch = data_action_batch()
    policy = cql(learn=learn)
    for _ in range(3):
        policy.learn_mode.forward(batch)
    state = policy.learn_mode.state_dict()
    assert ("log_alpha_prime" in state) is lagrange and ("optimizer_alpha_prime" in state) is lagrange
    fresh = cql(learn=learn)
    fresh.learn_mode.load_state_dict(state)
    logs = []
    for p in (policy, fresh):
        torch.manual_seed(7)
        logs.append(p.learn_mode.forward(batch))
    for key in ("critic_loss", "twin_critic_loss", "policy_loss", "alpha_loss", "alpha", "total_loss"):
        assert logs[0][key] == pytest.approx(logs[1][key], rel=1e-6), key


def test_collect_samples_and_eval_is_deterministic():
    policy = cql()
    obs = {i: np.random.default_rng(i).normal(size=3).astype(np.float32) for i in range(4)}
    evals = [policy.eval_mode.forward(obs) for _ in range(2)]
    for i in obs:
        mu = evals[0][i]["logit"][0]
        assert torch.equal(evals[0][i]["action"], evals[1][i]["action"])
        assert torch.allclose(evals[0][i]["action"], torch.tanh(mu))
    collected = policy.collect_mode.forward(obs)
    assert any(not torch.allclose(collected[i]["action"], evals[0][i]["action"]) for i in obs)


def discrete_cql(**over):
    torch.manual_seed(0)
    cfg = dict(type="discrete_cql", model=dict(obs_shape=4, action_shape=3, encoder_hidden_size_list=[16]))
    cfg.update(over)
    return create_policy(cfg, enable_field=["learn", "collect", "eval"])


def test_discrete_cql_greedily_takes_the_data_s_action():
    """Data that always took action 2, with rewards that do not depend on it: QR-DQN alone leaves the
    other actions' values where they started; with the penalty eval picks action 2 in every state."""
    rng = np.random.default_rng(0)
    n = 64
    batch = dict(
        obs=rng.normal(size=(n, 4)).astype(np.float32),
        next_obs=rng.normal(size=(n, 4)).astype(np.float32),
        action=np.full(n, 2, dtype=np.int64),
        reward=rng.normal(size=n).astype(np.float32),
        done=np.zeros(n, dtype=bool),
    )
    policy = discrete_cql(learn=dict(min_q_weight=4.0))
    for _ in range(40):
        log = policy.learn_mode.forward(batch)
    assert set(log) >= set(policy.learn_mode.monitor_vars())
    states = {i: row for i, row in enumerate(rng.normal(size=(16, 4)).astype(np.float32))}
    actions = [int(out["action"]) for out in policy.eval_mode.forward(states).values()]
    assert actions == [2] * 16


def test_discrete_cql_refuses_data_of_another_nstep():
    rng = np.random.default_rng(0)
    batch = dict(
        obs=rng.normal(size=(8, 4)).astype(np.float32),
        next_obs=rng.normal(size=(8, 4)).astype(np.float32),
        action=np.zeros(8, dtype=np.int64),
        reward=rng.normal(size=8).astype(np.float32),  # one step each
        done=np.zeros(8, dtype=bool),
    )
    with pytest.raises(ShapeError, match="policy.nstep is 3 but the batch's rewards hold 1 step"):
        discrete_cql(nstep=3).learn_mode.forward(batch)
