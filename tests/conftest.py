"""Settings every test process shares: torch on one thread, as every ding_ray process runs."""

import os
import sys

import pytest

from ding_ray.utils.runtime import set_torch_threads
from tests.short_tmp import remove_short_tmps

set_torch_threads(1)

# Python's default: compiled modules are kept in __pycache__. A shell that sets PYTHONDONTWRITEBYTECODE
# (some CI images do) has every process of the suite, hundreds of Ray actors and drivers among them,
# compile ding_ray's sources again, at every start.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# Folders whose files run end-to-end jobs on Ray or on several hosts (most of a suite's wall time).
# They are handed out first, and within them the files holding a test marked slow, so that the
# many short unit tests fill the workers' gaps at the end instead of one worker finishing a long
# file alone.
LONG_FIRST = ("tests/hosts/", "tests/distributed/", "tests/compat/", "tests/entry/")


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker more than the cores (``--maxprocesses`` caps it). A worker spends part
    of its time waiting (an actor's start, a timeout a fault test waits out, a subprocess's Ray), and
    with one worker per core those waits leave a core idle."""
    return (os.cpu_count() or 1) + 1


def pytest_collection_modifyitems(config, items):
    # the chaos tests (tests/hosts/test_chaos.py) run only when asked for: -m chaos
    if "chaos" not in (config.getoption("markexpr") or ""):
        chaos = [item for item in items if item.get_closest_marker("chaos")]
        if chaos:
            config.hook.pytest_deselected(items=chaos)
            items[:] = [item for item in items if not item.get_closest_marker("chaos")]

    def folder(item):
        path = item.nodeid
        return next((i for i, prefix in enumerate(LONG_FIRST) if path.startswith(prefix)), len(LONG_FIRST))

    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    # stable: a file's tests stay together and keep their order
    items.sort(key=lambda item: (folder(item), item.path not in slow_files))


@pytest.fixture(autouse=True)
def _restore_cwd():
    """A test that moves into its tmp_path (``os.chdir``) leaves the next test of its process where it
    started: a launcher run from the checkout (``ray up``'s ``file_mounts: .``) must find it there."""
    cwd = os.getcwd()
    yield
    os.chdir(cwd)


def pytest_sessionfinish(session, exitstatus):
    remove_short_tmps()  # the Ray temp folders and homes this test process made
