"""The worker processes of the subprocess env managers (one env each, driven over a pipe), and
the parent's handle on them.

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
import select
import signal
import sys
import time
import traceback
from multiprocessing.connection import wait as wait_connections
from typing import Any

from ding_ray.envs.shared_obs import IN_SHM, ObsBuffer
from ding_ray.errors import EnvError


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
        # The parent is the manager's process (fork) or the fork server, which exits with it: then
        # the kernel kills this worker too, even if it hangs inside the env.
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
    if command == "reward_shaping":
        if not callable(getattr(env, "reward_shaping", None)):
            raise AttributeError(f"{type(env).__name__} has no reward_shaping(transitions) method.")
        return env.reward_shaping(arg)
    raise ValueError(f"unknown env worker command {command!r}")


# ----- the parent's side -------------------------------------------------------------------------
class EnvWorker:
    """The parent's handle on one env process."""

    def __init__(self, ctx: Any, name: str, args: tuple) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=worker_main, args=(child, *args), daemon=True, name=name)
        self.process.start()
        child.close()  # so the parent sees EOF when the worker dies
        self.fresh = True  # has not said "ready" yet

    def send_bytes(self, blob: bytes) -> None:
        try:
            self.conn.send_bytes(blob)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the worker died; the pipe now reads EOF and the poll reports the failure

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()


def dumps(message: Any) -> bytes:
    return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)


def readable(conns: dict, timeout: float | None) -> list:
    """The values of ``conns`` whose connection has something to read (or has been closed)."""
    if not hasattr(select, "poll"):  # Windows
        return [conns[c] for c in wait_connections(list(conns), timeout)]
    # One poll object per call: a few microseconds, where Connection.wait's selector costs tens.
    by_fd = {c.fileno(): v for c, v in conns.items()}
    poller = select.poll()
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    return [by_fd[fd] for fd, _ in poller.poll(None if timeout is None else timeout * 1000.0)]


def kill_workers(workers: list[EnvWorker | None]) -> None:
    """Finalizer of a manager that was garbage-collected (or alive at exit) without ``close``."""
    for w in workers:
        if w is not None:
            w.kill()


def dumps_env_fn(env_fn: Any) -> bytes:
    try:
        return pickle.dumps(env_fn)
    except Exception as e:  # noqa: BLE001 - lambdas and local functions: try cloudpickle
        try:
            import cloudpickle
        except ImportError:
            raise EnvError(
                f"A subprocess env manager sends each env factory to its worker by pickling; {env_fn!r} "
                f"cannot be pickled ({e}). Use functools.partial of a module-level class or function."
            ) from e
        return cloudpickle.dumps(env_fn)


def portable_gym_specs() -> list[bytes]:
    """Pickled gymnasium specs registered outside gymnasium itself (a fresh worker lacks them).

    An entry point pickle cannot name goes by value (``dumps_env_fn``): a lambda, or in a Ray actor
    an env class of the driver's script, which came by value and is not in this process's ``__main__``.
    """
    import gymnasium as gym

    blobs = []
    for spec in gym.envs.registry.values():
        if isinstance(spec.entry_point, str) and spec.entry_point.startswith("gymnasium."):
            continue
        try:
            blobs.append(dumps_env_fn(spec))
        except Exception:  # noqa: BLE001 - not even by value; only 'fork' can carry it
            continue
    return blobs


def call_one(worker: EnvWorker, command: str, arg: Any) -> Any:
    """Run ``command`` in one idle worker and return its answer (an env error becomes EnvError)."""
    worker.send_bytes(dumps((command, arg)))
    try:
        status, payload = recv_message(worker.conn)
    except (EOFError, OSError) as e:
        raise EnvError(f"{command}: the env worker process died: {e!r}") from e
    if status != "ok":
        raise EnvError(f"{command} failed in the env worker: {payload[0]}\n{payload[1]}")
    return payload


def call_all(workers: list[EnvWorker], command: str, arg: Any) -> None:
    """Run ``command`` in every (idle) worker and wait for all; raise one error naming each failure."""
    for w in workers:
        w.send_bytes(dumps((command, arg)))
    errors = []
    for i, w in enumerate(workers):
        try:
            status, payload = recv_message(w.conn)
        except (EOFError, OSError) as e:
            status, payload = "error", (f"worker process died: {e!r}", "")
        if status != "ok":
            errors.append(f"env {i}: {payload[0]}\n{payload[1]}")
    if errors:
        raise EnvError(f"{command} failed in the env workers:\n" + "\n".join(errors))


def end_workers(workers: list[EnvWorker], grace_s: float) -> None:
    """Ask every worker to close; kill those still running ``grace_s`` seconds later."""
    for w in workers:
        w.send_bytes(dumps(("close", None)))
    end = time.monotonic() + grace_s
    for w in workers:
        w.process.join(timeout=max(0.0, end - time.monotonic()))
        w.kill()
