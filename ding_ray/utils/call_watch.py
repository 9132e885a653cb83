"""``CallWatch``: tells when a call in flight is slow (far above the recent median) or has timed out.

Remote calls have no timeout of their own: a frozen process (SIGSTOP, a hung driver, a machine
swapping) never answers and never dies, so the caller would wait for ever without a word. The
caller notes each finished call's duration and asks about each call in flight; ``check`` logs a
slow call and, past the timeout, has the caller's ``kill`` end the process.
"""

from __future__ import annotations

import logging
import statistics
from collections import deque
from collections.abc import Callable

logger = logging.getLogger(__name__)

OK, SLOW, TIMED_OUT = "ok", "slow", "timed_out"


class CallWatch:
    """Durations of one kind of call, and a verdict on a call in flight from its elapsed time.

    A call is ``SLOW`` past ``slow_factor`` times the median of the last ``window`` durations (and
    at least ``min_slow_s``), and ``TIMED_OUT`` past ``timeout_s`` whatever the median says.
    """

    def __init__(
        self, timeout_s: float, slow_factor: float = 10.0, min_slow_s: float = 5.0, window: int = 21
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"A call timeout must be positive, got {timeout_s}.")
        self.timeout_s, self.slow_factor, self.min_slow_s = float(timeout_s), slow_factor, min_slow_s
        self._durations: deque[float] = deque(maxlen=window)

    def done(self, seconds: float) -> None:
        """A call finished after ``seconds``."""
        self._durations.append(float(seconds))

    @property
    def median(self) -> float | None:
        """Median of the recent durations; None before the first call finished."""
        return statistics.median(self._durations) if self._durations else None

    def verdict(self, elapsed: float) -> str:
        """``OK``, ``SLOW`` or ``TIMED_OUT`` for a call in flight for ``elapsed`` seconds."""
        if elapsed > self.timeout_s:
            return TIMED_OUT
        if elapsed <= self.min_slow_s:  # the common case, asked every iteration: no median needed
            return OK
        median = self.median
        if median is not None and elapsed > max(self.slow_factor * median, self.min_slow_s):
            return SLOW
        return OK

    def check(
        self, name: str, elapsed: float, warned: bool, kill: Callable[[], None], after_kill: str
    ) -> str:
        """The verdict on a call of ``name`` (an actor) in flight for ``elapsed`` seconds, acted on:
        a timed-out call is logged as an error and ``kill()`` ends its process (``after_kill`` says
        what happens next); a slow one is logged once (``warned``: it was already)."""
        verdict = self.verdict(elapsed)
        if verdict == TIMED_OUT:
            logger.error(
                "%s has not answered its call for %.0f s (ray.call_timeout_s=%g): treated as dead and "
                "killed, %s. Frozen (SIGSTOP, swapping) or stuck in an env step?",
                name,
                elapsed,
                self.timeout_s,
                after_kill,
            )
            kill()
        elif verdict == SLOW and not warned:
            median = self.median
            logger.warning(
                "%s's call has taken %.1f s, %.0fx its recent median %.2f s; past ray.call_timeout_s=%g s "
                "it is treated as dead and restarted",
                name,
                elapsed,
                elapsed / max(median, 1e-9),
                median,
                self.timeout_s,
            )
        return verdict
