"""``Task``: a pipeline as a list of stages run over a context, one iteration after another.

A stage is a callable of the context. If it is a generator function, the code before its
``yield`` runs on the way forward and the code after it on the way back, after every later stage
has run (DI-engine's onion order)::

    def timer(ctx):
        start = time.time()
        yield                      # the later stages run here
        print(time.time() - start)

    with Task(OnlineRLContext()) as task:
        task.use(timer)
        task.use(collector_stage)
        task.run(max_step=100)

A stage that must end the run (an evaluator that reached the stop value) asks for the running
task with ``current_task()``; DI-engine's global ``task`` (``from ding_ray.framework import task``)
is a face over this class (``ding_ray.compat.global_task``). Unlike DI-engine, which finishes the
iteration first, the iteration ends right after the stage that set ``finish`` (the waiting
generators still run their code after ``yield``): no env steps are collected or trained on after
the stop value. Whatever a stage registers with ``on_close`` is closed when the ``with`` block
ends, also after an error.

``run(max_step=n)`` runs at most ``n`` iterations and then sets ``finish``, as DI-engine's does. A
later ``run`` goes on with the next iteration, unless a stage set ``finish`` (the stop value, the
budget): ``ding_ray.Algorithm.train`` runs a pipeline piece by piece this way.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from types import GeneratorType
from typing import Any

from ding_ray.errors import ActorDiedError, StageError
from ding_ray.framework.context import Context, OnlineRLContext

logger = logging.getLogger(__name__)

_CURRENT: contextvars.ContextVar[Task | None] = contextvars.ContextVar("ding_ray_task", default=None)


def current_task() -> Task:
    """The task whose ``run`` is executing the calling stage."""
    task = _CURRENT.get()
    if task is None:
        raise RuntimeError(
            "No task is running: call this from a stage run by Task.run (inside `with Task(...)`)."
        )
    return task


def stage_name(fn: Callable) -> str:
    """A readable name: a factory's name for the closure it returned, a class's name for its instance."""
    qualname = getattr(fn, "__qualname__", None)
    if qualname is None:
        return type(fn).__name__
    parts = qualname.split(".<locals>.")
    # A factory's closure (DI-engine's ``def _fetch(ctx)`` inside ``offpolicy_data_fetcher``) goes
    # by the factory's name; any other function by its own.
    return parts[-2] if len(parts) > 1 and parts[-1].startswith("_") else parts[-1]


class Task:
    """Runs its stages over ``ctx`` until ``finish`` is set or ``max_step`` iterations are done."""

    def __init__(self, ctx: Context | None = None) -> None:
        self.ctx = ctx if ctx is not None else OnlineRLContext()
        self._stages: list[tuple[Callable, threading.Lock | None]] = []
        self._backward_stack: list[tuple[Callable, Generator]] = []
        self._closers: list[Callable[[], Any]] = []
        self._finish = False
        self._paused = False  # finish was set by run's max_step, not by a stage: a later run goes on
        self._iterated = False  # an iteration ran on ctx: the next one starts on a renewed context
        self._token: contextvars.Token | None = None

    # ----- building ---------------------------------------------------------------------------
    def use(self, fn: Callable, lock: bool | threading.Lock = False) -> Task:
        """Append a stage. ``lock``: a lock (or True: a new one) held while the stage runs forward,
        for stages that share state with a ``parallel`` sibling."""
        if not callable(fn):
            raise TypeError(f"task.use() takes a stage (a callable of the context), got {type(fn).__name__}.")
        if lock is True:
            lock = threading.Lock()
        self._stages.append((fn, lock or None))
        return self

    def on_close(self, closer: Callable[[], Any]) -> None:
        """Call ``closer`` when the task stops (actors to kill, files and loggers to close)."""
        self._closers.append(closer)

    # ----- running ----------------------------------------------------------------------------
    @property
    def finish(self) -> bool:
        """Set to True by a stage to end the run after the current iteration."""
        return self._finish

    @finish.setter
    def finish(self, value: bool) -> None:
        self._finish = bool(value)
        self._paused = False

    def run(self, max_step: int | None = None) -> None:
        """Run iterations until ``finish`` is set, or ``max_step`` of them (None: no limit) and then
        set ``finish``. A task finished by ``max_step`` goes on at the next call, one a stage
        finished does not run again."""
        if self._paused:
            self._finish = self._paused = False
        token = _CURRENT.set(self)
        try:
            step = 0
            while not self._finish and (max_step is None or step < max_step):
                if self._iterated:  # the last iteration's context stays readable until the next starts
                    self.ctx = self.ctx.renew()
                self._iterated = True
                for fn, lock in self._stages:
                    if lock is None:
                        self.forward(fn)
                    else:
                        with lock:
                            self.forward(fn)
                    if self._finish:
                        break
                self.backward()
                step += 1
            if not self._finish and max_step is not None and step >= max_step > 0:
                self._finish = self._paused = True
        finally:
            self._backward_stack.clear()
            _CURRENT.reset(token)

    def forward(
        self, fn: Callable, ctx: Context | None = None, stack: list | None = None
    ) -> Generator | None:
        """Run ``fn`` up to its first ``yield`` (or to its end); a generator waits for ``backward``
        (on ``stack``, by default the task's)."""
        ctx = self.ctx if ctx is None else ctx
        stack = self._backward_stack if stack is None else stack
        try:
            result = fn(ctx)
            if isinstance(result, GeneratorType):
                try:
                    next(result)
                except StopIteration:
                    return None
                stack.append((fn, result))
                return result
        except StageError:
            raise
        except ActorDiedError as e:  # kept as it is, so that `except RayActorError` catches a dead actor
            e.add_note(f"(raised in stage '{stage_name(fn)}')")
            raise
        except Exception as e:
            raise StageError(f"Stage '{stage_name(fn)}' failed: {type(e).__name__}: {e}") from e
        return None

    def backward(self) -> None:
        """Run the code after ``yield`` of every stage still waiting, the latest first."""
        self._unwind(0)

    def _unwind(self, depth: int) -> None:
        """Resume the waiting generators above ``depth`` in the stack, the latest first."""
        while len(self._backward_stack) > depth:
            fn, gen = self._backward_stack.pop()
            try:
                next(gen)
            except StopIteration:
                continue
            except StageError:
                raise
            except Exception as e:
                raise StageError(
                    f"Stage '{stage_name(fn)}' failed after its yield: {type(e).__name__}: {e}"
                ) from e
            raise StageError(f"Stage '{stage_name(fn)}' yielded more than once; a stage yields at most once.")

    # ----- composing --------------------------------------------------------------------------
    def serial(self, *fns: Callable) -> Callable:
        """One stage that runs ``fns`` in order (their code after ``yield`` on the way back)."""

        def _serial(ctx: Context):
            depth = len(self._backward_stack)
            for fn in fns:
                self.forward(fn, ctx)
            yield
            self._unwind(depth)

        _serial.__qualname__ = "serial(" + ", ".join(stage_name(f) for f in fns) + ")"
        return _serial

    def parallel(self, *fns: Callable) -> Callable:
        """One stage that runs the forward parts of ``fns`` at once in threads (useful when they
        wait on other processes, e.g. remote calls); their code after ``yield`` runs in order."""

        def _parallel(ctx: Context):
            depth = len(self._backward_stack)
            # each branch waits on a stack of its own; they join the task's in the order given,
            # whichever thread finished first, so the way back is the same in every run
            stacks: list[list] = [[] for _ in fns]
            with ThreadPoolExecutor(len(fns), thread_name_prefix="stage") as pool:
                run = [contextvars.copy_context().run for _ in fns]
                futures = [pool.submit(r, self.forward, fn, ctx, st) for r, fn, st in zip(run, fns, stacks)]
                for future in futures:
                    future.result()
            for branch in stacks:
                self._backward_stack.extend(branch)
            yield
            self._unwind(depth)

        _parallel.__qualname__ = "parallel(" + ", ".join(stage_name(f) for f in fns) + ")"
        return _parallel

    # ----- lifecycle --------------------------------------------------------------------------
    def __enter__(self) -> Task:
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self.stop(raise_errors=exc_type is None)

    def stop(self, raise_errors: bool = True) -> None:
        """Close what the stages registered, the latest first; every closer runs even if one fails
        (the first failure is raised after, unless the task is already ending with an error)."""
        self.finish = True  # for good: a later run does not go on
        errors = []
        while self._closers:
            closer = self._closers.pop()
            try:
                closer()
            except Exception as e:  # noqa: BLE001 - close the rest, report after
                errors.append(e)
                logger.warning("closing %r failed: %r", closer, e)
        if errors and raise_errors:
            raise errors[0]

    def renew(self) -> Task:
        """Start the next iteration's context now (``run`` does this between iterations)."""
        self.ctx = self.ctx.renew()
        self._iterated = False
        return self
