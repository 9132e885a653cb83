import copy
import json
import os

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import tests.fakes  # noqa: F401 - registers the fake envs
from ding_ray.config import ConfigError
from ding_ray.entry import serial_pipeline
from ding_ray.errors import EnvError, RegistryError

MAIN = dict(
    exp_name="serial_test",
    env=dict(
        env_id="Countdown-v0",
        collector_env_num=2,
        evaluator_env_num=2,
        n_evaluator_episode=2,
        stop_value=None,
    ),
    policy=dict(
        model=dict(obs_shape=2, action_shape=2, encoder_hidden_size_list=[16, 16]),
        learn=dict(update_per_collect=2, batch_size=8, learner=dict(hook=dict(log_show_after_iter=5))),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=10)),
        other=dict(replay_buffer=dict(replay_buffer_size=100)),
    ),
)
CREATE = dict(env=dict(type="gymnasium"), env_manager=dict(type="base"), policy=dict(type="dqn"))


def config(**env):
    cfg = copy.deepcopy(MAIN)
    cfg["env"].update(env)
    return cfg


def test_pipeline_writes_result_checkpoints_and_tensorboard(tmp_path):
    os.chdir(tmp_path)
    policy = serial_pipeline((config(), CREATE), seed=0, max_train_iter=30)
    assert policy.learn_mode.get_attribute("batch_size") == 8
    result = json.load(open("serial_test/result.json"))
    for key in ("env_steps", "train_iter", "best_eval_return", "last_eval_return", "stop", "wall_s"):
        assert key in result
    assert result["train_iter"] >= 30 and result["best_eval_return"] == 5.0 and result["stop"] is False
    assert os.path.isfile("serial_test/total_config.json")
    assert {"ckpt_best.pth.tar", "ckpt_final.pth.tar"} <= set(os.listdir("serial_test/ckpt"))
    logdir = "serial_test/log/serial"
    events = EventAccumulator(logdir)
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"evaluator/episode_return_mean", "collector/env_steps_per_s", "learner/total_loss"} <= tags
    assert events.Scalars("evaluator/episode_return_mean")[0].value == 5.0
    config_text = events.Tensors("config/text_summary")[0].tensor_proto.string_val[0].decode()
    assert json.loads(config_text.strip("`\n"))["policy"]["learn"]["batch_size"] == 8  # the resolved config


def test_stop_value_ends_the_run_and_the_load_hook_warm_starts(tmp_path, caplog):
    os.chdir(tmp_path)
    cfg = config(stop_value=5)
    serial_pipeline((cfg, CREATE), seed=1, max_train_iter=200)
    result = json.load(open("serial_test/result.json"))
    assert result["stop"] is True and result["train_iter"] < 200
    warm = config()
    warm["exp_name"] = "warm"
    warm["policy"]["learn"]["learner"]["hook"]["load_ckpt_before_run"] = "serial_test/ckpt/ckpt_final.pth.tar"
    with caplog.at_level("INFO"):
        serial_pipeline((warm, CREATE), seed=1, max_train_iter=result["train_iter"] + 2)
    assert "serial_test/ckpt/ckpt_final.pth.tar" in caplog.text  # a load is never silent
    assert json.load(open("warm/result.json"))["train_iter"] >= result["train_iter"]


def test_training_ignores_load_path_and_replay_path_and_never_clobbers_a_run(tmp_path):
    """DI-engine's entries: only ``eval`` reads policy.load_path and env.replay_path; a second run
    into an existing exp_name folder gets a fresh, timestamped one."""
    os.chdir(tmp_path)
    cfg = config(replay_path="serial_test/video")  # would need moviepy if it were used
    cfg["policy"]["load_path"] = "serial_test/ckpt/ckpt_best.pth.tar"  # absent at the first run
    serial_pipeline((cfg, CREATE), seed=0, max_train_iter=4)
    first = json.load(open("serial_test/result.json"))
    serial_pipeline((cfg, CREATE), seed=0, max_train_iter=4)  # now load_path exists: still ignored
    renewed = [d for d in os.listdir(".") if d.startswith("serial_test_")]
    assert len(renewed) == 1 and json.load(open("serial_test/result.json")) == first
    second = json.load(open(os.path.join(renewed[0], "result.json")))
    assert second["train_iter"] == first["train_iter"] and not os.path.exists("serial_test/video")
    from ding_ray.entry import read_result

    assert read_result("serial_test") == second  # the latest run's record


def test_max_env_step_budget(tmp_path):
    os.chdir(tmp_path)
    serial_pipeline((config(), CREATE), seed=0, max_env_step=40)
    result = json.load(open("serial_test/result.json"))
    assert 40 <= result["env_steps"] < 60


@pytest.mark.parametrize(
    "change,error,match",
    [
        (dict(env=dict(env_id="CartPoel-v1")), EnvError, "CartPole-v1"),
        (dict(policy=dict(model=dict(obs_shape=5))), EnvError, "obs_shape=2"),
        (dict(env=dict(env_id="ContinuousCountdown-v0")), EnvError, "discrete action space"),
        (dict(policy=dict(learn=dict(learning_rat=0.1))), ConfigError, "policy.learn.learning_rate"),
        (dict(policy=dict(learn=dict(batch_size="64"))), ConfigError, "expects int"),
    ],
)
def test_bad_input_is_a_clear_error(tmp_path, change, error, match):
    os.chdir(tmp_path)
    from ding_ray.config import deep_merge_dicts

    with pytest.raises(error, match=match):
        serial_pipeline((deep_merge_dicts(MAIN, change), CREATE), seed=0, max_train_iter=1)


def test_unknown_policy_type(tmp_path):
    os.chdir(tmp_path)
    with pytest.raises(RegistryError, match="Unknown policy type 'dqnn'.*'dqn'"):
        serial_pipeline((MAIN, dict(CREATE, policy=dict(type="dqnn"))), seed=0, max_train_iter=1)


def test_corrupt_checkpoint_is_refused(tmp_path):
    os.chdir(tmp_path)
    bad = tmp_path / "bad.pth.tar"
    bad.write_bytes(b"not a checkpoint")
    cfg = config()
    cfg["policy"]["learn"]["learner"]["hook"]["load_ckpt_before_run"] = str(bad)
    from ding_ray.errors import DataFormatError

    with pytest.raises(DataFormatError, match="cannot be loaded"):
        serial_pipeline((cfg, CREATE), seed=0, max_train_iter=1)


def test_checkpoint_with_pickled_objects_is_refused(tmp_path):
    import collections

    import torch

    from ding_ray.errors import DataFormatError
    from ding_ray.worker.learner import load_checkpoint

    path = tmp_path / "evil.pth.tar"
    torch.save({"model": collections.Counter(a=1), "hook": os.system}, path)
    with pytest.raises(DataFormatError, match="never unpickles"):
        load_checkpoint(str(path))


def test_eval_entry_loads_the_best_checkpoint(tmp_path):
    os.chdir(tmp_path)
    from ding_ray.entry import eval as eval_entry

    serial_pipeline((config(), CREATE), seed=0, max_train_iter=4)
    cfg = config()
    cfg["policy"]["load_path"] = "serial_test/ckpt/ckpt_best.pth.tar"
    assert eval_entry((cfg, CREATE), seed=0) == 5.0
    with pytest.raises(ConfigError, match="needs weights"):
        eval_entry((config(), CREATE), seed=0)
