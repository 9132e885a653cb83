"""A run's folder: created atomically (two runs never share one), locked while a run writes into it
(a second run, or resume, of the folder is refused), its ``total_config.json``, and the snapshot
that lets a resumed run that fails to start leave the folder as it found it."""

from __future__ import annotations

import contextlib
import datetime
import errno
import glob
import json
import logging
import os
import shutil
import socket
import uuid
from collections.abc import Mapping
from typing import Any

import numpy as np

from ding_ray.errors import ConfigError

logger = logging.getLogger(__name__)

LOCK_FILE = "run.lock"


def make_run_dir(exp_name: str, renew: bool = True) -> str:
    """Create the run's folder and return its name; a line in the log names it. With ``renew``
    (DI-engine's ``renew_dir``) a folder that exists belongs to another run: this one gets
    ``<exp_name>_<yymmdd_HHMMSS>``, then ``..._1``, ``..._2``. Each try is one ``mkdir`` that fails if
    the folder exists, so runs started at the same moment with one ``exp_name`` each get their own
    folder. A folder left by a run that failed before any checkpoint does not divert the name: it is
    moved aside, whole, to ``<exp_name>_failed_<yymmdd_HHMMSS>`` (``failed_run``) and this run takes
    the name (a run that fails before it starts removes its own folder: ``discard_unstarted``)."""
    if not renew:
        os.makedirs(exp_name, exist_ok=True)
        logger.info("run folder: %s", exp_name)
        return exp_name
    exp_name = exp_name.rstrip("/") or exp_name
    parent = os.path.dirname(exp_name)
    if parent:
        os.makedirs(parent, exist_ok=True)
    now = datetime.datetime.now().strftime("_%y%m%d_%H%M%S")
    error = failed_run(exp_name)
    if error is not None:
        aside = exp_name + "_failed" + now
        with contextlib.suppress(OSError):  # another run may take the folder first: then it renews
            os.rename(exp_name, aside)
            logger.warning(
                "%s held a run that failed before any checkpoint (%s); moved to %s", exp_name, error, aside
            )
    stamped = exp_name + now
    for n, name in enumerate([exp_name, stamped] + [f"{stamped}_{i}" for i in range(1, 1000)]):
        try:
            os.mkdir(name)
        except FileExistsError:
            continue
        if n > 0:
            logger.info("run folder: %s (%s exists: another run's)", name, exp_name)
        else:
            logger.info("run folder: %s", name)
        return name
    raise ConfigError(f"{stamped} and 1000 numbered folders beside it exist; choose another exp_name.")


# what a run writes into its folder: a folder holding anything else is not (only) a run's
_RUN_ENTRIES = {"total_config.json", "result.json", "log", "ckpt", "checkpoints", "eval", LOCK_FILE}


def failed_run(folder: str) -> str | None:
    """The error of the run in ``folder`` when it failed and left nothing to resume or load: its
    ``result.json`` records an error, there is no ``ckpt/`` file and no complete run checkpoint, no
    run holds the folder, and it holds only what a run writes. None for any other folder (a run
    that got somewhere, a run still going, a folder of the user's own)."""
    try:
        entries = set(os.listdir(folder))
        with open(os.path.join(folder, "result.json")) as f:
            error = json.load(f).get("error")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(error, str) or not entries <= _RUN_ENTRIES:
        return None
    ckpt = os.path.join(folder, "ckpt")
    if os.path.isdir(ckpt) and os.listdir(ckpt):
        return None
    if glob.glob(os.path.join(glob.escape(folder), "checkpoints", "iter_*", "meta.json")):
        return None
    if LOCK_FILE in entries:
        with open(os.path.join(folder, LOCK_FILE), "a+") as f:
            if not _try_flock(f):
                return None  # a run is going on there
    return error.strip().splitlines()[0][:200] if error.strip() else "an error"


def discard_unstarted(folder: str) -> None:
    """Remove the folder of a new run that failed before it started, if it holds nothing but its
    ``total_config.json`` (and empty folders): the next run of that name then gets the name."""
    paths = _paths_under(folder)
    files = [p for p in paths if not os.path.isdir(os.path.join(folder, p))]
    if set(files) <= {"total_config.json"}:
        shutil.rmtree(folder, ignore_errors=True)


def events_writer(run_dir: str, name: str) -> Any:
    """A TensorBoard writer into ``<run_dir>/log/<name>``, in an events file of its own: the file
    name carries a random suffix, so a resumed run started within the second of the one before
    does not write over that run's events file (tensorboardX names files by second and host)."""
    from tensorboardX import SummaryWriter

    return SummaryWriter(os.path.join(run_dir, "log", name), filename_suffix=f".{uuid.uuid4().hex[:8]}")


def save_config(config_: Mapping, path: str, type_: str | None = None, save_formatted: bool = False) -> None:
    """Write a config: JSON (ding_ray's runs write this: loading it never runs code), or DI-engine's
    forms, ``type_='py'`` (the default for a ``.py`` path) or ``'yaml'`` (``.yaml``/``.yml``).

    The Python file is DI-engine's ``exp_config = {...}`` and also names it ``main_config`` (with an
    empty ``create_config``), so ``read_config`` reads it back as the config it was; ``save_formatted``
    writes that file again as ``formatted_<name>``, DI-engine's name for the form its entries read.
    A value that is not plain data (a class, a function) is written as its ``repr``, as in JSON.
    """
    if type_ is None:
        type_ = "py" if path.endswith(".py") else "yaml" if path.endswith((".yaml", ".yml")) else "json"
    if type_ not in ("json", "py", "yaml"):
        raise ConfigError(f"save_config: type_ must be 'py', 'yaml' or 'json', got {type_!r}.")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if type_ == "json":
        with open(path, "w") as f:
            json.dump(config_, f, indent=2, sort_keys=True, default=repr)
        return
    plain = _plain(config_)
    if type_ == "yaml":
        import yaml

        text = yaml.safe_dump(plain, sort_keys=True)
    else:
        import pprint

        text = (
            "from math import inf, nan  # noqa: F401 - values the config may hold\n\n"
            f"exp_config = {pprint.pformat(plain, sort_dicts=True)}\n"
            "main_config = exp_config\ncreate_config = {}\n"
        )
    paths = [path] + (
        [os.path.join(os.path.dirname(path), "formatted_" + os.path.basename(path))] if save_formatted else []
    )
    for target in paths:
        with open(target, "w") as f:
            f.write(text)


def _plain(value: Any) -> Any:
    """``value`` as plain data: dicts, lists, str, numbers, bools and None; anything else as its repr."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.generic):  # numpy scalars write as np.float64(...) otherwise
        return _plain(value.item())
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return repr(value)


class RunLock:
    """``<run folder>/run.lock``, held while a run writes into the folder: a lock of the kernel
    (``flock``), so a run that died holds nothing and its stale file is taken over; the file names
    the holder's pid and host for the message that refuses a second run."""

    def __init__(self, run_dir: str) -> None:
        self.path = os.path.join(run_dir, LOCK_FILE)
        os.makedirs(run_dir, exist_ok=True)
        self._file: Any = None
        for _ in range(10):  # the holder may remove the file between our open and our lock
            f = open(self.path, "a+")  # noqa: SIM115 - held open as long as the lock
            if not _try_flock(f):
                holder = _read_holder(f)
                f.close()
                raise ConfigError(
                    f"{run_dir} is in use by another run (pid {holder.get('pid', '?')} on host "
                    f"{holder.get('host', '?')}, since {holder.get('since', '?')}): two runs writing into "
                    "one folder damage each other's checkpoints. Wait for it to end (or stop it), or "
                    f"start a new run in another folder. If no such run exists, delete {self.path}."
                )
            with contextlib.suppress(FileNotFoundError):
                if os.fstat(f.fileno()).st_ino == os.stat(self.path).st_ino:
                    self._file = f
                    break
            f.close()
        else:
            raise ConfigError(f"{self.path} keeps changing under this run; is another run starting there?")
        stale = _read_holder(f)
        if stale.get("pid"):
            logger.warning(
                "taking over %s of pid %s on %s, which holds it no more",
                self.path,
                stale["pid"],
                stale.get("host"),
            )
        f.seek(0)
        f.truncate()
        holder = dict(pid=os.getpid(), host=socket.gethostname(), since=datetime.datetime.now().isoformat())
        f.write(json.dumps(holder))
        f.flush()

    def release(self) -> None:
        """Remove the file, then let the lock go (a run that finds the file gone starts over)."""
        if self._file is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            self._file.close()
            self._file = None


class FolderSnapshot:
    """Which paths a folder holds, and the bytes of the files named in ``rewritten``, now; ``restore``
    removes every path added since and writes those files back: a run that fails before it starts
    (a damaged checkpoint file, an actor that cannot start) leaves the folder of the run it was to
    resume byte for byte as it was, not with a new TensorBoard file and a rewritten config."""

    def __init__(self, folder: str, rewritten: tuple[str, ...] = ()) -> None:
        self.folder = folder
        self.paths = set(_paths_under(folder))
        self.files: dict[str, bytes | None] = {}
        for name in rewritten:
            try:
                with open(os.path.join(folder, name), "rb") as f:
                    self.files[name] = f.read()
            except FileNotFoundError:
                self.files[name] = None

    def restore(self) -> None:
        for path in sorted(set(_paths_under(self.folder)) - self.paths, reverse=True):  # files first
            full = os.path.join(self.folder, path)
            with contextlib.suppress(FileNotFoundError):
                if os.path.isdir(full) and not os.path.islink(full):
                    shutil.rmtree(full)
                else:
                    os.unlink(full)
        for name, data in self.files.items():
            path = os.path.join(self.folder, name)
            if data is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            else:
                with open(path, "wb") as f:
                    f.write(data)


def _paths_under(folder: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(folder):
        rel = os.path.relpath(root, folder)
        found += [os.path.normpath(os.path.join(rel, name)) for name in dirs + files]
    return found


def _try_flock(f: Any) -> bool:
    import fcntl

    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        # a filesystem without locks: run unguarded rather than not at all
        logger.warning("cannot lock %s (%s): nothing stops a second run in this folder", f.name, err)
    return True


def _read_holder(f: Any) -> dict:
    f.seek(0)
    try:
        holder = json.loads(f.read() or "{}")
    except ValueError:
        return {}
    return holder if isinstance(holder, dict) else {}
