"""``HeadWatch``: a driver whose Ray head is lost ends within seconds, with one line saying what
happened and how the run goes on.

Without the head (its GCS), every Ray call that needs it (placement groups, the node list, killing
an actor) waits, retrying, until Ray aborts the process with a line about the GCS and none about
the run; on hosts whose head was killed, a driver sat silent for over three minutes that way. So a
thread of the driver opens a TCP connection to the head's GCS port every second; when none opened
for ``ray.head_timeout_s`` seconds, it asks the run for its last words (``on_lost``: result.json
with the error, and the line naming the latest checkpoint to resume from), prints that line on
stderr as ``<program>: error: ...`` and ends the process with exit status 1: the main thread may be
inside one of those waiting calls, and nothing else would end it.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import ray

from ding_ray.distributed.cluster import ClusterError

logger = logging.getLogger(__name__)


def tcp_answers(address: str, timeout_s: float = 1.0) -> bool:
    """Whether a TCP connection to ``address`` (``host:port``) opens within ``timeout_s``."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except OSError:
        return False


def head_lost(address: str, silent_s: float) -> ClusterError:
    return ClusterError(
        f"lost the Ray head at {address}: nothing answered there for {silent_s:.0f} s (its machine is "
        "down, or its Ray was stopped), and the run cannot go on without it"
    )


def resume_words(run_dir: str, store: Any) -> str:
    """Where the run ``run_dir`` can go on from: its checkpoint ``store``'s latest checkpoint."""
    try:
        latest = store.latest() if store is not None else None
    except Exception:  # noqa: BLE001 - a damaged checkpoint: resume names it
        latest = None
    if latest is None:
        return "It has no checkpoint to resume from (checkpoint.freq sets how often one is written)."
    return (
        f"Its latest checkpoint is {latest.folder} (iteration {latest.meta.get('train_iter')}): once a "
        f"head is up, --resume {run_dir} (resume={run_dir!r} in Python) continues the run from there."
    )


class HeadWatch:
    """Watches the head at ``address`` from a daemon thread between ``start()`` and ``stop()``.

    Args:
        address: the head's GCS, ``host:port``.
        timeout_s: seconds without an answer before the head counts as lost.
        on_lost: called with those seconds once the head is lost; returns the line to end with.
        answers: whether the head answers now (a TCP connection to its GCS port).
        end: ends the process with an exit status (``os._exit``).
    """

    def __init__(
        self,
        address: str,
        timeout_s: float,
        on_lost: Callable[[float], str],
        every_s: float = 1.0,
        answers: Callable[[str], bool] = tcp_answers,
        clock: Callable[[], float] = time.monotonic,
        end: Callable[[int], None] = os._exit,
    ) -> None:
        self.address, self.timeout_s, self.every_s = address, float(timeout_s), every_s
        self.on_lost, self.answers, self.clock, self.end = on_lost, answers, clock, end
        self.stopped = threading.Event()
        self.silent_since: float | None = None  # when the head stopped answering (None: it answers)

    @classmethod
    def of_driver(cls, timeout_s: float, on_lost: Callable[[float], str]) -> HeadWatch | None:
        """The watch of the head this process is connected to (None in Ray's client mode, where it
        has no GCS address: the client server ends the connection itself)."""
        try:
            address = ray.get_runtime_context().gcs_address
        except Exception:  # noqa: BLE001 - Ray's client mode
            return None
        return cls(address, timeout_s, on_lost)

    def start(self) -> None:
        threading.Thread(target=self.run, name="ding_ray-head-watch", daemon=True).start()

    def stop(self) -> None:
        self.stopped.set()

    def run(self) -> None:
        while not self.stopped.wait(self.every_s):
            if self.check():
                return

    def check(self) -> bool:
        """One look at the head; True once it is lost and the process was told to end."""
        if self.answers(self.address):
            self.silent_since = None
            return False
        now = self.clock()
        if self.silent_since is None:
            self.silent_since = now
            logger.warning("the Ray head at %s does not answer", self.address)
        silent_s = now - self.silent_since
        if silent_s < self.timeout_s or self.stopped.is_set():
            return False
        try:
            line = self.on_lost(silent_s)
        except Exception as err:  # noqa: BLE001 - the process ends either way: say why
            line = f"lost the Ray head at {self.address} ({silent_s:.0f} s without an answer); {err}"
        program = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
        try:
            print(f"{program}: error: {' '.join(line.split())}", file=sys.stderr, flush=True)
        finally:
            self.end(1)
        return True
