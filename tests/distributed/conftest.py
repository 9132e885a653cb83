"""One local Ray for the whole session; tests that need their own Ray run it in a subprocess."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import pytest
import ray

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# A child that a test Ctrl-Cs must take SIGINT as a terminal delivers it: a shell's background job
# (a CI step started with `&`) ignores SIGINT, and its children inherit that. The shim sets SIGINT
# back to its default and execs the command in place (same pid). A preexec_fn would do the same in
# the forked child before exec, where a lock held by another thread of this process (Ray's threads
# of the session fixture) can hang it.
_CTRL_C_SHIM = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execvp(sys.argv[1], sys.argv[1:])"
)


def with_ctrl_c(cmd: list[str]) -> list[str]:
    """``cmd`` started so that it takes Ctrl-C as in a terminal (see ``_CTRL_C_SHIM``)."""
    return [sys.executable, "-c", _CTRL_C_SHIM, *cmd]


def stop_ray_head(head: subprocess.Popen) -> None:
    """Stop the cluster of a ``ray start --head --block`` process started in a session of its own
    (through ``with_ctrl_c``): Ctrl-C, which it answers by stopping its cluster in a second or two
    (SIGTERM it ignores); then SIGKILL whatever of its group is left."""
    try:
        head.send_signal(signal.SIGINT)
        head.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(head.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    head.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def ray_session():
    """A local Ray with 4 logical CPUs (over-declared on 2 cores: tests need room, not speed).

    Yields the Prometheus port of the node; metrics are exported every second instead of ten.
    """
    port = free_port()
    # Worker processes unpickle functions defined in these test modules: let them import `tests`
    # from the repository root, whatever the install mode of the package.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p)
    ray.init(
        num_cpus=4,
        include_dashboard=False,
        namespace="ding_ray_tests",
        _metrics_export_port=port,
        _system_config={"metrics_report_interval_ms": 1000},
    )
    yield port
    ray.shutdown()


def run_python(code: str, timeout: float = 240, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (its own Ray), from the repository root."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
