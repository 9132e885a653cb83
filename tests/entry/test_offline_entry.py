"""The offline entries: collect_demo_data's file, serial_pipeline_offline and serial_pipeline_bc on it,
and the errors of bad files and configs."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ding_ray.entry import collect_demo_data, serial_pipeline_bc, serial_pipeline_offline
from ding_ray.entry.cli import main as ding_ray_main
from ding_ray.entry.ding_command import main as ding_main
from ding_ray.entry.result import read_result
from ding_ray.errors import ConfigError
from ding_ray.framework.middleware.offline_dataset import NaiveRLDataset
from ding_ray.policy import create_policy

ENV = dict(
    env_id="CartPole-v1", collector_env_num=2, evaluator_env_num=2, n_evaluator_episode=2, stop_value=500
)
MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16, 16])
DQN = (
    dict(exp_name="expert", env=ENV, policy=dict(model=MODEL)),
    dict(env=dict(type="gymnasium"), env_manager=dict(type="base"), policy=dict(type="dqn")),
)


def bc_config(data_path: str | None = "demo.msgpack", **learn) -> tuple[dict, dict]:
    learn = dict(batch_size=16, learning_rate=0.01, train_epoch=2, **learn)
    policy = dict(model=MODEL, learn=learn, eval=dict(evaluator=dict(eval_freq=16, max_episode_steps=50)))
    if data_path:
        policy["collect"] = dict(data_path=data_path)
    main = dict(exp_name="bc", env=ENV, policy=policy)
    return main, dict(env=dict(type="gymnasium"), env_manager=dict(type="base"), policy=dict(type="bc"))


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """120 transitions of a fresh DQN, collected greedily: the folder holding demo.msgpack."""
    folder = tmp_path_factory.mktemp("offline")
    os.chdir(folder)
    expert = create_policy(dict(type="dqn", model=MODEL), enable_field=["learn"])
    collect_demo_data(
        DQN,
        seed=0,
        collect_count=120,
        expert_data_path="demo.msgpack",
        state_dict=expert.learn_mode.state_dict(),
    )
    return folder


def test_demo_file_holds_the_transitions(demo):
    data = NaiveRLDataset(str(demo / "demo.msgpack"))
    assert len(data) == 120
    first = data[0]
    assert {"obs", "next_obs", "action", "reward", "done"} <= set(first)
    assert first["obs"].shape == (4,) and first["action"] in (0, 1)
    assert os.path.isfile(demo / "expert" / "collect_demo_data_config.json")


def test_offline_pipeline_trains_whole_epochs_and_evaluates(demo, monkeypatch):
    monkeypatch.chdir(demo)
    policy, stop = serial_pipeline_offline(bc_config(), seed=0)
    assert stop is False  # 2 epochs of 8 batches (120 = 7 x 16 + 8), the stop value out of reach
    result = read_result("bc")
    assert result["train_iter"] == 16 and result["pipeline"] == "serial_offline" and result["stop"] is False
    assert result["last_eval_return"] is not None and "error" not in result
    learner_state = policy.learn_mode.state_dict()
    assert "model" in learner_state and "optimizer" in learner_state
    policy, stop = serial_pipeline_offline(bc_config(), seed=0, max_train_iter=3)
    assert stop is True  # the budget ends the run after the epoch that reached it


def test_bc_pipeline_stops_at_max_iter_and_logs_validation(demo, monkeypatch):
    monkeypatch.chdir(demo)
    policy, stop = serial_pipeline_bc(bc_config(data_path=None), seed=0, data_path="demo.msgpack", max_iter=4)
    assert stop is True
    greedy = policy.eval_mode.forward({0: np.zeros(4, np.float32)})[0]["action"]
    assert greedy.item() in (0, 1)


def test_bad_input_is_refused_early(demo, monkeypatch):
    monkeypatch.chdir(demo)
    main, create = bc_config()
    del main["policy"]["learn"]["train_epoch"]
    runs = set(os.listdir(demo))
    with pytest.raises(ConfigError, match="train_epoch"):
        serial_pipeline_offline((main, create), seed=0)
    assert set(os.listdir(demo)) == runs  # a run that did not start leaves no folder
    with pytest.raises(ConfigError, match="data_path"):
        serial_pipeline_offline(bc_config(data_path=None), seed=0)
    main, create = bc_config()
    main["policy"]["model"] = dict(MODEL, obs_shape=6)
    main["env"] = dict(ENV, env_id="Acrobot-v1", stop_value=0)
    main["policy"]["model"]["action_shape"] = 3
    with pytest.raises(ConfigError, match="shape"):
        serial_pipeline_offline((main, create), seed=0)
    with pytest.raises(ConfigError, match="weights"):
        collect_demo_data(DQN, seed=0, collect_count=10, expert_data_path="x.msgpack")
    with pytest.raises(ConfigError, match="collect_count"):
        collect_demo_data(DQN, seed=0, collect_count=0, expert_data_path="x.msgpack", state_dict={})


def test_ding_ray_train_mode_offline(demo, monkeypatch, capsys):
    monkeypatch.chdir(demo)
    main_cfg, create_cfg = bc_config(data_path=str(demo / "demo.msgpack"))
    main_cfg["exp_name"] = "bc_by_ding_ray"
    (demo / "bc_train.py").write_text(f"main_config = {main_cfg!r}\ncreate_config = {create_cfg!r}\n")
    assert ding_ray_main(["train", "bc_train.py", "--mode", "offline", "--max-train-iter", "3"]) == 0
    assert read_result("bc_by_ding_ray_seed0")["train_iter"] == 8  # the epoch that reached 3 ends
    assert ding_ray_main(["train", "bc_train.py", "--mode", "offline", "--max-env-step", "10"]) == 1
    assert "--mode offline trains on a dataset" in capsys.readouterr().err


def test_ding_command_runs_serial_offline(demo, monkeypatch):
    monkeypatch.chdir(demo)
    main_cfg, create_cfg = bc_config(data_path=str(demo / "demo.msgpack"))
    main_cfg["exp_name"] = "bc_by_ding"
    (demo / "bc_config.py").write_text(f"main_config = {main_cfg!r}\ncreate_config = {create_cfg!r}\n")
    assert ding_main(["-m", "serial_offline", "-c", "bc_config.py", "-s", "0", "--train-iter", "3"]) == 0
    assert (demo / "bc_by_ding" / "ckpt").is_dir()
