"""Where run checkpoints go: a local folder, any fsspec URL (``memory://`` and ``file://`` here),
or ``DING_RAY_STORAGE_PATH``; which ones are kept; what is never picked up."""

from __future__ import annotations

import copy
import json
import os

import fsspec
import pytest

from ding_ray.configs.cartpole_dqn import create_config, main_config
from ding_ray.entry import serial_pipeline
from ding_ray.errors import ConfigError
from ding_ray.utils.checkpoint import STORAGE_ENV, CheckpointStore, storage_root


def _commit(store: CheckpointStore, train_iter: int) -> str:
    folder = store.folder(train_iter)
    files = {"learner.pth": store.write(folder, "learner.pth", f"weights {train_iter}".encode())}
    store.commit(folder, files, {"train_iter": train_iter, "env_steps": 10 * train_iter})
    return folder


def test_an_fsspec_url_keeps_the_newest_complete_checkpoints():
    store = CheckpointStore("memory://bucket/runs/exp", keep=2)
    folders = [_commit(store, i) for i in (100, 200, 300)]
    unfinished = store.folder(400)
    store.write(unfinished, "learner.pth", b"half")  # its meta.json never came
    latest = store.latest()
    assert latest.folder == folders[-1] and latest.meta["env_steps"] == 3000
    assert store.read(latest, "learner.pth") == b"weights 300"
    fs = fsspec.filesystem("memory")
    kept = sorted(os.path.basename(p) for p in fs.ls(store.dir, detail=False))
    assert kept == ["iter_00000200", "iter_00000300", "iter_00000400"]  # keep=2, and the one in progress
    _commit(store, 500)  # a newer complete one: the unfinished one before it is a dead end, deleted
    kept = sorted(os.path.basename(p) for p in fs.ls(store.dir, detail=False))
    assert kept == ["iter_00000300", "iter_00000500"]
    store.write(store.folder(500), "learner.pth", b"rewritten")  # the same iteration written again
    assert store.latest().folder == store.folder(300)  # unfinished until its new meta.json


def test_storage_path_and_the_environment_name_the_root(monkeypatch, tmp_path):
    cfg = {"exp_name": "runs/cartpole_seed0", "checkpoint": {"storage_path": None}}
    monkeypatch.delenv(STORAGE_ENV, raising=False)
    assert storage_root(cfg) == os.path.abspath("runs/cartpole_seed0")
    monkeypatch.setenv(STORAGE_ENV, "s3://bucket/ding_ray")
    assert storage_root(cfg) == "s3://bucket/ding_ray/cartpole_seed0"
    cfg["checkpoint"]["storage_path"] = str(tmp_path)  # the config wins over the environment
    assert storage_root(cfg) == str(tmp_path / "cartpole_seed0")


def test_a_protocol_without_its_package_names_the_package():
    with pytest.raises(ConfigError, match="Install s3fs"):
        CheckpointStore("s3://bucket/runs/exp")


def test_a_serial_run_checkpoints_to_a_url_and_resumes_from_it(tmp_path):
    cfg = copy.deepcopy(main_config)
    cfg["exp_name"] = str(tmp_path / "local")
    cfg["checkpoint"] = dict(freq=50, storage_path=f"file://{tmp_path}/shared")
    serial_pipeline((cfg, create_config), seed=0, max_train_iter=60)
    store = CheckpointStore(f"file://{tmp_path}/shared/local")
    first = store.latest()
    assert first is not None and first.has_buffer
    assert not os.path.exists(tmp_path / "local" / "checkpoints")  # nothing on the local disk
    serial_pipeline(
        (cfg, create_config), seed=0, max_train_iter=first.train_iter + 40, resume=cfg["exp_name"]
    )
    with open(tmp_path / "local" / "result.json") as f:
        result = json.load(f)
    assert result["resumed_from"] == first.folder and result["train_iter"] >= first.train_iter + 40
