"""Collect, train and evaluate stages on fresh contexts with real small components (Countdown-v0:
every episode lasts 5 steps and returns 5, whatever the actions)."""

import copy
from functools import partial

import numpy as np
import pytest
import torch
from easydict import EasyDict

import tests.fakes  # noqa: F401 - registers the fake envs
from ding_ray.config import compile_config
from ding_ray.data import create_buffer
from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.errors import ConfigError, DingRayError, StageError
from ding_ray.framework import OnlineRLContext, Task
from ding_ray.framework.middleware import (
    EpisodeCollector,
    OffPolicyLearner,
    StepCollector,
    TransitionList,
    collector,
    gae_estimator,
    inferencer,
    interaction_evaluator,
    interaction_evaluator_ttorch,
    multistep_trainer,
    random_collector,
    reward_estimator,
    rolloutor,
    trainer,
)
from ding_ray.policy import create_policy
from ding_ray.worker import (
    BaseLearner,
    EpisodeSerialCollector,
    InteractionSerialEvaluator,
    SampleSerialCollector,
)

MAIN = dict(
    env=dict(
        env_id="Countdown-v0", collector_env_num=2, evaluator_env_num=2, n_evaluator_episode=2, stop_value=5
    ),
    policy=dict(
        model=dict(obs_shape=2, action_shape=2, encoder_hidden_size_list=[16, 16]),
        learn=dict(update_per_collect=3, batch_size=4),
        collect=dict(n_sample=6),
        eval=dict(evaluator=dict(eval_freq=10)),
        other=dict(
            eps=dict(type="linear", start=1.0, end=0.1, decay=100), replay_buffer=dict(replay_buffer_size=100)
        ),
    ),
)
CREATE = dict(env=dict(type="gymnasium"), env_manager=dict(type="base"), policy=dict(type="dqn"))


def compiled(tmp_path, **policy_over):
    main = copy.deepcopy(MAIN)
    main["exp_name"] = str(tmp_path / "exp")
    main["policy"].update(policy_over)
    return compile_config(main, seed=0, auto=True, create_cfg=CREATE, save_cfg=False)


@pytest.fixture
def cfg(tmp_path):
    return compiled(tmp_path)


def env_manager(cfg, n=2):
    env_fn, env_cfgs, _ = get_vec_env_setting(cfg.env)
    return create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in env_cfgs[:n]])


def run(ctx, stage):
    """Run one stage once, as an iteration of a task would."""
    with Task(ctx) as task:
        task.use(stage)
        task.run(max_step=1)
    return task.ctx


# ----- collection -----------------------------------------------------------------------------
def test_transition_list_splits_by_env_and_episode():
    transitions = TransitionList(3)
    transitions.append(0, {"i": 0, "done": False})
    transitions.append(0, {"i": 1, "done": False}, episode_end=True)  # a time limit: not terminal
    transitions.append(0, {"i": 2, "done": False})
    transitions.append(2, {"i": 3, "done": True})
    data, ends = transitions.to_trajectories()
    assert [t["i"] for t in data] == [0, 1, 2, 3] and ends == [1, 2, 3]  # env 1 has nothing: no end
    assert [[t["i"] for t in e] for e in transitions.to_episodes()] == [[0, 1], [3]]
    transitions.drop_unfinished(0)
    assert transitions.to_trajectories() == ([data[0], data[1], data[3]], [1, 2]) and len(transitions) == 3
    transitions.clear()
    assert len(transitions) == 0 and transitions.to_episodes() == []


def test_inferencer_and_rolloutor_fill_the_transition_list(cfg):
    policy, env = create_policy(cfg.policy), env_manager(cfg)
    transitions = TransitionList(env.env_num)
    infer, rollout = inferencer(0, policy, env), rolloutor(policy.collect_mode, env, transitions)
    ctx = OnlineRLContext()
    ctx.collect_kwargs["eps"] = 0.5
    infer(ctx)
    assert set(ctx.obs) == {0, 1} and {int(a) for a in ctx.action.values()} <= {0, 1}
    assert isinstance(ctx.action[0], np.ndarray)  # as DI-engine's inferencer: to_ndarray of the action
    output = ctx.inference_output[0]  # the policy's own: tensors, as DI-engine's
    assert output["logit"].shape == (2,) and output["action"].item() in (0, 1)
    rollout(ctx)
    for _ in range(4):
        infer(ctx)
        rollout(ctx)
    assert ctx.env_step == 10 and ctx.env_episode == 2
    data, ends = transitions.to_trajectories()
    assert len(data) == 10 and ends == [4, 9]
    assert [t["env_data_id"] for t in data] == [0] * 5 + [1] * 5 and data[0]["collect_train_iter"] == 0
    episodes = transitions.to_episodes()
    assert [len(e) for e in episodes] == [5, 5] and all(e[-1]["done"] for e in episodes)
    infer(ctx)
    rollout(ctx)
    assert [t["env_data_id"] for t in transitions.to_episodes()[-1]] == [1] * 5  # finished ones only
    assert {t["env_data_id"] for t in transitions.to_trajectories()[0][-6:]} == {1, 3}  # new episode ids


def test_rolloutor_drops_the_episode_an_env_crashed_in(tmp_path):
    cfg = compiled(tmp_path)
    cfg.env.env_id = "CountdownCrash-v0"  # raises in its 3rd step, once
    policy, env = create_policy(cfg.policy), env_manager(cfg, n=1)
    transitions = TransitionList(1)
    infer, rollout = inferencer(0, policy, env), rolloutor(policy, env, transitions)
    ctx = OnlineRLContext()
    for _ in range(8):
        infer(ctx)
        rollout(ctx)
    # steps 1-2 counted then dropped with the crash; the next episode runs 5 steps (and 0 of a third)
    assert ctx.env_step == 7 and ctx.env_episode == 1 and env.error_count == 1
    assert [t["env_data_id"] for t in transitions.to_trajectories()[0]] == [1] * 5


def test_step_and_episode_collectors(cfg):
    policy, env = create_policy(cfg.policy), env_manager(cfg)
    ctx = OnlineRLContext()
    StepCollector(cfg, policy.collect_mode, env, random_collect_size=4)(ctx)  # random steps first
    assert ctx.env_step == 4 and len(ctx.trajectories) == 4 and ctx.trajectory_end_idx == [1, 3]
    StepCollector(cfg, policy.collect_mode, env)(ctx)
    assert ctx.env_step == 10 and len(ctx.trajectories) == 6
    episode_cfg = copy.deepcopy(cfg)
    episode_cfg.policy.collect.n_episode = 3
    ctx = OnlineRLContext()
    EpisodeCollector(episode_cfg, policy.collect_mode, env_manager(cfg))(ctx)
    assert ctx.env_episode == 4 and ctx.env_step == 20 and [len(e) for e in ctx.episodes] == [5] * 4


def test_collector_stage_with_one_or_several_collectors(cfg):
    policy = create_policy(cfg.policy)
    sample = [SampleSerialCollector(cfg.policy.collect.collector, env_manager(cfg), policy.collect_mode)]
    sample.append(SampleSerialCollector(cfg.policy.collect.collector, env_manager(cfg), policy.collect_mode))
    ctx = run(OnlineRLContext(collect_kwargs={"eps": 1.0}), collector(cfg, sample[0]))
    assert len(ctx.trajectories) == 6 and ctx.env_step == sample[0].envstep == 6 and ctx.episodes is None
    ctx = run(OnlineRLContext(), collector(cfg, sample))
    # the stage adds up the env steps each collector counted
    assert len(ctx.trajectories) == 12 and ctx.env_step == sample[0].envstep - 6 + sample[1].envstep
    assert ctx.env_episode == sample[0].envepisode + sample[1].envepisode > 0  # Countdown: 5 steps each
    episode = EpisodeSerialCollector(dict(type="episode", n_episode=2), env_manager(cfg), policy.collect_mode)
    ctx = run(OnlineRLContext(env_episode=1), collector(cfg, episode))
    assert [len(e) for e in ctx.episodes] == [5, 5] and ctx.env_episode == 3 and ctx.env_step == 10
    with pytest.raises(ConfigError, match="StepCollector"):
        collector(cfg, policy.collect_mode)
    with pytest.raises(ConfigError, match="at least one"):
        collector(cfg, [])


def test_random_collector_warms_the_buffer_up_once_on_a_fresh_run(tmp_path):
    cfg = compiled(tmp_path, random_collect_size=10)
    policy = create_policy(cfg.policy)
    sample = SampleSerialCollector(cfg.policy.collect.collector, env_manager(cfg), policy.collect_mode)
    buffer_ = create_buffer(cfg.policy.other.replay_buffer)
    with Task(OnlineRLContext()) as task:
        task.use(random_collector(cfg, sample, buffer_))
        task.run(max_step=2)  # the second iteration collects nothing
    assert buffer_.count() == 10 and task.ctx.env_step == sample.envstep >= 10
    resumed = run(OnlineRLContext(env_step=50), random_collector(cfg, sample, buffer_))
    assert buffer_.count() == 10 and resumed.env_step == 50  # a resumed run's buffer is filled already
    episode = EpisodeSerialCollector(dict(type="episode", n_episode=2), env_manager(cfg), policy.collect_mode)
    with pytest.raises(ConfigError, match=r"random_collect_size=10 needs a collector with warm_up"):
        random_collector(cfg, episode, buffer_)
    random_collector(compiled(tmp_path), episode, buffer_)  # no warm-up: any collector


# ----- training -------------------------------------------------------------------------------
def filled_buffer(cfg, policy, n=12):
    buffer_ = create_buffer(cfg.policy.other.replay_buffer)
    sample = SampleSerialCollector(cfg.policy.collect.collector, env_manager(cfg), policy.collect_mode)
    buffer_.push(sample.collect(n_sample=n, policy_kwargs={"eps": 1.0}), 0)
    return buffer_


def test_trainer_takes_a_learn_mode_or_a_base_learner(cfg):
    policy = create_policy(cfg.policy)
    buffer_ = filled_buffer(cfg, policy)
    ctx = run(OnlineRLContext(), trainer(cfg, policy.learn_mode))
    assert ctx.train_iter == 0 and ctx.train_output is None  # no data: nothing trained
    ctx = run(OnlineRLContext(train_data=buffer_.sample(4, 0), env_step=7), trainer(cfg, policy.learn_mode))
    assert ctx.train_iter == 1 and np.isfinite(ctx.train_output["total_loss"])
    learner = BaseLearner(cfg.policy.learn.learner, policy.learn_mode, exp_name=cfg.exp_name)
    ctx = run(
        OnlineRLContext(train_data=buffer_.sample(4, 0), env_step=7, train_iter=5), trainer(cfg, learner)
    )
    assert ctx.train_iter == 6 and learner.train_iter == 1 and learner.collector_envstep == 7
    assert "total_loss" in ctx.train_output and "priority_info" not in ctx.train_output
    with pytest.raises(ConfigError, match="learn_mode, a BaseLearner or a learner actor"):
        trainer(cfg, object())


def test_off_policy_learner_trains_update_per_collect_batches_and_updates_priorities(tmp_path):
    cfg = compiled(tmp_path, priority=True)
    policy = create_policy(cfg.policy)
    empty = create_buffer(cfg.policy.other.replay_buffer)
    learner = BaseLearner(cfg.policy.learn.learner, policy.learn_mode, exp_name=cfg.exp_name)
    ctx = run(OnlineRLContext(), OffPolicyLearner(cfg, learner, empty))
    assert ctx.train_iter == 0 and ctx.train_output == [] and ctx.train_data is None
    buffer_ = filled_buffer(cfg, policy)
    ctx = run(OnlineRLContext(), OffPolicyLearner(cfg, learner, buffer_))
    assert ctx.train_iter == 3 and learner.train_iter == 3 and len(ctx.train_output) == 3
    assert len(ctx.train_output[-1]["priority_info"]["priority"]) == 4
    ctx = run(OnlineRLContext(), OffPolicyLearner(cfg, policy, buffer_))  # a Policy: its learn mode
    assert ctx.train_iter == 3 and "priority" in ctx.train_output[0]


class TwoStepPolicy:
    """A learn mode of the user's own that takes two gradient steps per call."""

    def forward(self, data):
        return [{"total_loss": 1.0}, {"total_loss": 0.5}] if data != "one" else {"total_loss": 1.0}


def test_multistep_trainer_counts_every_step():
    stage = multistep_trainer(TwoStepPolicy(), log_freq=1)
    ctx = run(OnlineRLContext(train_data=[1]), stage)
    assert ctx.train_iter == 2 and [o["total_loss"] for o in ctx.train_output] == [1.0, 0.5]
    assert run(OnlineRLContext(), stage).train_iter == 0
    with pytest.raises(StageError, match="multistep_trainer.*returns a list") as info:
        run(OnlineRLContext(train_data="one"), stage)
    assert isinstance(info.value.__cause__, DingRayError)


class ConstantReward:
    """A reward model of the test's own: every reward becomes 1 (in place, as DI-engine's do)."""

    def estimate(self, data):
        for item in data:
            item["reward"] = 1.0


class ScaledReward:
    def estimate(self, data):
        return [{**item, "reward": 2 * item["reward"]} for item in data]


def test_reward_estimator_rewrites_train_data(cfg):
    ctx = run(
        OnlineRLContext(train_data=[{"reward": 0.0}, {"reward": 3.0}]),
        reward_estimator(cfg, ConstantReward()),
    )
    assert [d["reward"] for d in ctx.train_data] == [1.0, 1.0]
    ctx = run(OnlineRLContext(train_data=[{"reward": 3.0}]), reward_estimator(cfg, ScaledReward()))
    assert ctx.train_data == [{"reward": 6.0}]
    assert run(OnlineRLContext(), reward_estimator(cfg, ConstantReward())).train_data is None
    with pytest.raises(ConfigError, match="estimate"):
        reward_estimator(cfg, object())


class HalfFirstObs(torch.nn.Module):
    """Critic whose value is half the first observation entry."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(2, 1, bias=False)
        self.linear.weight.data = torch.tensor([[0.5, 0.0]])

    def forward(self, x, mode):
        assert mode == "compute_critic"
        return {"value": self.linear(x).squeeze(-1)}


class CriticPolicy:
    """What gae_estimator asks of a collect mode: its model, through get_attribute."""

    def __init__(self):
        self.model = HalfFirstObs()

    def get_attribute(self, name):
        return getattr(self, name)


def gae_trajectories():
    # env 0: obs 3, 2, 1 then terminal; env 1: one step of an episode still running (a cut)
    steps = [(3, 2, False), (2, 1, False), (1, 0, True), (4, 3, False)]
    return [
        {
            "obs": np.array([o, 0.0], np.float32),
            "next_obs": np.array([n, 0.0], np.float32),
            "reward": 1.0,
            "done": d,
        }
        for o, n, d in steps
    ]


def test_gae_estimator_matches_hand_worked_advantages(tmp_path):
    cfg = EasyDict(policy=dict(collect=dict(discount_factor=0.9, gae_lambda=0.5)))
    # values 1.5, 1, .5 (next 1, .5, -) ; deltas .4, .45, .5 ; A2 = .5, A1 = .45 + .45 * .5 = .675,
    # A0 = .4 + .45 * .675 = .70375 ; env 1: value 2, next 1.5: A = 1 + .9 * 1.5 - 2 = .35 (cut, no sum)
    ctx = OnlineRLContext(trajectories=gae_trajectories(), trajectory_end_idx=[2, 3])
    ctx = run(ctx, gae_estimator(cfg, CriticPolicy()))
    data = ctx.train_data
    assert [d["adv"] for d in data] == pytest.approx([0.70375, 0.675, 0.5, 0.35])
    assert [d["value"] for d in data] == pytest.approx([1.5, 1.0, 0.5, 2.0])
    assert [d["return"] for d in data] == pytest.approx([2.20375, 1.675, 1.0, 2.35])
    assert [d["traj_flag"] for d in data] == [False, False, True, True] and ctx.trajectories is None
    buffer_ = create_buffer(dict(type="naive", replay_buffer_size=10))
    ctx = OnlineRLContext(trajectories=gae_trajectories(), trajectory_end_idx=[2, 3])
    ctx = run(ctx, gae_estimator(cfg, CriticPolicy(), buffer_))
    assert ctx.train_data is None and buffer_.count() == 4
    with pytest.raises(ConfigError, match="gae_lambda"):
        gae_estimator(EasyDict(policy=dict(collect=dict(discount_factor=0.9))), CriticPolicy())


def test_gae_estimator_after_a_step_collector(cfg):
    policy = create_policy(cfg.policy)
    ctx = OnlineRLContext()
    StepCollector(cfg, policy.collect_mode, env_manager(cfg))(ctx)  # 3 steps of each env's episode
    assert ctx.trajectory_end_idx == [2, 5]
    # Countdown: steps left 5, 4, 3 -> value 2.5, 2, 1.5; each delta = 1 + .5 * (left - 1) - .5 * left = .5
    gae_cfg = EasyDict(policy=dict(collect=dict(discount_factor=1.0, gae_lambda=1.0)))
    data = run(ctx, gae_estimator(gae_cfg, CriticPolicy())).train_data
    assert [d["adv"] for d in data] == pytest.approx([1.5, 1.0, 0.5] * 2)
    assert [d["traj_flag"] for d in data] == [False, False, True] * 2


# ----- evaluation -----------------------------------------------------------------------------
def evaluate_until_stop(stage):
    """Iterations of 4 training steps each after the evaluator; the train_iter of each evaluation."""
    evaluated = []

    def _train4(ctx):
        if ctx.eval_value > -np.inf:
            evaluated.append((ctx.train_iter, ctx.eval_value, ctx.last_eval_iter))
        ctx.train_iter += 4

    with Task(OnlineRLContext()) as task:
        task.use(stage)
        task.use(_train4)
        task.run(max_step=10)
    return task, evaluated


def test_interaction_evaluator_runs_when_due_and_stops_at_the_stop_value(cfg):
    policy = create_policy(cfg.policy)
    task, evaluated = evaluate_until_stop(interaction_evaluator(cfg, policy.eval_mode, env_manager(cfg)))
    # due at iteration 0, then at 12 (>= eval_freq 10 later): return 5 reaches stop_value 5 -> finish
    assert evaluated == [(0, 5.0, 0)] and task.finish and task.ctx.total_step == 3
    ctx = task.ctx
    assert ctx.train_iter == 12 and ctx.last_eval_iter == 12 and ctx.eval_value == ctx.last_eval_value == 5.0
    assert ctx.eval_output["episode_return"] == 5.0 and ctx.eval_output["episode_info"]["episode_count"] == 2


def test_interaction_evaluator_takes_an_evaluator_and_policy_kwargs(cfg):
    policy = create_policy(cfg.policy)
    evaluator = InteractionSerialEvaluator(cfg.policy.eval.evaluator, env_manager(cfg), policy.eval_mode)
    task, evaluated = evaluate_until_stop(interaction_evaluator(cfg, evaluator))
    assert evaluated == [(0, 5.0, 0)] and task.ctx.last_eval_iter == 12 and task.finish
    stage = interaction_evaluator(cfg, policy.collect_mode, env_manager(cfg), eps=0.0)
    ctx = run(OnlineRLContext(), stage)
    assert ctx.info_for_logging["eps(0.0)/eval_episode_return"] == 5.0
    assert ctx.info_for_logging["eps(0.0)/eval_episode_return_std"] == 0.0
    with pytest.raises(ConfigError, match="takes no env"):
        interaction_evaluator(cfg, evaluator, env_manager(cfg))
    with pytest.raises(ConfigError, match="env manager"):
        interaction_evaluator(cfg, policy.eval_mode)


def test_interaction_evaluator_ttorch_takes_its_settings_as_arguments(cfg):
    policy = create_policy(cfg.policy)
    stage = interaction_evaluator_ttorch(0, policy, env_manager(cfg), stop_value=5, eval_freq=8)
    task, evaluated = evaluate_until_stop(stage)
    assert evaluated == [(0, 5.0, 0)] and task.finish and task.ctx.last_eval_iter == 8
    assert task.ctx.eval_output["episode_info"]["episode_count"] == 2  # one episode per env
    task, evaluated = evaluate_until_stop(
        interaction_evaluator_ttorch(0, policy, env_manager(cfg), eval_freq=8)
    )
    # no stop value: all 10 iterations run
    assert task.ctx.total_step == 9 and [e[0] for e in evaluated] == [0, 8, 16, 24, 32]
