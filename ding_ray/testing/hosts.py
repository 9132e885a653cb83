"""Several Ray hosts on one Linux machine: each a network namespace with its own IP and its own Ray
node, joined through a bridge, with faults (kill, partition) and link shaping (rate, delay, loss).

Needs root and the programs ``ip`` (iproute2), ``tc``, ``iptables``, ``unshare`` and ``nsenter``
(util-linux)::

    with Hosts(3) as hosts:                     # host 0 runs the Ray head
        hosts[2].shape(rate="10mbit", delay=0.02)
        result = hosts.run_in(hosts.head, [sys.executable, "driver.py"])  # RAY_ADDRESS is set
        hosts[1].kill()

From a shell: ``python -m ding_ray.testing.hosts up 3``, then ``... run NAME 0 -- python x.py``,
``... down NAME`` (or ``down`` for every run that ``up`` started).

Isolation. Each run's namespaces carry a random suffix (``drh<hex>-h0`` ...; the bridge lives in
``drh<hex>-sw``). Hosts get 10.251.0.1, .2, ... on one /24 with no default route and no IPv6, so
nothing leaves that /24. Each host runs under ``unshare --pid --fork --mount-proc``: killing its
PID 1 ends every process of the host, so ``ray stop`` is never needed (and must never be run
outside a host: it stops every Ray on the machine).

Ray settings of every host (and of commands run in one): ``HOME`` and Ray's temp dir under
``/tmp/drh<hex>/`` (short, as Ray's socket paths must stay under 108 bytes),
``RAY_AUTH_MODE=token`` with a token made for the run in ``RAY_AUTH_TOKEN``, no dashboard, and
health checks shortened so that a lost host is declared dead within about ten seconds:
``RAY_health_check_period_ms=1000``, ``RAY_health_check_timeout_ms=1000``,
``RAY_health_check_failure_threshold=5``, ``RAY_health_check_initial_delay_ms=1000``. All nodes
start together; ``RAY_gcs_server_port_wait_time_s=180`` lets the workers wait for the head's GCS.

Faults look like the network's, not the sender's: a partition and packet loss drop packets where
they arrive (in the host for its incoming traffic, in its peers for its outgoing), so no send fails
with an error; ``kill()`` also takes the host's link down, so peers see silence.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from ding_ray.testing import netns, sshd

SUBNET = "10.251.0"  # hosts are SUBNET.1, SUBNET.2, ...
RAY_PORT = 6379
ROOT = netns.ROOT
PREFIX = "drh"
HEALTH_CHECK = {
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "5",
    "RAY_health_check_initial_delay_ms": "1000",
}
# All nodes start at once: a worker's `ray start` retries the head's GCS for this many seconds (the
# head's start, under load too).
GCS_WAIT = {"RAY_gcs_server_port_wait_time_s": "180"}

# PID 1 of a host: runs `ray start` (which leaves its daemons as our children) or the boot of an ssh
# host, records its exit status (through a directory opened first: an ssh host mounts over /tmp), then
# reaps orphans for as long as the host lives.
_INIT = """
import os, subprocess, sys, time
folder = os.open(os.path.dirname(sys.argv[1]), os.O_RDONLY)
name = os.path.basename(sys.argv[1])
rc = subprocess.call(sys.argv[2:])
with open(os.open(name + '.tmp', os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=folder), 'w') as f:
    f.write(str(rc))
os.rename(name + '.tmp', name, src_dir_fd=folder, dst_dir_fd=folder)
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(1)
"""


def load_factor() -> float:
    """How much longer than on a quiet machine starting Ray nodes may take now: it is CPU-bound, so
    when other work already loads every core (the 1-minute load average per core) it scales with it;
    at least 1."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


class Host:
    """One host: a network namespace with address ``ip`` and one Ray node in its own PID namespace."""

    def __init__(self, run: str, index: int, run_dir: Path, env: dict[str, str], ssh: bool = False):
        self.index = index
        self.name = f"h{index}"
        self.namespace = f"{run}-{self.name}"
        self.switch = f"{run}-sw"
        self.ip = f"{SUBNET}.{index + 1}"
        self.dir = run_dir / self.name
        self.temp_dir = self.dir / "t"
        self.ssh = ssh  # a machine for Ray's cluster launcher (ding_ray.testing.sshd), no Ray started
        # an ssh host's own /root and /tmp are mounts inside it (ding_ray.testing.sshd)
        self.home = self.dir / ("root" if ssh else "home")  # its HOME, as this machine reaches it
        self.env = dict(env, HOME="/root" if ssh else str(self.home), TMPDIR="/tmp" if ssh else str(self.dir))
        self.peers: list[Host] = []  # the other hosts of the run
        self._delay: subprocess.Popen | None = None
        self._heal: threading.Timer | None = None

    def __repr__(self) -> str:
        return f"Host({self.namespace}, {self.ip})"

    def pid_one(self) -> int | None:
        """This host's PID 1 (as this machine numbers it), or None when the host is down."""
        return next((pid for pid in netns.netns_pids(self.namespace) if netns.is_pid_one(pid)), None)

    @property
    def alive(self) -> bool:
        return self.pid_one() is not None

    def kill(self) -> None:
        """Lose the host: SIGKILL to every process in it (its PID 1 takes the rest of its PID namespace
        along) and its link down, so that peers see silence, as from a dead machine, not refused
        connections."""
        netns.kill_namespace(self.namespace)
        netns.ip("-n", self.namespace, "link", "set", "eth0", "down")

    def partition(self, seconds: float | None = None) -> None:
        """Drop every packet into and out of this host; heal after ``seconds`` (None: at ``heal()``)."""
        self._drop(f"part-{self.name}", [])
        if seconds is not None:
            self._heal = threading.Timer(seconds, self.heal)
            self._heal.daemon = True
            self._heal.start()

    def heal(self) -> None:
        """End a partition (a no-op when there is none)."""
        if self._heal is not None:
            self._heal.cancel()
            self._heal = None
        self._delete_rules(f"part-{self.name}")

    def shape(self, rate: str | int | None = None, delay: float | None = None, loss: float | None = None):
        """Shape both directions of this host's link, replacing any shaping before; no argument clears it.

        Args:
            rate: a tc rate ("10mbit", "500kbit") or bits per second: a token bucket on each end of the link.
            delay: seconds added to every packet each way (NFQUEUE, read by ``ding_ray.testing.netdelay``).
            loss: the fraction of packets dropped each way (iptables ``statistic``).
        """
        for namespace, device in ((self.namespace, "eth0"), (self.switch, f"v{self.index}")):
            tc = ["tc", "-n", namespace, "qdisc"]
            subprocess.run([*tc, "del", "dev", device, "root"], capture_output=True)
            if rate is not None:
                bits = netns.rate_bits(rate)
                burst = max(bits // 800, 16384)  # 10 ms of traffic, and at least a few full frames
                tbf = ["rate", f"{bits}bit", "burst", str(burst), "latency", "100ms"]
                subprocess.run(
                    [*tc, "add", "dev", device, "root", "tbf", *tbf], check=True, capture_output=True
                )
        tag = f"shape-{self.name}"
        self._delete_rules(tag)
        if self._delay is not None:
            netns.stop(self._delay)
            self._delay = None
        if loss:
            self._drop(tag, ["-m", "statistic", "--mode", "random", "--probability", str(loss)])
        if delay:
            reader = [
                sys.executable,
                "-m",
                "ding_ray.testing.netdelay",
                "--queue",
                "0",
                "--delay",
                str(delay),
            ]
            self._delay = self.popen(reader, stdout=subprocess.PIPE)
            if self._delay.stdout.readline().strip() != b"ready":
                raise RuntimeError(f"the delay queue reader of {self} did not start")
            queue = ["-m", "comment", "--comment", tag, "-j", "NFQUEUE", "--queue-num", "0", "--queue-bypass"]
            netns.iptables(self.namespace, "-A", "INPUT", "-i", "eth0", *queue)
            netns.iptables(self.namespace, "-A", "OUTPUT", "-o", "eth0", *queue)

    def _drop(self, tag: str, match: list[str]) -> None:
        """Drop the packets ``match`` selects on their way in: to this host here, from this host at each
        peer. Dropping on the way out would fail the sender's send (EPERM) instead of losing the packet."""
        rule = [*match, "-m", "comment", "--comment", tag, "-j", "DROP"]
        netns.iptables(self.namespace, "-I", "INPUT", "1", "-i", "eth0", *rule)
        for peer in self.peers:
            netns.iptables(peer.namespace, "-I", "INPUT", "1", "-s", self.ip, *rule)

    def _delete_rules(self, tag: str) -> None:
        """Delete every rule ``tag`` marks, here and at the peers."""
        for namespace in [self.namespace] + [peer.namespace for peer in self.peers]:
            listed = netns.iptables(namespace, "-S").stdout.splitlines()
            for line in listed:
                if line.startswith("-A ") and f"--comment {tag} " in line:
                    netns.iptables(namespace, "-D", *line.split()[1:])

    def _counter(self, name: str) -> int:
        path = f"/sys/class/net/v{self.index}/statistics/{name}"  # the bridge's end of this host's link
        text = subprocess.run(
            ["ip", "netns", "exec", self.switch, "cat", path], check=True, capture_output=True, text=True
        ).stdout
        return int(text)

    @property
    def bytes_sent(self) -> int:
        """Bytes this host sent over its link (counted at the bridge's end, so a killed host still reads)."""
        return self._counter("rx_bytes")

    @property
    def bytes_received(self) -> int:
        """Bytes delivered to this host over its link."""
        return self._counter("tx_bytes")

    def logs(self) -> list[Path]:
        """The files of this host's Ray logs, and ``start.log`` (the output of its ``ray start``, or of
        an ssh host's boot) and sshd's log."""
        found = [p for p in (self.dir / "start.log", self.dir / "tmp/sshd/sshd.log") if p.exists()]
        temp_dir = self.dir / "tmp" / "ray" if self.ssh else self.temp_dir
        for session in sorted(temp_dir.glob("session_2*")):
            found += sorted(p for p in (session / "logs").rglob("*") if p.is_file())
        return found

    def popen(
        self, argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None, **kwargs
    ) -> subprocess.Popen:
        """Start ``argv`` inside this host (its network, PID and mount namespaces, so ``kill()`` ends it),
        with the host's Ray environment plus ``env``, in folder ``cwd`` (default: this process's)."""
        pid = self.pid_one()
        if pid is None:
            raise RuntimeError(f"{self} is down")
        enter = ["nsenter", "-t", str(pid), "-n", "-p", "-m", f"--wd={cwd or os.getcwd()}", "--"]
        return subprocess.Popen([*enter, *argv], env={**self.env, **(env or {})}, **kwargs)

    def run(
        self,
        argv: list[str],
        env: dict[str, str] | None = None,
        timeout: float | None = None,
        cwd: str | None = None,
    ):
        """Run ``argv`` inside this host to its end; the ``subprocess.CompletedProcess`` (text output)."""
        with self.popen(argv, env, cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
            try:
                stdout, stderr = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                netns.stop(process)
                raise
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


class Hosts:
    """``n`` hosts, host 0 the Ray head; a context manager (up on enter, down on exit, even on error).

    Args:
        n: number of hosts.
        cpus: logical CPUs each Ray node offers (an int, or one per host).
        resources: custom resources, one dict per host, e.g. ``[{"learner": 1}, {}, {}]``.
        object_store_memory: bytes of each node's object store.
        env: environment variables for every process of the hosts, over the defaults (e.g. other
            ``RAY_health_check_*`` values); variables ``RAY_*`` of the caller are not passed on.
        name: the run to attach to (see ``attach``); a fresh random name when None.
        ssh: machines for Ray's cluster launcher instead of Ray nodes: each host runs sshd on port 22
            for the run's key (``ssh_key``) and has a home, temp dir and Python environment of its own
            (``ding_ray.testing.sshd``); no Ray is started, ``ray up`` does that.
    """

    def __init__(
        self,
        n: int = 3,
        cpus: int | list[int] = 1,
        resources: list[dict] | None = None,
        object_store_memory: int = 128 << 20,
        env: dict[str, str] | None = None,
        name: str | None = None,
        ssh: bool = False,
    ):
        if not 1 <= n <= 250:
            raise ValueError(f"n={n}: between 1 and 250 hosts")
        self.name = name or f"{PREFIX}{secrets.token_hex(3)}"
        self.dir = ROOT / self.name
        self.cpus = list(cpus) if isinstance(cpus, (list, tuple)) else [cpus] * n
        self.resources = resources or [{}] * n
        self.object_store_memory = object_store_memory
        token = (self.dir / "token").read_text() if name else secrets.token_hex(16)
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAY_") and k != "HOME"}
        ray_nodes = {  # the Ray settings of the nodes this harness starts (an ssh host starts none)
            **HEALTH_CHECK,
            **GCS_WAIT,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": token,
            "RAY_ADDRESS": f"{SUBNET}.1:{RAY_PORT}",
        }
        env = {**inherited, **({} if ssh else ray_nodes), "RAY_USAGE_STATS_ENABLED": "0", **(env or {})}
        self.ssh = ssh
        self.ssh_key = self.dir / sshd.KEY  # the private key every ssh host accepts (also in each ~/.ssh)
        self.hosts = [Host(self.name, i, self.dir, env, ssh) for i in range(n)]
        for host in self.hosts:
            host.peers = [peer for peer in self.hosts if peer is not host]
        self._token = token
        self._starters: list[subprocess.Popen] = []
        self.up_seconds: float | None = None  # how long the last up() and down() took
        self.down_seconds: float | None = None

    @classmethod
    def attach(cls, name: str) -> Hosts:
        """The run ``name`` started by another process (e.g. ``python -m ding_ray.testing.hosts up``)."""
        state = json.loads((ROOT / name / "state.json").read_text())
        return cls(state["n"], name=name, ssh=state.get("ssh", False))

    @property
    def head(self) -> Host:
        return self.hosts[0]

    @property
    def address(self) -> str:
        """The Ray address (GCS) of the cluster: ``RAY_ADDRESS`` of every command run in a host."""
        return f"{self.head.ip}:{RAY_PORT}"

    def __getitem__(self, index: int) -> Host:
        return self.hosts[index]

    def __iter__(self):
        return iter(self.hosts)

    def __len__(self) -> int:
        return len(self.hosts)

    def __enter__(self) -> Hosts:
        self.up()
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    def run_in(self, host: Host, argv: list[str], env: dict[str, str] | None = None, timeout: float = 120):
        """Run ``argv`` in ``host`` (``RAY_ADDRESS`` points at the head); its ``CompletedProcess``."""
        return host.run(argv, env, timeout)

    def up(self) -> None:
        """Make the network, then start every host's Ray node at once (the workers wait for the head)."""
        start = time.monotonic()
        try:
            self.dir.mkdir(mode=0o700)
            (self.dir / "token").write_text(self._token)
            (self.dir / "state.json").write_text(json.dumps({"n": len(self.hosts), "ssh": self.ssh}))
            self._network()
            self._start(self.hosts)
        except BaseException:
            self.down()
            raise
        self.up_seconds = time.monotonic() - start

    def _network(self) -> None:
        switch = self.head.switch
        netns.ip("netns", "add", switch)
        netns.ip("-n", switch, "link", "add", "br0", "type", "bridge")
        netns.ip("-n", switch, "link", "set", "br0", "addrgenmode", "none", "up")
        for host in self.hosts:
            ns, peer = host.namespace, f"v{host.index}"
            netns.ip("netns", "add", ns)
            netns.ip(
                "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", peer, "netns", switch
            )
            netns.ip("-n", switch, "link", "set", peer, "master", "br0", "addrgenmode", "none", "up")
            netns.ip("-n", ns, "link", "set", "eth0", "addrgenmode", "none")
            netns.ip("-n", ns, "addr", "add", f"{host.ip}/24", "dev", "eth0")
            netns.ip("-n", ns, "link", "set", "eth0", "up")
            netns.ip("-n", ns, "link", "set", "lo", "up")

    def _start(self, hosts: list[Host]) -> None:
        ray = str(Path(sys.executable).with_name("ray"))
        if self.ssh:
            sshd.make_key_pair(self.ssh_key)
            (self.dir / "shared").mkdir()
        for host in hosts:
            if self.ssh:
                sshd.prepare(host.dir, host.ip, host.namespace, self.ssh_key)
                args = sshd.boot_command(host.dir, host.namespace, self.dir / "shared")
            else:
                host.home.mkdir(parents=True)
                args = self._ray_start(host, ray)
            log = open(host.dir / "start.log", "wb")  # noqa: SIM115 - the host's processes hold it
            init = [sys.executable, "-c", _INIT, str(host.dir / "started"), *args]
            enter = ["ip", "netns", "exec", host.namespace, "unshare", "--pid", "--fork", "--mount-proc"]
            enter += ["--uts"] if self.ssh else []  # a hostname of its own (ding_ray.testing.sshd)
            self._starters.append(
                subprocess.Popen(
                    [*enter, *init],
                    env=host.env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # a Ctrl-C in the terminal of `up` leaves the hosts running
                )
            )
            log.close()
        timeout_s = 60 * load_factor()
        deadline = time.monotonic() + timeout_s
        for host in hosts:
            started = host.dir / "started"
            while not started.exists():
                if time.monotonic() > deadline:
                    log = host.dir / "start.log"
                    raise RuntimeError(f"{host} did not start within {timeout_s:.0f} s; see {log}")
                time.sleep(0.05)
            if started.read_text() != "0":
                tail = (host.dir / "start.log").read_text()[-2000:]
                raise RuntimeError(f"{host} did not start:\n{tail}")

    def _ray_start(self, host: Host, ray: str) -> list[str]:
        args = [
            ray,
            "start",
            f"--node-ip-address={host.ip}",
            f"--num-cpus={self.cpus[host.index]}",
            f"--resources={json.dumps(self.resources[host.index])}",
            f"--object-store-memory={self.object_store_memory}",
            f"--temp-dir={host.temp_dir}",
            "--disable-usage-stats",
        ]
        if host is self.head:
            return [*args, "--head", f"--port={RAY_PORT}", "--include-dashboard=false"]
        return [*args, f"--address={self.address}"]

    def down(self) -> None:
        """Kill every process of every host, delete the namespaces and the run's directory."""
        start = time.monotonic()
        for host in self.hosts:
            if host._heal is not None:
                host._heal.cancel()
        namespaces = [h.namespace for h in self.hosts] + [self.head.switch]
        deadline = time.monotonic() + 5
        while any(netns.netns_pids(ns) for ns in namespaces) and time.monotonic() < deadline:
            for ns in namespaces:
                netns.kill_namespace(ns)
            time.sleep(0.02)
        for process in self._starters + [h._delay for h in self.hosts if h._delay is not None]:
            try:
                process.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        for ns in namespaces:
            if netns.netns_inode(ns) is not None:
                subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.down_seconds = time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ding_ray.testing.hosts", description=__doc__.splitlines()[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start N hosts and leave them running")
    up.add_argument("n", type=int)
    up.add_argument("--cpus", type=int, default=1, help="logical CPUs of each Ray node")
    run = commands.add_parser("run", help="run a command inside one host of a run")
    run.add_argument("name")
    run.add_argument("host", type=int)
    run.add_argument("argv", nargs=argparse.REMAINDER)
    down = commands.add_parser("down", help="stop a run (default: every run that `up` started)")
    down.add_argument("name", nargs="?")
    args = parser.parse_args(argv)
    if args.command == "up":
        hosts = Hosts(args.n, cpus=args.cpus)
        hosts.up()
        (hosts.dir / "cli").touch()
        print(f"{hosts.name}: {len(hosts)} hosts up in {hosts.up_seconds:.1f} s, Ray at {hosts.address}")
        for host in hosts:
            print(f"  {host.name} {host.ip}  namespace {host.namespace}")
        print(f"run a command in a host: python -m ding_ray.testing.hosts run {hosts.name} 0 -- python x.py")
        print(f"stop:                     python -m ding_ray.testing.hosts down {hosts.name}")
        return 0
    if args.command == "run":
        argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        return Hosts.attach(args.name)[args.host].popen(argv).wait()
    names = [args.name] if args.name else sorted(p.parent.name for p in ROOT.glob(f"{PREFIX}*/cli"))
    for name in names:
        hosts = Hosts.attach(name)
        hosts.down()
        print(f"{name}: down in {hosts.down_seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
