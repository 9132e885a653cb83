"""What ``resume=`` checks, serial or on Ray, before anything is written: the checkpoint is there,
of the same policy and env, and its weights fit the model the config builds; then the run's folder
is locked and a resumed run's ``total_config.json`` written. A new run must find no checkpoint."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping
from typing import Any

from easydict import EasyDict

from ding_ray.config.as_data import config_as_data
from ding_ray.errors import ConfigError, DataFormatError
from ding_ray.utils.checkpoint import (
    LEARNER_FILE,
    Checkpoint,
    CheckpointStore,
    load_learner_bytes,
    storage_root,
)
from ding_ray.utils.run_dir import FolderSnapshot, RunLock, discard_unstarted, save_config

logger = logging.getLogger(__name__)

CONFIG_FILE = "total_config.json"


def find_checkpoint(run_dir: str, cfg: Mapping | None = None) -> tuple[CheckpointStore, Checkpoint]:
    """The latest complete checkpoint of the run in ``run_dir`` (or under ``cfg``'s storage path):
    what ``resume=`` continues from. No checkpoint there is a ``ConfigError`` saying so."""
    root = storage_root(cfg) if cfg is not None else os.path.abspath(run_dir)
    store = CheckpointStore(root, keep=((cfg or {}).get("checkpoint") or {}).get("keep", 2))
    ckpt = store.latest()
    if ckpt is None:
        raise ConfigError(
            f"resume={run_dir!r}: there is no complete checkpoint under {store.dir}. Name the folder "
            "of a run that wrote one (checkpoint.freq > 0, a run stopped by Ctrl-C/SIGTERM, or one run "
            "to its end), or start a new run without resume."
        )
    return store, ckpt


def checkpoint_store(cfg: Mapping, resume: str | None = None) -> tuple[CheckpointStore, Checkpoint | None]:
    """The run's checkpoint store, and with ``resume`` the checkpoint to go on from.

    A new run must find no checkpoint there: its actors would start from it (a shared
    ``checkpoint.storage_path`` that holds an earlier run of the same name), so that is a
    ``ConfigError`` naming ``resume=`` and the way to a fresh folder.
    """
    if resume is not None:
        store, ckpt = find_checkpoint(resume, cfg)
        check_same_run(ckpt, cfg)
        return store, ckpt
    store = CheckpointStore(storage_root(cfg), (cfg.get("checkpoint") or {}).get("keep", 2))
    if store.latest() is not None:
        raise ConfigError(
            f"{store.dir} already holds checkpoints of an earlier run named like this one. Continue that run "
            "with resume=<its folder>, or give this one another exp_name (or checkpoint.storage_path)."
        )
    return store, None


def check_same_run(ckpt: Checkpoint, cfg: Mapping) -> None:
    """A checkpoint resumes only the policy and env it was written for."""
    saved = ckpt.meta.get("config") or {}
    for path in (("policy", "type"), ("env", "env_id")):
        old, new = saved, cfg
        for key in path:
            old, new = (old or {}).get(key), (new or {}).get(key)
        if old != new:
            raise ConfigError(
                f"resume: the checkpoint {ckpt.folder} was written by a run with {'.'.join(path)}={old!r}, "
                f"and this config has {new!r}. Resume with the config of that run, or start a new one."
            )


class RunClaim:
    """A run's hold on its folder (``claim_run_dir``): ``release()`` when the run ends; ``undo()``
    when it fails before it starts: the folder is freed and put back as it was before the claim
    (``FolderSnapshot``), and a new run's folder, left with its config alone, is removed
    (``discard_unstarted``)."""

    def __init__(self, run_dir: str, resumed: bool) -> None:
        self.run_dir, self.resumed = run_dir, resumed
        self.snapshot = FolderSnapshot(run_dir, rewritten=(CONFIG_FILE,))
        self.lock = RunLock(run_dir)

    def release(self) -> None:
        self.lock.release()

    def undo(self) -> None:
        self.lock.release()
        self.snapshot.restore()
        if not self.resumed:
            discard_unstarted(self.run_dir)


def claim_run_dir(
    cfg: Mapping, store: CheckpointStore, resumed: Checkpoint | None, learn_state: Mapping | None = None
) -> RunClaim:
    """Lock ``cfg.exp_name`` for this run; for a resumed run first check that the checkpoint's
    weights fit ``learn_state`` (the learn mode's state dict of the policy this config builds), and
    after the lock write ``total_config.json``. Nothing is written when a check fails."""
    if resumed is not None and learn_state is not None:
        saved = load_learner_bytes(store.read(resumed, LEARNER_FILE), f"{resumed.folder}/{LEARNER_FILE}")
        check_weights_fit(learn_state, saved["policy"], resumed, cfg)
    claim = RunClaim(cfg["exp_name"], resumed is not None)
    if resumed is not None:
        try:
            save_config(cfg, os.path.join(cfg["exp_name"], CONFIG_FILE))
        except BaseException:
            claim.undo()
            raise
    return claim


def check_weights_fit(built: Mapping, saved: Mapping, ckpt: Checkpoint, cfg: Mapping) -> None:
    """Each tensor of the checkpoint's learn state has the shape of the one the config builds, and
    each module's state dict the same keys; else a ``ConfigError`` naming the tensors and the
    ``policy.model`` keys that differ from the run's."""
    mismatches = list(_mismatches(built, saved, ""))
    if not mismatches:
        return
    run_model = ((ckpt.meta.get("config") or {}).get("policy") or {}).get("model") or {}
    changed = list(_differences(run_model, (cfg.get("policy") or {}).get("model") or {}, "policy.model"))
    more = f" (and {len(mismatches) - 3} more)" if len(mismatches) > 3 else ""
    raise ConfigError(
        f"resume: the weights in {ckpt.folder}/{LEARNER_FILE} do not fit the model this config builds: "
        f"{'; '.join(mismatches[:3])}{more}. "
        + (f"This config changes {'; '.join(changed)}. " if changed else "")
        + "Resume with the run's own model settings (drop the policy.model overrides), or start a new run "
        "with these. Nothing was written."
    )


def resume_config(run_dir: str) -> EasyDict:
    """The config ``ding-ray train --resume DIR`` goes on with: the one its latest checkpoint was
    written with (``meta.json``), what the weights fit. ``total_config.json`` is a copy for people
    to read: when it is damaged or differs, a warning says so and the checkpoint's config wins."""
    ckpt = find_checkpoint(run_dir)[1]
    saved = ckpt.meta.get("config")
    if not isinstance(saved, Mapping):
        raise DataFormatError(f"{ckpt.folder}/meta.json holds no config; resume with the run's config file.")
    saved = config_as_data(saved, f"{ckpt.folder}/meta.json")
    path = os.path.join(run_dir, CONFIG_FILE)
    try:
        with open(path) as f:
            written = json.load(f)
    except (OSError, ValueError) as err:
        logger.warning("%s is unreadable (%s); resuming with the config in %s", path, err, ckpt.folder)
        return EasyDict(saved)
    # total_config.json is written before the model's shapes are read from the env (None there),
    # and with the folder's name as the run was given it
    written = {k: v for k, v in written.items() if k != "exp_name"} if isinstance(written, dict) else {}
    changed = list(_differences(written, {k: v for k, v in saved.items() if k != "exp_name"}, "", True))
    if changed:
        logger.warning(
            "%s differs from the config of checkpoint %s (%s); resuming with the checkpoint's",
            path,
            ckpt.folder,
            "; ".join(changed[:3]),
        )
    return EasyDict(saved)


def _is_tensor(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _mismatches(built: Any, saved: Any, path: str) -> Iterator[str]:
    if _is_tensor(built) or _is_tensor(saved):
        if _is_tensor(built) and _is_tensor(saved) and tuple(built.shape) != tuple(saved.shape):
            yield f"{path} is {list(saved.shape)} in the checkpoint and {list(built.shape)} here"
        return
    if not (isinstance(built, Mapping) and isinstance(saved, Mapping)):
        return
    for key in built:
        if key in saved:
            yield from _mismatches(built[key], saved[key], _join(path, key))
    if _all_tensors(built) and _all_tensors(saved):  # a module's state dict: the same layers
        yield from (f"{_join(path, k)} is missing from the checkpoint" for k in built if k not in saved)
        yield from (
            f"{_join(path, k)} is in the checkpoint but not in this model" for k in saved if k not in built
        )


def _all_tensors(d: Mapping) -> bool:
    return bool(d) and all(_is_tensor(v) for v in d.values())


def _differences(old: Any, new: Any, path: str, skip_none: bool = False) -> Iterator[str]:
    """``key: value in the run, value here`` for each leaf that differs (with ``skip_none``, not
    where ``old`` is None)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new), key=str):
            yield from _differences(old.get(key), new.get(key), _join(path, key), skip_none)
    elif skip_none and old is None:
        return
    elif old != new and not (isinstance(old, (list, tuple)) and list(old) == list(new or [])):
        yield f"{path}: {old!r} in the run, {new!r} here"


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)
