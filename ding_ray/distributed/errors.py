"""Errors of the Ray layer that are also Ray's own: ``except ray.exceptions.RayActorError`` and
``except ding_ray.errors.ActorDiedError`` both catch a dead actor that ended a run."""

from __future__ import annotations

from ray.exceptions import RayActorError

from ding_ray import errors


class ActorDiedError(errors.ActorDiedError, RayActorError):
    """An actor the run cannot go on without died and could not be brought back; the message
    names it, says what was tried, and where its log is."""

    def __init__(self, message: str, actor_id: str | None = None) -> None:
        errors.ActorDiedError.__init__(self, message)
        RayActorError.__init__(self, actor_id=actor_id, error_msg=message)

    def __str__(self) -> str:
        return self.error_msg

    def __reduce__(self) -> tuple:  # one argument, as __init__ takes it
        return type(self), (self.error_msg, self.actor_id)
