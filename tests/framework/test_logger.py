"""online_logger / offline_logger: TensorBoard events read back with TensorBoard's own reader."""

from functools import partial

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboardX import SummaryWriter

import tests.fakes  # noqa: F401 - registers the fake envs
from ding_ray.config import compile_config
from ding_ray.data import create_buffer
from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.errors import ConfigError, ShapeError, StageError
from ding_ray.framework import OfflineRLContext, OnlineRLContext, Task
from ding_ray.framework.middleware import (
    OffPolicyLearner,
    StepCollector,
    data_pusher,
    interaction_evaluator,
    offline_logger,
    online_logger,
)
from ding_ray.framework.middleware.logger import UnsupportedLogKeyError
from ding_ray.policy import DQNPolicy, create_policy
from ding_ray.worker import BaseLearner, InteractionSerialEvaluator, SampleSerialCollector, metrics

MODEL = dict(obs_shape=2, action_shape=2, encoder_hidden_size_list=[16], dueling=False)


def env_manager(n=2, seed=0):
    env_fn, cfgs, _ = get_vec_env_setting(
        dict(env_id="Countdown-v0", collector_env_num=n, evaluator_env_num=n)
    )
    manager = create_env_manager(dict(type="base"), [partial(env_fn, cfg=c) for c in cfgs])
    manager.seed(seed)
    return manager


def scalars(logdir):
    """{tag: [(step, value), ...]} of every scalar under ``logdir``."""
    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}, acc


def dqn_stages(policy, eval_every=2):
    """Real collect / train / evaluate steps on Countdown (returns are exactly 5) writing the ctx."""
    collector = SampleSerialCollector(dict(n_sample=8), env_manager(), policy.collect_mode)
    evaluator = InteractionSerialEvaluator(dict(eval_freq=1, n_episode=2), env_manager(), policy.eval_mode)

    def _collect_and_train(ctx):
        data = collector.collect(train_iter=ctx.train_iter, policy_kwargs={"eps": 0.5})
        ctx.env_step = collector.envstep
        ctx.train_output = [policy.learn_mode.forward(data[:4]), policy.learn_mode.forward(data[4:])]
        ctx.train_iter += 2

    def _evaluate(ctx):
        if ctx.total_step % eval_every == 0:
            _, info = evaluator.eval(train_iter=ctx.train_iter, envstep=ctx.env_step)
            ctx.eval_value = info["eval_episode_return_mean"]
            # as ding_ray's interaction_evaluator stage writes it: the mean, and the evaluator's info
            ctx.eval_output = {"episode_return": ctx.eval_value, "episode_info": info}

    return _collect_and_train, _evaluate


def test_online_logger_writes_eval_train_and_extra_scalars(tmp_path):
    policy = DQNPolicy(dict(model=MODEL))
    seen = []  # what the learner returned, to compare with what was written

    collect_and_train, evaluate = dqn_stages(policy)

    def _remember(ctx):
        seen.append((ctx.env_step, ctx.train_iter, ctx.train_output))
        ctx.info_for_logging["custom/answer"] = np.float32(42.0)

    with Task(OnlineRLContext()) as task:
        for stage in (collect_and_train, evaluate, _remember):
            task.use(stage)
        task.use(online_logger(train_show_freq=4, exp_name=str(tmp_path / "exp")))
        task.run(max_step=5)

    got, _ = scalars(tmp_path / "exp" / "log" / "task")
    env_steps = [s for s, _, _ in seen]
    # evaluation on iterations 0, 2, 4: Countdown's return is 5 whatever the policy does
    assert got[metrics.EVAL_RETURN_MEAN] == [(env_steps[i], 5.0) for i in (0, 2, 4)]
    assert got[metrics.EVAL_RETURN_STD] == [(env_steps[i], 0.0) for i in (0, 2, 4)]
    assert {metrics.EVAL_RETURN_MAX, metrics.EVAL_RETURN_MIN} <= set(got)
    # train_iter after each iteration: 2, 4, 6, 8, 10; shown once 4 iterations passed since the last
    # show (none yet: -1, as in DI-engine) -> at 4 and 8
    shown = [seen[i] for i in (1, 3)]
    loss = got[metrics.learner_key("total_loss")]
    assert [s for s, _ in loss] == [env_step for env_step, _, _ in shown]
    for (_, value), (_, _, outputs) in zip(loss, shown):  # two learner steps per iteration, averaged
        assert value == pytest.approx(np.mean([o["total_loss"] for o in outputs]), rel=1e-6)
    assert got[metrics.learner_key("cur_lr")][0][1] == pytest.approx(outputs[0]["cur_lr"])
    assert got["custom/answer"] == [(s, 42.0) for s in env_steps]
    assert not any(tag.endswith("-train_iter") for tag in got)


def test_online_logger_after_ding_rays_own_stages(tmp_path):
    """DI-engine's DQN pipeline with ding_ray's stages (a BaseLearner on a prioritized buffer)."""
    main = dict(
        exp_name=str(tmp_path / "exp"),
        env=dict(env_id="Countdown-v0", collector_env_num=2, evaluator_env_num=2, n_evaluator_episode=2),
        policy=dict(
            model=MODEL,
            priority=True,
            learn=dict(update_per_collect=3, batch_size=4),
            collect=dict(n_sample=6),
            eval=dict(evaluator=dict(eval_freq=6)),
            other=dict(replay_buffer=dict(replay_buffer_size=100)),
        ),
    )
    create = dict(env=dict(type="gymnasium"), env_manager=dict(type="base"), policy=dict(type="dqn"))
    cfg = compile_config(main, seed=0, auto=True, create_cfg=create, save_cfg=False)
    policy = create_policy(cfg.policy)
    buffer_ = create_buffer(cfg.policy.other.replay_buffer, exp_name=cfg.exp_name)
    learner = BaseLearner(cfg.policy.learn.learner, policy.learn_mode, exp_name=cfg.exp_name)
    with Task(OnlineRLContext()) as task:
        task.use(interaction_evaluator(cfg, policy.eval_mode, env_manager()))
        task.use(StepCollector(cfg, policy.collect_mode, env_manager()))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, learner, buffer_))
        task.use(online_logger(record_train_iter=True, train_show_freq=6, exp_name=cfg.exp_name))
        task.run(max_step=4)

    got, _ = scalars(tmp_path / "exp" / "log" / "task")
    # evaluations before training at train_iter 0 and 6; the logger, last in the iteration as in
    # DI-engine, draws them at that iteration's counters (env_step 6, 18; train_iter 3, 9)
    assert got[metrics.EVAL_RETURN_MEAN] == [(6, 5.0), (18, 5.0)]
    assert got[metrics.EVAL_RETURN_MEAN + "-train_iter"] == [(3, 5.0), (9, 5.0)]
    assert got[metrics.EVAL_RETURN_MIN] == [(6, 5.0), (18, 5.0)]
    # 3 learner steps an iteration: train_iter 3, 6, 9, 12 -> shown at 6 and 12
    assert [s for s, _ in got[metrics.learner_key("total_loss") + "-train_iter"]] == [6, 12]
    assert [s for s, _ in got[metrics.learner_key("total_loss")]] == [12, 24]
    assert not any("priority" in tag for tag in got)


def test_online_logger_record_train_iter_histogram_and_given_writer(tmp_path):
    writer = SummaryWriter(str(tmp_path / "tb"))

    def _fake_learner(ctx):  # the learner's output as a policy reports it, scalars and a histogram
        ctx.env_step = 10 * (ctx.total_step + 1)
        ctx.train_iter = ctx.total_step + 1
        ctx.train_output = {
            "total_loss": 0.5 * ctx.train_iter,
            "[histogram]q": np.arange(6.0),
            "priority": [1, 2],
        }
        ctx.eval_value = 3.0
        ctx.eval_output = {"episode_return": [1.0, 5.0]}  # DI-engine's key

    with Task(OnlineRLContext()) as task:
        task.use(_fake_learner)
        task.use(online_logger(record_train_iter=True, train_show_freq=0, tb_logger=writer))
        task.run(max_step=3)
    # the caller's writer is flushed, not closed: it still works
    writer.add_scalar("after", 1.0, 0)
    writer.close()

    got, acc = scalars(tmp_path / "tb")
    loss = metrics.learner_key("total_loss")
    assert got[loss] == [(10, 0.5), (20, 1.0), (30, 1.5)]
    assert got[loss + "-train_iter"] == [(1, 0.5), (2, 1.0), (3, 1.5)]
    assert got[metrics.EVAL_RETURN_MEAN + "-train_iter"] == [(1, 3.0), (2, 3.0), (3, 3.0)]
    assert got[metrics.EVAL_RETURN_MAX] == [(10, 5.0), (20, 5.0), (30, 5.0)]
    assert got[metrics.EVAL_RETURN_STD][0] == (10, 2.0)
    assert not any("priority" in tag for tag in got)
    histograms = acc.Histograms(metrics.learner_key("q"))
    assert [h.step for h in histograms] == [10, 20, 30] and histograms[0].histogram_value.num == 6
    assert [h.step for h in acc.Histograms(metrics.learner_key("q") + "-train_iter")] == [1, 2, 3]
    assert got["after"] == [(0, 1.0)]


def test_offline_logger_draws_against_train_iter(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no writer given: <cwd>/default_experiment/log/task
    policy = DQNPolicy(dict(model=MODEL))
    collector = SampleSerialCollector(dict(n_sample=16), env_manager(), policy.collect_mode)
    dataset = collector.collect(policy_kwargs={"eps": 1.0})
    outputs = []

    def _train(ctx):
        ctx.train_output = policy.learn_mode.forward(dataset)
        ctx.train_iter += 1
        outputs.append(ctx.train_output)
        if ctx.train_iter == 3:
            ctx.eval_value = 4.5

    with Task(OfflineRLContext()) as task:
        task.use(_train)
        task.use(offline_logger(train_show_freq=2))
        task.run(max_step=5)

    got, _ = scalars(tmp_path / "default_experiment" / "log" / "task")
    assert got[metrics.EVAL_RETURN_MEAN] == [(3, 4.5)]
    loss = got[metrics.learner_key("total_loss")]
    assert [s for s, _ in loss] == [1, 3, 5]
    assert [v for _, v in loss] == pytest.approx([outputs[i]["total_loss"] for i in (0, 2, 4)], rel=1e-6)


@pytest.mark.parametrize(
    "output, error, words",
    [
        ({"[scalars]losses": {"a": 1.0}}, UnsupportedLogKeyError, "not supported"),
        ({"td": np.ones(4)}, ShapeError, "[histogram]td"),
        ([{"td": np.ones(4)}, {"td": np.ones(3)}], ShapeError, "[histogram]td"),  # one output per step
        ([{"loss": "high"}], ShapeError, "must be a number"),
        ("loss", ShapeError, "a dict or a list of dicts"),
    ],
)
def test_train_outputs_the_logger_refuses(tmp_path, output, error, words):
    def _learner(ctx):
        ctx.train_output = output

    with pytest.raises(StageError, match="online_logger") as info:
        with Task(OnlineRLContext()) as task:
            task.use(_learner)
            task.use(online_logger(train_show_freq=0, exp_name=str(tmp_path)))
            task.run(max_step=1)
    assert isinstance(info.value.__cause__, error) and words in str(info.value.__cause__)


def test_bad_arguments():
    with pytest.raises(ConfigError, match="train_show_freq"):
        online_logger(train_show_freq=-1)
    with pytest.raises(ConfigError, match="not both"):
        offline_logger(exp_name="x", tb_logger=object())
