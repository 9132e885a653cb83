"""The process side of the subprocess env managers: one env per process, driven over a pipe.

Protocol: a worker first says ``("ready", None)`` once its env is built (or sends the error and
ends). Then the parent sends ``(command, argument)`` and gets exactly one ``(status, payload)``
back, ``status`` being ``"ok"`` or ``"error"`` (payload ``(repr, traceback)``). Commands:
``reset`` (argument: ``(seed, dynamic_seed)`` to apply first, or None), ``step`` (argument:
``(action, reset_if_done)``), ``enable_save_replay``, ``disable_save_replay`` and ``close``.
An observation that fits the env's shared-memory buffer is written there and travels as an
``InShm`` marker; anything else is pickled through the pipe. This module imports neither torch
nor ray: a worker stays small.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import traceback
from collections.abc import Mapping
from typing import Any

import numpy as np

from ding_ray.errors import ConfigError


class InShm:
    """Marks an observation that was written into the shared-memory buffer."""


IN_SHM = InShm()  # pickled afresh for each answer: the parent tests isinstance, not identity


class ObsBuffer:
    """Shared memory for one env's observation: an array, or a dict of arrays for Dict spaces.

    Built in the parent and handed to the worker at start, so a replacement worker reuses it.
    """

    def __init__(self, ctx: Any, space: Any) -> None:
        layout = _layout(space)
        if layout is None:
            raise ConfigError(
                f"env.manager.shared_memory=True needs an observation space of fixed shape and dtype "
                f"(Box, Discrete, MultiBinary, MultiDiscrete or a Dict of them); got {space}. "
                "Set env.manager.shared_memory=False to send observations through the pipe."
            )
        self._layout = layout
        self._raw = {
            k: ctx.RawArray("b", max(1, int(np.prod(s)) * d.itemsize)) for k, (s, d) in layout.items()
        }
        self._arrays: dict | None = None

    def __getstate__(self) -> dict:
        return {"_layout": self._layout, "_raw": self._raw, "_arrays": None}

    def _views(self) -> dict:
        if self._arrays is None:
            self._arrays = {
                k: np.frombuffer(self._raw[k], dtype=d, count=int(np.prod(s))).reshape(s)
                for k, (s, d) in self._layout.items()
            }
        return self._arrays

    def fill(self, obs: Any) -> bool:
        """Write ``obs`` if it has exactly the buffer's shapes and dtypes; False leaves it to the pipe."""
        if None in self._layout:
            parts = {None: obs}
        elif isinstance(obs, Mapping) and set(obs) == set(self._layout):
            parts = obs
        else:
            return False
        views = self._views()
        for k, value in parts.items():
            v = views[k]
            if not (isinstance(value, np.ndarray) and value.shape == v.shape and value.dtype == v.dtype):
                return False
        for k, value in parts.items():
            views[k][...] = value
        return True

    def get(self, copy: bool) -> Any:
        views = self._views()
        out = {k: (v.copy() if copy else v) for k, v in views.items()}
        return out[None] if None in out else out


def _layout(space: Any) -> dict | None:
    """``{key: (shape, dtype)}`` (key None for a plain space), or None if the space has no fixed layout."""
    spaces = getattr(space, "spaces", None)
    if isinstance(spaces, Mapping):
        parts = {k: _layout(s) for k, s in spaces.items()}
        if any(p is None or None not in p for p in parts.values()):
            return None  # nested dicts or parts of no fixed layout
        return {k: p[None] for k, p in parts.items()}
    shape, dtype = getattr(space, "shape", None), getattr(space, "dtype", None)
    if shape is None or dtype is None:
        return None
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        return None
    return {None: (tuple(shape), dtype)}


def send_message(conn: Any, message: Any) -> None:
    """Plain pickle over the pipe: cheaper than ``Connection.send``'s pickler, and nothing in a
    message needs what that one adds (passing handles)."""
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def recv_message(conn: Any) -> Any:
    return pickle.loads(conn.recv_bytes())


def _pack(buffer: ObsBuffer | None, obs: Any) -> Any:
    return IN_SHM if buffer is not None and buffer.fill(obs) else obs


def _prepare_process(die_with_parent: bool, gym_specs: list[bytes]) -> None:
    """Settings of a fresh worker: one thread for numeric libraries, Ctrl-C left to the parent,
    and the gymnasium ids the parent registered at run time (a spawned process lacks them)."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if die_with_parent and sys.platform.startswith("linux"):
        # Under forkserver the parent is the fork server, which exits with the manager's process:
        # then the kernel kills this worker too, even if it hangs inside the env.
        try:
            import ctypes

            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if gym_specs:
        import gymnasium as gym

        for blob in gym_specs:
            try:
                spec = pickle.loads(blob)
            except Exception:  # noqa: BLE001 - an id this worker cannot rebuild; its env may not need it
                continue
            gym.envs.registry.setdefault(spec.id, spec)


def _limit_torch_threads() -> None:
    if "torch" in sys.modules:  # only if the env itself imported it
        sys.modules["torch"].set_num_threads(1)


def _error(e: BaseException) -> tuple[str, tuple[str, str]]:
    return "error", (repr(e), traceback.format_exc())


def worker_main(
    conn: Any,
    env_fn_blob: bytes,
    buffer: ObsBuffer | None,
    replay_path: str | None,
    die_with_parent: bool,
    gym_specs: list[bytes],
) -> None:
    """Build the env from its pickled factory, then answer commands until ``close`` or the pipe ends."""
    _prepare_process(die_with_parent, gym_specs)
    try:
        env = pickle.loads(env_fn_blob)()
        if replay_path is not None:
            env.enable_save_replay(replay_path)
    except Exception as e:  # noqa: BLE001 - the parent counts it and starts another worker
        send_message(conn, _error(e))
        return
    _limit_torch_threads()
    send_message(conn, ("ready", None))
    while True:
        try:
            command, arg = recv_message(conn)
        except (EOFError, OSError):  # the parent has gone
            break
        if command == "close":
            try:
                env.close()
            finally:
                send_message(conn, ("ok", None))
            break
        try:
            reply = "ok", _run(env, buffer, command, arg)
        except Exception as e:  # noqa: BLE001 - the env's error goes to the parent, which isolates it
            reply = _error(e)
        try:
            send_message(conn, reply)
        except Exception as e:  # noqa: BLE001 - e.g. an info dict that cannot be pickled
            send_message(conn, _error(e))


def _run(env: Any, buffer: ObsBuffer | None, command: str, arg: Any) -> Any:
    if command == "step":
        action, reset_if_done = arg
        timestep = env.step(action)
        if not (reset_if_done and timestep.done):
            return timestep._replace(obs=_pack(buffer, timestep.obs)), None
        # reset_inplace: the final observation goes through the pipe, the first one of the next
        # episode through shared memory, both in this one answer.
        try:
            reset = "ok", _pack(buffer, env.reset())
        except Exception as e:  # noqa: BLE001 - the step itself went well; the parent retries the reset
            reset = _error(e)
        return timestep, reset
    if command == "reset":
        if arg is not None:
            env.seed(*arg)
        return _pack(buffer, env.reset())
    if command == "enable_save_replay":
        env.enable_save_replay(arg)
        return None
    if command == "disable_save_replay":
        if not callable(getattr(env, "disable_save_replay", None)):
            raise AttributeError(
                f"{type(env).__name__} has no disable_save_replay(); it cannot stop saving replays."
            )
        env.disable_save_replay()
        return None
    raise ValueError(f"unknown env worker command {command!r}")
