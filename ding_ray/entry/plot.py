"""Learning curves of runs from their TensorBoard files: the evaluator's mean return against env
steps or wall time, one curve per experiment, mean and spread over its seeds (``ding-ray plot``).

Needs matplotlib and tensorboard (``pip install "ding_ray[plot]"``), imported only here.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

import numpy as np

from ding_ray.errors import DingRayError
from ding_ray.worker.metrics import EVAL_RETURN_MEAN

X_AXES = ("env_step", "wall_time")
SPREADS = ("minmax", "std")
_RENEWED = re.compile(r"_\d{6}_\d{6}(_\d+)?$")  # compile_config's renew_dir suffix
_SEED = re.compile(r"_seed\d+$")


@dataclass
class Curve:
    """One run's evaluations: x (env steps or seconds from the run's start) and mean returns;
    ``cut_short``: its events files that end in a record cut off half-way."""

    run_dir: str
    x: np.ndarray
    y: np.ndarray
    stop_value: float | None
    cut_short: list[str]


def cut_short_at(path: str) -> int | None:
    """The byte where an events file's last, incomplete record starts (None: every record is whole).

    A TensorBoard events file is a run of records ``length (8 bytes), its CRC (4), data, data CRC
    (4)``; a file cut short (a disk that filled, a copy broken off) ends inside one, and TensorBoard's
    reader stops there without a word."""
    size = os.path.getsize(path)
    pos = 0
    with open(path, "rb") as f:
        while pos < size:
            head = f.read(8)
            if len(head) < 8:
                return pos
            end = pos + 8 + 4 + int.from_bytes(head, "little") + 4
            if end > size:
                return pos
            f.seek(end)
            pos = end
    return None


def _event_dirs(run_dir: str) -> list[str]:
    """Folders under ``<run_dir>/log`` with TensorBoard event files of training (``log/serial``,
    ``log/ray``); the ``eval`` entry's own logs are left out, they are no part of the curve."""
    found = []
    for root, dirs, files in os.walk(os.path.join(run_dir, "log")):
        dirs[:] = sorted(d for d in dirs if d != "eval")
        if any(f.startswith("events.out.tfevents") for f in files):
            found.append(root)
    return found


def _event_accumulator():
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError as e:
        raise DingRayError(
            f'ding-ray plot reads TensorBoard files with tensorboard ({e}): pip install "ding_ray[plot]"'
        ) from e
    return EventAccumulator


def read_curve(run_dir: str, x_axis: str = "env_step") -> Curve:
    """The evaluator's mean return over the run in ``run_dir``."""
    if not os.path.isdir(run_dir):
        raise DingRayError(f"Run folder '{run_dir}' does not exist; pass the exp_name folder of a run.")
    event_accumulator = _event_accumulator()
    xs: list[float] = []
    ys: list[float] = []
    cut_short = []
    for folder in _event_dirs(run_dir):
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name.startswith("events.out.tfevents") and cut_short_at(path) is not None:
                cut_short.append(path)
        acc = event_accumulator(folder, size_guidance={"scalars": 0})
        acc.Reload()
        if EVAL_RETURN_MEAN not in acc.Tags().get("scalars", []):
            continue
        start = acc.FirstEventTimestamp()
        for event in acc.Scalars(EVAL_RETURN_MEAN):
            xs.append(event.step if x_axis == "env_step" else event.wall_time - start)
            ys.append(event.value)
    if not xs:
        raise DingRayError(
            f"No '{EVAL_RETURN_MEAN}' values in the TensorBoard files under '{run_dir}': the run "
            "made no evaluation yet, or the folder is not a run's exp_name folder."
        )
    order = np.argsort(xs, kind="stable")
    return Curve(run_dir, np.asarray(xs)[order], np.asarray(ys)[order], _stop_value(run_dir), cut_short)


def _stop_value(run_dir: str) -> float | None:
    path = os.path.join(run_dir, "total_config.json")
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        value = (json.load(f).get("env") or {}).get("stop_value")
    return float(value) if isinstance(value, (int, float)) else None


def experiment_name(run_dir: str) -> str:
    """The run's experiment without seed and renewal suffixes: seeds of one experiment share it."""
    name = os.path.basename(os.path.normpath(run_dir))
    return _SEED.sub("", _RENEWED.sub("", name))


def aggregate(curves: list[Curve], num_points: int = 200, spread: str = "minmax"):
    """Mean, lower and upper bound of ``curves`` on a common x grid ``(x, mean, low, high)``.

    Each run is interpolated linearly between its evaluations; past its last one (a run that
    stopped at its stop value, or a shorter budget) it keeps its last value.
    """
    x_max = max(float(c.x[-1]) for c in curves)
    x_min = min(float(c.x[0]) for c in curves)
    grid = np.linspace(x_min, x_max, num_points) if x_max > x_min else np.asarray([x_min])
    values = np.stack([np.interp(grid, c.x, c.y) for c in curves])
    mean = values.mean(axis=0)
    if spread == "std":
        std = values.std(axis=0)
        return grid, mean, mean - std, mean + std
    return grid, mean, values.min(axis=0), values.max(axis=0)


def plot_runs(
    run_dirs: list[str],
    out: str,
    x_axis: str = "env_step",
    spread: str = "minmax",
    title: str | None = None,
) -> list[str]:
    """Draw the runs' curves into the PNG ``out``, one curve per experiment (runs grouped by
    ``experiment_name``); return one summary line per experiment."""
    if x_axis not in X_AXES:
        raise DingRayError(f"x axis must be one of {X_AXES}, got '{x_axis}'.")
    curves = [read_curve(d, x_axis) for d in run_dirs]
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise DingRayError(f'ding-ray plot needs matplotlib ({e}): pip install "ding_ray[plot]"') from e

    groups: dict[str, list[Curve]] = {}
    for curve in curves:
        groups.setdefault(experiment_name(curve.run_dir), []).append(curve)
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    lines = []
    for i, (name, members) in enumerate(groups.items()):
        color = f"C{i}"
        grid, mean, low, high = aggregate(members, spread=spread)
        single = os.path.basename(os.path.normpath(members[0].run_dir))
        label = single if len(members) == 1 else f"{name} (mean of {len(members)} runs, {spread})"
        ax.plot(grid, mean, color=color, label=label, linewidth=2)
        if len(members) > 1:
            ax.fill_between(grid, low, high, color=color, alpha=0.2, linewidth=0)
            for c in members:
                ax.plot(c.x, c.y, color=color, alpha=0.35, linewidth=0.8)
        else:
            ax.plot(members[0].x, members[0].y, "o", color=color, markersize=3)
        lines.append(_summary(name, members, x_axis))
    for curve in curves:
        for path in curve.cut_short:
            lines.append(
                f"warning: {path} ends in a record cut off at byte {cut_short_at(path)} of "
                f"{os.path.getsize(path)} (the file was cut short: a full disk, a broken copy); the "
                "curve of its run stops at its last whole record"
            )
    for value in sorted({c.stop_value for c in curves if c.stop_value is not None}):
        ax.axhline(value, color="gray", linestyle="--", linewidth=1, label=f"stop value {value:g}")
    ax.set_xlabel("env steps" if x_axis == "env_step" else "wall time (s)")
    ax.set_ylabel("evaluation return (mean over episodes)")
    ax.set_title(title or ", ".join(groups))
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return lines


def _summary(name: str, members: list[Curve], x_axis: str) -> str:
    unit = "env steps" if x_axis == "env_step" else "s"
    parts = []
    for c in members:
        text = f"{os.path.basename(os.path.normpath(c.run_dir))}: {len(c.y)} evaluations, best {c.y.max():g}"
        if c.stop_value is not None:
            reached = np.nonzero(c.y >= c.stop_value)[0]
            if reached.size:
                at = c.x[reached[0]]
                at_text = str(int(at)) if x_axis == "env_step" else f"{at:.1f}"
                text += f", reached {c.stop_value:g} at {at_text} {unit}"
            else:
                text += f", did not reach {c.stop_value:g}"
        parts.append(text)
    return f"{name}: " + "; ".join(parts)
