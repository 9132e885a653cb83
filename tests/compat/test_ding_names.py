"""The names DI-engine's framework scripts and dizoo's entry scripts import, under ``ding_ray``."""

import gymnasium as gym
import pytest
import torch

from ding_ray.data import DequeBuffer
from ding_ray.data.buffer import use_time_check
from ding_ray.envs import BaseEnvManagerV2, DingEnvWrapper, SubprocessEnvManagerV2, create_env_manager
from ding_ray.errors import NotSupportedError
from ding_ray.framework import FileModelLoader, FileStorageLoader
from ding_ray.utils import EasyTimer, build_logger, deep_merge_dicts, set_pkg_seed  # noqa: F401


def item(i):
    return {"obs": [float(i)], "action": i, "reward": 1.0, "done": False}


def test_deque_buffer_is_di_engine_s_new_buffer_api():
    buffer_ = DequeBuffer(size=4)
    for i in range(3):
        buffer_.push(item(i))
    with pytest.raises(ValueError, match="less than 4"):
        buffer_.sample(4)  # the fetcher skips training, as on DI-engine's ValueError
    for i in range(3, 6):
        buffer_.push(item(i))
    assert buffer_.count() == 4
    assert {int(d.data["action"]) for d in buffer_.sample(4)} == {2, 3, 4, 5}
    assert buffer_.use(use_time_check(buffer_, max_use=1)) is buffer_
    buffer_.sample(4)
    assert buffer_.count() == 0


def test_file_loaders_import_and_say_what_replaces_them():
    with pytest.raises(NotSupportedError, match="object store"):
        FileModelLoader(torch.nn.Linear(2, 2), "models")
    with pytest.raises(NotSupportedError, match="pickle"):
        FileStorageLoader("storage")


def test_v2_env_managers_are_the_managers_under_di_engine_names():
    def cartpole():
        return DingEnvWrapper(gym.make("CartPole-v1"))

    manager = create_env_manager(dict(type="base_v2"), [cartpole, cartpole])
    try:
        assert type(manager) is BaseEnvManagerV2
        manager.launch()
        assert sorted(manager.ready_obs) == [0, 1]  # ding_ray's {env_id: obs}, for ding_ray's stages
    finally:
        manager.close()
    assert SubprocessEnvManagerV2.default_config().type == "subprocess_v2"


def test_utils_helpers(tmp_path):
    merged = deep_merge_dicts({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": 4}})
    assert merged == {"a": 1, "b": {"c": 4, "d": 3}}
    timer = EasyTimer(cuda=False)
    with timer:
        sum(range(1000))
    assert 0 < timer.value < 1
    text_logger, tb_logger = build_logger(str(tmp_path), "learner")
    text_logger.info("iteration 1")
    tb_logger.close()
    assert "iteration 1" in (tmp_path / "learner_logger.txt").read_text()
    assert (tmp_path / "learner_tb_logger").is_dir()
    assert build_logger(str(tmp_path), need_tb=False, need_text=False) == (None, None)
