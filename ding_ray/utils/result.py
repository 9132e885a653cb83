"""``result.json``: the record every pipeline (serial or on Ray) writes at the end of a run."""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)


def write_result(
    exp_name: str,
    *,
    env_steps: int,
    train_iter: int,
    best_eval_return: float | None,
    last_eval_return: float | None,
    stop: bool,
    wall_s: float,
    env_steps_before: int = 0,
    train_iter_before: int = 0,
    **extra: Any,
) -> dict[str, Any]:
    """Write ``<exp_name>/result.json`` (atomically) and return the record. ``*_before``: the counters
    a resumed run started from; its rates count only what this process did in its ``wall_s``."""
    record = {
        "env_steps": int(env_steps),
        "train_iter": int(train_iter),
        "best_eval_return": finite_or_none(best_eval_return),
        "last_eval_return": finite_or_none(last_eval_return),
        "stop": bool(stop),
        "wall_s": round(float(wall_s), 3),
        "env_steps_per_s": round((env_steps - env_steps_before) / max(wall_s, 1e-9), 1),
        "train_iter_per_s": round((train_iter - train_iter_before) / max(wall_s, 1e-9), 1),
        **extra,
    }
    os.makedirs(exp_name, exist_ok=True)
    path = os.path.join(exp_name, "result.json")
    try:
        with open(path + ".tmp", "w") as f:
            json.dump(record, f, indent=2)
        os.replace(path + ".tmp", path)
    finally:
        with contextlib.suppress(FileNotFoundError):  # a full disk leaves no temp file behind
            os.unlink(path + ".tmp")
    return record


def end_of_run(
    save: Callable[[], Any] | None, write: Callable[[BaseException | None], Any], error: BaseException | None
) -> Any:
    """The end of a run, serial or on Ray: ``save`` (the last checkpoint), then ``write``
    (``result.json``) whatever happened, with the run's ``error`` or else ``save``'s; an error of
    ``save`` (a full disk) is raised once ``result.json`` is written. Returns what ``save`` did
    (None when it failed or there was none)."""
    failure, saved = None, None
    if save is not None:
        try:
            saved = save()
        except Exception as err:  # noqa: BLE001 - recorded in result.json, then raised
            logger.error("the run's last checkpoint failed: %s", err)
            failure = err
    write(error if error is not None else failure)
    if failure is not None and error is None:
        raise failure
    return saved


def read_result(exp_name: str) -> dict[str, Any]:
    """The record of the latest run of ``exp_name``: a run into an existing folder writes to a
    renewed ``<exp_name>_<yymmdd_HHMMSS>`` one (DI-engine's ``renew_dir``), so the newest wins."""
    paths = [os.path.join(exp_name, "result.json")] + glob.glob(glob.escape(exp_name) + "_*/result.json")
    paths = [p for p in paths if os.path.isfile(p)]
    if not paths:
        raise FileNotFoundError(f"No result.json for experiment '{exp_name}' (nor a renewed folder of it).")
    with open(max(paths, key=os.path.getmtime)) as f:
        return json.load(f)


def finite_or_none(x: float | None) -> float | None:
    """``x`` as a float, or None when it is missing, NaN or infinite (JSON has no such numbers)."""
    return None if x is None or x != x or x in (float("inf"), float("-inf")) else float(x)


def log_config(tb_logger: Any, cfg: Any) -> None:
    """The resolved config as a TensorBoard text entry (``config``), readable beside the curves."""
    text = json.dumps(cfg, indent=2, sort_keys=True, default=str)
    tb_logger.add_text("config", "```\n" + text + "\n```", 0)  # markdown: keep the indentation
