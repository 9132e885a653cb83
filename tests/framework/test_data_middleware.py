"""Buffer stages: data_pusher, offpolicy_data_fetcher (with priority updates), sqil_data_pusher,
priority_calculator and buffer_saver, on real collectors, buffers and a DQN policy."""

import logging
import os
from functools import partial

import numpy as np
import pytest
from easydict import EasyDict

import tests.fakes  # noqa: F401 - registers the fake envs
from ding_ray.data import (
    AdvancedReplayBuffer,
    EpisodeReplayBuffer,
    NaiveReplayBuffer,
    SequenceReplayBuffer,
)
from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.errors import ConfigError, StageError
from ding_ray.framework import OnlineRLContext, Task
from ding_ray.framework.middleware import (
    buffer_saver,
    data_pusher,
    offpolicy_data_fetcher,
    priority_calculator,
    sqil_data_pusher,
)
from ding_ray.policy import DQNPolicy
from ding_ray.worker import BaseLearner, EpisodeSerialCollector, SampleSerialCollector

MODEL = dict(obs_shape=2, action_shape=2, encoder_hidden_size_list=[16], dueling=False)


def cfg(batch_size=8, unroll_len=1, exp_name="exp"):
    return EasyDict(
        exp_name=exp_name, policy=dict(learn=dict(batch_size=batch_size), collect=dict(unroll_len=unroll_len))
    )


def env_manager(n=2, seed=0):
    env_fn, cfgs, _ = get_vec_env_setting(
        dict(env_id="Countdown-v0", collector_env_num=n, evaluator_env_num=1)
    )
    manager = create_env_manager(dict(type="base"), [partial(env_fn, cfg=c) for c in cfgs])
    manager.seed(seed)
    return manager


def transitions(n=20, **policy_cfg):
    collector = SampleSerialCollector(
        dict(n_sample=n), env_manager(), DQNPolicy(dict(model=MODEL, **policy_cfg)).collect_mode
    )
    return collector.collect(policy_kwargs={"eps": 0.5})


def run_stage(stage, ctx=None):
    """Run one stage for one iteration and return the context it saw."""
    with Task(ctx or OnlineRLContext()) as task:
        task.use(stage)
        task.run(max_step=1)
        return task.ctx


# ------------------------------------------------------------------------------ data_pusher
def test_data_pusher_pushes_trajectories_and_clears_them():
    buffer = NaiveReplayBuffer(dict(replay_buffer_size=100))
    ctx = OnlineRLContext(env_step=20, trajectories=transitions(20))
    run_stage(data_pusher(cfg(), buffer), ctx)
    assert buffer.count() == 20 and ctx.trajectories is None


def test_data_pusher_pushes_each_episode_as_one_item():
    buffer = EpisodeReplayBuffer(dict(replay_buffer_size=10))
    collector = EpisodeSerialCollector(
        dict(n_episode=3), env_manager(), DQNPolicy(dict(model=MODEL)).collect_mode
    )
    ctx = OnlineRLContext(episodes=collector.collect())
    run_stage(data_pusher(cfg(), buffer), ctx)
    assert buffer.count() == 3 and ctx.episodes is None
    assert [len(ep) for ep in buffer.sample(3)] == [5, 5, 5]  # Countdown episodes are 5 steps


def test_data_pusher_without_data_names_the_missing_collector():
    with pytest.raises(StageError, match="data_pusher.*collector stage"):
        run_stage(data_pusher(cfg(), NaiveReplayBuffer()))


def test_group_by_env_keeps_each_envs_steps_together():
    data = transitions(20)
    for i, t in enumerate(data):  # as a collector stage tags them: two envs, interleaved
        t["env_data_id"] = i % 2
        t["step"] = i
    buffer = SequenceReplayBuffer(
        dict(replay_buffer_size=100, episode_id_key="env_data_id", episode_end_keys=[])
    )
    run_stage(data_pusher(cfg(), buffer, group_by_env=True), OnlineRLContext(trajectories=data))
    # The only run of 20 is all the buffer holds, oldest first.
    stored = buffer.sample(1, 20, replace=True, cross_episode=True)[0]
    assert buffer.count() == 20
    assert [t["env_data_id"] for t in stored] == [0] * 10 + [1] * 10
    assert [t["step"] for t in stored] == list(range(0, 20, 2)) + list(range(1, 20, 2))
    # A run of 4 never mixes the two envs.
    for run in buffer.sample(50, 4, replace=True):
        assert len({t["env_data_id"] for t in run}) == 1
    with pytest.raises(StageError, match="env_data_id"):
        run_stage(data_pusher(cfg(), buffer, group_by_env=True), OnlineRLContext(trajectories=transitions(4)))


# ------------------------------------------------------------------------------ fetcher
def test_fetcher_writes_none_on_shortage_then_a_batch(caplog):
    buffer = NaiveReplayBuffer(dict(replay_buffer_size=100))
    fetch = offpolicy_data_fetcher(cfg(batch_size=8), buffer, data_shortage_warning=True)
    with caplog.at_level(logging.WARNING):
        ctx = run_stage(fetch)
    assert ctx.train_data is None and "cannot serve a batch of 8" in caplog.text
    buffer.push(transitions(20), 20)
    ctx = run_stage(fetch)
    assert len(ctx.train_data) == 8 and set(ctx.train_data[0]) >= {"obs", "action", "reward"}


def test_fetcher_hands_the_policys_priorities_to_a_prioritized_buffer():
    policy = DQNPolicy(dict(model=MODEL, priority=True, priority_IS_weight=True))
    buffer = AdvancedReplayBuffer(dict(replay_buffer_size=100))
    buffer.push(transitions(20), 20)
    assert np.all(buffer.state_dict()["priority"] == 1.0)

    def train(ctx):  # DI-engine's trainer: the policy's output, 'priority' included, is train_output
        ctx.train_output = policy.learn_mode.forward(ctx.train_data)

    with Task(OnlineRLContext()) as task:
        task.use(offpolicy_data_fetcher(cfg(batch_size=8), buffer)).use(train)
        task.run(max_step=1)
        ctx = task.ctx
    rows = [d["replay_buffer_idx"] for d in ctx.train_data]
    stored = buffer.state_dict()["priority"]
    expected = np.maximum(ctx.train_output["priority"], 1e-6)
    assert np.allclose(stored[rows], expected) and not np.allclose(expected, 1.0)


def test_fetcher_takes_the_learners_priority_info():
    policy = DQNPolicy(dict(model=MODEL, priority=True))
    learner = BaseLearner(dict(hook=dict(save_ckpt_after_run=False)), policy.learn_mode)
    buffer = AdvancedReplayBuffer(dict(replay_buffer_size=100))
    buffer.push(transitions(20), 20)

    def train(ctx):  # ding_ray's learner keeps priorities apart from its log vars
        (output,) = learner.train(ctx.train_data)  # one log dict per gradient step, as DI-engine's
        ctx.train_output = {**output, "priority_info": learner.priority_info}
        ctx.train_iter = learner.train_iter

    with Task(OnlineRLContext()) as task:
        task.use(offpolicy_data_fetcher(cfg(batch_size=8), buffer)).use(train)
        task.run(max_step=2)
        ctx = task.ctx
    assert "priority" not in ctx.train_output and ctx.train_iter == 2
    info = learner.priority_info
    stored = buffer.state_dict()["priority"]
    assert np.allclose(stored[np.asarray(info["replay_buffer_idx"])], np.maximum(info["priority"], 1e-6))


def test_fetcher_leaves_a_uniform_buffer_alone_when_priorities_come_back():
    buffer = NaiveReplayBuffer(dict(replay_buffer_size=100))
    buffer.push(transitions(20), 20)

    def train(ctx):
        ctx.train_output = [{"priority": np.ones(8)}]  # a list of outputs: the last one counts

    with Task(OnlineRLContext()) as task:
        task.use(offpolicy_data_fetcher(cfg(batch_size=8), buffer)).use(train)
        task.run(max_step=1)  # no ids in the batch: nothing to update, no error
    assert buffer.count() == 20


def test_fetcher_from_a_list_of_buffers_with_ratios_and_from_a_dict():
    expert, agent = (
        NaiveReplayBuffer(dict(replay_buffer_size=100)),
        NaiveReplayBuffer(dict(replay_buffer_size=100)),
    )
    expert.push([{**t, "source": 1} for t in transitions(20)], 0)
    agent.push([{**t, "source": 0} for t in transitions(20)], 0)
    ctx = run_stage(offpolicy_data_fetcher(cfg(batch_size=8), [(expert, 0.25), (agent, 0.75)]))
    assert [t["source"] for t in ctx.train_data] == [1] * 2 + [0] * 6
    ctx = run_stage(offpolicy_data_fetcher(cfg(batch_size=8), {"expert": expert, "agent": agent}))
    assert set(ctx.train_data) == {"expert", "agent"}
    assert len(ctx.train_data["expert"]) == 8 and ctx.train_data["agent"][0]["source"] == 0
    empty = NaiveReplayBuffer(dict(replay_buffer_size=10))
    assert (
        run_stage(offpolicy_data_fetcher(cfg(batch_size=8), [(expert, 0.5), (empty, 0.5)])).train_data is None
    )
    with pytest.raises(ConfigError, match="at least one item"):
        offpolicy_data_fetcher(cfg(batch_size=8), [(expert, 0.1)])
    with pytest.raises(ConfigError, match="list entry"):
        offpolicy_data_fetcher(cfg(batch_size=8), [expert])


def test_fetcher_samples_runs_of_unroll_len_from_a_sequence_buffer():
    buffer = SequenceReplayBuffer(dict(replay_buffer_size=100))
    buffer.push(transitions(40), 40)
    ctx = run_stage(offpolicy_data_fetcher(cfg(batch_size=4, unroll_len=3), buffer))
    assert len(ctx.train_data) == 4 and all(len(run) == 3 for run in ctx.train_data)
    for run in ctx.train_data:  # consecutive Countdown steps of one episode
        assert [t["obs"][0] for t in run] == [run[0]["obs"][0] - k for k in range(3)]
    with pytest.raises(ConfigError, match="SequenceReplayBuffer"):
        offpolicy_data_fetcher(cfg(unroll_len=3), NaiveReplayBuffer())
    with pytest.raises(ConfigError, match="needs a buffer"):
        offpolicy_data_fetcher(cfg(), object())


# ------------------------------------------------------------------------------ small stages
def test_sqil_data_pusher_relabels_rewards_without_touching_the_originals():
    data = transitions(10)
    expert, agent = (
        NaiveReplayBuffer(dict(replay_buffer_size=20)),
        NaiveReplayBuffer(dict(replay_buffer_size=20)),
    )
    ctx = run_stage(sqil_data_pusher(cfg(), expert, expert=True), OnlineRLContext(trajectories=data))
    run_stage(sqil_data_pusher(cfg(), agent, expert=False), OnlineRLContext(trajectories=data))
    assert ctx.trajectories is None
    assert {t["reward"] for t in expert.sample(10)} == {1.0} and {t["reward"] for t in agent.sample(10)} == {
        0.0
    }
    assert all(t["reward"] == 1.0 for t in data)  # Countdown pays 1 per step; the list is unchanged


def test_priority_calculator_sets_initial_priorities():
    data = transitions(10)
    ctx = run_stage(
        priority_calculator(lambda ts: [1.0 + t["obs"][0] for t in ts]), OnlineRLContext(trajectories=data)
    )
    assert [t["priority"] for t in ctx.trajectories] == [1.0 + t["obs"][0] for t in data]
    buffer = AdvancedReplayBuffer(dict(replay_buffer_size=20))
    run_stage(data_pusher(cfg(), buffer), ctx)
    assert sorted(buffer.state_dict()["priority"]) == sorted(1.0 + t["obs"][0] for t in data)
    with pytest.raises(StageError, match="one per transition"):
        run_stage(priority_calculator(lambda ts: [1.0]), OnlineRLContext(trajectories=transitions(4)))


def test_buffer_saver_writes_msgpack_files_every_envstep(tmp_path):
    buffer = NaiveReplayBuffer(dict(replay_buffer_size=100))
    buffer.push(transitions(10), 10)
    save = buffer_saver(cfg(exp_name=str(tmp_path / "exp")), buffer, every_envstep=100)
    for env_step in (0, 50, 120, 150, 230):
        run_stage(save, OnlineRLContext(env_step=env_step))
    folder = tmp_path / "exp" / "replaybuffer"
    assert sorted(os.listdir(folder)) == [
        "data_envstep_0.msgpack",
        "data_envstep_120.msgpack",
        "data_envstep_230.msgpack",
    ]
    loaded = NaiveReplayBuffer(dict(replay_buffer_size=100))
    loaded.load_data(str(folder / "data_envstep_120.msgpack"))
    assert loaded.count() == 10
    latest = buffer_saver(cfg(exp_name=str(tmp_path / "exp2")), buffer, every_envstep=10, replace=True)
    for env_step in (0, 10, 20):
        run_stage(latest, OnlineRLContext(env_step=env_step))
    assert os.listdir(tmp_path / "exp2" / "replaybuffer") == ["data_latest.msgpack"]


class ColumnarView:
    """A buffer seen as ding_ray's buffer actor serves it: ``sample`` returns a columnar ``Batch``."""

    def __init__(self, buffer):
        self.buffer = buffer

    def sample(self, size, train_iter):
        return self.buffer.sample(size, train_iter, columnar=True)

    def update(self, info):
        self.buffer.update(info)


def test_fetcher_with_columnar_batches_updates_priorities_and_joins_columns():
    policy = DQNPolicy(dict(model=MODEL, priority=True))
    buffer = AdvancedReplayBuffer(dict(replay_buffer_size=100))
    buffer.push(transitions(20), 20)

    def train(ctx):
        ctx.train_output = policy.learn_mode.forward(ctx.train_data)

    with Task(OnlineRLContext()) as task:
        task.use(offpolicy_data_fetcher(cfg(batch_size=8), ColumnarView(buffer))).use(train)
        task.run(max_step=1)
        ctx = task.ctx
    assert ctx.train_data["obs"].shape == (8, 2)
    stored = buffer.state_dict()["priority"][ctx.train_data["replay_buffer_idx"]]
    assert np.allclose(stored, np.maximum(ctx.train_output["priority"], 1e-6))
    other = NaiveReplayBuffer(dict(replay_buffer_size=100))
    other.push(transitions(20), 20)
    views = [(ColumnarView(other), 0.5), (ColumnarView(other), 0.5)]
    joined = run_stage(offpolicy_data_fetcher(cfg(batch_size=8), views)).train_data
    assert joined["obs"].shape == (8, 2) and joined["action"].shape[0] == 8
