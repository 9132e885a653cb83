import numpy as np
import pytest
import torch

from ding_ray.envs import BaseEnvTimestep
from ding_ray.errors import ConfigError, EnvError
from ding_ray.policy import DQNPolicy, create_policy, get_policy_cls

MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[32, 32], dueling=True)


def make_policy(**over):
    return DQNPolicy(dict(model=MODEL, **over))


def batch(n=16, seed=0):
    rng = np.random.default_rng(seed)
    return [
        dict(
            obs=rng.normal(size=4).astype(np.float32),
            next_obs=rng.normal(size=4).astype(np.float32),
            action=np.int64(rng.integers(2)),
            reward=np.float32(rng.normal()),
            done=bool(rng.random() < 0.2),
        )
        for _ in range(n)
    ]


def test_modes_have_reference_fields():
    policy = make_policy()
    assert policy.learn_mode._fields == (
        "forward",
        "reset",
        "info",
        "monitor_vars",
        "get_attribute",
        "set_attribute",
        "state_dict",
        "load_state_dict",
    )
    assert policy.collect_mode._fields[:3] == ("forward", "process_transition", "get_train_sample")
    assert policy.eval_mode._fields == (
        "forward",
        "reset",
        "get_attribute",
        "set_attribute",
        "state_dict",
        "load_state_dict",
    )
    assert policy.learn_mode.get_attribute("batch_size") == 64
    policy.learn_mode.set_attribute("custom", 3)
    assert policy.learn_mode.get_attribute("custom") == 3
    with pytest.raises(NotImplementedError):
        policy.learn_mode.get_attribute("nonexistent")


def test_default_config_merges_up_the_class_chain():
    cfg = DQNPolicy.default_config()
    assert cfg.cuda is False and cfg.on_policy is False  # from Policy
    assert cfg.learn.target_update_freq == 100 and cfg.cfg_type == "DQNPolicyDict"
    assert get_policy_cls(dict(type="dqn")) is DQNPolicy


def test_enable_field_limits_modes_and_cuda_falls_back():
    policy = create_policy(dict(type="dqn", model=MODEL, cuda=True), enable_field=["collect"])
    assert policy.collect_mode.get_attribute("device").type == (
        "cuda" if torch.cuda.is_available() else "cpu"
    )
    with pytest.raises(NotImplementedError):  # learn mode was never set up: no optimizer
        policy.learn_mode.get_attribute("optimizer")
    with pytest.raises(ConfigError):
        DQNPolicy(dict(model=MODEL), enable_field=["learn", "fly"])


def test_learn_state_dict_round_trip_gives_identical_outputs():
    a, b = make_policy(), make_policy()
    for _ in range(3):
        a.learn_mode.forward(batch())
    b.learn_mode.load_state_dict(a.learn_mode.state_dict())
    obs = {i: np.random.default_rng(i).normal(size=4).astype(np.float32) for i in range(5)}
    out_a, out_b = a.eval_mode.forward(obs), b.eval_mode.forward(obs)
    assert all(out_a[i]["action"] == out_b[i]["action"] for i in obs)
    sd_a, sd_b = a.learn_mode.state_dict(), b.learn_mode.state_dict()
    for key in sd_a["model"]:
        assert torch.equal(sd_a["model"][key], sd_b["model"][key])
        assert torch.equal(sd_a["target_model"][key], sd_b["target_model"][key])
    # one more identical step on both keeps them identical (optimizer state came along)
    data = batch(seed=9)
    a.learn_mode.forward(data)
    b.learn_mode.forward(data)
    for key, value in a.learn_mode.state_dict()["model"].items():
        assert torch.allclose(value, b.learn_mode.state_dict()["model"][key])
    c = make_policy()
    c.collect_mode.load_state_dict(a.collect_mode.state_dict())
    assert c.collect_mode.forward(obs)[0]["action"] == out_a[0]["action"]


def test_learning_reduces_loss_and_reports_priority():
    policy = make_policy(priority=True, priority_IS_weight=True)
    data = batch(32)
    for d in data:  # terminal transitions: a pure regression onto the rewards, which must be learned
        d["IS"], d["done"] = np.float32(1.0), True
    first = policy.learn_mode.forward(data)
    for _ in range(200):
        last = policy.learn_mode.forward(data)
    assert last["total_loss"] < first["total_loss"] * 0.1
    assert last["priority"].shape == (32,) and (last["priority"] >= 0).all()
    assert {"cur_lr", "total_loss", "q_value"} <= set(last)


def test_columnar_and_list_batches_give_the_same_loss():
    a, b = make_policy(), make_policy()
    b.learn_mode.load_state_dict(a.learn_mode.state_dict())
    data = batch()
    columnar = {k: np.stack([np.asarray(d[k]) for d in data]) for k in data[0]}
    assert a.learn_mode.forward(data)["total_loss"] == pytest.approx(
        b.learn_mode.forward(columnar)["total_loss"]
    )


def test_hard_target_update_every_freq_iterations():
    policy = make_policy(learn=dict(target_update_freq=2))
    target0 = {k: v.clone() for k, v in policy.learn_mode.state_dict()["target_model"].items()}
    policy.learn_mode.forward(batch())
    target = policy.learn_mode.state_dict()["target_model"]
    assert all(torch.equal(v, target0[k]) for k, v in target.items())
    policy.learn_mode.forward(batch())
    state = policy.learn_mode.state_dict()
    assert all(torch.equal(v, state["model"][k]) for k, v in state["target_model"].items())


def test_soft_target_update_moves_by_theta():
    policy = make_policy(learn=dict(target_update_freq=0, target_theta=0.5))
    before = {k: v.clone() for k, v in policy.learn_mode.state_dict()["target_model"].items()}
    policy.learn_mode.forward(batch())
    state = policy.learn_mode.state_dict()
    online = state["model"]
    for key, value in state["target_model"].items():
        assert torch.allclose(value, 0.5 * before[key] + 0.5 * online[key], atol=1e-6)


def test_a_time_limit_is_terminal_as_in_di_engine_unless_bootstrap_on_truncation():
    obs = np.zeros(4, np.float32)
    truncated = BaseEnvTimestep(obs, 1.0, True, {"truncated": True})
    terminated = BaseEnvTimestep(obs, 1.0, True, {"truncated": False})
    running = BaseEnvTimestep(obs, 1.0, False, {})
    for bootstrap, done_at_time_limit in ((False, True), (True, False)):
        collect = make_policy(learn=dict(bootstrap_on_truncation=bootstrap)).collect_mode
        assert collect.process_transition(obs, {"action": 0}, truncated)["done"] is done_at_time_limit
        assert collect.process_transition(obs, {"action": 0}, terminated)["done"] is True
        assert collect.process_transition(obs, {"action": 0}, running)["done"] is False


def test_nstep_train_samples_by_hand():
    policy = make_policy(nstep=3, discount_factor=0.5)
    traj = [
        dict(obs=np.float32([t]), next_obs=np.float32([t + 1]), action=0, reward=float(t + 1), done=False)
        for t in range(4)
    ]
    traj[-1]["done"] = True  # the episode terminates on the 4th step
    samples = policy.collect_mode.get_train_sample(traj)
    assert len(samples) == 4
    assert samples[0]["reward"].tolist() == [1, 2, 3] and samples[0]["next_obs"][0] == 3
    assert samples[0]["value_gamma"] == pytest.approx(0.125) and samples[0]["done"] is False
    assert samples[2]["reward"].tolist() == [3, 4, 0] and samples[2]["done"] is True
    # DI-engine's get_nstep_return_data: the last nstep windows of a piece bootstrap with gamma ** (k - 1)
    assert [s["value_gamma"] for s in samples] == pytest.approx([0.125, 0.25, 0.5, 1.0])
    assert samples[3]["reward"].tolist() == [4, 0, 0]


def test_space_checks_give_actionable_errors():
    policy = make_policy()
    policy.check_spaces((4,), "discrete", 2)
    with pytest.raises(EnvError, match="obs_shape=6"):
        policy.check_spaces((6,), "discrete", 2)
    with pytest.raises(EnvError, match="action_shape=3"):
        policy.check_spaces((4,), "discrete", 3)
    with pytest.raises(EnvError, match="discrete action space.*continuous"):
        policy.check_spaces((4,), "continuous", 1)


def test_unknown_policy_key_is_rejected():
    with pytest.raises(ConfigError, match="policy.learn.batchsize"):
        DQNPolicy(dict(model=MODEL, learn=dict(batchsize=3)))


def test_nan_inputs_stop_before_the_weights_change():
    from ding_ray.errors import NonFiniteError

    policy = make_policy()
    before = {k: v.clone() for k, v in policy.learn_mode.state_dict()["model"].items()}
    data = batch()
    data[3]["reward"] = np.float32("nan")
    with pytest.raises(NonFiniteError, match=r"\['reward'\]"):
        policy.learn_mode.forward(data)
    assert all(torch.equal(v, before[k]) for k, v in policy.learn_mode.state_dict()["model"].items())


def test_collect_explores_as_di_engine_one_draw_for_the_whole_step():
    """DI-engine's eps-greedy wrapper draws numpy's global generator once per collect step: above
    ``eps`` every env acts greedily, else every env's action comes from torch's global generator."""
    policy = make_policy()
    data = {i: np.full(4, 0.1 * i, dtype=np.float32) for i in range(16)}
    greedy = torch.stack([out["action"] for out in policy.eval_mode.forward(data).values()])
    branches = set()
    for seed in range(8):
        np.random.seed(seed)
        torch.manual_seed(seed)
        out = policy.collect_mode.forward(data, eps=0.5)
        got = torch.stack([o["action"] for o in out.values()])
        after = np.random.random()
        np.random.seed(seed)
        coin = np.random.random()
        assert after == np.random.random()  # the step took exactly one draw
        torch.manual_seed(seed)
        expected = greedy if coin > 0.5 else torch.randint(0, 2, (16,))
        assert got.tolist() == expected.tolist()
        branches.add(coin > 0.5)
    assert branches == {True, False}
