"""DI-engine's global ``task`` and ``ding_init``, so its framework scripts run as they are written::

    from ding_ray.framework import task, ding_init  # this module, through the package's facade

    ding_init(cfg)
    with task.start(ctx=OnlineRLContext()):
        task.use(interaction_evaluator(cfg, policy.eval_mode, evaluator_env))
        task.use(StepCollector(cfg, policy.collect_mode, collector_env))
        ...
        task.run()

``task`` is a face, not a second task: ``start`` makes a ``Task`` (``task_runner``) and every
other attribute is that task's, or, read from inside a stage, the running task's (a stage a
ding_ray ``Task`` runs may use the global ``task`` too). It describes one process:
``task.router.is_active`` is False, so a script's multi-process branch is skipped. ding_ray splits
a run over processes with Ray actors (``ding_ray.distributed``), not with DI-engine's router, so
the router's event bus (``emit``, ``on``, ``wait_for``, ...) is not offered.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from ding_ray.errors import NotSupportedError
from ding_ray.framework.context import Context
from ding_ray.framework.experiment import set_default_exp_name
from ding_ray.framework.task_runner import Task, current_task
from ding_ray.utils.runtime import set_torch_threads

# DI-engine Task methods of its multi-process router: refused by name rather than "no attribute"
_ROUTER_ONLY = ("emit", "on", "once", "off", "wait_for", "sync", "async_executor", "use_wrapper")


class Role(str, enum.Enum):
    """What a process does in DI-engine's multi-process runs (``task.role.LEARNER``, ...)."""

    LEARNER = "learner"
    COLLECTOR = "collector"
    EVALUATOR = "evaluator"
    FETCHER = "fetcher"


@dataclasses.dataclass(frozen=True)
class Router:
    """DI-engine's router (``Parallel``) as seen by a process that is not part of a parallel run."""

    is_active: bool = False  # connected to other processes: never, in ding_ray
    node_id: int | None = None  # DI-engine's value when not running in parallel


class GlobalTask:
    """The object behind ``ding_ray.framework.task``; see the module docstring."""

    role = Role
    router = Router()

    def __init__(self) -> None:
        self._task: Task | None = None
        self._roles: set[Role] = set()

    def start(
        self,
        async_mode: bool = False,
        n_async_workers: int = 3,
        ctx: Context | None = None,
        labels: set[str] | None = None,
    ) -> GlobalTask:
        """Begin a new pipeline on ``ctx`` (a ``with`` block around it closes it)."""
        if async_mode:
            raise NotSupportedError(
                "task.start(async_mode=True) is not supported: ding_ray runs the stages in order. For "
                "stages that wait on other processes use task.parallel(stage_a, stage_b), which runs "
                "their forward parts in threads."
            )
        self._task = Task(ctx)
        self._roles = set()
        return self

    def __enter__(self) -> GlobalTask:
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        task, self._task = self._target(), None
        task.__exit__(exc_type, *exc)

    def stop(self) -> None:
        task, self._task = self._target(), None
        task.stop()

    # ----- roles (DI-engine's multi-process labels; recorded, nothing else in one process) -----
    def add_role(self, role: Role | str) -> None:
        self._roles.add(Role(role))

    def has_role(self, role: Role | str) -> bool:
        """True when no role was given (one process does everything), as in DI-engine."""
        return not self._roles or Role(role) in self._roles

    @property
    def roles(self) -> set[Role]:
        return set(self._roles)

    # ----- the task's own attributes ------------------------------------------------------------
    @property
    def finish(self) -> bool:
        task = self._running() or self._task
        return False if task is None else task.finish

    @finish.setter
    def finish(self, value: bool) -> None:
        self._target().finish = value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in _ROUTER_ONLY:
            raise NotSupportedError(
                f"task.{name} belongs to DI-engine's multi-process router, which ding_ray does not have: "
                "processes of a ding_ray run are Ray actors called by the driver (see ding_ray.distributed)."
            )
        return getattr(self._target(), name)

    def _running(self) -> Task | None:
        try:
            return current_task()
        except RuntimeError:
            return None

    def _target(self) -> Task:
        task = self._running() or self._task
        if task is None:
            raise RuntimeError(
                "The global task is not started: put the pipeline inside "
                "`with task.start(ctx=OnlineRLContext()):` (or use ding_ray's `with Task(ctx) as task:`)."
            )
        return task


task = GlobalTask()


def ding_init(cfg: Mapping) -> None:
    """DI-engine's per-process setup: ``cfg.exp_name`` becomes the folder where stages that open a
    TensorBoard writer of their own (``online_logger()`` with no ``exp_name``) write; and, as every
    ding_ray process does, torch gets ``cfg.policy.learn.num_threads`` threads (default 1: on a
    small machine torch's default thread pools slow a run down many times over)."""
    set_default_exp_name(cfg["exp_name"])
    policy = cfg.get("policy") or {}
    set_torch_threads((policy.get("learn") or {}).get("num_threads", 1))
