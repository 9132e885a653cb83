"""DI-engine's ``SyncSubprocessEnvManager`` (``'subprocess'``) and ``AsyncSubprocessEnvManager``
(``'async_subprocess'``): each env steps in a worker process of its own.

Worth it when a step costs far more than a round trip to a worker (0.1-0.2 ms): an env doing
1 ms of CPU work per step ran about 1.7x as fast with 2 workers on 2 cores as in
``BaseEnvManager``; CartPole (microseconds per step) ran about 10x slower, so ``'base'`` stays
the default (``benchmarks/bench_env_manager.py``).

Built as a thin layer over ``multiprocessing`` (one process and one pipe per env, observations
in shared memory), not over ``gymnasium.vector.AsyncVectorEnv``: that class steps the whole
batch together, has one timeout for all envs and closes everything when it passes, resets
with its own autoreset rules, and knows nothing of env ids, so DI-engine's dict interface,
``wait_num``, per-env kill-and-replace on ``step_timeout`` and the final observation kept in
the timestep would all have to be rebuilt around it anyway.

How workers start (the ``context`` key; None picks, see ``default_context``): with ``'fork'``, as
DI-engine does, wherever that is safe, so a script needs no ``if __name__ == "__main__":`` guard
(dizoo's often have none). Forking copies only the calling thread; it is unsafe where another
thread holds something the child then needs: a lock (the child waits for ever) or a descriptor
whose closing someone waits for. The threads of a plain training process are harmless to a
worker, which runs only its env, the pipe and pickle: OpenBLAS's and OpenMP's pools (their fork
handlers reset them), TensorBoard's writer thread (its lock is one the worker never takes),
CUDA's (the worker does not use CUDA). A Ray process is not harmless: its core worker runs
gRPC threads, and its sockets to the raylet, which a forked child would hold open, are how Ray
sees the process end; Ray does not support forking there. So inside Ray (and on systems other
than Linux, where fork is unsafe with system libraries) workers come from ``'forkserver'``, a
clean single-threaded process that imports this package once (a worker still starts in
milliseconds); then, as with ``'spawn'``, a script that builds the manager needs the main guard,
since the fork server imports the main module. Gymnasium ids registered at run time in the
parent (as ``tests/fakes.py`` does) are re-registered in each worker a fork server or spawn
starts. The env factory must be picklable (``functools.partial(GymnasiumEnv, cfg=...)`` is;
``cloudpickle`` is tried for lambdas).
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import pickle
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

from ding_ray.envs.env_manager import SpacesOnlyEnvManager, abnormal_timestep
from ding_ray.envs.gymnasium_env import BaseEnvTimestep
from ding_ray.envs.shared_obs import InShm, ObsBuffer
from ding_ray.envs.subprocess_worker import (
    EnvWorker,
    call_all,
    call_one,
    dumps,
    dumps_env_fn,
    end_workers,
    kill_workers,
    portable_gym_specs,
    readable,
    recv_message,
)
from ding_ray.errors import ConfigError, EnvError
from ding_ray.utils.registry import ENV_MANAGER_REGISTRY

logger = logging.getLogger(__name__)


def default_context() -> str:
    """The start method for ``context=None``: 'fork' on Linux outside Ray, else 'forkserver' (or
    'spawn' where there is none). See the module docstring for why."""
    ray = sys.modules.get("ray")  # never imported here: only a process running Ray has it initialized
    if sys.platform.startswith("linux") and not (ray is not None and ray.is_initialized()):
        return "fork"
    return "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"


_CLOSE_GRACE_S = 2.0  # seconds close() waits for workers to end on their own before killing them


@ENV_MANAGER_REGISTRY.register("async_subprocess")
class AsyncSubprocessEnvManager(SpacesOnlyEnvManager):
    """Each env in its own process; ``step`` returns once ``wait_num`` envs have answered.

    The envs that have not answered stay in flight: they are missing from ``ready_obs`` and
    their timesteps come back from a later ``step``, so a caller keeps per-env state by env id
    (as DI-engine's collectors do). ``ready_obs`` waits until at least one env is ready.
    A worker that raises is isolated as in ``BaseEnvManager``; one that runs past
    ``step_timeout`` / ``reset_timeout`` or dies is killed and replaced by a new process, counted
    in ``error_count``, and its step reported with ``info['abnormal'] = True``.
    """

    config = dict(
        type="async_subprocess",
        shared_memory=True,  # observations of fixed shape and dtype come back through shared memory
        copy_on_get=True,  # copy them out of it (False: views, overwritten by the env's next step)
        # multiprocessing start method: 'fork', 'forkserver' or 'spawn'; None: 'fork' where it is
        # safe (Linux, outside Ray: no main guard needed), else 'forkserver' (see default_context)
        context=None,
        wait_num=2,  # step returns once this many envs have answered ...
        step_wait_timeout=0.01,  # ... and this many seconds have passed (None: wait for all)
        # Seconds a new worker may take to start and build its env; also the bound on a reset's
        # answer when reset_timeout is None (as in DI-engine). Past it the worker is replaced.
        connect_timeout=60.0,
        # Reset a finished env inside its worker in the same round trip as the step. Unlike
        # DI-engine, the timestep still carries the final observation (the next one is in ready_obs).
        reset_inplace=False,
    )
    _envs_where = "runs its envs in worker processes"
    _sync = False  # SyncSubprocessEnvManager: every step and reset finished before step returns

    def _setup(self) -> None:
        cfg = self._cfg
        if cfg.context is not None and cfg.context not in mp.get_all_start_methods():
            raise ConfigError(
                f"env.manager.context={cfg.context!r} is not available here; "
                f"choose one of {mp.get_all_start_methods()}."
            )
        if not cfg.wait_num >= 1:
            raise ConfigError(f"env.manager.wait_num must be >= 1, got {cfg.wait_num}.")
        if cfg.reset_inplace and not cfg.auto_reset:
            raise ConfigError("env.manager.reset_inplace=True needs auto_reset=True (as in DI-engine).")
        if cfg.connect_timeout is None or cfg.connect_timeout <= 0:
            raise ConfigError(
                f"env.manager.connect_timeout must be positive seconds, got {cfg.connect_timeout!r}."
            )
        if cfg.step_wait_timeout is not None and cfg.step_wait_timeout < 0:
            raise ConfigError(
                f"env.manager.step_wait_timeout must be >= 0 or None, got {cfg.step_wait_timeout!r}."
            )
        self.context = cfg.context or default_context()
        self._ctx = mp.get_context(self.context)
        if self.context == "forkserver":
            # Import the worker's modules once in the fork server rather than in every worker.
            self._ctx.set_forkserver_preload(["__main__", "ding_ray.envs.subprocess_worker"])
        self._env_fn_blobs = [dumps_env_fn(fn) for fn in self._env_fn]
        self._gym_specs = portable_gym_specs() if self.context != "fork" else []
        self._read_spaces(self._env_fn[0]())  # read once here: the envs live in the workers
        self._buffers = [
            ObsBuffer(self._ctx, self._observation_space) if cfg.shared_memory else None for _ in self._env_fn
        ]
        self._workers: list[EnvWorker | None] = [None] * self.env_num
        weakref.finalize(self, kill_workers, self._workers)
        self._inflight: dict[int, str] = {}  # env id -> 'step' | 'reset' awaiting an answer
        self._deadline: dict[int, float] = {}
        self._limit: dict[int, float | None] = {}  # each in-flight command's time limit
        self._finished: dict[int, BaseEnvTimestep] = {}  # answered steps not yet returned by step()
        self._last_obs: dict[int, Any] = {}  # the observation each in-flight step acted on
        self._pending_seed: dict[int, tuple[int, bool]] = {}  # applied with the env's next reset
        self._reset_attempts = [0] * self.env_num
        self._closed = True  # no workers until launch

    # ----- properties ---------------------------------------------------------------------------
    @property
    def ready_obs(self) -> dict[int, Any]:
        """Observations of the envs waiting for an action; waits until there is at least one."""
        if self._inflight:
            self._poll(0.0)
            while not self._ready_obs and self._inflight:
                self._poll(None)
        return {i: self._ready_obs[i] for i in sorted(self._ready_obs)}  # by id, as BaseEnvManager

    @property
    def worker_pids(self) -> list[int | None]:
        """Each env's worker process id, by env id, as error messages name it (None before ``launch``
        and after ``close``); a replaced worker has a new one."""
        return [None if w is None else w.process.pid for w in self._workers]

    # ----- lifecycle ------------------------------------------------------------------------------
    def seed(self, seed: int | Sequence[int], dynamic_seed: bool = True) -> None:
        """Env i gets ``seed + i``, applied at its next reset (as DI-engine's managers do)."""
        seeds = [seed + i for i in range(self.env_num)] if isinstance(seed, int) else list(seed)
        self._seeds, self._dynamic_seed = seeds, dynamic_seed
        for i, s in enumerate(seeds):
            self._pending_seed[i] = (s, dynamic_seed)
            self._action_spaces[i].seed(s)

    def _start_envs(self) -> None:
        for i in range(self.env_num):
            self._workers[i] = self._start_worker(i)

    def reset(self, reset_param: dict | None = None) -> None:
        """Reset every env (or those named in ``reset_param``); waits for their first observations.

        Steps of those envs still in flight are waited for and dropped, as in DI-engine.
        """
        if not self._launched:
            return self.launch(reset_param)
        ids = list(range(self.env_num) if reset_param is None else reset_param.keys())
        self._drain(ids)
        self._episode_count = [0] * self.env_num
        for i in ids:
            self._ready_obs.pop(i, None)
            self._finished.pop(i, None)
            if self._seeds is not None and not self._dynamic_seed:
                self._pending_seed[i] = (self._seeds[i], False)
            self._send_reset(i)
        self._drain(ids)

    def step(self, actions: dict[int, Any]) -> dict[int, BaseEnvTimestep]:
        """Send the actions, then gather answers (see the class docstring for which come back)."""
        if not self._launched:
            raise EnvError("Call launch() on the env manager before step().")
        for env_id in actions:
            if env_id not in self._ready_obs:
                raise EnvError(
                    f"env {env_id} has no ready observation (its step or reset is in flight, or it is "
                    "finished); step only the env ids of ready_obs."
                )
        inplace, count, last = self._cfg.reset_inplace, self._episode_count, self._cfg.episode_num
        resets = {i: inplace and count[i] + 1 < last for i in actions}
        messages = [(i, dumps(("step", (a, resets[i])))) for i, a in actions.items()]
        # All writes back to back, bookkeeping after: a worker woken by the first write can take
        # this core, and the next env should be on its way by then.
        for i, blob in messages:
            self._workers[i].send_bytes(blob)
        now = time.monotonic()
        for i, reset_if_done in resets.items():
            self._last_obs[i] = self._ready_obs.pop(i)
            self._track(i, "step", now, self._step_limit(reset_if_done))
        self._gather()
        if self._sync:
            self._drain(list(self._inflight))  # auto resets too: ready_obs is full when step returns
            finished, self._finished = self._finished, {}
            return {i: finished.pop(i) for i in list(actions) if i in finished} | finished
        finished, self._finished = self._finished, {}
        return finished

    def enable_save_replay(self, replay_path: str) -> None:
        """Every env records its episodes under ``replay_path`` (workers started later too)."""
        self._replay_path = replay_path
        self._call_all("enable_save_replay", replay_path)

    def disable_save_replay(self) -> None:
        """Stop recording (the evaluator records only some of its evaluations)."""
        self._replay_path = None
        self._call_all("disable_save_replay", None)

    def reward_shaping(self, env_id: int, transitions: list) -> list:
        """The env's own ``reward_shaping`` of an episode's transitions, run in its worker."""
        self._drain([env_id])
        return call_one(self._workers[env_id], "reward_shaping", transitions)

    def _call_all(self, command: str, arg: Any) -> None:
        if not self._closed:
            self._drain(list(self._inflight))
            call_all(self._workers, command, arg)

    def close(self) -> None:
        """End every worker: ask first, kill what has not ended after a short grace period."""
        if self._closed:
            return
        end_workers([w for w in self._workers if w is not None], _CLOSE_GRACE_S)
        self._workers[:] = [None] * self.env_num  # in place: the finalizer holds this list
        self._inflight.clear()
        self._deadline.clear()
        self._finished.clear()
        self._ready_obs = {}
        self._closed = True
        self._launched = False

    def _env_name(self, env_id: int) -> str:
        return f"env {env_id} ({self._env_repr}, in worker process {self._workers[env_id].process.pid})"

    # ----- workers --------------------------------------------------------------------------------
    def _start_worker(self, env_id: int) -> EnvWorker:
        # The kernel ends a worker with its parent (the fork server, or the thread that forked it;
        # not a thread other than the main one, which may end before the manager does).
        die_with_parent = self.context == "forkserver" or (
            self.context == "fork" and threading.current_thread() is threading.main_thread()
        )
        args = (
            self._env_fn_blobs[env_id],
            self._buffers[env_id],
            self._replay_path,
            die_with_parent,
            self._gym_specs,
        )
        return EnvWorker(self._ctx, f"ding_ray-env-{env_id}", args)

    def _renew(self, env_id: int) -> None:
        """Kill env ``env_id``'s worker and start another, seeded apart from the failed episode."""
        self._workers[env_id].kill()
        self._renewals[env_id] += 1
        self._workers[env_id] = self._start_worker(env_id)
        if self._seeds is not None:
            self._pending_seed[env_id] = (
                self._seeds[env_id] + 1000 * self._renewals[env_id],
                self._dynamic_seed,
            )

    def _reset_limit(self) -> float:
        return self._cfg.reset_timeout if self._cfg.reset_timeout is not None else self._cfg.connect_timeout

    def _step_limit(self, reset_if_done: bool) -> float | None:
        if self._cfg.step_timeout is None:
            return None
        return self._cfg.step_timeout + (self._reset_limit() if reset_if_done else 0.0)

    def _send(self, env_id: int, command: str, arg: Any, now: float, limit: float | None) -> None:
        self._workers[env_id].send_bytes(dumps((command, arg)))
        self._track(env_id, command, now, limit)

    def _track(self, env_id: int, command: str, now: float, limit: float | None) -> None:
        """Note a command sent: its answer is due ``limit`` seconds from ``now``, or from the
        worker's "ready" if it has not started yet (which is due within ``connect_timeout``)."""
        worker = self._workers[env_id]
        self._inflight[env_id] = command
        self._limit[env_id] = limit
        self._deadline.pop(env_id, None)
        if worker.fresh:
            self._deadline[env_id] = now + self._cfg.connect_timeout
        elif limit is not None:
            self._deadline[env_id] = now + limit

    def _send_reset(self, env_id: int) -> None:
        seed = self._pending_seed.pop(env_id, None)
        self._send(env_id, "reset", seed, time.monotonic(), self._reset_limit())

    # ----- answers --------------------------------------------------------------------------------
    def _gather(self) -> None:
        """Wait for step answers: all of them (sync), or ``wait_num`` and ``step_wait_timeout``."""
        in_flight = sum(op == "step" for op in self._inflight.values())
        need = min(self._cfg.wait_num, len(self._finished) + in_flight)
        timeout = None if self._sync else self._cfg.step_wait_timeout
        if self._sync:
            # Every answer is needed: read them in turn, without polling all pipes each time.
            for i in [i for i, op in self._inflight.items() if op == "step"]:
                while self._inflight.get(i) == "step":
                    self._wait_for(i)
            return
        start = time.monotonic()
        while any(op == "step" for op in self._inflight.values()):
            wait = None
            if len(self._finished) >= need and timeout is not None:
                wait = timeout - (time.monotonic() - start)
                if wait <= 0:
                    break
            self._poll(wait)

    def _wait_for(self, env_id: int) -> None:
        """Take in ``env_id``'s answer, or fail it at its deadline."""
        deadline = self._deadline.get(env_id)
        if deadline is None:
            return self._receive(env_id)  # a dead worker's pipe reads EOF: no hang
        if readable({self._workers[env_id].conn: env_id}, max(0.0, deadline - time.monotonic())):
            return self._receive(env_id)
        self._poll(0.0)  # past its deadline: _poll fails it

    def _drain(self, ids: Sequence[int]) -> None:
        """Wait until none of ``ids`` has a step or reset in flight."""
        while any(i in self._inflight for i in ids):
            self._poll(None)

    def _poll(self, timeout: float | None) -> None:
        """Take in the answers that arrive within ``timeout`` (None: the first one), then fail the
        workers past their deadline."""
        if not self._inflight:
            return
        deadlines = [d for i, d in self._deadline.items() if i in self._inflight]
        if deadlines:
            until = max(0.0, min(deadlines) - time.monotonic())
            timeout = until if timeout is None else min(timeout, until)
        for i in readable({self._workers[i].conn: i for i in self._inflight}, timeout):
            self._receive(i)
        now = time.monotonic()
        for i in [i for i in self._inflight if self._deadline.get(i, now + 1) <= now]:
            if self._workers[i].fresh:
                what = f"worker start took longer than connect_timeout={self._cfg.connect_timeout} s"
            else:
                what = f"env {self._inflight[i]} took longer than {self._limit[i]} s"
            self._failed(i, self._end_op(i), f"TimeoutError('{what}; worker killed')", True)

    def _receive(self, env_id: int) -> None:
        worker = self._workers[env_id]
        try:
            status, payload = recv_message(worker.conn)
        except (EOFError, OSError, pickle.UnpicklingError) as e:
            worker.process.join(timeout=1)
            error = f"EnvError('worker process died (exit code {worker.process.exitcode}): {e!r}')"
            return self._failed(env_id, self._end_op(env_id), error, True)
        if worker.fresh:
            if status == "ready":  # now the command's own time limit runs
                worker.fresh = False
                self._deadline.pop(env_id, None)
                if self._limit[env_id] is not None:
                    self._deadline[env_id] = time.monotonic() + self._limit[env_id]
                return
            logger.warning("env %d could not be built in its worker:\n%s", env_id, payload[1])
            return self._failed(env_id, self._end_op(env_id), payload[0], True)
        op = self._end_op(env_id)
        if status != "ok":
            logger.warning("env %d raised in %s:\n%s", env_id, op, payload[1])
            return self._failed(env_id, op, payload[0], False)
        if op == "reset":
            return self._reset_done(env_id, payload)
        timestep, reset = payload
        if isinstance(timestep.obs, InShm):
            # The final obs of an episode is always copied: the next reset writes the same buffer.
            timestep = timestep._replace(
                obs=self._buffers[env_id].get(self._cfg.copy_on_get or timestep.done)
            )
        self._finished[env_id] = timestep
        self._step_failures[env_id] = 0
        if not timestep.done:
            self._ready_obs[env_id] = timestep.obs
            return
        self._episode_count[env_id] += 1
        if not (self._cfg.auto_reset and self._episode_count[env_id] < self._cfg.episode_num):
            return  # not ready again until reset()
        if reset is None:
            self._send_reset(env_id)
        elif reset[0] == "ok":
            self._reset_done(env_id, reset[1])
        else:
            logger.warning("env %d raised in reset:\n%s", env_id, reset[1][1])
            self._failed(env_id, "reset", reset[1][0], False)

    def _end_op(self, env_id: int) -> str:
        self._deadline.pop(env_id, None)
        return self._inflight.pop(env_id)

    def _reset_done(self, env_id: int, obs: Any) -> None:
        if isinstance(obs, InShm):
            obs = self._buffers[env_id].get(self._cfg.copy_on_get)
        self._ready_obs[env_id] = obs
        self._reset_attempts[env_id] = 0

    def _failed(self, env_id: int, op: str, error: str, dead: bool) -> None:
        """Count the failure; a failed step ends its episode abnormally, then the env is reset
        (in a new worker if this one is dead or late), up to ``max_retry`` resets in a row."""
        self.error_count += 1
        logger.warning("env %d failed in %s: %s", env_id, op, error)
        if op == "step":
            self._finished[env_id] = abnormal_timestep(self._last_obs.get(env_id), error)
            self._reset_attempts[env_id] = 0
            self._step_failed(env_id, error)
        else:
            self._reset_attempts[env_id] += 1
            if self._reset_attempts[env_id] >= self._cfg.max_retry:
                raise EnvError(
                    f"env {env_id} failed to reset {self._cfg.max_retry} times in a row; giving up. "
                    f"Last error: {error}"
                )
            dead = dead or self._cfg.retry_type == "renew"
            time.sleep(self._cfg.retry_waiting_time)
        if dead:
            self._renew(env_id)
        self._send_reset(env_id)


@ENV_MANAGER_REGISTRY.register("subprocess")
class SyncSubprocessEnvManager(AsyncSubprocessEnvManager):
    """Each env in its own process; ``step`` waits for every env it was given, as
    ``BaseEnvManager`` does, with the same observations for the same static seeds. (A dynamic seed
    draws each episode's seed from numpy's global generator, as dizoo's envs do: the base manager's
    envs share the driver's, each worker here has its own, as with DI-engine's managers.)"""

    config = dict(
        type="subprocess",
        wait_num=float("inf"),  # DI-engine's sync manager waits for all envs; no other value acts
        step_wait_timeout=None,  # likewise: only None
    )
    _sync = True

    def _setup(self) -> None:
        for key, default in (("wait_num", float("inf")), ("step_wait_timeout", None)):
            if self._cfg[key] != default:
                raise ConfigError(
                    f"env.manager.{key}={self._cfg[key]!r} has no effect in the sync subprocess manager, "
                    f"which always waits for every env; use env.manager.type='async_subprocess' for it, "
                    f"or leave {key} at {default!r}."
                )
        super()._setup()
