"""Network probes the host tests run inside a host (``Host.run`` / ``Host.popen``); each prints one number.

net_probe.py connect IP PORT          seconds one TCP connect took (exit 1 if it failed in 1 s)
net_probe.py tcp-sink IP PORT SECONDS  bytes per second received from the first connection
net_probe.py tcp-source IP PORT        send zeros until the peer closes
net_probe.py udp-count IP PORT SECONDS datagrams received in SECONDS
net_probe.py udp-send IP PORT N        send N datagrams, 1 ms apart
"""

import socket
import sys
import time


def connect(ip: str, port: int) -> None:
    start = time.perf_counter()
    try:
        socket.create_connection((ip, port), timeout=1.0).close()
    except OSError:
        sys.exit(1)
    print(time.perf_counter() - start)


def tcp_sink(ip: str, port: int, seconds: float) -> None:
    server = socket.create_server((ip, port))
    print("listening", flush=True)
    peer, _ = server.accept()
    received, start = len(peer.recv(1 << 16)), time.perf_counter()
    while time.perf_counter() - start < seconds:
        received += len(peer.recv(1 << 16))
    print(received / (time.perf_counter() - start))


def tcp_source(ip: str, port: int) -> None:
    sock = socket.create_connection((ip, port), timeout=10)
    chunk = bytes(1 << 16)
    try:
        while True:
            sock.sendall(chunk)
    except OSError:  # the sink closed
        pass


def udp_count(ip: str, port: int, seconds: float) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((ip, port))
    print("listening", flush=True)
    count, deadline = 0, time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            sock.recv(64)
        except TimeoutError:
            break
        count += 1
    print(count)


def udp_send(ip: str, port: int, n: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(n):
        sock.sendto(b"x", (ip, port))
        time.sleep(0.001)
    print(n)


if __name__ == "__main__":
    command, ip, port, *rest = sys.argv[1:]
    if command == "connect":
        connect(ip, int(port))
    elif command == "tcp-sink":
        tcp_sink(ip, int(port), float(rest[0]))
    elif command == "tcp-source":
        tcp_source(ip, int(port))
    elif command == "udp-count":
        udp_count(ip, int(port), float(rest[0]))
    elif command == "udp-send":
        udp_send(ip, int(port), int(rest[0]))
    else:
        sys.exit(f"unknown probe {command!r}")
