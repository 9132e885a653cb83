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

from ding_ray.config.compile import read_python_config

VERSION = "0.5.3"
CACHE = Path(os.environ.get("DING_RAY_DI_ENGINE_CACHE", Path(__file__).parents[2] / ".cache" / "di-engine"))

# dizoo env type -> (old gymnasium id -> the id gymnasium 1.x registers); None: the id dizoo's env
# class uses when the config names none
_ENV_IDS = {
    "cartpole": {None: "CartPole-v0"},
    "pendulum": {None: "Pendulum-v1"},
    "acrobot": {"Acrobot-v1": "Acrobot-v1"},
    "lunarlander": {
        "LunarLander-v2": "LunarLander-v3",
        "LunarLanderContinuous-v2": "LunarLanderContinuous-v3",
    },
    "bipedalwalker": {None: "BipedalWalker-v3", "BipedalWalker-v3": "BipedalWalker-v3"},
    "carracing": {"CarRacing-v2": "CarRacing-v3"},
}


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


# dizoo's MuJoCo configs name gym's v3 ids, which need mujoco-py; gymnasium 1.x runs v4 and v5 on the
# mujoco bindings. v5 is the same task except Ant: v3's 111 observation features (contact forces of
# every body, the world's too) are only in v4 with use_contact_forces=True (v5 has 105).
_MUJOCO_KWARGS = {"Ant": ("Ant-v4", {"use_contact_forces": True})}


def gymnasium_env(env_type: str, env_id: str | None) -> tuple[str, dict]:
    """The gymnasium id (and ``gymnasium.make`` arguments) of the env that a dizoo env type and the
    ``env.env_id`` of its config stand for."""
    if env_type == "mujoco":
        name = env_id.rsplit("-v", 1)[0]
        return _MUJOCO_KWARGS.get(name, (name + "-v5", {}))
    ids = _ENV_IDS[env_type]
    return (ids[env_id] if env_id in ids else ids[None]), {}


def gymnasium_id(env_type: str, env_id: str | None) -> str:
    """The gymnasium id of a dizoo env type and the ``env.env_id`` its config gives."""
    return gymnasium_env(env_type, env_id)[0]


def read_dizoo_config(relpath: str) -> tuple[EasyDict, EasyDict]:
    """``(main_config, create_config)`` of ``dizoo/<relpath>``, changed only in the env type
    (``'gymnasium'``, or ding_ray's ``'atari'`` for an Atari config; ``import_names`` dropped) and
    ``env.env_id`` (for Ant, with the ``env.kwargs`` that make gymnasium's Ant the observation of
    gym's Ant-v3)."""
    main, create = read_python_config(str(wheel_root() / "dizoo" / relpath))
    if create.env.type == "atari":  # ding_ray has the type, with DI-engine's keys, and ale-py's ids
        create.env = EasyDict(type="atari")
        return main, create
    main.env.env_id, kwargs = gymnasium_env(create.env.type, main.env.get("env_id"))
    if kwargs:
        main.env.kwargs = kwargs
    create.env = EasyDict(type="gymnasium")
    return main, create


def example_script(name: str) -> str:
    """The source of ``ding/example/<name>`` in the wheel."""
    return (wheel_root() / "ding" / "example" / name).read_text()


def dizoo_source(relpath: str) -> str:
    """The source of ``dizoo/<relpath>`` in the wheel (an entry script, e.g. ``*_main.py``)."""
    return (wheel_root() / "dizoo" / relpath).read_text()
