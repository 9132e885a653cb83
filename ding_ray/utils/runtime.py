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

import numpy as np
from tqdm import tqdm

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
            # to the current stderr, as Python's last resort, through tqdm: a progress bar there (the
            # driver's) is cleared first and drawn again after, so the line never lands inside it
            tqdm.write(self.format(record), file=sys.stderr)
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


_last_signal: str | None = None  # the SIGTERM that stopped the latest run (None: a Ctrl-C, or none)
_run_end: str | None = None  # what the latest interrupted run saved on its way out


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


def set_run_end(text: str) -> None:
    """Record what an interrupted run saved on its way out, for the one line it ends with."""
    global _run_end
    _run_end = text


def run_end() -> str | None:
    """What the latest interrupted run of this process saved (``set_run_end``), or None when no
    run had started."""
    return _run_end


class RunInterrupts:
    """SIGINT and SIGTERM while a run is on (``with RunInterrupts() as interrupts:``).

    The first one stops the run as Ctrl-C does: a ``KeyboardInterrupt`` in the main thread, so that
    the run saves its last checkpoint and ``result.json`` on its way out (SIGTERM is what ``kill``,
    ``ray job stop`` and schedulers send). Every signal after it is held until the block ends: a
    second Ctrl-C must not cut that save off half-way. ``hold()`` holds the first one too, once
    the run has begun to end by itself. A line on stderr says each held signal waits; SIGKILL ends
    the process at once. Leaving the block puts the previous handlers back, and a signal held
    during a clean end is raised then as the interrupt it is. Outside the main thread (signals go
    to it only) this does nothing.
    """

    def __init__(self) -> None:
        self.held: str | None = None
        self._holding = False
        self._previous: dict[int, object] = {}

    def __enter__(self) -> RunInterrupts:
        global _last_signal, _run_end
        if threading.current_thread() is not threading.main_thread():
            return self
        _last_signal = _run_end = None
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._previous[signum] = signal.signal(signum, self._on_signal)
        return self

    def hold(self) -> None:
        """From now on every signal waits for the end of the block."""
        self._holding = True

    def _on_signal(self, signum: int, frame: object) -> None:
        global _last_signal
        name = signal.Signals(signum).name
        if self._holding:
            self.held = self.held or name
            # os.write: a signal handler must not take the locks of logging or of sys.stderr
            with contextlib.suppress(OSError):
                os.write(
                    2,
                    f"ding_ray: {name} waits until the run's last checkpoint and result.json are written "
                    "(kill -9 ends it now and loses them)\n".encode(),
                )
            return
        self._holding = True
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        _last_signal = name
        raise KeyboardInterrupt(f"stopped by signal {name}")

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}
        if self.held is not None and exc is None:
            raise KeyboardInterrupt("Ctrl-C" if self.held == "SIGINT" else f"stopped by signal {self.held}")
