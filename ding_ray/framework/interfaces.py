"""What a stage may call on the components it is given: the contract between the middleware and
the collectors, buffers, learners and evaluators, local or on Ray.

Each component kind is a ``typing.Protocol``. The local classes (``SampleSerialCollector``,
``AdvancedReplayBuffer`` and the other buffers, ``BaseLearner``, ``InteractionSerialEvaluator``)
implement them as plain method calls (DI-engine's new ``DequeBuffer`` through ``PipelineBuffer``);
``ding_ray.distributed``'s wrappers of actor handles implement them as remote calls that never
block the driver. Work that finishes later has two halves:

- ``submit`` starts it (a local component does it now),
- ``poll`` hands over what finished since the last ``poll`` (a local component: what ``submit``
  just did; an actor: the calls that came back, or None while they run).

A stage therefore runs ``submit`` when it has work and ``poll`` every iteration, and reads the
same code path whether the component is in this process or on another node. ``pending`` says
whether anything submitted has not been polled yet (a driver waits on it before it stops).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Collector(Protocol):
    """Rolls out the policy in its envs."""

    envstep: int  # env steps collected so far
    envepisode: int  # episodes finished so far

    def collect(self, train_iter: int = 0, policy_kwargs: dict | None = None, **kwargs: Any) -> list:
        """The transitions (or episodes) collected since the last call: a local collector collects
        ``n_sample`` now; collector actors return references of the batches that came back."""


@runtime_checkable
class WarmUpCollector(Protocol):
    """A collector that also fills the replay buffer before training: ``policy.random_collect_size``
    random transitions, the ``random_collector`` stage's once, a step of its own."""

    def warm_up(self, n_sample: int, train_iter: int = 0, policy_kwargs: dict | None = None) -> list:
        """``n_sample`` transitions of uniform random actions (the policy's own where it sets
        ``transition_with_policy_data``): a local collector returns them; collector actors roll them
        out with their next calls, and the data the driver rolls out meanwhile comes from ``collect``."""


@runtime_checkable
class Buffer(Protocol):
    """Stores transitions and serves training batches."""

    def push(self, data: Any, cur_collector_envstep: int = -1) -> None:
        """Store ``data`` (a list of transitions or references to batches of them)."""

    def sample(self, size: int, cur_learner_iter: int) -> Any:
        """A batch of ``size`` items, or None while the buffer cannot serve one."""

    def update(self, info: Any) -> None:
        """New priorities: the learner's ``priority_info``, passed on as it is."""


@runtime_checkable
class Learner(Protocol):
    """Trains the policy on batches."""

    train_iter: int  # gradient steps so far (DI-engine's count)
    priority_info: Any  # what the buffer's ``update`` takes after the calls ``poll`` just handed over

    def submit(self, data: Any, envstep: int = -1) -> None:
        """Train on ``data`` (a local learner now; a learner actor when it gets to it)."""

    def poll(self) -> Any:
        """The learn output of the calls finished since the last poll (a list of per-step log
        dicts), or None."""

    @property
    def pending(self) -> bool:
        """Calls submitted and not polled yet."""


@runtime_checkable
class Evaluator(Protocol):
    """Runs the greedy policy for some episodes and judges the mean return."""

    def submit(self, train_iter: int, envstep: int, **kwargs: Any) -> None:
        """Evaluate the current weights (``kwargs``: ``force_render``, ``policy_kwargs``)."""

    def poll(self) -> tuple[bool, dict] | None:
        """``(stop, info)`` of an evaluation finished since the last poll, or None."""


@runtime_checkable
class WeightsSource(Protocol):
    """Publishes its policy's weights (a learner whose workers act with copies of the policy)."""

    def weights(self) -> tuple[int, Any] | None:
        """``(version, weights)`` of the latest publication, None before the first."""


@runtime_checkable
class WeightsSink(Protocol):
    """Acts with a copy of the policy: takes new weights (collector and evaluator actors)."""

    def load_weights(self, version: int, weights: Any) -> bool:
        """Use ``weights`` from now on unless they are not newer than those it has (False then).
        The sink decides: it is offered the latest publication every iteration."""
