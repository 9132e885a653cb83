"""Errors of the Ray layer that are also Ray's own: ``except ray.exceptions.RayActorError`` and
``except ding_ray.errors.ActorDiedError`` both catch a dead actor that ended a run.

A ding_ray error an actor raises reaches the driver wrapped by Ray (``RayTaskError``), whose text
is the actor's whole traceback in colour, the error's own message at its end. ``get`` is
``ray.get`` for the driver's calls on actors: it raises the ding_ray error itself, as a run in one
process would, and logs the actor's traceback.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import ray
from ray.exceptions import RayActorError, RayTaskError

from ding_ray import errors

logger = logging.getLogger(__name__)

_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


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


def actor_error(err: BaseException) -> BaseException:
    """The ding_ray error inside ``err`` (Ray's wrapper of an error an actor raised, also one an
    actor got from another actor's call), its traceback logged; ``err`` itself if it holds none."""
    inner = err
    while isinstance(inner, RayTaskError) and isinstance(inner.cause, errors.DingRayError):
        inner = inner.cause
    if inner is not err:
        logger.warning("%s raised in a Ray actor:\n%s", type(inner).__name__, ray_text(err))
    return inner


def ray_text(err: BaseException) -> str:
    """A Ray error's text without its terminal colour codes (for the log)."""
    return _COLOUR.sub("", str(err))


def raised_line(err: BaseException) -> str:
    """The last line of a Ray error's text, colours removed: for an error an actor raised (also in
    its constructor, which an ``ActorDiedError`` reports), the error's own ``Type: message``."""
    lines = [line.strip() for line in ray_text(err).splitlines() if line.strip()]
    return lines[-1] if lines else type(err).__name__


def get(refs: Any, timeout: float | None = None) -> Any:
    """``ray.get``; a ding_ray error an actor raised is raised as itself (``actor_error``)."""
    try:
        return ray.get(refs, timeout=timeout)
    except RayTaskError as err:
        inner = actor_error(err)
        if inner is err:
            raise
        raise inner from None
