"""The hosts harness: real Ray nodes on separate IPs, faults and link shaping that the network shows,
and nothing left on the machine afterwards."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ding_ray.testing.hosts import Host, Hosts
from ding_ray.testing.netns import leftovers

pytestmark = pytest.mark.hosts

PROBE = str(Path(__file__).with_name("net_probe.py"))
RAY_PORT = 6379

CLUSTER = """
import json
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

ray.init()
alive = [node for node in ray.nodes() if node["Alive"]]

@ray.remote(num_cpus=0)
def node_ip():
    return ray.util.get_node_ip_address()

pinned = [NodeAffinitySchedulingStrategy(node["NodeID"], soft=False) for node in alive]
ips = ray.get([node_ip.options(scheduling_strategy=where).remote() for where in pinned])
print(json.dumps({"alive": len(alive), "task_ips": ips}))
"""

UNTIL_DEAD = """
import sys, time
import ray

ray.init()
start = time.monotonic()
while any(node["Alive"] for node in ray.nodes() if node["NodeManagerAddress"] == sys.argv[1]):
    time.sleep(0.2)
print(time.monotonic() - start)
"""


def probe(host: Host, *args) -> subprocess.CompletedProcess:
    return host.run([sys.executable, PROBE, *map(str, args)], timeout=30)


def connect_seconds(host: Host, ip: str) -> float | None:
    """Seconds one TCP connect from ``host`` to ``ip``'s Ray port took; None if it failed."""
    result = probe(host, "connect", ip, RAY_PORT)
    return float(result.stdout) if result.returncode == 0 else None


def throughput(sink: Host, source: Host, port: int) -> float:
    """Bytes per second ``source`` sends ``sink`` over TCP, measured by the sink over one second."""
    command = [sys.executable, PROBE, "tcp-sink", sink.ip, str(port), "1.0"]
    with sink.popen(command, stdout=subprocess.PIPE, text=True) as receiver:
        assert receiver.stdout.readline().strip() == "listening"
        probe(source, "tcp-source", sink.ip, port)
        return float(receiver.communicate(timeout=30)[0])


def test_three_hosts_form_one_ray_cluster(hosts, up_budget):
    assert hosts.up_seconds <= up_budget
    ips = [host.ip for host in hosts]
    assert len(set(ips)) == 3

    result = hosts.run_in(hosts.head, [sys.executable, "-c", CLUSTER], timeout=120)

    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.splitlines()[-1])
    assert seen["alive"] == 3
    assert sorted(seen["task_ips"]) == sorted(ips)  # one task ran on each host's node
    assert all(any(p.name == "raylet.out" for p in host.logs()) for host in hosts)


def test_partition_cuts_a_host_off_until_it_heals(hosts):
    worker = hosts[2]
    assert connect_seconds(worker, hosts.head.ip) is not None

    worker.partition(seconds=2.0)
    start = time.monotonic()
    assert connect_seconds(worker, hosts.head.ip) is None  # its packets out are lost
    assert connect_seconds(hosts.head, worker.ip) is None  # and those to it
    while connect_seconds(worker, hosts.head.ip) is None:
        assert time.monotonic() - start < 10, "the partition did not heal"

    assert time.monotonic() - start >= 2.0


def test_rate_lowers_the_measured_throughput_and_counters_see_it(hosts):
    sink, source = hosts[1], hosts[2]
    sent_before = source.bytes_sent
    unshaped = throughput(sink, source, 5001)
    assert source.bytes_sent - sent_before >= unshaped  # at least one second's worth crossed the link

    source.shape(rate="20mbit")
    try:
        shaped = throughput(sink, source, 5002)
    finally:
        source.shape()

    assert shaped <= unshaped / 5
    assert shaped <= 1.5 * 20e6 / 8  # the token bucket's rate, in bytes per second, with slack
    assert throughput(sink, source, 5003) >= 5 * shaped  # shape() with no argument lifts the limit


def test_delay_adds_to_each_direction(hosts):
    worker = hosts[1]
    plain = statistics.median(connect_seconds(worker, hosts.head.ip) for _ in range(3))

    worker.shape(delay=0.05)
    try:
        delayed = statistics.median(connect_seconds(worker, hosts.head.ip) for _ in range(3))
    finally:
        worker.shape()

    assert delayed >= plain + 0.09  # the SYN out and the SYN-ACK in, 50 ms each
    assert connect_seconds(worker, hosts.head.ip) < delayed


def test_loss_drops_that_fraction_of_packets(hosts):
    sender, receiver = hosts[1], hosts[2]
    sender.shape(loss=0.3)
    command = [sys.executable, PROBE, "udp-count", receiver.ip, "5005", "2.0"]
    try:
        with receiver.popen(command, stdout=subprocess.PIPE, text=True) as counter:
            assert counter.stdout.readline().strip() == "listening"
            probe(sender, "udp-send", receiver.ip, 5005, 500)
            received = int(counter.communicate(timeout=30)[0])
    finally:
        sender.shape()

    assert 0.55 * 500 <= received <= 0.85 * 500  # about 70 % of 500 arrive


def test_a_killed_host_is_dead_to_ray_and_down_leaves_nothing(host_tools):
    with Hosts(2) as hosts:
        lost = hosts[1]
        lost.kill()
        assert not lost.alive
        assert lost.bytes_sent > 0  # counters still read after the host is gone

        waited = hosts.run_in(hosts.head, [sys.executable, "-c", UNTIL_DEAD, lost.ip], timeout=60)

        assert waited.returncode == 0, waited.stderr[-3000:]
        assert float(waited.stdout.splitlines()[-1]) <= 20  # health checks of about 10 s, with slack
        assert hosts.head.alive

    assert hosts.down_seconds <= 2
    assert leftovers(hosts.name) == []
