"""The hosts harness as pytest fixtures: ``host_tools`` and ``ssh_tools`` (skip, naming what is missing,
unless ``DING_RAY_REQUIRE_SYSTEM_TESTS=1``) and ``hosts`` (three Ray hosts shared by a test module)."""

from __future__ import annotations

import os

import pytest

from ding_ray.testing.hosts import Hosts, load_factor
from tests.system_binaries import REQUIRE, require_binary

TOOLS = {
    "ip": "apt-get install iproute2",
    "tc": "apt-get install iproute2",
    "iptables": "apt-get install iptables",
    "unshare": "apt-get install util-linux",
    "nsenter": "apt-get install util-linux",
}


@pytest.fixture(scope="session")
def host_tools() -> None:
    """Root and the programs the harness runs; without them the test skips (or fails, see REQUIRE)."""
    if os.geteuid() != 0:
        message = "needs root (network namespaces, iptables)"
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{message} ({REQUIRE}=1 makes its absence a failure)")
        pytest.skip(message)
    for name, install in TOOLS.items():
        require_binary(name, install)


SSH_TOOLS = {
    "sshd": "apt-get install openssh-server",
    "ssh": "apt-get install openssh-client",
    "ssh-keygen": "apt-get install openssh-client",
    "rsync": "apt-get install rsync",  # Ray's cluster launcher copies files with it
}


@pytest.fixture(scope="session")
def ssh_tools(host_tools) -> None:
    """What ssh hosts (``Hosts(n, ssh=True)``) and Ray's cluster launcher run, as ``host_tools``."""
    for name, install in SSH_TOOLS.items():
        require_binary(name, install)


@pytest.fixture(scope="module")
def up_budget(host_tools) -> float:
    """Seconds three hosts may take to come up: 20 on a quiet machine; starting Ray nodes is CPU-bound,
    so when other work already loads every core (the load average before ``up``) it scales with it."""
    return 20 * load_factor()


@pytest.fixture(scope="module")
def hosts(up_budget) -> Hosts:
    """Three hosts, each with a 1-CPU Ray node; host 0 is the head."""
    with Hosts(3) as started:
        yield started
