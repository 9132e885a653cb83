"""The actors: thin wrappers of the plain workers that add transport (weights pull, buffer push)
and dashboard metrics, made remote from outside, and created as named actors.

Names in the run's namespace: ``learner``, ``buffer``, ``evaluator``, ``collector-0`` ...
``collector-{n-1}``, so ``ray.get_actor('collector-0', namespace=...)`` finds them and the Ray
dashboard lists them by role.
"""

from __future__ import annotations

import copy
import logging
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ray
from easydict import EasyDict
from ray.exceptions import RayActorError

from ding_ray.data import Batch
from ding_ray.distributed.buffer_actor import BufferActor
from ding_ray.distributed.cluster import ClusterError, lower_priority
from ding_ray.distributed.config import learner_name
from ding_ray.distributed.errors import ActorDiedError, raised_line, ray_text
from ding_ray.distributed.metrics import RayMetrics
from ding_ray.distributed.placement import release_slots, reserve_slots, slot_options
from ding_ray.distributed.ray_port import Incarnation, remote_class
from ding_ray.distributed.startup import note_start, why_not_started
from ding_ray.distributed.user_modules import UserCode, check_user_code, load_user_code, user_code
from ding_ray.distributed.weights import WeightsPublisher, WeightsRef, pull
from ding_ray.utils.checkpoint import CheckpointStore, storage_root
from ding_ray.utils.runtime import set_torch_threads
from ding_ray.worker import metrics
from ding_ray.worker.eval_worker import EvalWorker
from ding_ray.worker.learn_worker import LearnWorker
from ding_ray.worker.rollout_worker import RolloutWorker

logger = logging.getLogger(__name__)

# the actors a learner or buffer call may fail with: their calls take each other's results
CORE_ACTORS = ("learner", "buffer")


def enter_actor(code: UserCode | None, who: str, torch_threads: int, nice: int = 0) -> None:
    """What an actor process does first: load the user's code (``user_code``: the envs and models
    the config names), give torch its threads, and lower the process's CPU priority by ``nice``
    (collectors and evaluator yield to the learner on a shared machine)."""
    note_start()  # first: a driver waiting for this actor sees that Ray placed it (``start_state``)
    load_user_code(code, who)
    set_torch_threads(torch_threads)
    lower_priority(nice)


class CollectorActor(RolloutWorker):
    """A ``RolloutWorker`` that pulls the latest weights and puts its batches into the object store."""

    def __init__(
        self,
        cfg: EasyDict,
        index: int,
        torch_threads: int = 1,
        n_sample: int | None = None,
        code: UserCode | None = None,
        buffer_namespace: str | None = None,
    ) -> None:
        """``code``: the user's code to load first (``user_code``). ``buffer_namespace``:
        the Ray namespace of the ``buffer`` actor this collector pushes its batches into (async
        pipelines); None: the batches go back to the driver by reference (sync rounds hand them to
        the learner). The buffer is looked up by name, not handed over as a handle: a handle in the
        arguments of a restartable actor is an object-store reference its restarts depend on (Ray
        logs an error for each such actor)."""
        enter_actor(code, f"collector-{index} actor", torch_threads, cfg.ray.get("helper_nice", 0))
        super().__init__(cfg, index, n_sample=n_sample)
        self._metrics = RayMetrics(self.name, cfg.exp_name)
        self._incarnation = Incarnation(self.name, CheckpointStore(storage_root(cfg)), cfg.ray.get("run_id"))
        self._pusher = None
        if buffer_namespace is not None:
            buffer = ray.get_actor("buffer", namespace=buffer_namespace)
            self._pusher = Pusher(buffer, cfg.ray.backpressure, cfg.ray.call_timeout_s)

    def ping(self) -> int:
        return self.version

    def instance(self) -> dict[str, Any]:
        """Which process this is (a restart is another): ``ActorSupervisor`` asks."""
        return self._incarnation.answer()

    def pushes_in_flight(self) -> int:
        """Pushes into the buffer actor this collector has not seen finish (bounded by
        ``Pusher.MAX_PENDING`` with ``ray.backpressure='drop'``)."""
        return 0 if self._pusher is None else len(self._pusher.pending)

    def node_id(self) -> str:
        """The Ray node this collector runs on."""
        return ray.get_runtime_context().get_node_id()

    def collect(
        self,
        weights: WeightsRef | None,
        train_iter: int = 0,
        policy_kwargs: dict | None = None,
        n_sample: int | None = None,
    ) -> dict[str, Any]:
        """Async pipelines: roll out as ``collect_batch``, then push the batch into the buffer actor
        from here (``Pusher``: the info says whether it was dropped, and how many pushes were lost).
        The transitions never pass through the driver."""
        return self._pushed(self.rollout, weights, train_iter, policy_kwargs, n_sample)

    def warm_up(
        self,
        weights: WeightsRef | None,
        train_iter: int = 0,
        policy_kwargs: dict | None = None,
        n_sample: int | None = None,
    ) -> dict[str, Any]:
        """Async pipelines' warm-up (``policy.random_collect_size``): as ``collect``, with uniform
        random actions (the policy's own with ``transition_with_policy_data``)."""
        return self._pushed(self.warm_up_rollout, weights, train_iter, policy_kwargs, n_sample)

    @ray.method(num_returns=2)
    def collect_batch(
        self,
        weights: WeightsRef | None,
        train_iter: int = 0,
        policy_kwargs: dict | None = None,
        n_sample: int | None = None,
    ) -> tuple[dict[str, Any], Batch]:
        """Roll out with the newest weights (None: keep the ones held). Called remotely (sync
        rounds), the batch is the call's second return value, which the caller owns and hands on to
        the learner by reference. A batch over Ray's inline limit (100 KiB) stays in this node's
        object store; a smaller one rides in the reply, as bytes the driver never deserializes. (A
        batch ``ray.put`` here and returned inside the info would be a reference the driver borrows:
        twice the driver's CPU per call, measured, and lost if this actor dies.)"""
        return self._rolled_out(self.rollout, weights, train_iter, policy_kwargs, n_sample)

    def _pushed(self, rollout: Callable, *args: Any) -> dict[str, Any]:
        """The info of ``_rolled_out(rollout, *args)``, whose batch went into the buffer actor."""
        if self._pusher is None:
            raise RuntimeError(f"{self.name} has no buffer actor to push to; sync rounds call collect_batch")
        info, batch = self._rolled_out(rollout, *args)
        info.update(self._pusher.push(batch))
        return info

    def _rolled_out(
        self,
        rollout: Callable,
        weights: WeightsRef | None,
        train_iter: int,
        policy_kwargs: dict | None,
        n_sample: int | None,
    ) -> tuple[dict[str, Any], Batch]:
        """``rollout`` (``rollout`` or ``warm_up_rollout``) with the newest weights, recorded."""
        pull(self, weights)
        batch, info = rollout(n_sample, train_iter, policy_kwargs)
        self._metrics.record(info)
        self._metrics.call_seconds("collector", info["seconds"])
        return info, batch


class Pusher:
    """A collector's pushes into the buffer actor, the Ape-X way (no round trip through the driver).

    ``block`` and ``ratio``: a push is waited for before the collect call returns, so the driver's
    rate limiter counts only what the buffer holds, and a busy buffer slows the collectors down.
    The wait is bounded by half of ``call_timeout_s``: a frozen buffer is the driver's to catch
    (it kills it, Ray restarts it), not a reason for the driver to kill this collector; the push
    stays pending and is taken at the next call. ``drop``: never wait; a batch that finds
    ``MAX_PENDING`` pushes of this collector unfinished is dropped (counted). A push that dies
    with the buffer is lost (counted): Ray restarts the buffer from its latest snapshot.
    """

    MAX_PENDING = 2

    def __init__(self, buffer: Any, backpressure: str, call_timeout_s: float | None) -> None:
        self.buffer, self.drop = buffer, backpressure == "drop"
        self.wait_s = None if call_timeout_s is None else call_timeout_s / 2
        self.pending: list = []

    def push(self, batch: Batch) -> dict[str, int]:
        lost = self._take(0.0)
        if self.drop and len(self.pending) >= self.MAX_PENDING:
            return {"dropped": 1, "lost": lost}
        self.pending.append(self.buffer.push.remote(batch))
        if not self.drop:
            lost += self._take(self.wait_s)
        return {"dropped": 0, "lost": lost}

    def _take(self, timeout: float | None) -> int:
        """Wait up to ``timeout`` for the pending pushes; how many of the finished ones were lost.
        Any other error of a push (a batch the buffer refuses) is raised: it is a bug to see."""
        if not self.pending:
            return 0
        done, self.pending = ray.wait(self.pending, num_returns=len(self.pending), timeout=timeout)
        lost = 0
        for ref in done:
            try:
                ray.get(ref)
            except RayActorError:
                lost += 1
        return lost


class EvaluatorActor(EvalWorker):
    """An ``EvalWorker`` that pulls the weights it is asked to evaluate."""

    def __init__(self, cfg: EasyDict, torch_threads: int = 1, code: UserCode | None = None) -> None:
        enter_actor(code, "evaluator actor", torch_threads, cfg.ray.get("helper_nice", 0))
        super().__init__(cfg)
        self._metrics = RayMetrics("evaluator", cfg.exp_name)
        self._incarnation = Incarnation(
            "evaluator", CheckpointStore(storage_root(cfg)), cfg.ray.get("run_id")
        )

    def ping(self) -> int:
        return self.version

    def instance(self) -> dict[str, Any]:
        """Which process this is (a restart is another): ``ActorSupervisor`` asks."""
        return self._incarnation.answer()

    def evaluate(
        self, weights: WeightsRef | None, train_iter: int, envstep: int, best_return: float | None = None
    ) -> dict[str, Any]:
        """``best_return``: the run's best so far, as the driver knows it (this actor may be new: a
        restart, a resumed run), so that only a better evaluation replaces ``ckpt_best.pth.tar``."""
        pull(self, weights)
        if best_return is not None and best_return > self.best_return:
            self._evaluator.restore(best_return, self._evaluator.last_eval_iter)
        start = time.perf_counter()
        info = self.eval(train_iter, envstep)
        self._metrics.record(info)
        self._metrics.call_seconds("evaluator", time.perf_counter() - start)
        return info


class LearnerActor(LearnWorker):
    """A ``LearnWorker`` that publishes its weights to the object store every ``publish_freq`` iters."""

    def __init__(self, cfg: EasyDict, publish_freq: int = 1, code: UserCode | None = None) -> None:
        enter_actor(code, "learner actor", cfg.policy.learn.get("num_threads", 1))
        super().__init__(cfg)
        self._publisher = WeightsPublisher(every=publish_freq)
        self._metrics = RayMetrics("learner", cfg.exp_name, interval_s=1.0)
        # A resumed run, or Ray restarting this actor after it died: go on from the latest checkpoint.
        self._store = CheckpointStore(storage_root(cfg), cfg.checkpoint.keep)
        self.restored_from = self.restore_run_checkpoint(self._store)
        self._incarnation = Incarnation(
            ray.get_runtime_context().get_actor_name() or "learner",
            self._store,
            cfg.ray.get("run_id"),
            restored_from=self.restored_from,
        )

    def ping(self) -> int:
        return self.train_iter

    def instance(self) -> dict[str, Any]:
        """Which process this is (a restart is another), where it started from, its iteration."""
        return self._incarnation.answer(train_iter=self.train_iter)

    def save_checkpoint_file(self) -> dict[str, Any]:
        """Write ``learner.pth`` of a run checkpoint into the folder of this learner's iteration;
        the folder and what ``meta.json`` records."""
        return self.save_run_checkpoint_file(self._store)

    def publish(self) -> WeightsRef:
        """Put the current weights into the object store (once per version) and return the ref."""
        version, weights = self.weights()
        ref = self._publisher.publish(version, weights)
        self._metrics.record({metrics.LEARNER_POLICY_VERSION: ref.version}, force=True)
        return ref

    def train_async(self, batch: Batch | None, envstep: int = -1) -> tuple[dict, dict | None]:
        """Async pipeline (``num_returns=2``): train on a sampled batch; ``info['weights']`` holds a
        new ``WeightsRef`` whenever ``publish_freq`` iterations passed since the last one.
        ``info['call_seconds']``: the whole call (training, publishing, metrics), the time the
        learner was busy rather than waiting for its next call."""
        start = time.perf_counter()
        info, priority = self.train(batch, envstep)
        if self._publisher.due(self.train_iter):
            info["weights"] = self.publish()
        self._export(info)
        info["call_seconds"] = time.perf_counter() - start
        return info, priority

    def train_sync(self, envstep: int, *batches: Batch) -> dict:
        """Sync pipeline: train on the collectors' batches, then publish (``call_seconds`` as in
        ``train_async``)."""
        start = time.perf_counter()
        info = self.train_on_policy(batches, envstep)
        info["weights"] = self.publish()
        self._export(info, force=True)
        info["call_seconds"] = time.perf_counter() - start
        return info

    def _export(self, info: dict, force: bool = False) -> None:
        self._metrics.record(info, force=force)
        self._metrics.call_seconds("learner", info["seconds"])
        if self.batch_lag is not None:
            self._metrics.observe(metrics.LEARNER_POLICY_LAG, self.batch_lag)


# The actor classes: the wrappers made remote from outside (options are set per run).


@dataclass
class Actors:
    """Handles of one run's actors. The evaluator and the collectors after ``collector-0`` are
    created by ``start_evaluator`` and ``start_collectors`` (a driver calls them once the learner
    is up, so that they do not compete with it for the CPU while it starts)."""

    namespace: str
    learner: Any
    buffer: Any
    evaluator: Any
    collectors: list
    cfg: EasyDict = field(repr=False)  # the config the actors were created with
    make_evaluator: Callable[[], Any] | None = field(default=None, repr=False)
    make_collector: Callable[[int], Any] | None = field(default=None, repr=False)
    num_collectors: int = 0  # collectors the run has once all are started
    learners: list = field(default_factory=list)  # a learner group's members (learner is the first)
    call_timeout_s: float | None = None  # ray.call_timeout_s: a call this long means a frozen actor
    # the placement groups that reserve a slot each for the learner, buffer and evaluator (by name)
    slots: dict = field(default_factory=dict)

    def start_evaluator(self) -> Any:
        if self.evaluator is None and self.make_evaluator is not None:
            self.evaluator = self.make_evaluator()
        return self.evaluator

    def start_collectors(self) -> list:
        """Create the collectors not created yet; returns their handles."""
        new = []
        if self.make_collector is not None:
            new = [self.make_collector(i) for i in range(len(self.collectors), self.num_collectors)]
            self.collectors += new
        return new

    def start_collector(self, index: int) -> Any:
        """Create collector ``index`` again (it was stopped to make room); its handle."""
        self.collectors[index] = self.make_collector(index)
        return self.collectors[index]

    def named(self) -> list[tuple[str, Any]]:
        """``(name, handle)`` of every actor created so far."""
        core = [("learner", self.learner), ("buffer", self.buffer), ("evaluator", self.evaluator)]
        group = [(learner_name(rank), h) for rank, h in enumerate(self.learners) if rank > 0]
        named = core + group + [(f"collector-{i}", c) for i, c in enumerate(self.collectors)]
        return [(name, handle) for name, handle in named if handle is not None]

    def kill(self) -> None:
        """Kill every actor (no restarts), so the names are free for the next run, and free the slots."""
        for _, handle in self.named():
            try:
                ray.kill(handle, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        release_slots(self.slots)


def create_actors(
    cfg: EasyDict,
    namespace: str,
    publish_freq: int | None = None,
    n_sample: int | None = None,
    buffer: bool = True,
) -> Actors:
    """Create the named actors of ``cfg`` (resources and restarts from ``cfg.ray``).

    Returns once the buffer answers: ``collector-0`` and the learner are still starting then
    (calls queue until they are up; a driver fails after ``ray.actor_start_timeout_s`` if they
    never come up), and a driver can fill the buffer meanwhile (the collector stage's warm-up). The
    evaluator and the other collectors are created once the learner is up
    (``actors.start_evaluator()``, ``actors.start_collectors()``; ``wait_ready`` starts and
    waits for everyone): on a small machine processes that import torch side by side slow each
    other down. Fails after ``ray.actor_start_timeout_s`` if the buffer does not start.
    ``cfg.exp_name`` is made absolute for the actors, whose working directory may differ.
    ``n_sample``: the collectors' samples per call (their trajectories are cut to fit it).
    ``buffer=False`` (on-policy: the data goes from the collectors to the learner): no buffer actor,
    and the call returns at once. The user's code (``user_code``: modules, and what the driver's
    script registers) is loaded by each actor first, and checked in a Ray worker before any actor is
    created (a ``ConfigError`` naming a module the actors cannot import).
    """
    rc = cfg.ray
    cfg = copy.deepcopy(cfg)
    cfg.exp_name = os.path.abspath(cfg.exp_name)
    cfg.ray.run_id = uuid.uuid4().hex[:12]  # names this start's counts of actor starts (``Incarnation``)
    # the learner and the buffer come back from the run's latest checkpoint (a learner group cannot)
    core_restarts = rc.core_max_restarts if rc.get("num_learners", 1) == 1 else 0
    core = dict(namespace=namespace, max_restarts=core_restarts, max_task_retries=0)
    restartable = dict(namespace=namespace, max_restarts=rc.max_restarts, max_task_retries=0)

    code = user_code(cfg)
    check_user_code(code, rc.actor_start_timeout_s)
    # slots first: the collectors, created next, cannot take the room of the learner, buffer, evaluator
    slots = reserve_slots(rc, rc.actor_start_timeout_s, buffer)
    try:
        return _create(cfg, namespace, rc, core, restartable, publish_freq, n_sample, buffer, code, slots)
    except BaseException as err:
        release_slots(slots)
        if not isinstance(err, ray.exceptions.ActorAlreadyExistsError):
            raise
        raise ClusterError(
            f"Another run holds the actor names in Ray namespace '{namespace}' ({err}). Each run needs "
            "its own namespace: leave ray.namespace unset (it is then the experiment folder's name, "
            "and a run into an existing folder gets a fresh one) or stop the other run."
        ) from err


def _create(
    cfg: EasyDict,
    namespace: str,
    rc: EasyDict,
    core: dict,
    restartable: dict,
    publish_freq: int | None,
    n_sample: int | None,
    buffer: bool,
    code: UserCode,
    slots: dict,
) -> Actors:
    """``create_actors``'s work: the named actors, with the options it settled."""

    def collector(i: int) -> Any:
        return (
            remote_class(CollectorActor)
            .options(
                name=f"collector-{i}",
                num_cpus=rc.collector_num_cpus,
                resources=dict(rc.collector_resources),
                scheduling_strategy=rc.collector_scheduling,
                **restartable,
            )
            .remote(cfg, i, rc.torch_threads, n_sample, code, namespace if buffer else None)
        )

    buffer_handle = None
    if buffer:
        buffer_handle = (
            remote_class(BufferActor)
            .options(
                name="buffer",
                num_cpus=rc.buffer_num_cpus,
                resources=dict(rc.buffer_resources),
                **core,
                **slot_options(slots, "buffer"),
            )
            .remote(
                cfg.policy.other.replay_buffer,
                cfg.exp_name,
                int(cfg.seed),
                storage_root(cfg),
                cfg.checkpoint.frames_flush_s if cfg.checkpoint.save_buffer else 0.0,
                cfg.ray.run_id,
            )
        )
    collectors = [collector(0)]
    publish_freq = rc.publish_freq if publish_freq is None else publish_freq
    learner_options = dict(
        num_cpus=rc.learner_num_cpus,
        num_gpus=rc.learner_num_gpus,
        resources=dict(rc.get("learner_resources", {})),
        **core,
    )
    learners = []
    if rc.get("num_learners", 1) > 1:
        from ding_ray.distributed.learner_group import create_learner_group

        learners = create_learner_group(cfg, publish_freq, rc.num_learners, learner_options, code)
        learner = learners[0]
    else:
        learner = (
            remote_class(LearnerActor)
            .options(name="learner", **learner_options, **slot_options(slots, "learner"))
            .remote(cfg, publish_freq, code)
        )
    evaluator = remote_class(EvaluatorActor).options(
        name="evaluator", num_cpus=rc.evaluator_num_cpus, **restartable, **slot_options(slots, "evaluator")
    )
    actors = Actors(
        namespace,
        learner,
        buffer_handle,
        None,
        collectors,
        cfg,
        make_evaluator=lambda: evaluator.remote(cfg, rc.torch_threads, code),
        make_collector=collector,
        num_collectors=rc.num_collectors,
        learners=learners,
        call_timeout_s=rc.get("call_timeout_s"),
        slots=slots,
    )
    if buffer_handle is not None:
        try:
            _wait(actors, ["buffer"], rc.actor_start_timeout_s)
        except Exception:
            actors.kill()
            raise
    return actors


def wait_ready(actors: Actors, timeout_s: float) -> None:
    """Start the evaluator and the other collectors and block until every actor answers a
    ping; fail with names and numbers instead of hanging."""
    actors.start_evaluator()
    actors.start_collectors()
    _wait(actors, [name for name, _ in actors.named()], timeout_s)


def _wait(actors: Actors, names: list[str], timeout_s: float) -> None:
    handles = dict(actors.named())
    pending = {handles[name].ping.remote(): name for name in names}
    deadline = time.monotonic() + timeout_s
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
        if not ready:
            waiting = sorted(pending.values())
            raise ClusterError(
                f"Actors {waiting} did not start within {timeout_s:g} s (ray.actor_start_timeout_s). "
                + why_not_started(actors, waiting)
            )
        for ref in ready:
            name = pending.pop(ref)
            try:
                ray.get(ref)
            except RayActorError as err:  # its constructor raised: the error's own line, Ray's text logged
                logger.warning("the %s actor could not start:\n%s", name, ray_text(err))
                raise ActorDiedError(
                    f"The {name} actor could not start: {raised_line(err)} (its traceback is in the log)."
                ) from None
