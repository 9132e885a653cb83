import math

import numpy as np
import pytest
import torch

from ding_ray.envs import BaseEnvTimestep
from ding_ray.errors import ConfigError, EnvError, ShapeError
from ding_ray.policy import IMPALAPolicy, create_policy
from ding_ray.policy.unroll import UnrollBuilder
from tests.policy.fakes import StubActorCritic

MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16, 16])


def step(v, next_v=None, done=False, end=None, reward=1.0, it=0):
    """One transition as the IMPALA collect mode records it; obs[0] = v."""
    return dict(
        obs=np.array([v, 0, 0, 0], np.float32),
        next_obs=np.array([v + 1 if next_v is None else next_v, 0, 0, 0], np.float32),
        action=1,
        logit=np.array([0.0, math.log(3.0)], np.float32),
        reward=reward,
        done=done,
        traj_flag=done if end is None else end,
        collect_iter=it,
    )


def stream(n, end=True):
    """One env's ``n`` consecutive steps: each obs is the previous step's next_obs (the same array)."""
    steps = [step(0)]
    for i in range(1, n):
        steps.append(step(i))
        steps[-1]["obs"] = steps[-2]["next_obs"]
    steps[-1].update(done=end, traj_flag=end)
    return steps


def test_default_config_is_di_engines():
    cfg = IMPALAPolicy.default_config()
    assert cfg.type == "impala" and cfg.unroll_len == 32 and cfg.on_policy is False
    learn = cfg.learn
    assert (learn.update_per_collect, learn.batch_size, learn.learning_rate) == (4, 16, 0.0005)
    assert (learn.value_weight, learn.entropy_weight, learn.discount_factor, learn.lambda_) == (
        0.5,
        0.0001,
        0.99,
        0.95,
    )
    assert learn.rho_clip_ratio == learn.c_clip_ratio == learn.rho_pg_clip_ratio == 1.0
    assert learn.grad_clip_type is None and learn.clip_value == 0.5 and learn.optim == "adam"
    assert cfg.other.replay_buffer.replay_buffer_size == 1000 and cfg.other.replay_buffer.max_use == 16
    policy = create_policy(dict(type="impala", model=MODEL), enable_field=["collect"])
    assert isinstance(policy, IMPALAPolicy) and policy.collect_mode.get_attribute("unroll_len") == 32


def test_unrolls_do_not_depend_on_how_the_stream_was_cut():
    steps = stream(21)  # 2 full unrolls of 8, then 5 steps that end the episode
    whole = UnrollBuilder(8)(steps)
    builder = UnrollBuilder(8)
    pieces = [s for i in range(0, 21, 2) for s in builder(steps[i : i + 2])]
    assert len(whole) == len(pieces) == 3
    for a, b in zip(whole, pieces):
        assert set(a) == set(b) and all(np.array_equal(a[k], b[k]) for k in a)
    first, _, last = whole
    assert first["obs"][:, 0].tolist() == list(range(8)) and first["obs"].shape == (8, 4)
    assert first["logit"].shape == (8, 2) and first["action"].shape == (8,) and first["collect_iter"] == 0
    # DI-engine's 'last' rule: the 5 last steps follow the 3 steps before them, nothing is padding
    assert last["obs"][:, 0].tolist() == list(range(13, 21)) and not last["null"].any()
    assert last["done"].tolist() == [False] * 7 + [True] and last["traj_flag"][-1]


def test_an_episode_shorter_than_an_unroll_is_padded_with_null_steps():
    (unroll,) = UnrollBuilder(8)(stream(3))
    assert unroll["null"].tolist() == [False] * 3 + [True] * 5
    assert unroll["reward"].tolist() == [1.0] * 3 + [0.0] * 5
    assert unroll["traj_flag"][2:].all() and not unroll["traj_flag"][:2].any()


def test_copied_observations_continue_a_stream_and_other_streams_stay_apart():
    builder = UnrollBuilder(4)
    a, b = stream(6, end=False), stream(6, end=False)
    for s in b:
        s["obs"] = s["obs"] + 100
        s["next_obs"] = s["next_obs"] + 100
    assert builder(a[:3]) == [] and builder(b[:3]) == []
    copied = [dict(s, obs=s["obs"].copy()) for s in a[3:]]  # an env manager that copies
    (unroll,) = builder(copied)
    assert unroll["obs"][:, 0].tolist() == [0, 1, 2, 3]
    (unroll,) = builder(b[3:])
    assert unroll["obs"][:, 0].tolist() == [100, 101, 102, 103]


def test_collect_forward_and_transition_carry_the_behaviour_logit():
    policy = IMPALAPolicy(dict(model=MODEL, unroll_len=4), enable_field=["collect", "eval"])
    obs = {0: np.zeros(4, np.float32), 3: np.ones(4, np.float32)}
    out = policy.collect_mode.forward(obs)
    assert set(out) == {0, 3} and out[3]["logit"].shape == (2,) and out[3]["action"].dim() == 0
    timestep = BaseEnvTimestep(np.ones(4, np.float32), 1.0, True, {"truncated": True})
    t = policy.collect_mode.process_transition(obs[0], out[0], timestep)
    assert t["done"] is True and t["traj_flag"] is True  # DI-engine's: a time limit is terminal
    cfg = dict(model=MODEL, unroll_len=4, learn=dict(bootstrap_on_truncation=True))
    bootstrap = IMPALAPolicy(cfg, enable_field=["collect"])
    t = bootstrap.collect_mode.process_transition(obs[0], out[0], timestep)
    assert t["done"] is False and t["traj_flag"] is True  # the episode ends; its value bootstraps
    assert policy.eval_mode.forward(obs)[0]["action"].item() in (0, 1)


def learn_policy(**learn):
    cfg = dict(model=MODEL, unroll_len=3, learn=dict(discount_factor=0.5, lambda_=1.0, **learn))
    return IMPALAPolicy(cfg, model=StubActorCritic(), enable_field=["learn"])


def unroll(done_1=False, end_1=False, null_2=False):
    steps = [step(1, 2), step(2, 10, done=done_1, end=end_1), step(3, 4)]
    if null_2:
        steps[2].update(reward=0.0, done=True, traj_flag=True)
    sample = {k: np.stack([np.asarray(s[k]) for s in steps]) for k in steps[0] if k != "collect_iter"}
    sample["null"] = np.array([False, False, null_2])
    return sample


def test_learn_value_targets_worked_by_hand():
    """On-policy (rho = 1), gamma .5, lambda 1, V(obs) = obs[0]: V = [1, 2, 3], V(next_obs[2]) = 4."""
    # no episode end: deltas 1 + .5*2 - 1 = 1, 1 + .5*3 - 2 = .5, 1 + .5*4 - 3 = 0;
    # vs = [1 + 1 + .5*.5, 2 + .5, 3] = [2.25, 2.5, 3]: value loss ((1.25)^2 + .5^2 + 0) / 3
    out = learn_policy().learn_mode.forward([unroll()])
    assert set(out) == {"cur_lr", "total_loss", "policy_loss", "value_loss", "entropy_loss"}
    assert out["value_loss"] == pytest.approx((1.25**2 + 0.25) / 3)
    # a time limit at step 1 (V(next_obs[1]) = 10): delta_1 = 1 + .5*10 - 2 = 4, nothing traced across:
    # vs = [1 + 1 + .5*4, 6, 3] = [4, 6, 3]: value loss (9 + 16 + 0) / 3
    out = learn_policy().learn_mode.forward([unroll(end_1=True)])
    assert out["value_loss"] == pytest.approx(25 / 3)
    # a termination at step 1: delta_1 = 1 - 2 = -1; vs = [1 + 1 - .5, 1, 3]: (.25 + 1 + 0) / 3
    out = learn_policy().learn_mode.forward([unroll(done_1=True, end_1=True)])
    assert out["value_loss"] == pytest.approx(1.25 / 3)
    # padding after the time limit: its step leaves the losses
    out = learn_policy().learn_mode.forward([unroll(end_1=True, null_2=True)])
    assert out["value_loss"] == pytest.approx(25 / 3)


def test_learn_takes_samples_a_columnar_batch_and_di_engines_list_of_lists():
    torch.manual_seed(0)
    policy = IMPALAPolicy(dict(model=MODEL, unroll_len=8), enable_field=["learn", "collect"])
    samples = UnrollBuilder(8)(stream(16)) * 2
    model = policy.learn_mode.get_attribute("model")
    before = [p.detach().clone() for p in model.parameters()]
    out = policy.learn_mode.forward(samples)
    assert all(math.isfinite(v) for v in out.values())
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    columns = {k: np.stack([s[k] for s in samples]) for k in samples[0]}
    assert math.isfinite(policy.learn_mode.forward(columns)["total_loss"])
    as_lists = [[{k: s[k][t] for k in s if k != "collect_iter"} for t in range(8)] for s in samples]
    assert math.isfinite(policy.learn_mode.forward(as_lists)["total_loss"])


def test_continuous_actions():
    model = dict(obs_shape=3, action_shape=2, encoder_hidden_size_list=[16])
    policy = IMPALAPolicy(
        dict(model=model, unroll_len=4, action_space="continuous"), enable_field=["learn", "collect", "eval"]
    )
    policy.check_spaces((3,), "continuous", 2)
    obs = {0: np.zeros(3, np.float32)}
    out = policy.collect_mode.forward(obs)[0]
    assert set(out["logit"]) == {"mu", "sigma"} and out["action"].shape == (2,)
    steps = []
    for i in range(4):
        o = policy.collect_mode.forward({0: np.full(3, i, np.float32)})[0]
        timestep = BaseEnvTimestep(np.full(3, i + 1, np.float32), -1.0, i == 3, {})
        steps.append(policy.collect_mode.process_transition(np.full(3, i, np.float32), o, timestep))
    samples = policy.collect_mode.get_train_sample([{k: _numpy(v) for k, v in s.items()} for s in steps])
    assert samples[0]["logit"]["mu"].shape == (4, 2) and samples[0]["action"].shape == (4, 2)
    assert math.isfinite(policy.learn_mode.forward(samples * 3)["total_loss"])


def _numpy(value):
    if isinstance(value, dict):
        return {k: _numpy(v) for k, v in value.items()}
    return value.numpy() if isinstance(value, torch.Tensor) else value


@pytest.mark.parametrize("unroll_len", [0, -3, 2.5, True])
def test_unroll_len_below_one_is_refused(unroll_len):
    with pytest.raises(ConfigError, match="unroll_len"):
        IMPALAPolicy(dict(model=MODEL, unroll_len=unroll_len), enable_field=["collect"])


def test_continuous_actions_with_a_discrete_model_are_refused():
    model = dict(MODEL, action_space="discrete")
    with pytest.raises(ConfigError, match="discrete model cannot give continuous actions"):
        IMPALAPolicy(dict(model=model, action_space="continuous"), enable_field=["learn"])
    policy = IMPALAPolicy(dict(model=MODEL), enable_field=["collect"])
    with pytest.raises(EnvError, match="discrete action space"):
        policy.check_spaces((4,), "continuous", 2)


def test_a_batch_without_the_behaviour_logit_is_refused():
    policy = learn_policy()
    sample = unroll()
    del sample["logit"]
    with pytest.raises(ShapeError, match="behaviour policy's logits"):
        policy.learn_mode.forward([sample])
    single = {k: v[0] for k, v in unroll().items()}  # transitions, not unrolls
    with pytest.raises(ShapeError, match="unrolls"):
        policy.learn_mode.forward([single, single])
    gaussian = IMPALAPolicy(
        dict(model=dict(MODEL, action_space="continuous"), action_space="continuous", unroll_len=3),
        enable_field=["learn"],
    )
    with pytest.raises(ShapeError, match="action_space is continuous"):
        gaussian.learn_mode.forward([unroll()])


def test_unsupported_options_are_refused_by_name():
    for cfg, match in [
        (dict(priority=True), "priority"),
        (dict(learn=dict(grad_clip_type="clip_momentum_norm")), "grad_clip_type"),
        (dict(learn=dict(optim="sgd")), "optim"),
        (dict(action_space="hybrid"), "action_space"),
        (dict(learn=dict(surrogate_clip_ratio=0)), "surrogate_clip_ratio"),
        (dict(learn=dict(surrogate_clip_ratio="0.2")), "surrogate_clip_ratio"),
    ]:
        with pytest.raises(ConfigError, match=match):
            IMPALAPolicy(dict(model=MODEL, **cfg), enable_field=["learn"])


def test_uint8_frames_through_the_conv_vac():
    """Image observations (3-D obs_shape) get VAC's conv encoder; frames stay uint8 in the unrolls."""
    model = dict(obs_shape=[2, 36, 36], action_shape=3, encoder_hidden_size_list=[4, 8, 8, 32])
    policy = IMPALAPolicy(dict(model=model, unroll_len=2), enable_field=["learn", "collect"])
    frames = np.random.default_rng(0).integers(0, 255, (5, 2, 36, 36), dtype=np.uint8)
    steps = []
    for i in range(4):
        out = policy.collect_mode.forward({0: frames[i]})[0]
        timestep = BaseEnvTimestep(frames[i + 1], 1.0, i == 3, {})
        steps.append(policy.collect_mode.process_transition(frames[i], _numpy(out), timestep))
    samples = policy.collect_mode.get_train_sample(steps)
    assert (
        len(samples) == 2
        and samples[0]["obs"].dtype == np.uint8
        and samples[0]["obs"].shape == (2, 2, 36, 36)
    )
    assert math.isfinite(policy.learn_mode.forward(samples)["total_loss"])


def test_an_unroll_that_crosses_an_episode_boundary():
    """The asynchronous form streams fixed unrolls across episodes: V = [1, 5, 6], a time limit at
    step 0 with V(next_obs[0]) = 10, then a new episode; V(next_obs[2]) = 7, gamma .5, lambda 1."""
    # delta_0 = 1 + .5*10 - 1 = 5 (cut: vs_0 = 6); delta_1 = 1 + .5*6 - 5 = -1, delta_2 = 1 + .5*7 - 6 = -1.5
    # vs_2 = 4.5, vs_1 = 5 - 1 + .5*(-1.5) = 3.25: value loss (25 + 1.75^2 + 1.5^2) / 3
    steps = [step(1, 10, end=True), step(5), step(6)]
    sample = {k: np.stack([np.asarray(s[k]) for s in steps]) for k in steps[0] if k != "collect_iter"}
    out = learn_policy().learn_mode.forward([sample])
    assert out["value_loss"] == pytest.approx((25 + 1.75**2 + 1.5**2) / 3)


@pytest.mark.parametrize("optim,clipped", [("rmsprop", False), ("adam", True)])
def test_the_gradient_clip_belongs_to_adam_as_in_di_engine(optim, clipped):
    """DI-engine's IMPALA hands grad_clip_type to its Adam; its RMSprop is built without one."""
    samples = UnrollBuilder(8)(stream(16)) * 2
    weights = []
    for clip in (None, "clip_value"):
        torch.manual_seed(0)
        cfg = dict(model=MODEL, unroll_len=8, learn=dict(optim=optim, grad_clip_type=clip, clip_value=1e-12))
        policy = IMPALAPolicy(cfg, enable_field=["learn"])
        policy.learn_mode.forward(samples)
        weights.append([p.detach().clone() for p in policy.learn_mode.get_attribute("model").parameters()])
    same = all(torch.equal(a, b) for a, b in zip(*weights))
    assert same is not clipped
