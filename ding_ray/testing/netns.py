"""Network and PID namespaces of the hosts harness, driven through ``ip``, ``iptables`` and ``/proc``."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

ROOT = Path("/tmp")  # each run's directory: short, as Ray's socket paths must stay under 108 bytes


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def netns_inode(namespace: str) -> int | None:
    try:
        return os.stat(f"/run/netns/{namespace}").st_ino
    except FileNotFoundError:
        return None


def netns_pids(namespace: str) -> list[int]:
    """The processes in network namespace ``namespace`` (what ``ip netns pids`` lists)."""
    inode = netns_inode(namespace)
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


def is_pid_one(pid: int) -> bool:
    """Whether ``pid`` is PID 1 of a PID namespace below ours."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                ids = line.split()[1:]
                return len(ids) > 1 and ids[-1] == "1"
    except OSError:
        pass
    return False


def child_pid(pid: int, timeout: float = 5.0) -> int:
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


def iptables(namespace: str, *args: str) -> subprocess.CompletedProcess:
    command = ["ip", "netns", "exec", namespace, "iptables", "-w", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True)


def rate_bits(rate: str | int) -> int:
    if not isinstance(rate, str):
        return int(rate)
    units = {"gbit": 10**9, "mbit": 10**6, "kbit": 10**3, "bit": 1}
    for unit, scale in units.items():
        if rate.lower().endswith(unit):
            return int(float(rate[: -len(unit)]) * scale)
    raise ValueError(f"rate {rate!r}: give bits per second or a number ending in gbit, mbit, kbit or bit")


def stop(process: subprocess.Popen) -> None:
    """SIGKILL a command started by ``Host.popen``: first what nsenter forked (nsenter passes no signal
    on), then nsenter."""
    try:
        os.kill(child_pid(process.pid, timeout=0.1), signal.SIGKILL)
    except (RuntimeError, ProcessLookupError):
        pass
    process.kill()
    process.wait()


def kill_namespace(namespace: str) -> None:
    """SIGKILL every process in ``namespace``: PID 1 of a host takes its whole PID namespace along."""
    for pid in netns_pids(namespace):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


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
