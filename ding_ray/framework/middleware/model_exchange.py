"""``PeriodicalModelExchanger``: DI-engine's stage that hands a model's weights from the process that
trains it (``mode='send'``) to the processes that act with a copy (``mode='receive'``).

A ding_ray pipeline is one process: its collectors, evaluators and learner on other processes are
Ray actors, and the learner's weights reach them through Ray's object store (``weights_publisher``).
What is left for this stage is a pipeline that keeps two models in its own process, one trained and
one acting (a collect model that should lag the learner by a number of iterations, say): the
sender hands a snapshot of its model's weights, every ``period`` iterations, to the receivers of
the same ``event_name`` in the same task, and each receiver loads the newest one before the rest
of its iteration::

    task.use(PeriodicalModelExchanger(acting_model, mode="receive"))
    task.use(StepCollector(cfg, acting_policy.collect_mode, env))
    ...
    task.use(trainer(cfg, policy.learn_mode))
    task.use(PeriodicalModelExchanger(policy.learn_mode.get_attribute("model"), mode="send", period=5))

As in DI-engine, the sender sends after the rest of its iteration (iterations 0, period, 2 period,
...), a receiver loads nothing in the task's first iteration, and a snapshot older than
``delay_toleration`` seconds is not loaded. DI-engine's receiver waits for a new model once it
has acted ``stale_toleration`` iterations with the same one; in one process the sender runs in the
same loop, so waiting could only stall it: the receiver goes on and logs a warning instead.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Generator
from typing import Any, NamedTuple

import numpy as np

from ding_ray.errors import ConfigError
from ding_ray.framework.context import Context
from ding_ray.framework.task_runner import Task, current_task

logger = logging.getLogger(__name__)


class _Snapshot(NamedTuple):
    id: int  # the sender's iteration count when it sent
    model: dict  # a copy of its state dict
    time: float  # when it sent (time.time())


# the latest snapshot per task and event name: a task's exchangers see only each other's
_SENT: weakref.WeakKeyDictionary[Task, dict[str, _Snapshot]] = weakref.WeakKeyDictionary()


class PeriodicalModelExchanger:
    """Send ``model``'s weights every ``period`` iterations, or load the newest weights sent under
    ``event_name``; see the module docstring.

    Reads ctx: total_step (a receiver loads nothing in the first iteration).
    """

    def __init__(
        self,
        model: Any,
        mode: str,
        period: int = 1,
        delay_toleration: float = np.inf,
        stale_toleration: int = 1,
        event_name: str = "model_exchanger",
        model_loader: Any = None,
    ) -> None:
        if mode not in ("send", "receive"):
            raise ConfigError(f"PeriodicalModelExchanger's mode is 'send' or 'receive', got {mode!r}.")
        if int(period) < 1 or int(stale_toleration) < 1:
            raise ConfigError(
                f"PeriodicalModelExchanger needs period >= 1 and stale_toleration >= 1 (iterations), got "
                f"period={period}, stale_toleration={stale_toleration}."
            )
        if model_loader is not None:
            raise ConfigError(
                "PeriodicalModelExchanger(model_loader=...) moves weights between processes through "
                "files; here sender and receivers share a process and the weights are handed over "
                "directly. Leave model_loader=None (across processes, ding_ray's learner publishes its "
                "weights through Ray's object store: weights_publisher)."
            )
        self._model = model
        self._mode = mode
        self._period = int(period)
        self._delay_toleration = float(delay_toleration)
        self._stale_toleration = int(stale_toleration)
        self._event_name = event_name
        self._sent = 0  # the sender's iteration count
        self._model_id = -1  # the id of the snapshot the receiver holds
        # iterations the receiver has acted with its weights; DI-engine starts at the tolerance, so
        # a receiver with nothing loaded yet is due for new weights
        self._model_stale = int(stale_toleration)
        self._warned = False

    def __call__(self, ctx: Context) -> Generator[None, None, None] | None:
        if self._mode == "send":
            return self._send()
        if ctx.total_step != 0:
            self._receive(_SENT.get(current_task(), {}).get(self._event_name))
        return None

    def _send(self) -> Generator[None, None, None]:
        task = current_task()
        yield  # the rest of the iteration (training) first
        if self._sent % self._period == 0:
            weights = {key: value.detach().clone() for key, value in self._model.state_dict().items()}
            _SENT.setdefault(task, {})[self._event_name] = _Snapshot(self._sent, weights, time.time())
        self._sent += 1

    def _receive(self, snapshot: _Snapshot | None) -> None:
        fresh = snapshot is not None and time.time() - snapshot.time < self._delay_toleration
        if fresh and snapshot.id > self._model_id and snapshot.id % self._period == 0:
            self._model.load_state_dict(snapshot.model)
            self._model_id, self._model_stale = snapshot.id, 1
            return
        if self._model_stale >= self._stale_toleration and not self._warned:
            self._warned = True
            logger.warning(
                "PeriodicalModelExchanger(event_name=%r): no new weights for the receiving model after %d "
                "iterations with the ones it holds (stale_toleration=%d). DI-engine's receiver would wait "
                "for the sender here; in one process the sender runs in the same loop, so it goes on. "
                "Give the sender a smaller period or the receiver a larger stale_toleration.",
                self._event_name,
                self._model_stale,
                self._stale_toleration,
            )
        self._model_stale += 1
