"""offline_data_saver -> dataset -> offline_data_fetcher: files in both formats, epochs, errors, and
a behaviour-cloning round trip on CartPole from a quickly trained DQN's demonstrations."""

import copy
import sys
from functools import partial

import gymnasium as gym
import msgpack
import numpy as np
import pytest
import torch
from easydict import EasyDict
from torch.utils.data import default_collate

import tests.fakes  # noqa: F401 - registers the fake envs
from ding_ray.envs import create_env_manager, get_vec_env_setting
from ding_ray.errors import ConfigError, DataFormatError, StageError
from ding_ray.framework import OfflineRLContext, OnlineRLContext, Task
from ding_ray.framework.middleware import (
    HDF5Dataset,
    NaiveRLDataset,
    offline_data_fetcher,
    offline_data_saver,
)
from ding_ray.policy import DQNPolicy
from ding_ray.worker import SampleSerialCollector
from tests.compat.configs.cartpole_dqn_config import create_config, main_config

MODEL = dict(obs_shape=2, action_shape=2, encoder_hidden_size_list=[16], dueling=False)


def cfg(batch_size):
    return EasyDict(policy=dict(learn=dict(batch_size=batch_size)))


def collector(env_id="Countdown-v0", n_env=2, policy=None, seed=0):
    env_fn, cfgs, _ = get_vec_env_setting(dict(env_id=env_id, collector_env_num=n_env, evaluator_env_num=1))
    manager = create_env_manager(dict(type="base"), [partial(env_fn, cfg=c) for c in cfgs])
    manager.seed(seed)
    policy = policy or DQNPolicy(dict(model=MODEL))
    return SampleSerialCollector(dict(n_sample=8), manager, policy.collect_mode)


def save_with_pipeline(path, data_type, trajectories):
    with Task(OnlineRLContext()) as task:
        task.use(lambda ctx: setattr(ctx, "trajectories", trajectories))
        task.use(offline_data_saver(str(path), data_type=data_type))
        task.run(max_step=1)
        assert task.ctx.trajectories is None


# ------------------------------------------------------------------------------ files
@pytest.mark.parametrize("data_type, dataset_cls", [("naive", NaiveRLDataset), ("hdf5", HDF5Dataset)])
def test_saved_transitions_come_back_field_by_field(tmp_path, data_type, dataset_cls):
    if data_type == "hdf5":
        pytest.importorskip("h5py")
    data = collector().collect(n_sample=12, policy_kwargs={"eps": 0.5})
    for i, t in enumerate(data):  # a nested field, as goal-conditioned observations have
        t["goal"] = {"pos": np.array([i, -i], dtype=np.float32), "reached": i % 3 == 0}
    path = tmp_path / f"demo.{data_type}"
    save_with_pipeline(path, data_type, data)
    dataset = dataset_cls(str(path))
    assert len(dataset) == 12
    for original, loaded in zip(data, dataset, strict=False):
        assert np.array_equal(loaded["obs"], original["obs"]) and loaded["obs"].dtype == np.float32
        assert loaded["action"] == original["action"] and loaded["done"] == original["done"]
        assert loaded["reward"] == original["reward"]
        assert np.array_equal(loaded["goal"]["pos"], original["goal"]["pos"])
        assert loaded["goal"]["reached"] == original["goal"]["reached"]
    # DI-engine's way of naming the file: a config with policy.collect.data_path.
    assert len(dataset_cls(EasyDict(policy=dict(collect=dict(data_path=str(path)))))) == 12


def test_naive_files_are_checksummed_msgpack_not_pickle(tmp_path):
    path = tmp_path / "demo.msgpack"
    save_with_pipeline(path, "naive", collector().collect(n_sample=4))
    outer = msgpack.unpackb(path.read_bytes(), raw=False)
    assert outer["header"]["format"] == "ding_ray.replay_buffer"
    assert outer["header"]["buffer_type"] == "OfflineDataset" and outer["checksum"]["algorithm"] == "sha256"
    blob = bytearray(path.read_bytes())
    blob[-40] ^= 0xFF
    path.write_bytes(bytes(blob))
    with pytest.raises(DataFormatError):
        NaiveRLDataset(str(path))
    path.write_bytes(b"\x80\x04\x95 not msgpack")  # a pickle's first bytes: refused unread, with the way
    with pytest.raises(DataFormatError, match="pickle file .* data_type='hdf5'"):  # to convert it
        NaiveRLDataset(str(path))


def test_hdf5_dataset_reads_di_engines_layout(tmp_path):
    h5py = pytest.importorskip("h5py")

    path = tmp_path / "expert_demos.hdf5"
    with h5py.File(path, "w") as f:  # what DI-engine's hdf5_save writes
        f["obs"], f["next_obs"] = np.zeros((6, 4), np.float32), np.ones((6, 4), np.float32)
        f["action"], f["reward"], f["done"] = np.arange(6), np.ones(6, np.float32), np.zeros(6, bool)
    dataset = HDF5Dataset(str(path))
    assert len(dataset) == 6 and dataset[5]["action"] == 5 and dataset[0]["next_obs"].shape == (4,)


def test_saver_errors_are_clear(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="'naive'.*'hdf5'"):
        offline_data_saver(str(tmp_path / "x"), data_type="pkl")
    with pytest.raises(StageError, match="offline_data_saver.*collector stage"):
        with Task(OnlineRLContext()) as task:
            task.use(offline_data_saver(str(tmp_path / "x"), data_type="naive"))
            task.run(max_step=1)
    monkeypatch.setitem(sys.modules, "h5py", None)  # as if h5py were not installed
    with pytest.raises(ConfigError, match=r'pip install "ding_ray\[hdf5\]"'):
        offline_data_saver(str(tmp_path / "x"))  # 'hdf5' is DI-engine's default
    with pytest.raises(ConfigError, match="hdf5"):
        HDF5Dataset(str(tmp_path / "x"))


# ------------------------------------------------------------------------------ fetcher
def test_fetcher_batches_count_epochs_and_env_steps(tmp_path):
    path = tmp_path / "demo.msgpack"
    save_with_pipeline(path, "naive", collector().collect(n_sample=10))
    torch.manual_seed(0)
    seen, epochs = [], []

    def record(ctx):
        seen.append(len(ctx.train_data))
        epochs.append(ctx.train_epoch)

    with Task(OfflineRLContext()) as task:
        task.use(offline_data_fetcher(cfg(4), NaiveRLDataset(str(path)))).use(record)
        task.run(max_step=7)
        ctx = task.ctx
    assert seen == [4, 4, 2, 4, 4, 2, 4] and epochs == [0, 0, 0, 1, 1, 1, 2]
    assert ctx.trained_env_step == 24 and isinstance(ctx.train_data, list)
    with Task(OfflineRLContext()) as task:  # a collate_fn: train_data is a dict of tensors
        task.use(offline_data_fetcher(cfg(4), NaiveRLDataset(str(path)), collate_fn=default_collate))
        task.run(max_step=1)
        assert task.ctx.train_data["obs"].shape == (4, 2) and task.ctx.trained_env_step == 4
    with pytest.raises(StageError, match="OfflineRLContext"):
        with Task(OnlineRLContext()) as task:
            task.use(offline_data_fetcher(cfg(4), NaiveRLDataset(str(path))))
            task.run(max_step=1)
    with pytest.raises(ConfigError, match="empty dataset"):
        offline_data_fetcher(cfg(4), [])


# ------------------------------------------------------------------------------ round trip
def train_dqn_expert(tmp_path):
    """A DQN trained on CartPole-v1 until its evaluation return reaches 195 (about a second)."""
    from ding_ray.entry import serial_pipeline

    main = copy.deepcopy(main_config)
    main.exp_name, main.env.env_id = str(tmp_path / "expert"), "CartPole-v1"
    main.env.replay_path = main.policy.load_path = None
    return serial_pipeline((main, create_config), seed=0, max_env_step=20000)


def returns_of(act, episodes=5):
    env = gym.make("CartPole-v1")
    returns = []
    for seed in range(episodes):
        obs, _ = env.reset(seed=100 + seed)
        total, over = 0.0, False
        while not over:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total, over = total + reward, terminated or truncated
        returns.append(total)
    return returns


def test_behaviour_cloning_from_saved_demonstrations_beats_random(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    expert = train_dqn_expert(tmp_path)
    path = tmp_path / "cartpole_expert.msgpack"
    demo = collector("CartPole-v1", n_env=4, policy=expert)
    with Task(OnlineRLContext()) as task:  # collect greedy demonstrations, then save them
        task.use(
            lambda ctx: setattr(ctx, "trajectories", demo.collect(n_sample=2000, policy_kwargs={"eps": 0.0}))
        )
        task.use(offline_data_saver(str(path), data_type="naive"))
        task.run(max_step=1)

    torch.manual_seed(0)
    classifier = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.Tanh(), torch.nn.Linear(64, 2))
    optimizer = torch.optim.Adam(classifier.parameters(), lr=3e-3)

    def behaviour_cloning(ctx):
        obs = torch.as_tensor(np.stack([t["obs"] for t in ctx.train_data]))
        action = torch.as_tensor(np.array([t["action"] for t in ctx.train_data])).long().reshape(-1)
        loss = torch.nn.functional.cross_entropy(classifier(obs), action)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ctx.train_iter += 1

    with Task(OfflineRLContext()) as task:
        task.use(offline_data_fetcher(cfg(64), NaiveRLDataset(str(path)))).use(behaviour_cloning)
        task.run(max_step=600)
        assert task.ctx.train_epoch >= 15 and task.ctx.train_iter == 600

    with torch.no_grad():
        returns = returns_of(lambda obs: int(classifier(torch.as_tensor(obs)).argmax()))
    assert np.mean(returns) >= 100, returns  # a random policy scores about 20
