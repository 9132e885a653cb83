"""How ding_ray's plain actor classes meet Ray: ``remote_class`` makes one an actor class,
``Incarnation`` is what every actor answers to its ``instance()`` calls, and ``RayPort`` is the
``ActorSupervisor``'s view of Ray."""

from __future__ import annotations

import functools
import uuid
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import ObjectLostError, RayActorError, RayTaskError

from ding_ray.distributed import placement
from ding_ray.distributed.errors import get, raised_line
from ding_ray.distributed.startup import why_not_started
from ding_ray.distributed.supervisor import Died

if TYPE_CHECKING:
    from ding_ray.distributed.actors import Actors
    from ding_ray.utils.checkpoint import CheckpointStore


@functools.cache
def remote_class(cls: type) -> Any:
    """``ray.remote(cls)``, once per class: the actor classes stay plain classes (testable without
    Ray), made remote where a run creates their actors."""
    return ray.remote(cls)


def is_actor_failure(err: BaseException) -> bool:
    """Whether ``err`` comes from an actor (or an object) that was lost, not from the call's code."""
    if isinstance(err, (RayActorError, ObjectLostError)):
        return True
    return isinstance(err, RayTaskError) and isinstance(err.cause, (RayActorError, ObjectLostError))


class RayPort:
    """Ray calls for the supervisor of one run's ``actors``."""

    def __init__(self, actors: Actors) -> None:
        self.actors = actors
        self._forgotten: list = []

    def instance(self, handle: Any, retry: bool) -> Any:
        # a call to a restarting actor fails at once; one that Ray retries answers once it is back
        return (handle.instance.options(max_task_retries=-1) if retry else handle.instance).remote()

    def ready(self, refs: list, timeout_s: float) -> list:
        return ray.wait(refs, num_returns=len(refs), timeout=timeout_s)[0] if refs else []

    def result(self, ref: Any) -> Any:
        try:
            return get(ref)
        except (RayActorError, RayTaskError, ObjectLostError) as err:
            if not is_actor_failure(err):
                raise  # the call's own error (a NaN loss, a bad batch): not a death
            if isinstance(err, RayActorError) and err.actor_init_failed:  # the error's own line
                raise Died(raised_line(err), init_failed=True) from err
            raise Died(f"{type(err).__name__}: {err}") from err

    def kill(self, handle: Any) -> None:
        ray.kill(handle, no_restart=False)

    def stop(self, handle: Any) -> None:
        """End the actor for good (Ray does not restart it)."""
        try:
            ray.kill(handle, no_restart=True)
        except Exception:  # noqa: BLE001 - gone already
            pass

    def needs(self, name: str) -> dict[str, float]:
        """The resources actor ``name`` asks for on one node."""
        return dict(placement.actor_demands(self.actors.cfg.ray)).get(name, {})

    def placed(self, name: str) -> bool | None:
        """Whether actor ``name``'s slot sits on a live node; None: it has no slot."""
        slot = self.actors.slots.get(name)
        return None if slot is None else placement.placed(slot)

    def free_by_node(self, nodes: Mapping[str, str]) -> dict[str, dict[str, float]] | None:
        """Free per node (``placement.free_by_node``), less what the actors of ``nodes`` outside
        placement groups hold: those without a slot, unless a Tune trial's group holds the run."""
        in_trial_group = placement.inside_placement_group()
        outside = [] if in_trial_group else [name for name in nodes if name not in self.actors.slots]
        return placement.free_by_node([(nodes[name], self.needs(name)) for name in outside])

    def forget(self, refs: list) -> None:
        """Their outcomes are taken later (``sweep``), so that Ray does not log each failure
        again when a reference is dropped."""
        self._forgotten += list(refs)
        self.sweep(0)

    def sweep(self, wait_s: float = 0) -> None:
        if not self._forgotten:
            return
        done, self._forgotten = ray.wait(self._forgotten, num_returns=len(self._forgotten), timeout=wait_s)
        for ref in done:
            try:
                ray.get(ref)
            except Exception:  # noqa: BLE001 - their errors are the death already handled
                pass

    def why_not_started(self, names: list[str]) -> str:
        return why_not_started(self.actors, names)

    def describe(self, name: str) -> str:
        return f"{name} actor (namespace '{self.actors.namespace}')"


class Incarnation:
    """One process of an actor: a restart is another. ``store`` and ``run_id``: where the starts of
    the actor ``name`` in the run ``run_id`` are counted (the run's checkpoints), so that its answers
    also reveal deaths nobody saw; without them, only the deaths the driver sees count."""

    def __init__(
        self, name: str, store: CheckpointStore | None = None, run_id: str | None = None, **info: Any
    ) -> None:
        self.id = uuid.uuid4().hex
        # Ray restarted this actor: also one that died before it came this far (before any count)
        with warnings.catch_warnings():  # Ray's property reads its own deprecated actor_id
            warnings.simplefilter("ignore", DeprecationWarning)
            self.restarted = ray.get_runtime_context().was_current_actor_reconstructed
        self.count = None if store is None or not run_id else store.next_incarnation(f"{name}-{run_id}")
        self.info = {"node": ray.get_runtime_context().get_node_id(), **info}  # where it runs

    def answer(self, **now: Any) -> dict[str, Any]:
        """What ``instance()`` returns: who this is, where it started from, and ``now``."""
        return {"id": self.id, "incarnation": self.count, "restarted": self.restarted, **self.info, **now}
