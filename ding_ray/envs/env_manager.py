"""``BaseEnvManager``: N envs in this process, stepped together, reset automatically."""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from easydict import EasyDict

from ding_ray.config.merge import checked_config, default_config_of
from ding_ray.envs.gymnasium_env import BaseEnvTimestep
from ding_ray.envs.step_errors import too_many_step_failures
from ding_ray.errors import ConfigError, EnvError
from ding_ray.utils.registry import ENV_MANAGER_REGISTRY

logger = logging.getLogger(__name__)


class _Timeout(BaseException):
    """Raised by the watchdog inside a hung env call; a BaseException so ``except Exception`` in
    the env's own code does not swallow it."""


def _require_main_thread(seconds: float | None, what: str) -> None:
    if seconds is not None and threading.current_thread() is not threading.main_thread():
        raise EnvError(
            f"env.manager.{what}_timeout in BaseEnvManager uses SIGALRM, which only the main thread "
            f"can receive; this {what} ran in thread {threading.current_thread().name!r}. Call the "
            "manager from the main thread or use env.manager.type='subprocess', which kills a hung "
            "env's process instead."
        )


_NO_WATCHDOG = contextlib.nullcontext()


def _watchdog(seconds: float | None, what: str, env_id: int) -> contextlib.AbstractContextManager:
    """Interrupt the body with ``_Timeout`` after ``seconds`` (SIGALRM, as DI-engine's WatchDog).

    Best effort: a signal reaches Python code only between bytecodes, so a C call that never
    returns to the interpreter is not interrupted; the subprocess managers kill such an env instead.
    Without a timeout it is a shared no-op: it runs for every env step, where a generator-based
    context manager and its message cost about 3 us, a tenth of a whole CartPole step.
    """
    return _NO_WATCHDOG if seconds is None else _alarm(seconds, f"env {env_id} {what}")


class _MainThreadAlarm:
    """Sends SIGALRM to the main thread at a deadline, from a thread of its own.

    A thread-directed signal: the process-wide SIGALRM of ``setitimer`` goes to any thread that does
    not block it (one of Ray's or pytest-xdist's), and the main thread, asleep in a hung env, is then
    never interrupted. One thread serves every call; arming and disarming cost a lock and a notify.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._pid: int | None = None  # the process whose thread this is (a fork has none)

    def arm(self, seconds: float) -> None:
        with self._cond:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="ding_ray-env-watchdog", daemon=True).start()
            self._deadline = time.monotonic() + seconds
            self._cond.notify()

    def disarm(self) -> None:
        with self._cond:
            self._deadline = None

    def _run(self) -> None:
        main = threading.main_thread().ident
        with self._cond:
            while True:
                if self._deadline is None:
                    self._cond.wait()
                elif (left := self._deadline - time.monotonic()) > 0:
                    self._cond.wait(left)
                else:
                    self._deadline = None
                    signal.pthread_kill(main, signal.SIGALRM)


_MAIN_THREAD_ALARM = _MainThreadAlarm()


@contextlib.contextmanager
def _alarm(seconds: float, what: str) -> Iterator[None]:
    armed = [True]  # a signal sent just as the body ended is ignored

    def _ring(signum: int, frame: Any) -> None:
        if armed[0]:
            raise _Timeout(f"{what} took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, _ring)
    _MAIN_THREAD_ALARM.arm(seconds)
    try:
        yield
    finally:
        armed[0] = False
        _MAIN_THREAD_ALARM.disarm()
        signal.signal(signal.SIGALRM, previous)


@ENV_MANAGER_REGISTRY.register("base")
class BaseEnvManager:
    """Steps every ready env with one call, so the policy can do one batched forward for all.

    The calling loop::

        env.launch()
        while True:
            obs = env.ready_obs                      # {env_id: obs}
            actions = policy.forward(obs)            # {env_id: action}
            timesteps = env.step(actions)            # {env_id: BaseEnvTimestep}

    With ``auto_reset`` an env whose episode ended is reset inside ``step``; its timestep still
    holds the final observation and ``ready_obs`` holds the first one of the next episode. An env
    that raises in ``step`` (or runs past ``step_timeout``) is counted in ``error_count`` and reset
    (a timed-out one is rebuilt first); its timestep has ``info['abnormal'] = True`` so the
    collector drops that step and carries on. A failed reset is retried ``max_retry`` times; an env
    that fails ``max_step_failures`` steps in a row raises ``EnvError`` naming it and the error.
    """

    config = dict(
        type="base",
        auto_reset=True,  # reset an env as soon as its episode ends
        episode_num=float("inf"),  # episodes per env before it stops being ready
        # Reset attempts on a failed env before giving up. DI-engine's default is 1 (no retry);
        # ding_ray keeps 5, as it had before this key came from DI-engine.
        max_retry=5,
        # What a failed reset retries with: 'renew' a new env from its factory, 'reset' the same env.
        # DI-engine's default is 'reset'; ding_ray renews, as it always did (a failed env is more
        # often broken than unlucky). An env past its timeout is always renewed.
        retry_type="renew",
        retry_waiting_time=0.1,  # seconds between two reset attempts
        # Steps one env may fail in a row (each drops its episode and resets the env) before the
        # manager raises EnvError: an env that fails every step would otherwise be reset for ever.
        # Not a DI-engine key.
        max_step_failures=5,
        # Seconds a step / reset may take (None: no limit). BaseEnvManager interrupts a late env
        # with SIGALRM (main thread, Unix only), renews it and reports the step abnormal.
        step_timeout=None,
        reset_timeout=None,
        # The subprocess managers' keys, which dizoo's configs give whatever the manager (DI-engine's
        # base manager ignores them): here the envs live in this process, so there is no memory to
        # share or copy out of, and a finished env is reset inside step either way.
        shared_memory=False,
        copy_on_get=True,
        reset_inplace=False,
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        return default_config_of(cls)

    def __init__(self, env_fn: Sequence[Callable[[], Any]], cfg: dict | None = None) -> None:
        cfg = checked_config(type(self), cfg, "env.manager")
        _check_common_keys(cfg)
        self._cfg = cfg
        self._env_fn = list(env_fn)
        if not self._env_fn:
            raise EnvError("An env manager needs at least one env (env.collector_env_num >= 1).")
        self._ready_obs: dict[int, Any] = {}
        self._episode_count = [0] * len(self._env_fn)
        self._renewals = [0] * len(self._env_fn)
        self._step_failures = [0] * len(self._env_fn)  # failed steps in a row, per env
        self._seeds: list[int] | None = None
        self._dynamic_seed = True
        self._unseeded: set[int] = set()  # envs whose seed waits for their next reset
        self._replay_path: str | None = None
        self._closed = False
        self._launched = False
        self.error_count = 0
        self._setup()

    def _setup(self) -> None:
        """Build the envs (subclasses start processes instead)."""
        if self._cfg.step_timeout is not None or self._cfg.reset_timeout is not None:
            if not hasattr(signal, "pthread_kill"):
                raise ConfigError(
                    "env.manager.step_timeout/reset_timeout need SIGALRM, which this platform lacks; "
                    "use env.manager.type='subprocess', which kills a hung env's process instead."
                )
        self._envs = [fn() for fn in self._env_fn]

    # ----- properties ---------------------------------------------------------------------------
    @property
    def env_num(self) -> int:
        return len(self._env_fn)

    @property
    def ready_obs(self) -> dict[int, Any]:
        """Observations of the envs waiting for an action, by env id."""
        return self._ready_obs

    @property
    def done(self) -> bool:
        """True once every env has run ``episode_num`` episodes."""
        return all(c >= self._cfg.episode_num for c in self._episode_count)

    @property
    def observation_space(self):
        return self._envs[0].observation_space

    @property
    def action_space(self):
        return self._envs[0].action_space

    @property
    def envs(self) -> list[Any]:
        return self._envs

    def random_action(self, env_id: int) -> Any:
        """A uniformly drawn action for env ``env_id`` (from its own seeded action space)."""
        return self._envs[env_id].random_action()

    # ----- lifecycle ------------------------------------------------------------------------------
    def seed(self, seed: int | Sequence[int], dynamic_seed: bool = True) -> None:
        """Env i gets ``seed + i``, given to it once, at its next ``reset`` (as DI-engine's managers
        do). ``dynamic_seed=False`` (evaluators): the env starts every episode from its seed."""
        seeds = [seed + i for i in range(self.env_num)] if isinstance(seed, int) else list(seed)
        self._seeds, self._dynamic_seed = seeds, dynamic_seed
        self._unseeded = set(range(self.env_num))
        for env, s in zip(self._envs, seeds):  # random_action is seeded from now on
            env.action_space.seed(s)

    def launch(self, reset_param: dict | None = None) -> None:
        if self._closed:
            self._start_envs()
            if self._seeds is not None:  # new envs: seeded again, at the reset below
                self.seed(self._seeds, self._dynamic_seed)
            self._closed = False
        self._launched = True
        self.reset(reset_param)

    def _start_envs(self) -> None:
        """Build the envs again after ``close`` (subclasses start their processes or vector env)."""
        self._envs = [self._make_env(i) for i in range(self.env_num)]

    def reset(self, reset_param: dict | None = None) -> None:
        """Reset every env (or those named in ``reset_param``) and make them ready. Envs with a seed
        not given yet get it first, all of them before any resets, as DI-engine's manager does."""
        if not self._launched:
            return self.launch(reset_param)
        ids = range(self.env_num) if reset_param is None else reset_param.keys()
        for i in ids:
            if i in self._unseeded:
                self._envs[i].seed(self._seeds[i], self._dynamic_seed)
                self._unseeded.discard(i)
        self._episode_count = [0] * self.env_num
        for i in ids:
            self._ready_obs[i] = self._reset_env(i)

    def _make_env(self, env_id: int) -> Any:
        env = self._env_fn[env_id]()
        if self._replay_path is not None:
            env.enable_save_replay(self._replay_path)
        return env

    def _renew(self, env_id: int) -> None:
        """Replace env ``env_id`` by a new one, seeded apart so it does not replay the failed episode."""
        try:
            self._envs[env_id].close()
        except Exception as e:  # noqa: BLE001 - it failed already; the new env is what matters
            logger.warning("env %d raised in close while being replaced: %r", env_id, e)
        self._renewals[env_id] += 1
        self._envs[env_id] = self._make_env(env_id)
        if self._seeds is not None:
            self._envs[env_id].seed(self._seeds[env_id] + 1000 * self._renewals[env_id], self._dynamic_seed)

    def _reset_env(self, env_id: int) -> Any:
        _require_main_thread(self._cfg.reset_timeout, "reset")
        last: BaseException | None = None
        for attempt in range(self._cfg.max_retry):
            try:
                with _watchdog(self._cfg.reset_timeout, "reset", env_id):
                    return self._envs[env_id].reset()
            except (Exception, _Timeout) as e:  # noqa: BLE001 - an env may fail in any way; count and retry
                last = e
                self.error_count += 1
                logger.warning("env %d failed in reset (attempt %d): %r", env_id, attempt + 1, e)
                if attempt + 1 < self._cfg.max_retry:
                    if self._cfg.retry_type == "renew" or isinstance(e, _Timeout):
                        self._renew(env_id)
                    time.sleep(self._cfg.retry_waiting_time)
        raise EnvError(
            f"env {env_id} failed to reset {self._cfg.max_retry} times in a row; giving up. "
            f"Last error: {last!r}"
        )

    def step(self, actions: dict[int, Any]) -> dict[int, BaseEnvTimestep]:
        _require_main_thread(self._cfg.step_timeout, "step")
        timesteps = {}
        ready = self._ready_obs
        for env_id, action in actions.items():
            try:
                with _watchdog(self._cfg.step_timeout, "step", env_id):
                    timestep = self._envs[env_id].step(action)
            except (Exception, _Timeout) as e:  # noqa: BLE001 - isolate the failure to this env
                self.error_count += 1
                self._step_failed(env_id, repr(e))
                logger.warning("env %d failed in step: %r; resetting it", env_id, e)
                timesteps[env_id] = abnormal_timestep(ready[env_id], repr(e))
                if isinstance(e, _Timeout):  # interrupted half-way: its state is unknown
                    self._renew(env_id)
                ready[env_id] = self._reset_env(env_id)
                continue
            timesteps[env_id] = timestep
            self._step_failures[env_id] = 0
            if timestep.done:
                self._episode_count[env_id] += 1
                if self._cfg.auto_reset and self._episode_count[env_id] < self._cfg.episode_num:
                    ready[env_id] = self._reset_env(env_id)
                else:
                    del ready[env_id]
            else:
                ready[env_id] = timestep.obs
        return timesteps

    def _step_failed(self, env_id: int, error: str) -> None:
        """Count a failed step of env ``env_id``; raise once it failed ``max_step_failures`` in a row."""
        self._step_failures[env_id] += 1
        if self._step_failures[env_id] >= self._cfg.max_step_failures:
            raise too_many_step_failures(self._env_name(env_id), self._step_failures[env_id], error)

    def _env_name(self, env_id: int) -> str:
        return f"env {env_id} ({self._envs[env_id]!r})"

    def reward_shaping(self, env_id: int, transitions: list) -> list:
        """The env's own ``reward_shaping(transitions)`` of a finished episode (DI-engine's hook for
        envs whose reward is known only at the episode's end)."""
        env = self._envs[env_id]
        if not callable(getattr(env, "reward_shaping", None)):
            raise EnvError(
                f"collector reward_shaping=True needs the env to define reward_shaping(transitions); "
                f"{type(env).__name__} does not. Set policy.collect.collector.reward_shaping=False."
            )
        return env.reward_shaping(transitions)

    def enable_save_replay(self, replay_path: str) -> None:
        """Every env records its episodes under ``replay_path`` (envs built later too)."""
        self._replay_path = replay_path
        for env in self._envs:
            env.enable_save_replay(replay_path)

    def disable_save_replay(self) -> None:
        """Stop recording (the evaluator records only some of its evaluations)."""
        self._replay_path = None
        for env in self._envs:
            _stop_replay(env)

    def close(self) -> None:
        if self._closed:
            return
        for env in self._envs:
            env.close()
        self._closed = True
        self._launched = False
        self._ready_obs = {}


def _stop_replay(env: Any) -> None:
    stop = getattr(env, "disable_save_replay", None)
    if not callable(stop):
        raise EnvError(f"{type(env).__name__} has no disable_save_replay(); it cannot stop saving replays.")
    stop()


def abnormal_timestep(last_obs: Any, error: str) -> BaseEnvTimestep:
    """The timestep reported for a step that failed: the episode ends there, marked abnormal."""
    return BaseEnvTimestep(last_obs, 0.0, True, {"abnormal": True, "truncated": True, "error": error})


class SpacesOnlyEnvManager(BaseEnvManager):
    """A manager whose envs are no Python objects here (worker processes, ale-py's vector env): it
    reads the spaces once from a reference env and draws random actions from seeded copies of the
    action space (``seed`` seeds ``self._action_spaces``)."""

    _envs_where = "runs its envs elsewhere"  # ends "{type} ..., so it has no env objects"

    def _read_spaces(self, ref: Any) -> None:
        """Keep the spaces and the name of ``ref``, an env built for them alone, and close it."""
        self._observation_space, self._action_space = ref.observation_space, ref.action_space
        self._env_repr = repr(ref)
        ref.close()
        self._action_spaces = [copy.deepcopy(self._action_space) for _ in self._env_fn]

    @property
    def observation_space(self):
        return self._observation_space

    @property
    def action_space(self):
        return self._action_space

    @property
    def envs(self) -> list[Any]:
        raise EnvError(
            f"{type(self).__name__} {self._envs_where}, so it has no env objects; "
            "use random_action(env_id), observation_space and action_space instead."
        )

    def random_action(self, env_id: int) -> Any:
        """Drawn in this process from a copy of the action space, seeded like the env's own."""
        return self._action_spaces[env_id].sample()


def _check_common_keys(cfg: EasyDict) -> None:
    if cfg.retry_type not in ("reset", "renew"):
        raise ConfigError(f"env.manager.retry_type must be 'reset' or 'renew', got {cfg.retry_type!r}.")
    if cfg.max_retry < 1:
        raise ConfigError(f"env.manager.max_retry must be >= 1 (attempts per reset), got {cfg.max_retry}.")
    if cfg.max_step_failures < 1:  # its type is checked with the keys
        raise ConfigError(
            "env.manager.max_step_failures must be >= 1 (failed steps in a row of one env before the "
            f"manager gives up on it), got {cfg.max_step_failures}."
        )
    for key in ("step_timeout", "reset_timeout"):
        value = cfg[key]
        if value is not None and (not isinstance(value, (int, float)) or value <= 0):
            raise ConfigError(f"env.manager.{key} must be positive seconds or None, got {value!r}.")


def create_env_manager(manager_cfg: dict, env_fn: Sequence[Callable[[], Any]]) -> BaseEnvManager:
    """The env manager registered under ``manager_cfg.type`` over the given env factories."""
    manager_cfg = EasyDict(manager_cfg)
    return ENV_MANAGER_REGISTRY.get(manager_cfg.get("type", "base"))(env_fn, manager_cfg)


def get_env_manager_cls(cfg: dict) -> type:
    return ENV_MANAGER_REGISTRY.get(cfg.get("type", "base"))
