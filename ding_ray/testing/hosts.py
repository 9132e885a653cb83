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
``RAY_health_check_failure_threshold=5``, ``RAY_health_check_initial_delay_ms=1000``.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

SUBNET = "10.251.0"  # hosts are SUBNET.1, SUBNET.2, ...
RAY_PORT = 6379
ROOT = Path("/tmp")
PREFIX = "drh"
HEALTH_CHECK = {
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "5",
    "RAY_health_check_initial_delay_ms": "1000",
}

# PID 1 of a host: runs `ray start` (which leaves its daemons as our children), records its exit
# status, then reaps orphans for as long as the host lives.
_INIT = """
import os, subprocess, sys, time
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1] + '.tmp', 'w').write(str(rc))
os.rename(sys.argv[1] + '.tmp', sys.argv[1])
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(1)
"""


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def _netns_inode(namespace: str) -> int | None:
    try:
        return os.stat(f"/run/netns/{namespace}").st_ino
    except FileNotFoundError:
        return None


def netns_pids(namespace: str) -> list[int]:
    """The processes in network namespace ``namespace`` (what ``ip netns pids`` lists)."""
    inode = _netns_inode(namespace)
    if inode is None:
        return []
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if os.stat(f"/proc/{entry.name}/ns/net").st_ino == inode:
                    pids.append(int(entry.name))
            except OSError:  # gone, or a zombie
                pass
    return pids


def _is_pid_one(pid: int) -> bool:
    """Whether ``pid`` is PID 1 of a PID namespace below ours."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                ids = line.split()[1:]
                return len(ids) > 1 and ids[-1] == "1"
    except OSError:
        pass
    return False


def _child(pid: int, timeout: float = 5.0) -> int:
    """The (first) child process of ``pid``: what nsenter or unshare forked."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            children = []
        if children:
            return int(children[0])
        time.sleep(0.01)
    raise RuntimeError(f"process {pid} started no child within {timeout} s")


class Host:
    """One host: a network namespace with address ``ip`` and one Ray node in its own PID namespace."""

    def __init__(self, run: str, index: int, run_dir: Path, env: dict[str, str]):
        self.index = index
        self.name = f"h{index}"
        self.namespace = f"{run}-{self.name}"
        self.switch = f"{run}-sw"
        self.ip = f"{SUBNET}.{index + 1}"
        self.dir = run_dir / self.name
        self.temp_dir = self.dir / "t"
        self.env = dict(env, HOME=str(self.dir / "home"), TMPDIR=str(self.dir))
        self.peers: list[Host] = []  # the other hosts of the run
        self._delay: subprocess.Popen | None = None
        self._heal: threading.Timer | None = None

    def __repr__(self) -> str:
        return f"Host({self.namespace}, {self.ip})"

    def pid_one(self) -> int | None:
        """This host's PID 1 (as this machine numbers it), or None when the host is down."""
        return next((pid for pid in netns_pids(self.namespace) if _is_pid_one(pid)), None)

    @property
    def alive(self) -> bool:
        return self.pid_one() is not None

    def kill(self) -> None:
        """Lose the host: every process of it ends at once (SIGKILL of its PID 1) and its link goes
        down, so that peers see silence, as from a machine that died, not refused connections."""
        _kill_namespace(self.namespace)
        _ip("-n", self.namespace, "link", "set", "eth0", "down")

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
                bits = _rate_bits(rate)
                burst = max(bits // 800, 16384)  # 10 ms of traffic, and at least a few full frames
                tbf = ["rate", f"{bits}bit", "burst", str(burst), "latency", "100ms"]
                subprocess.run(
                    [*tc, "add", "dev", device, "root", "tbf", *tbf], check=True, capture_output=True
                )
        tag = f"shape-{self.name}"
        self._delete_rules(tag)
        if self._delay is not None:
            _stop(self._delay)
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
            _iptables(self.namespace, "-A", "INPUT", "-i", "eth0", *queue)
            _iptables(self.namespace, "-A", "OUTPUT", "-o", "eth0", *queue)

    def _drop(self, tag: str, match: list[str]) -> None:
        """Drop the packets ``match`` selects on their way in: to this host here, from this host at each
        peer. Dropping on the way out would fail the sender's send (EPERM) instead of losing the packet."""
        rule = [*match, "-m", "comment", "--comment", tag, "-j", "DROP"]
        _iptables(self.namespace, "-I", "INPUT", "1", "-i", "eth0", *rule)
        for peer in self.peers:
            _iptables(peer.namespace, "-I", "INPUT", "1", "-s", self.ip, *rule)

    def _delete_rules(self, tag: str) -> None:
        """Delete every rule ``tag`` marks, here and at the peers."""
        for namespace in [self.namespace] + [peer.namespace for peer in self.peers]:
            listed = _iptables(namespace, "-S").stdout.splitlines()
            for line in listed:
                if line.startswith("-A ") and f"--comment {tag} " in line:
                    _iptables(namespace, "-D", *line.split()[1:])

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
        """The files of this host's Ray logs, and ``start.log`` (the output of its ``ray start``)."""
        found = [self.dir / "start.log"] if (self.dir / "start.log").exists() else []
        for session in sorted(self.temp_dir.glob("session_2*")):
            found += sorted(p for p in (session / "logs").rglob("*") if p.is_file())
        return found

    def popen(self, argv: list[str], env: dict[str, str] | None = None, **kwargs) -> subprocess.Popen:
        """Start ``argv`` inside this host (its network, PID and mount namespaces, so ``kill()`` ends it),
        with the host's Ray environment plus ``env``."""
        pid = self.pid_one()
        if pid is None:
            raise RuntimeError(f"{self} is down")
        enter = ["nsenter", "-t", str(pid), "-n", "-p", "-m", f"--wd={os.getcwd()}", "--"]
        return subprocess.Popen([*enter, *argv], env={**self.env, **(env or {})}, **kwargs)

    def run(self, argv: list[str], env: dict[str, str] | None = None, timeout: float | None = None):
        """Run ``argv`` inside this host to its end; the ``subprocess.CompletedProcess`` (text output)."""
        with self.popen(argv, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
            try:
                stdout, stderr = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                _stop(process)
                raise
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _iptables(namespace: str, *args: str) -> subprocess.CompletedProcess:
    command = ["ip", "netns", "exec", namespace, "iptables", "-w", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True)


def _rate_bits(rate: str | int) -> int:
    if not isinstance(rate, str):
        return int(rate)
    units = {"gbit": 10**9, "mbit": 10**6, "kbit": 10**3, "bit": 1}
    for unit, scale in units.items():
        if rate.lower().endswith(unit):
            return int(float(rate[: -len(unit)]) * scale)
    raise ValueError(f"rate {rate!r}: give bits per second or a number ending in gbit, mbit, kbit or bit")


def _stop(process: subprocess.Popen) -> None:
    """SIGKILL a command started by ``Host.popen``: first what nsenter forked (nsenter passes no signal
    on), then nsenter."""
    try:
        os.kill(_child(process.pid, timeout=0.1), signal.SIGKILL)
    except (RuntimeError, ProcessLookupError):
        pass
    process.kill()
    process.wait()


def _kill_namespace(namespace: str) -> None:
    """SIGKILL every process in ``namespace``: PID 1 of a host takes its whole PID namespace along."""
    for pid in netns_pids(namespace):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Hosts:
    """``n`` hosts, host 0 the Ray head; a context manager (up on enter, down on exit, even on error).

    Args:
        n: number of hosts.
        cpus: logical CPUs each Ray node offers (an int, or one per host).
        resources: custom resources, one dict per host, e.g. ``[{"learner": 1}, {}, {}]``.
        object_store_memory: bytes of each node's object store.
    """

    def __init__(
        self,
        n: int = 3,
        cpus: int | list[int] = 1,
        resources: list[dict] | None = None,
        object_store_memory: int = 128 << 20,
        name: str | None = None,
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
        env = {
            **inherited,
            **HEALTH_CHECK,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": token,
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_ADDRESS": f"{SUBNET}.1:{RAY_PORT}",
        }
        self.hosts = [Host(self.name, i, self.dir, env) for i in range(n)]
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
        return cls(state["n"], name=name)

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
        """Make the network, then start the head's Ray node, then the others' together."""
        start = time.monotonic()
        try:
            self.dir.mkdir(mode=0o700)
            (self.dir / "token").write_text(self._token)
            (self.dir / "state.json").write_text(json.dumps({"n": len(self.hosts)}))
            self._network()
            self._start([self.head])
            self._start(self.hosts[1:])
        except BaseException:
            self.down()
            raise
        self.up_seconds = time.monotonic() - start

    def _network(self) -> None:
        switch = self.head.switch
        _ip("netns", "add", switch)
        _ip("-n", switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", switch, "link", "set", "br0", "addrgenmode", "none", "up")
        for host in self.hosts:
            ns, peer = host.namespace, f"v{host.index}"
            _ip("netns", "add", ns)
            _ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", peer, "netns", switch)
            _ip("-n", switch, "link", "set", peer, "master", "br0", "addrgenmode", "none", "up")
            _ip("-n", ns, "link", "set", "eth0", "addrgenmode", "none")
            _ip("-n", ns, "addr", "add", f"{host.ip}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")

    def _start(self, hosts: list[Host]) -> None:
        ray = str(Path(sys.executable).with_name("ray"))
        for host in hosts:
            (host.dir / "home").mkdir(parents=True)
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
                args += ["--head", f"--port={RAY_PORT}", "--include-dashboard=false"]
            else:
                args += [f"--address={self.address}"]
            log = open(host.dir / "start.log", "wb")  # noqa: SIM115 - the host's processes hold it
            init = [sys.executable, "-c", _INIT, str(host.dir / "started"), *args]
            enter = ["ip", "netns", "exec", host.namespace, "unshare", "--pid", "--fork", "--mount-proc"]
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
        deadline = time.monotonic() + 60
        for host in hosts:
            started = host.dir / "started"
            while not started.exists():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{host} did not start within 60 s; see {host.dir / 'start.log'}")
                time.sleep(0.05)
            if started.read_text() != "0":
                tail = (host.dir / "start.log").read_text()[-2000:]
                raise RuntimeError(f"`ray start` failed in {host}:\n{tail}")

    def down(self) -> None:
        """Kill every process of every host, delete the namespaces and the run's directory."""
        start = time.monotonic()
        for host in self.hosts:
            if host._heal is not None:
                host._heal.cancel()
        namespaces = [h.namespace for h in self.hosts] + [self.head.switch]
        deadline = time.monotonic() + 5
        while any(netns_pids(ns) for ns in namespaces) and time.monotonic() < deadline:
            for ns in namespaces:
                _kill_namespace(ns)
            time.sleep(0.02)
        for process in self._starters + [h._delay for h in self.hosts if h._delay is not None]:
            process.wait()
        for ns in namespaces:
            if _netns_inode(ns) is not None:
                subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.down_seconds = time.monotonic() - start


def leftovers(name: str) -> list[str]:
    """What run ``name`` left on this machine: namespaces, processes, mounts, links, its directory."""
    found = []
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found += [f"namespace {line.split()[0]}" for line in listed.splitlines() if name in line]
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes()
                environ = Path(f"/proc/{entry.name}/environ").read_bytes()
            except OSError:
                continue
            if entry.name != str(os.getpid()) and (name.encode() in cmdline or name.encode() in environ):
                command = cmdline.replace(b"\0", b" ").decode(errors="replace")[:120]
                found.append(f"process {entry.name}: {command}")
    mounts = Path("/proc/self/mountinfo").read_text()
    found += [f"mount {line.split()[4]}" for line in mounts.splitlines() if name in line]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    found += [f"link {line}" for line in links.splitlines() if name in line]
    rules = subprocess.run(["iptables", "-S"], capture_output=True, text=True).stdout
    found += [f"iptables {line}" for line in rules.splitlines() if name in line]
    if (ROOT / name).exists():
        found.append(f"directory {ROOT / name}")
    return found


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
