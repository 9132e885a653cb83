"""DI-engine 0.5.3's own wheel, read as data: its dizoo config files and its example scripts.

Nothing of DI-engine is copied into this repository. ``.ci/run`` downloads the wheel (``pip download
--no-deps DI-engine==0.5.3``) into ``.cache/di-engine``; when it is not there the first test that
needs it downloads it the same way. Only the env type and id of a config change: dizoo's env
classes are DI-engine's, so each maps onto the gymnasium id that env wraps.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from easydict import EasyDict

from ding_ray.compat.dizoo_envs import gymnasium_config
from ding_ray.config.compile import read_python_config

VERSION = "0.5.3"
CACHE = Path(os.environ.get("DING_RAY_DI_ENGINE_CACHE", Path(__file__).parents[2] / ".cache" / "di-engine"))


def wheel_root() -> Path:
    """The unpacked DI-engine wheel (``ding/`` and ``dizoo/`` inside), downloaded once."""
    root = CACHE / f"DI_engine-{VERSION}"
    if (root / "dizoo").is_dir():
        return root
    CACHE.mkdir(parents=True, exist_ok=True)
    wheels = list(CACHE.glob(f"DI_engine-{VERSION}-*.whl"))
    if not wheels:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"DI-engine=={VERSION}"]
            + ["-d", str(CACHE)],
            check=True,
        )
        wheels = list(CACHE.glob(f"DI_engine-{VERSION}-*.whl"))
    tmp = CACHE / f"unpacking-{os.getpid()}"
    with zipfile.ZipFile(wheels[0]) as wheel:
        wheel.extractall(tmp)
    try:
        tmp.rename(root)
    except OSError:  # another process unpacked it first
        pass
    return root


def read_dizoo_config(relpath: str) -> tuple[EasyDict, EasyDict]:
    """``(main_config, create_config)`` of ``dizoo/<relpath>``, changed only in the env type
    (``'gymnasium'``, or ding_ray's ``'atari'`` for an Atari config; ``import_names`` dropped) and
    ``env.env_id`` (for Ant, with the ``env.kwargs`` that make gymnasium's Ant the observation of
    gym's Ant-v3)."""
    return gymnasium_config(*read_python_config(str(wheel_root() / "dizoo" / relpath)))


def example_script(name: str) -> str:
    """The source of ``ding/example/<name>`` in the wheel."""
    return (wheel_root() / "ding" / "example" / name).read_text()


def dizoo_source(relpath: str) -> str:
    """The source of ``dizoo/<relpath>`` in the wheel (an entry script, e.g. ``*_main.py``)."""
    return (wheel_root() / "dizoo" / relpath).read_text()
