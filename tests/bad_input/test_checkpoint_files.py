"""Damaged learner checkpoints (``*.pth.tar``), loaded by ``load_checkpoint`` and by the learner's
``load_ckpt_before_run`` hook: DataFormatError, no code from the file runs, and the learner keeps
its weights and counters. (Run checkpoints, ``checkpoints/iter_*``, have their own tests.)"""

import io
import os
import pickle

import numpy as np
import pytest
import torch

from ding_ray.errors import DataFormatError
from ding_ray.policy import DQNPolicy
from ding_ray.worker import BaseLearner
from ding_ray.worker.learner import load_checkpoint
from tests.bad_input.traps import MarkerTrap, assert_trap_is_live, bit_flip, pickle_trap, truncations

# torch.load warns about the pickle protocol of the trap files before refusing them
pytestmark = pytest.mark.filterwarnings("ignore:Detected pickle protocol")

MODEL = dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16])
QUIET = dict(save_ckpt_after_run=False, save_ckpt_after_iter=False, log_show_after_iter=False)


def batch(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return [
        dict(
            obs=rng.normal(size=4).astype(np.float32),
            next_obs=rng.normal(size=4).astype(np.float32),
            action=np.int64(rng.integers(2)),
            reward=np.float32(rng.normal()),
            done=False,
        )
        for _ in range(n)
    ]


def make_learner(exp_dir, load_path: str = "", **model_over) -> BaseLearner:
    policy = DQNPolicy(dict(model=dict(MODEL, **model_over)), enable_field=["learn"])
    hook = dict(QUIET, load_ckpt_before_run=load_path)
    return BaseLearner(dict(hook=hook), policy.learn_mode, exp_name=str(exp_dir))


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """``(path, bytes)`` of a checkpoint of a DQN learner trained 3 iterations."""
    folder = tmp_path_factory.mktemp("ckpt")
    learner = make_learner(folder / "source")
    for i in range(3):
        learner.train(batch(seed=i), envstep=10 * i)
    path = learner.save_checkpoint("good.pth.tar")
    with open(path, "rb") as f:
        return path, f.read()


def snapshot(learner: BaseLearner) -> dict:
    state = learner.policy.state_dict()
    return dict(
        model={k: v.clone() for k, v in state["model"].items()},
        target={k: v.clone() for k, v in state["target_model"].items()},
        iter=learner.last_iter.val,
        envstep=learner.collector_envstep,
    )


def unchanged(a: dict, b: dict) -> bool:
    same = all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    same = same and all(torch.equal(a["target"][k], b["target"][k]) for k in a["target"])
    return same and a["iter"] == b["iter"] and a["envstep"] == b["envstep"]


def equal_state(a, b) -> bool:
    """Same nested structure, keys, tensors and values."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(equal_state(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, type(a)) and len(a) == len(b) and all(map(equal_state, a, b))
    return type(a) is type(b) and a == b


def refused(blob: bytes, tmp_path) -> str:
    """Write ``blob`` as a checkpoint; ``load_checkpoint`` and the ``load_ckpt_before_run`` hook
    must both raise DataFormatError, and the learner must keep its state. Returns the message."""
    path = str(tmp_path / "bad.pth.tar")
    with open(path, "wb") as f:
        f.write(blob)
    with pytest.raises(DataFormatError):
        load_checkpoint(path)
    learner = make_learner(tmp_path / "target", load_path=path)
    before = snapshot(learner)
    with pytest.raises(DataFormatError) as err:
        learner.call_hook("before_run")
    assert unchanged(snapshot(learner), before)
    learner.train(batch(), envstep=1)  # the learner is fine and trains on
    assert learner.train_iter == 1
    assert f"Checkpoint '{path}' cannot be loaded as weights" in str(err.value)
    return str(err.value)


def test_the_good_checkpoint_loads(good, tmp_path):
    path, _ = good
    learner = make_learner(tmp_path / "ok", load_path=path)
    learner.call_hook("before_run")
    assert learner.last_iter.val == 3 and learner.collector_envstep == 20


def test_truncated_checkpoints(good, tmp_path):
    _, blob = good
    for name, cut in truncations(blob):
        assert "may be truncated" in refused(cut, tmp_path), name


def test_pickled_code_never_runs(good, tmp_path):
    """weights_only=True: a pickle that would create a file when loaded is refused unrun, whether
    it is a bare pickle or a torch.save file."""
    assert_trap_is_live(str(tmp_path))
    marker = str(tmp_path / "marker")
    as_torch = io.BytesIO()
    torch.save({"model": MarkerTrap(marker), "last_iter": 5}, as_torch)
    for name, evil in (
        ("pickle", pickle_trap(marker)),
        ("pickle protocol 2", pickle.dumps(MarkerTrap(marker), protocol=2)),
        ("torch.save", as_torch.getvalue()),
    ):
        text = refused(evil, tmp_path)
        assert "ding_ray never unpickles code" in text, name
        assert not os.path.exists(marker), name


def test_a_file_that_is_not_a_checkpoint(tmp_path):
    refused(b"PK\x03\x04 certainly not a zip archive", tmp_path)
    refused(b'{"model": {}}', tmp_path)


def test_a_missing_checkpoint_is_named(tmp_path):
    missing = str(tmp_path / "nowhere.pth.tar")
    with pytest.raises(FileNotFoundError, match=r"Checkpoint '.*nowhere\.pth\.tar' does not exist"):
        make_learner(tmp_path / "t", load_path=missing).call_hook("before_run")


# ---------------------------------------------------------------------- bit flips, another model, what to do
def test_every_bit_flip_is_detected_or_harmless(good, tmp_path):
    path, blob = good
    reference = load_checkpoint(path)
    bad = str(tmp_path / "flip.pth.tar")
    silent = []
    for pos in range(0, len(blob), 97):
        with open(bad, "wb") as f:
            f.write(bit_flip(blob, pos))
        try:
            state = load_checkpoint(bad)
        except DataFormatError:
            continue
        if not equal_state(state, reference):
            silent.append(pos)
    assert not silent, f"{len(silent)} bit flips loaded as different weights, e.g. at bytes {silent[:5]}"


def test_a_checkpoint_of_another_model_is_refused_whole(tmp_path):
    other = make_learner(tmp_path / "other", encoder_hidden_size_list=[32])
    path = other.save_checkpoint("other.pth.tar")
    learner = make_learner(tmp_path / "target", load_path=path)
    before = snapshot(learner)
    with pytest.raises((DataFormatError, ValueError)) as err:  # ShapeError is a ValueError
        learner.call_hook("before_run")
    assert unchanged(snapshot(learner), before)
    assert "encoder.mlp.layers.0.weight" in str(err.value)  # the parameter that does not fit


def test_the_checkpoint_error_says_what_to_do(good, tmp_path):
    _, blob = good
    text = refused(blob[:-1], tmp_path)
    assert "load_ckpt_before_run" in text
