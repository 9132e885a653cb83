"""Learner hooks: callables the learner runs at ``before_run``, ``after_run``, ``before_iter`` or
``after_iter``, built from the config by ``ding_ray.worker.learner.hook_config``."""

from __future__ import annotations

import copy
import logging
import numbers
import os
import zipfile
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from easydict import EasyDict

from ding_ray.errors import ConfigError, DataFormatError
from ding_ray.utils.registry import close_matches
from ding_ray.worker import metrics

logger = logging.getLogger(__name__)

POSITIONS = ("before_run", "after_run", "before_iter", "after_iter")


class LearnerHook:
    """Something the learner calls at ``position``; a lower ``priority`` runs first.

    Built as in DI-engine: ``LearnerHook(name, priority, position=..., ext_args=...)``. A subclass
    implements ``__call__(self, engine)`` (``engine`` is the ``BaseLearner``) and reads the
    ``ext_args`` it knows; ext_args that reach this base class are ones nobody reads, so they are
    rejected rather than ignored.
    """

    positions = list(POSITIONS)

    def __init__(
        self,
        name: str | None = None,
        priority: float = 100,
        *,
        position: str,
        ext_args: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = type(self).__name__ if name is None else str(name)
        if position not in POSITIONS:
            hint = close_matches(position, POSITIONS)
            raise ConfigError(
                f"Learner hook '{self.name}': position '{position}' unknown."
                + (f" Did you mean '{hint[0]}'?" if hint else "")
                + f" Choose from {list(POSITIONS)}."
            )
        if not isinstance(priority, numbers.Real) or isinstance(priority, bool) or priority < 0:
            raise ConfigError(
                f"Learner hook '{self.name}': priority must be a number >= 0 (lower runs first), "
                f"got {priority!r}."
            )
        self.position = position
        self.priority = priority
        check_ext_args(self, ext_args, known=())

    def __call__(self, engine: Any) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, priority={self.priority}, position={self.position!r})"
        )


def check_ext_args(
    hook: LearnerHook, ext_args: Mapping[str, Any] | None, known: Sequence[str], required: Sequence[str] = ()
) -> EasyDict:
    """``ext_args`` as an EasyDict; ``ConfigError`` for a key ``hook`` does not read or a missing one."""
    ext_args = EasyDict(ext_args or {})
    for key in ext_args:
        if key not in known:
            hint = close_matches(key, known)
            raise ConfigError(
                f"Learner hook '{hook.name}' ({type(hook).__name__}) does not read ext_args '{key}'."
                + (f" Did you mean '{hint[0]}'?" if hint else "")
                + (f" It reads {list(known)}." if known else " It takes no ext_args; remove them.")
            )
    for key in required:
        if key not in ext_args:
            raise ConfigError(
                f"Learner hook '{hook.name}' ({type(hook).__name__}) needs ext_args '{key}', "
                f"e.g. ext_args=dict({key}=...)."
            )
    return ext_args


def _freq(hook: LearnerHook, value: Any) -> int:
    if value is True:
        return 1
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1:
        return int(value)
    if isinstance(value, float) and value.is_integer() and value >= 1:
        return int(value)
    raise ConfigError(
        f"Learner hook '{hook.name}': freq must be an integer >= 1 (iterations), got {value!r}. "
        "To turn the hook off, set its short-form key to False."
    )


class LoadCkptHook(LearnerHook):
    """Load ``ext_args['load_path']`` before training: policy state, ``last_iter`` and the collector's
    env step count (the checkpoint's ``last_step``), so that a run resumes where it stopped."""

    def __init__(self, *args: Any, ext_args: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        ext_args = check_ext_args(self, ext_args, known=("load_path",), required=("load_path",))
        if not isinstance(ext_args.load_path, (str, os.PathLike)):
            raise ConfigError(
                f"Learner hook '{self.name}': ext_args load_path must be a file path ('' for none), "
                f"got {ext_args.load_path!r}."
            )
        self._load_path = os.fspath(ext_args.load_path)

    def __call__(self, engine: Any) -> None:
        if self._load_path == "":
            return
        state = dict(load_checkpoint(self._load_path))
        last_iter, last_step = state.pop("last_iter", None), state.pop("last_step", None)
        held = copy.deepcopy(engine.policy.state_dict())
        try:
            engine.policy.load_state_dict(state)
        except Exception as e:  # noqa: BLE001 - torch copies what fits before it raises: undo that
            engine.policy.load_state_dict(held)
            raise DataFormatError(
                f"Checkpoint '{self._load_path}' does not fit this policy ({type(e).__name__}: {e}). Nothing "
                "was loaded: load a checkpoint of the same policy.model config."
            ) from e
        if last_iter is not None:
            engine.last_iter.update(int(last_iter))
        if last_step is not None:
            engine.collector_envstep = int(last_step)
        engine.info(
            f"loaded checkpoint {self._load_path} (iteration {engine.last_iter.val}, "
            f"collector envstep {engine.collector_envstep})"
        )


class SaveCkptHook(LearnerHook):
    """Save a checkpoint every ``ext_args['freq']`` iterations (default 1). After the run
    (position ``after_run``) the file is ``ckpt_final.pth.tar``; only rank 0 saves."""

    def __init__(self, *args: Any, ext_args: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        ext_args = check_ext_args(self, ext_args, known=("freq",))
        self._freq = _freq(self, ext_args.get("freq", 1))

    def __call__(self, engine: Any) -> None:
        if engine.rank != 0 or engine.last_iter.val % self._freq != 0:
            return
        path = engine.save_checkpoint("ckpt_final.pth.tar" if self.position == "after_run" else None)
        logger.debug("[%s] saved checkpoint %s", engine.instance_name, path)


class LogShowHook(LearnerHook):
    """Every ``ext_args['freq']`` iterations (default 1), rank 0 writes the mean of the policy's
    reported values to the log and TensorBoard; every rank then clears its log buffer."""

    def __init__(self, *args: Any, ext_args: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        ext_args = check_ext_args(self, ext_args, known=("freq",))
        self._freq = _freq(self, ext_args.get("freq", 1))

    def __call__(self, engine: Any) -> None:
        iteration = engine.last_iter.val
        if engine.rank != 0:
            engine.log_buffer.clear()
            return
        if iteration % self._freq != 0:
            return
        means = engine.log_buffer.means_and_clear()
        if not means:
            return
        metrics.log_scalars(
            engine.tb_logger, {metrics.learner_key(k): v for k, v in means.items()}, iteration
        )
        engine.info(f"iter {iteration} " + " ".join(f"{k}={v:.4g}" for k, v in means.items()))


class LogReduceHook(LearnerHook):
    """Average the latest iteration's reported values over all ranks of the torch.distributed
    process group, so that rank 0 logs the mean of every learner. One process: nothing to do."""

    def __init__(self, *args: Any, ext_args: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        check_ext_args(self, ext_args, known=())

    def __call__(self, engine: Any) -> None:
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            if engine.world_size > 1:
                raise ConfigError(
                    f"Learner '{engine.instance_name}' has world size {engine.world_size} but "
                    "torch.distributed has no process group, so the log values cannot be reduced. Call "
                    "torch.distributed.init_process_group(...) before training, or drop dist_info."
                )
            return
        latest = engine.log_buffer.latest
        keys = sorted(latest)
        device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else "cpu"
        values = torch.tensor([latest[k] for k in keys], dtype=torch.float64, device=device)
        dist.all_reduce(values)
        values /= dist.get_world_size()
        engine.log_buffer.replace_latest(dict(zip(keys, values.cpu().tolist())))


def load_checkpoint(path: str) -> dict[str, Any]:
    """``torch.load`` with ``weights_only=True``: tensors and plain containers only, never code."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Checkpoint '{path}' does not exist.")
    try:
        with zipfile.ZipFile(path) as archive:  # torch.save writes a zip with a CRC-32 per record
            damaged = archive.testzip()
            # directory fields that Python's zipfile skips and torch's reader does not: torch writes 0
            odd = [i.filename for i in archive.infolist() if i.internal_attr or i.external_attr or i.volume]
        if damaged is not None:
            raise DataFormatError(f"record '{damaged}' fails its CRC-32 check")
        if odd:
            raise DataFormatError(f"the zip directory entry of '{odd[0]}' is damaged")
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - torch raises several types for bad files
        raise DataFormatError(
            f"Checkpoint '{path}' cannot be loaded as weights ({type(e).__name__}: {e}). It may be "
            "truncated or damaged, or hold pickled objects other than tensors; ding_ray never unpickles "
            "code. Nothing was loaded: point load_ckpt_before_run at another checkpoint (an earlier "
            "iteration_*.pth.tar), or set it to '' to start afresh."
        ) from e
