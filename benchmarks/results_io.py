"""The one writer of benchmark results: ``benchmarks/results/<name>.json``, one file per result.

Every bench script ends with ``write_result(name, figures, reference=..., ratio=...)``. The file
records what was measured and how to measure it again:

- ``name``, ``script``: the result's name and the script that wrote it (``benchmarks/<file>.py``);
- ``date``, ``commit``: the day and the tree (``+dirty`` when ding_ray, benchmarks or examples had
  uncommitted changes);
- ``machine``: CPU count and model, GPU, platform, Python and the versions of torch, ray, numpy and
  gymnasium;
- ``command``: the exact command line, ``python benchmarks/<file>.py <options>``;
- ``figures``: the measurements, a mapping or a list of records (one per run, setting or side);
- ``reference``: what the figures are compared with, measured in the same run (a bare loop, a
  textbook implementation, another library), or why there is none;
- ``ratio``: the comparisons, each named ``"ours/reference"`` (empty when there is no reference).

``docs/gen_benchmarks.py`` renders every file on the documentation's benchmarks page. Set
``DING_RAY_BENCH_RESULTS`` to another folder for a trial run that must not replace a recorded result.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
FOLDER_VARIABLE = "DING_RAY_BENCH_RESULTS"
FIELDS = ("name", "script", "date", "commit", "machine", "command", "figures", "reference", "ratio")
NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")


def results_folder() -> Path:
    """Where results go: ``$DING_RAY_BENCH_RESULTS`` if set, else ``benchmarks/results``."""
    return Path(os.environ.get(FOLDER_VARIABLE) or RESULTS)


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit() -> str:
    """The measured tree's short commit, ``+dirty`` with uncommitted changes to what runs."""
    try:
        head = _git("rev-parse", "--short", "HEAD")
        # the results written so far are no change to what runs
        dirty = _git(
            "status", "--porcelain", "--", "ding_ray", "benchmarks", "examples", ":!benchmarks/results"
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + ("+dirty" if dirty else "")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpu() -> str:
    """The GPUs ``nvidia-smi`` lists, or ``none``."""
    if shutil.which("nvidia-smi") is None:
        return "none"
    done = subprocess.run(
        ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True
    )
    names = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return ", ".join(names) if done.returncode == 0 and names else "none"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine() -> dict[str, object]:
    """What the figures depend on besides the code: cores, CPU, GPU, platform and versions."""
    info: dict[str, object] = {
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "gpu": _gpu(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    for package in ("torch", "ray", "numpy", "gymnasium"):
        info[package] = _version(package)
    return info


def command_line(argv: Sequence[str] | None = None) -> tuple[str, str]:
    """``(script, command)``: the script's path in the repository and the command that ran it."""
    argv = list(sys.argv if argv is None else argv)
    path = Path(argv[0]).resolve()
    script = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)
    return script, shlex.join(["python", script, *argv[1:]])


def problems(record: object) -> list[str]:
    """What keeps ``record`` (a result file's content) from being a result; empty when it is one."""
    if not isinstance(record, Mapping):
        return [f"a result is a JSON object, not {type(record).__name__}"]
    found = [f"no {field!r}" for field in FIELDS if field not in record]
    figures, ratio = record.get("figures"), record.get("ratio", {})
    if "figures" in record and not (isinstance(figures, (Mapping, list)) and figures):
        found.append("'figures' is not a non-empty mapping or list")
    if "reference" in record and not (isinstance(record["reference"], str) and record["reference"].strip()):
        found.append("'reference' is not a sentence (say what the figures are compared with, or why nothing)")
    if not isinstance(ratio, Mapping) or not all(
        isinstance(v, (int, float)) or v is None for v in ratio.values()
    ):
        found.append("'ratio' is not a mapping of names to numbers")
    if not isinstance(record.get("machine", {}), Mapping):
        found.append("'machine' is not a mapping")
    if "command" in record and not str(record["command"]).startswith("python benchmarks/"):
        found.append("'command' does not start with 'python benchmarks/'")
    return found


def _plain(value: object) -> object:
    """numpy scalars and arrays as JSON numbers and lists."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON data: pass numbers, strings, lists or dicts")


def write_result(
    name: str,
    figures: Mapping | list,
    *,
    reference: str,
    ratio: Mapping[str, float | None],
    argv: Sequence[str] | None = None,
) -> Path:
    """Write ``<results folder>/<name>.json`` (see the module docstring) and say where.

    Args:
        name: the file's name without ``.json``: lowercase letters, digits, ``_``, ``.`` and ``-``.
        figures: the measurements (a mapping, or a list of records).
        reference: what the figures are compared with, measured in the same run, or why nothing is.
        ratio: ``{"ours/reference": value}``; ``{}`` when there is no reference.
        argv: the command line (default ``sys.argv``); its first item is the script.
    """
    if not NAME.fullmatch(name):
        raise ValueError(f"result name {name!r}: use lowercase letters, digits, '_', '.' and '-'")
    script, command = command_line(argv)
    record = {
        "name": name,
        "script": script,
        "date": datetime.date.today().isoformat(),
        "commit": commit(),
        "machine": machine(),
        "command": command,
        "figures": figures,
        "reference": reference,
        "ratio": dict(ratio),
    }
    found = problems(record)
    if found:
        raise ValueError(f"result {name!r} not written: " + "; ".join(found))
    text = json.dumps(record, indent=1, default=_plain) + "\n"
    folder = results_folder()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(text)
    print(f"results written to {path}", flush=True)
    return path
