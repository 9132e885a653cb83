"""Damaged run checkpoints (``<run>/checkpoints/iter_*``) under ``resume=``: a checkpoint whose
files do not match its ``meta.json`` (cut short, changed behind its meta's back) is a
``DataFormatError`` naming the file and is never pruned, one without a ``meta.json`` is passed over,
a pickle never runs, another format version is refused; nothing saved is changed by trying."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re

import pytest

from ding_ray.configs.cartpole_dqn import create_config, main_config
from ding_ray.entry import serial_pipeline
from ding_ray.errors import DataFormatError
from ding_ray.utils.checkpoint import BUFFER_FILE, LEARNER_FILE, META_FILE, CheckpointStore
from tests.bad_input.traps import assert_trap_is_live, bit_flip, pickle_trap, truncations

pytestmark = pytest.mark.filterwarnings("ignore:Detected pickle protocol")


def _config(exp: str) -> dict:
    cfg = copy.deepcopy(main_config)
    cfg["exp_name"], cfg["checkpoint"] = exp, dict(freq=40, keep=2)
    return cfg


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A finished serial run with two complete checkpoints (iterations 80 and its end)."""
    exp = str(tmp_path_factory.mktemp("runs") / "run")
    serial_pipeline((_config(exp), create_config), seed=0, max_train_iter=90)
    return exp


@pytest.fixture
def copy_of(run_dir, tmp_path):
    """A copy of the run to damage, and its two checkpoints, newest first."""
    import shutil

    exp = str(tmp_path / "run")
    shutil.copytree(run_dir, exp)
    store = CheckpointStore(exp)
    folders = [f"{store.dir}/{name}" for name in os.listdir(store.dir) if re.fullmatch(r"iter_\d+", name)]
    folders.sort(key=lambda f: int(f.rsplit("_", 1)[1]), reverse=True)
    assert len(folders) == 2 and store.latest().folder == folders[0]
    return exp, store, folders


def _resume(exp: str, iters: int = 20) -> dict:
    cfg = _config(exp)
    start = CheckpointStore(exp).latest().train_iter
    serial_pipeline((cfg, create_config), seed=0, max_train_iter=start + iters, resume=exp)
    with open(os.path.join(exp, "result.json")) as f:
        return json.load(f)


def _rewrite(folder: str, name: str, data: bytes, update_meta: bool) -> None:
    """Replace a file; with ``update_meta`` also its size and sha256 in meta.json (as someone
    tampering with the checkpoint would), so only the file's own checks are left."""
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)
    if update_meta:
        path = os.path.join(folder, META_FILE)
        with open(path) as f:
            meta = json.load(f)
        meta["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        with open(path, "w") as f:
            json.dump(meta, f)


def _tree(folder: str) -> dict[str, bytes | None]:
    """Every path under ``folder``: a file's bytes, None for a folder."""
    tree = {}
    for root, dirs, files in os.walk(folder):
        tree.update({os.path.relpath(os.path.join(root, d), folder): None for d in dirs})
        tree.update({os.path.relpath(os.path.join(root, f), folder): _read(root, f) for f in files})
    return tree


def _read(folder: str, name: str) -> bytes:
    with open(os.path.join(folder, name), "rb") as f:
        return f.read()


@pytest.mark.parametrize("name", [LEARNER_FILE, BUFFER_FILE, META_FILE])
def test_a_cut_short_file_under_a_meta_is_an_error_naming_it_and_is_never_pruned(copy_of, name):
    """``meta.json`` is written after every other file, so a file of another size under it is
    damage, not a save cut short: resuming stops with the file's name, and neither resuming nor a
    later run's pruning deletes the folder."""
    exp, store, (newest, older) = copy_of
    for label, cut in truncations(_read(newest, name)):
        _rewrite(newest, name, cut, update_meta=False)
        before = {n: _read(newest, n) for n in os.listdir(newest)}
        with pytest.raises(DataFormatError, match=f"{re.escape(newest)}/{name}.* Delete it") as err:
            _resume(exp)
        assert "damaged" in str(err.value), label
        assert {n: _read(newest, n) for n in os.listdir(newest)} == before, label
    # a newer checkpoint is committed (keep=2): the damaged one is not among the two it keeps, and stays
    later = store.folder(10_000)
    files = {LEARNER_FILE: store.write(later, LEARNER_FILE, _read(older, LEARNER_FILE))}
    store.commit(later, files, {"train_iter": 10_000})
    assert os.path.isdir(newest) and os.path.isdir(older)
    assert store.latest().folder == later


def test_a_checkpoint_without_its_meta_is_unfinished_and_never_read(copy_of):
    exp, store, (newest, older) = copy_of
    os.unlink(os.path.join(newest, META_FILE))  # the writer died before the last file
    assert store.latest().folder == older


@pytest.mark.parametrize("name", [LEARNER_FILE, BUFFER_FILE])
def test_a_flipped_bit_is_an_error_naming_the_file_and_nothing_changes(copy_of, name):
    exp, store, (newest, _) = copy_of
    blob = _read(newest, name)
    _rewrite(newest, name, bit_flip(blob, len(blob) // 2), update_meta=False)
    before = _tree(exp)
    with pytest.raises(DataFormatError, match=f"{name} does not match the size and sha256") as err:
        _resume(exp)
    assert "Resume from an older checkpoint" in str(err.value)
    # the run folder byte for byte: no run.lock, no new TensorBoard file, total_config.json unchanged
    assert _tree(exp) == before


def test_a_tampered_buffer_file_is_caught_by_its_own_checksum(copy_of):
    exp, _, (newest, _) = copy_of
    blob = _read(newest, BUFFER_FILE)
    _rewrite(newest, BUFFER_FILE, bit_flip(blob, len(blob) // 2), update_meta=True)
    with pytest.raises(DataFormatError, match="checksum|damaged|tampered"):
        _resume(exp)


def test_a_pickle_in_place_of_the_learner_file_never_runs(copy_of, tmp_path):
    exp, _, (newest, _) = copy_of
    assert_trap_is_live(str(tmp_path))
    marker = str(tmp_path / "ran")
    _rewrite(newest, LEARNER_FILE, pickle_trap(marker), update_meta=True)
    with pytest.raises(DataFormatError, match="never unpickles code"):
        _resume(exp)
    assert not os.path.exists(marker)


def test_another_format_version_is_refused_with_both_versions(copy_of):
    exp, _, (newest, _) = copy_of
    path = os.path.join(newest, META_FILE)
    with open(path) as f:
        meta = json.load(f)
    meta["format_version"] = 2
    with open(path, "w") as f:
        json.dump(meta, f)
    with pytest.raises(DataFormatError, match="format version 2 .* reads version 1"):
        _resume(exp)
