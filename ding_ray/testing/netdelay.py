"""Delay every packet of an NFQUEUE queue by a fixed time: the harness's stand-in for netem's ``delay``,
which this kind of kernel lacks.

Run inside a host's network namespace (the harness does), then send packets to the queue with
``iptables ... -j NFQUEUE --queue-num Q --queue-bypass``::

    python -m ding_ray.testing.netdelay --queue 0 --delay 0.02

It speaks the kernel's nfnetlink queue protocol over a plain netlink socket (no libnetfilter_queue),
asks for packet metadata only, and accepts each packet ``delay`` seconds after it arrived, in order.
When its queue is full the kernel lets packets through undelayed (fail-open) rather than drop them.
"""

from __future__ import annotations

import argparse
import collections
import select
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG = 0, 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN, NFQA_CFG_MASK, NFQA_CFG_FLAGS = 1, 2, 3, 4, 5
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NFQA_CFG_F_FAIL_OPEN, NFQA_CFG_F_GSO = 1, 4
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
NF_ACCEPT = 1
QUEUE_MAXLEN = 8192


def _attr(kind: int, payload: bytes) -> bytes:
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * (-length % 4)


def _message(msg: int, queue: int, attrs: bytes, flags: int = NLM_F_REQUEST) -> bytes:
    body = struct.pack("!BBH", socket.AF_UNSPEC, 0, queue) + attrs  # nfgenmsg: family, version, queue
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | msg, flags, 0, 0) + body


def _packet_ids(data: bytes):
    """The packet ids of the queued-packet messages in one netlink read."""
    offset = 0
    while offset + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, offset)
        if length < 16:
            return
        if kind == NLMSG_ERROR:
            (errno,) = struct.unpack_from("=i", data, offset + 16)
            if errno:
                raise OSError(-errno, "nfqueue refused a request")
        elif kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
            at = offset + 20
            while at + 4 <= offset + length:
                attr_len, attr_kind = struct.unpack_from("=HH", data, at)
                if attr_len < 4:
                    break
                if attr_kind & 0x7FFF == NFQA_PACKET_HDR:
                    yield struct.unpack_from("!I", data, at + 4)[0]
                at += attr_len + (-attr_len % 4)
        offset += length + (-length % 4)


def open_queue(queue: int) -> socket.socket:
    """A netlink socket bound to ``queue``, asking for metadata only and fail-open on overflow."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind((0, 0))
    flags = NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO
    requests = [
        _attr(NFQA_CFG_CMD, struct.pack("!BBH", NFQNL_CFG_CMD_BIND, 0, socket.AF_INET)),
        _attr(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META))
        + _attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", QUEUE_MAXLEN))
        + _attr(NFQA_CFG_MASK, struct.pack("!I", flags))
        + _attr(NFQA_CFG_FLAGS, struct.pack("!I", flags)),
    ]
    for attrs in requests:
        sock.send(_message(NFQNL_MSG_CONFIG, queue, attrs, NLM_F_REQUEST | NLM_F_ACK))
        list(_packet_ids(sock.recv(65536)))  # the ack; raises on refusal
    return sock


def serve(queue: int, delay: float) -> None:
    """Accept each packet of ``queue`` ``delay`` seconds after it arrives, until killed."""
    sock = open_queue(queue)
    print("ready", flush=True)
    waiting: collections.deque[tuple[float, int]] = collections.deque()
    while True:
        timeout = max(0.0, waiting[0][0] - time.monotonic()) if waiting else None
        if select.select([sock], [], [], timeout)[0]:
            try:
                data = sock.recv(1 << 16)
            except OSError:  # ENOBUFS: the kernel dropped messages; those packets went through fail-open
                continue
            due = time.monotonic() + delay
            waiting.extend((due, packet_id) for packet_id in _packet_ids(data))
        now = time.monotonic()
        while waiting and waiting[0][0] <= now:
            _, packet_id = waiting.popleft()
            verdict = _attr(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, packet_id))
            sock.send(_message(NFQNL_MSG_VERDICT, queue, verdict))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queue", type=int, default=0, help="NFQUEUE queue number")
    parser.add_argument("--delay", type=float, required=True, help="seconds each packet is held")
    args = parser.parse_args(argv)
    serve(args.queue, args.delay)


if __name__ == "__main__":
    sys.exit(main())
