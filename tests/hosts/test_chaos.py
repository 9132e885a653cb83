"""Chaos on real hosts (``ding_ray.testing.hosts``): a run of ding_ray on a Ray cluster of network
namespaces loses a collector's host, the learner's, the buffer's or the head, has a collector host
cut off for 30 s, or has its collectors behind a slow link, and goes on (the head: the driver ends
with one line, and ``--resume`` from a new head goes on). The driver is ``chaos_run.py`` (the head:
``ding-ray train``), run inside a host; the run's folder is this machine's, which every host sees:
the shared storage of a real cluster.

Placement is pinned with custom resources, so each test does the same thing every run: a victim
host offers no CPU, only the resource its actors ask for (``ray.collector_resources``,
``ray.learner_resources``, ``ray.buffer_resources``), so nothing else lands there; the head has the
CPUs for the rest (in the head-loss test it has none: everything runs on host 1).

Settings: the harness's shortened health checks declare a lost host dead within about ten seconds
(``RAY_health_check_*``, ``ding_ray.testing.hosts``); the head-loss test sets
``ray.head_timeout_s=10``, so that the driver gives the head up sooner than its default. A host cut
off and healed keeps Ray's log monitor, which ``ray start`` leaves beside the node and which does
not end with the node's raylet; it holds nothing of the run and is the one process allowed there.

Run them with ``python -m pytest -n 0 -m chaos tests/hosts/test_chaos.py``; the default run leaves
them out (each brings up its own hosts and trains: a minute or two each).
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ding_ray.testing.hosts import Host, Hosts
from ding_ray.testing.netns import leftovers, netns_pids
from tests.distributed.conftest import REPO

pytestmark = [pytest.mark.hosts, pytest.mark.chaos]

STOP_VALUE = 475  # CartPole-v1's, in ding_ray.configs.apex_dqn
HEAD_TIMEOUT_S = 10  # ray.head_timeout_s of the head-loss test
PARTITION_S = 30
SHAPED_BUDGET = 20_000  # env steps of the run over the slow link
COLLECTOR_SLOT = ["ray.collector_num_cpus=0", "ray.collector_resources={'collector_slot': 1}"]


class Driver:
    """``chaos_run.py`` running in a host: its JSON events as they come, its stderr in a file."""

    def __init__(self, host: Host, exp_name: Path, *args: str) -> None:
        self.log = exp_name.parent / f"{exp_name.name}.log"
        self.events: queue.Queue = queue.Queue()
        argv = [sys.executable, "-m", "tests.hosts.chaos_run", str(exp_name), *args]
        with open(self.log, "w") as log:
            self.process = host.popen(
                argv, env={"PYTHONPATH": REPO}, cwd=REPO, stdout=subprocess.PIPE, stderr=log, text=True
            )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            if line.startswith('{"event"'):
                self.events.put(json.loads(line))
        self.events.put(None)  # the driver's output ended

    def event(self, name: str, timeout: float) -> dict:
        """The next event, which must be ``name``."""
        try:
            event = self.events.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no {name!r} from the driver within {timeout} s; its log: {self.tail()}")
        assert event is not None and event["event"] == name, f"{event}; the driver's log: {self.tail()}"
        return event

    def end(self, timeout: float) -> dict:
        """The run's last line, once the driver exited well; result.json is checked to say the same."""
        end = self.event("end", timeout)
        assert self.process.wait(timeout=60) == 0, self.tail()
        assert "error" not in end, f"{end['error']}; the driver's log: {self.tail()}"
        exp_name = self.log.with_suffix("")
        assert json.loads((exp_name / "result.json").read_text()) == end["result"]
        return end

    def tail(self) -> str:
        return self.log.read_text()[-3000:]


def victims(strike: dict, host: Host) -> list[str]:
    """The actors that ran on ``host`` when the driver said to strike."""
    return sorted(name for name, ip in strike["hosts"].items() if ip == host.ip)


def test_a_collector_host_killed_mid_run_loses_at_most_a_batch_per_collector_and_the_run_reaches_475(
    host_tools, tmp_path
):
    # three collectors: host 1 has slots for two, host 2 for one, the head none
    slots = [{}, {"collector_slot": 2}, {"collector_slot": 1}]
    with Hosts(3, cpus=[2, 0, 0], resources=slots) as hosts:
        lost = hosts[1]
        driver = Driver(
            hosts.head,
            tmp_path / "run",
            "--config=apex",
            "--strike-at=100",
            "--max-env-step=300000",
            "--set",
            "ray.num_collectors=3",
            *COLLECTOR_SLOT,
        )
        strike = driver.event("strike", timeout=180)
        on_lost = victims(strike, lost)
        assert len(on_lost) == 2 and all(name.startswith("collector-") for name in on_lost), str(strike)
        lost.kill()
        end = driver.end(timeout=400)
    assert leftovers(hosts.name) == []
    result = end["result"]
    print("collector host killed:", {k: result[k] for k in ("wall_s", "env_steps", "lost_batches")})
    assert result["stop"] and result["best_eval_return"] >= STOP_VALUE
    assert result["lost_batches"] <= len(on_lost)  # the calls in flight there: one per collector
    assert result["recoveries"] == []  # the learner and the buffer were not touched


@pytest.mark.parametrize("actor", ["learner", "buffer"])
def test_the_learner_or_buffer_host_killed_it_comes_back_on_another_host_from_the_last_checkpoint(
    host_tools, tmp_path, actor
):
    # the actor's slot fits on host 1 or host 2, nothing else does: it comes back on the other
    node = f"{actor}_node"
    with Hosts(3, cpus=[2, 0, 0], resources=[{}, {node: 1}, {node: 1}]) as hosts:
        driver = Driver(
            hosts.head,
            tmp_path / "run",
            "--config=small",
            "--strike-at=150",
            "--after-checkpoint",
            "--max-train-iter=1500",
            "--set",
            "checkpoint.freq=100",
            "checkpoint.keep=100",
            f"ray.{actor}_num_cpus=0",
            f"ray.{actor}_resources={{'{node}': 1}}",
        )
        strike = driver.event("strike", timeout=180)
        (lost,) = [host for host in hosts if host.ip == strike["hosts"][actor]]
        assert lost is not hosts.head
        lost.kill()
        end = driver.end(timeout=300)
    assert leftovers(hosts.name) == []
    assert end["hosts_after"][actor] not in (None, lost.ip, hosts.head.ip)
    result = end["result"]
    (event,) = result["recoveries"]
    print(f"{actor} host killed:", event)
    assert event["actor"] == actor
    restored = event["restored_from"]
    assert strike["checkpoint"] <= restored  # the latest committed before it came back
    meta = json.loads(Path(restored, "meta.json").read_text())
    if actor == "learner":
        assert event["lost_train_iters"] > 0
        assert event["lost_train_iters"] >= strike["train_iter"] - meta["train_iter"]
    else:
        assert event["buffer_count"] == meta["buffer_count"] > 0  # the snapshot's transitions
        assert event["lost_transitions"] > 0  # those pushed since the snapshot
    assert result["train_iter"] >= 1500


def ding_ray_train(host: Host, log: Path, *args: str) -> subprocess.Popen:
    """``ding-ray train ARGS`` in ``host``, its output (stdout and stderr) in ``log``."""
    with open(log, "w") as out:
        return host.popen(
            [str(Path(sys.executable).with_name("ding-ray")), "train", *args],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def test_the_head_host_lost_the_driver_ends_with_one_line_and_resume_from_a_new_head_goes_on(
    host_tools, tmp_path
):
    # a head of no CPU (nothing but Ray's own processes there); the driver and the actors on host 1
    run, log = tmp_path / "run", tmp_path / "train.log"
    first = ["apex_dqn", "--mode=ray", "--max-env-step=200000", "--set", f"exp_name={run}"]
    first += ["checkpoint.freq=100", "ray.progress_bar=False", f"ray.head_timeout_s={HEAD_TIMEOUT_S}"]
    with Hosts(2, cpus=[0, 2]) as hosts:
        driver = ding_ray_train(hosts[1], log, *first)
        deadline = time.monotonic() + 180
        while not list(run.glob("checkpoints/iter_*/meta.json")):
            assert driver.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        hosts.head.kill()
        lost_at = time.monotonic()
        returncode = driver.wait(timeout=HEAD_TIMEOUT_S + 60)
        ended_s = time.monotonic() - lost_at
    assert leftovers(hosts.name) == []
    output = log.read_text()
    last = output.strip().splitlines()[-1]
    print(f"the driver ended {ended_s:.1f} s after the head was lost: {last}")
    assert returncode == 1, output[-3000:]
    assert last.startswith(f"ding-ray: error: lost the Ray head at {hosts.address}: nothing answered"), last
    assert f"--resume {run} " in last
    assert ended_s < HEAD_TIMEOUT_S + 20  # not Ray's own minutes of retries
    checkpoint = last.split("Its latest checkpoint is ")[1].split(" ")[0]
    meta = json.loads(Path(checkpoint, "meta.json").read_text())
    assert "lost the Ray head" in json.loads((run / "result.json").read_text())["error"]

    # a new head (a new cluster), the run's folder on the storage every host shares
    budget = meta["env_steps"] + 3000
    resume_log = tmp_path / "resume.log"
    with Hosts(2, cpus=[0, 2]) as again:
        resumed = ding_ray_train(again[1], resume_log, f"--resume={run}", f"--max-env-step={budget}")
        assert resumed.wait(timeout=300) == 0, resume_log.read_text()[-3000:]
    assert leftovers(again.name) == []
    at = f"at iteration {meta['train_iter']}, {meta['env_steps']} env steps"
    assert f"resuming {checkpoint} {at}" in resume_log.read_text()
    result = json.loads((run / "result.json").read_text())
    assert result["resumed_from"] == checkpoint and "error" not in result
    assert result["env_steps"] >= budget and result["train_iter"] > meta["train_iter"]  # the counters go on


def ray_processes(host: Host) -> list[str]:
    """The command lines of the processes in ``host`` other than the harness's own (its PID 1 and the
    ``unshare`` above it)."""
    init = host.pid_one()
    harness = {init, int(Path(f"/proc/{init}/stat").read_text().rsplit(")", 1)[1].split()[1])}
    found = []
    for pid in set(netns_pids(host.namespace)) - harness:
        try:
            found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200])
        except OSError:  # ended meanwhile
            pass
    return found


def test_a_collector_host_cut_off_for_30_s_is_replaced_and_left_with_nothing_of_the_run(host_tools, tmp_path):
    # two collectors: one on host 1 (one slot), one on host 2, whose spare slot takes the one cut off
    slots = [{}, {"collector_slot": 1}, {"collector_slot": 2}]
    with Hosts(3, cpus=[2, 0, 0], resources=slots) as hosts:
        cut, spare = hosts[1], hosts[2]
        stop = tmp_path / "stop"
        driver = Driver(
            hosts.head,
            tmp_path / "run",
            "--config=small",
            "--strike-at=100",
            f"--until={stop}",
            "--max-env-step=10000000",
            "--set",
            *COLLECTOR_SLOT,
        )
        strike = driver.event("strike", timeout=180)
        (on_cut,) = victims(strike, cut)
        cut.partition(seconds=PARTITION_S)
        time.sleep(PARTITION_S)
        # healed: the cut-off host hears from the head that its node was declared dead, and its
        # raylet ends, with the collector's old process and the agents
        deadline = time.monotonic() + 90
        while left := [cmd for cmd in ray_processes(cut) if "log_monitor" not in cmd]:
            assert time.monotonic() < deadline, left
            time.sleep(1)
        stop.touch()
        end = driver.end(timeout=120)
    assert leftovers(hosts.name) == []
    result = end["result"]
    print(
        "collector host cut off:", {k: result[k] for k in ("lost_batches", "collector_restarts", "env_steps")}
    )
    assert result["collector_restarts"] >= 1 and end["hosts_after"][on_cut] == spare.ip  # replaced
    assert result["lost_batches"] <= 1  # the call in flight there
    assert result["collectors_running"] == 2 and result["recoveries"] == []
    assert result["env_steps"] > strike["env_step"] + 10_000  # the run went on


def test_a_collector_host_on_a_slow_link_finishes_and_its_throughput_is_reported(host_tools, tmp_path):
    # both collectors on host 1, behind 10 Mbit/s and 20 ms each way
    with Hosts(2, cpus=[2, 0], resources=[{}, {"collector_slot": 2}]) as hosts:
        slow = hosts[1]
        slow.shape(rate="10mbit", delay=0.02)
        sent_before = slow.bytes_sent
        driver = Driver(
            hosts.head,
            tmp_path / "run",
            "--config=apex",
            f"--max-env-step={SHAPED_BUDGET}",
            "--set",
            *COLLECTOR_SLOT,
        )
        end = driver.end(timeout=300)
        sent = slow.bytes_sent - sent_before
    assert leftovers(hosts.name) == []
    result = end["result"]
    assert set(end["hosts_after"].values()) == {hosts.head.ip, slow.ip}
    assert end["hosts_after"]["collector-0"] == end["hosts_after"]["collector-1"] == slow.ip
    steps_per_s = result["env_steps"] / end["run_s"]
    print(
        f"10 Mbit/s, 20 ms link: {steps_per_s:.0f} env steps/s over {end['run_s']} s, "
        f"{sent / result['env_steps']:.0f} bytes sent per env step by the collectors' host"
    )
    assert result["env_steps"] >= SHAPED_BUDGET
