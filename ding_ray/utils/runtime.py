"""Process-wide settings every ding_ray process applies: seeds, torch threads, logging."""

from __future__ import annotations

import contextlib
import logging
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np

_IMPORTED = time.time()


def process_age_s() -> float:
    """Seconds since this Python process was launched (start-up included). Read from /proc on
    Linux; elsewhere, or where /proc counts time the machine spent paused (a suspended VM), the
    time since this module was imported."""
    since_import = time.time() - _IMPORTED
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return since_import
    age = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    # Imports before this module take seconds, not minutes: more means a pause was counted.
    return age if age - since_import < 60 else since_import


def set_pkg_seed(seed: int, use_cuda: bool = False) -> None:
    """Seed python, numpy and torch."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if use_cuda and torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def set_torch_threads(num_threads: int = 1) -> None:
    """Limit torch's intra-op threads: on a small machine, processes competing for cores with
    torch's default thread pools slow everything down many times over."""
    import torch

    num_threads = max(1, int(num_threads))
    if torch.get_num_threads() != num_threads:
        torch.set_num_threads(num_threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(num_threads))


class _FallbackHandler(logging.Handler):
    """ding_ray's records on stderr when no other handler would take them.

    With no handler anywhere, Python shows only warnings (its last-resort handler), so an
    application that asks for INFO the way DI-engine's scripts do,
    ``logging.getLogger().setLevel(logging.INFO)``, saw nothing. This handler sits on the
    ``ding_ray`` logger and writes a record only if no other handler is on the record's way to the
    root: once the application configures logging (``basicConfig``, its own handlers), the record
    goes there instead, never twice. What is shown still follows the loggers' levels.
    """

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname).1s %(name)s: %(message)s", "%H:%M:%S"))

    def handle(self, record: logging.LogRecord) -> bool:
        if self._another_handler(logging.getLogger(record.name)):
            return False
        return super().handle(record)

    def _another_handler(self, logger: logging.Logger | None) -> bool:
        while logger is not None:
            if any(h is not self for h in logger.handlers):
                return True
            logger = logger.parent if logger.propagate else None
        return False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")  # the current stderr, as Python's last resort
        except Exception:  # noqa: BLE001 - logging must not raise
            self.handleError(record)


_FALLBACK = _FallbackHandler()


def install_log_fallback() -> None:
    """Put the fallback handler on the ``ding_ray`` logger (once; ``import ding_ray`` does it)."""
    package_logger = logging.getLogger("ding_ray")
    if _FALLBACK not in package_logger.handlers:
        package_logger.addHandler(_FALLBACK)


def setup_logging(level: int = logging.INFO) -> None:
    """Show ding_ray's lines down to ``level``, unless the application configured logging itself."""
    package_logger = logging.getLogger("ding_ray")
    if logging.getLogger().handlers or any(h is not _FALLBACK for h in package_logger.handlers):
        return
    install_log_fallback()
    package_logger.setLevel(level)


_last_signal: str | None = None  # the signal the latest ``sigterm_as_interrupt`` block caught


def interrupt_cause(err: BaseException) -> str:
    """What stopped a run that ended in ``err`` (a ``KeyboardInterrupt``): the signal's words, or
    ``Ctrl-C``. A SIGTERM that came while the driver waited in ``ray.get`` reaches the caller as a
    ``KeyboardInterrupt`` without its words; the signal the handler kept still names it."""
    if str(err):
        return str(err)
    return f"stopped by signal {_last_signal}" if _last_signal else "Ctrl-C"


def error_text(err: BaseException) -> str:
    """``'<type>: <message>'`` of the error a run ended with (result.json's ``error``); an
    interrupt says what stopped it (``interrupt_cause``), also when Ray handed it back bare."""
    words = interrupt_cause(err) if isinstance(err, KeyboardInterrupt) else err
    return f"{type(err).__name__}: {words}"


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM (what ``kill``, ``ray job stop`` and schedulers send) raises
    ``KeyboardInterrupt`` as Ctrl-C does, so a run stopped either way can save a checkpoint first.
    Outside the main thread (signals go to it only) this does nothing. The signal is also kept
    for ``interrupt_cause``: Ray turns an interrupt raised inside ``ray.get`` into a bare one."""
    global _last_signal
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _last_signal = None

    def _interrupt(signum: int, frame: object) -> None:
        global _last_signal
        _last_signal = signal.Signals(signum).name
        raise KeyboardInterrupt(f"stopped by signal {_last_signal}")

    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
